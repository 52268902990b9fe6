"""The handler registry: each API module declares what it serves, and that is what is advertised."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import kcli.broker.handlers as handlers_package
from kcli.broker.handlers import api_versions, handler_modules, load_registry
from kcli.errors import KcliError
from kcli.protocol import messages

REGISTRY = load_registry()
HANDLER_MODULES = handler_modules()


def test_every_module_in_the_package_is_registered_once():
    # Counted from the files on disk, not from the discovery under test.
    on_disk = sorted(path.stem for path in Path(handlers_package.__file__).parent.glob("*.py") if not path.stem.startswith("_"))
    assert len(on_disk) >= 35
    assert sorted(api.name for api in REGISTRY.values()) == on_disk


def test_every_registered_api_is_advertised_by_api_versions():
    answer = api_versions.handle(SimpleNamespace(broker=SimpleNamespace(registry=REGISTRY)), None)
    advertised = {entry["api_key"]: (entry["min_version"], entry["max_version"]) for entry in answer["api_keys"]}
    assert advertised == {key: (api.min_version, api.max_version) for key, api in REGISTRY.items()}


def _package(tmp_path, monkeypatch, name, modules):
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    for module, text in modules.items():
        (root / f"{module}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "modules", dict(sys.modules))
    return name


def test_a_new_module_is_served_and_helpers_are_not(tmp_path, monkeypatch):
    package = _package(tmp_path, monkeypatch, "fake_handlers_new", {
        "produce": "API_KEY = 0\nVERSIONS = (3, 11)\ndef handle(ctx, request): return {}\n",
        "fetch": "API_KEY = 1\nVERSIONS = (4, 17)\nasync def handle(ctx, request): return {}\n",
        "_shared": "X = 1\n",
    })
    registry = load_registry(package)
    assert [(api.key, api.name, api.min_version, api.max_version, api.waits) for api in registry.values()] == [
        (0, "produce", 3, 11, False),
        (1, "fetch", 4, 17, True),
    ]


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        ({"helper": "X = 1\n"}, "handler module fake_handlers_bad.helper must declare API_KEY, VERSIONS (lowest, highest) and handle()"),
        (
            {"a": "API_KEY = 0\nVERSIONS = (3, 11)\ndef handle(c, r): pass\n", "b": "API_KEY = 0\nVERSIONS = (3, 9)\ndef handle(c, r): pass\n"},
            "handler modules a and b both serve API key 0",
        ),
    ],
)
def test_a_module_that_serves_no_api_or_a_served_one_is_refused(tmp_path, monkeypatch, modules, message):
    package = _package(tmp_path, monkeypatch, "fake_handlers_bad", modules)
    with pytest.raises(KcliError) as info:
        load_registry(package)
    assert str(info.value) == message


@pytest.mark.parametrize("name", HANDLER_MODULES)
def test_docstring_opens_with_the_served_range_and_kio_has_every_version(name):
    module = importlib.import_module(f"kcli.broker.handlers.{name}")
    low, high = module.VERSIONS
    match = re.match(r"(\w+): v(\d+)-(\d+)\n", module.__doc__ or "")
    if match is None:
        match = re.match(r"(\w+): v(\d+)\n", module.__doc__ or "")
        assert match is not None and low == high == int(match.group(2)), module.__doc__
    else:
        assert (int(match.group(2)), int(match.group(3))) == (low, high)
    assert "Behaviour:" in module.__doc__
    for version in range(low, high + 1):
        assert messages.has_version(module.API_KEY, version), f"{name} v{version}"
    assert messages.api_name(module.API_KEY) == name


def test_api_versions_answers_the_registry():
    from kcli.broker.handlers import api_ranges

    advertised = {entry["api_key"]: (entry["min_version"], entry["max_version"]) for entry in api_ranges(REGISTRY)}
    assert advertised == {key: (api.min_version, api.max_version) for key, api in REGISTRY.items()}
    assert advertised[0] == (3, 11) and advertised[1] == (4, 17) and advertised[18] == (0, 4)
