"""The handler registry: each API module declares what it serves, and that is what is advertised."""

from __future__ import annotations

import importlib
import re

import pytest

from kcli.broker.handlers import HANDLER_MODULES, load_registry
from kcli.protocol import messages

REGISTRY = load_registry()


def test_every_listed_module_is_registered_once():
    assert sorted(api.name for api in REGISTRY.values()) == sorted(HANDLER_MODULES)


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
    from kcli.broker.server import api_ranges

    advertised = {entry["api_key"]: (entry["min_version"], entry["max_version"]) for entry in api_ranges(REGISTRY)}
    assert advertised == {key: (api.min_version, api.max_version) for key, api in REGISTRY.items()}
    assert advertised[0] == (3, 11) and advertised[1] == (4, 17) and advertised[18] == (0, 4)
