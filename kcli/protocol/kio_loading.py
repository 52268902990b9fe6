"""kio loaded the same way whether or not Hypothesis is installed.

kio's phantom types register Hypothesis strategies for themselves when ``hypothesis`` is
importable (``kio/static/_phantom.py`` tries the import once, and every type defined after it
calls its ``__hypothesis_hook__``). That is a test-time convenience with run-time effects: the
import costs about 0.2 s, and registering the string strategies makes Hypothesis build its
Unicode tables under ``./.hypothesis/`` in whatever directory a tool or broker runs in. kcli never
uses those strategies, so kio's phantom module is loaded with ``hypothesis`` hidden: kio then
takes the path it takes when Hypothesis is not installed, and kcli behaves the same in a virtual
environment that also holds the test packages.
"""

from __future__ import annotations

import importlib
import sys

_PHANTOM_MODULE = "kio.static._phantom"
_HIDDEN_MODULES = ("hypothesis", "hypothesis.strategies")


def load_kio_without_hypothesis() -> None:
    """Import kio's phantom-type base with ``hypothesis`` unimportable, unless it is loaded already."""
    if _PHANTOM_MODULE in sys.modules:
        return
    saved = {name: sys.modules[name] for name in _HIDDEN_MODULES if name in sys.modules}
    for name in _HIDDEN_MODULES:
        # None in sys.modules makes ``import name`` raise ImportError, which kio handles.
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        importlib.import_module(_PHANTOM_MODULE)
    finally:
        for name in _HIDDEN_MODULES:
            del sys.modules[name]
        sys.modules.update(saved)
