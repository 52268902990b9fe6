"""``kcli.protocol`` and ``kcli.storage`` do no network I/O: sockets and the event loop live in
``kcli.network`` (shared by broker and client) and above."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_IO_MODULES = {"asyncio", "socket", "selectors", "ssl"}


def _imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", ["protocol", "storage"])
def test_package_imports_no_network_io(package):
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_modules(path) & _IO_MODULES)
        for path in sorted((ROOT / "kcli" / package).rglob("*.py"))
        if _imported_modules(path) & _IO_MODULES
    }
    assert offenders == {}
