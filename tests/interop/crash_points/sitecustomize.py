"""Loaded by a broker process whose PYTHONPATH starts with this directory (Python imports
``sitecustomize`` at start-up). While the file named by ``KCLI_CRASH_FLAG`` exists, the broker
kills its own process with SIGKILL at the point ``KCLI_CRASH_POINT`` names:

- ``prepare-commit``: the coordinator has written a PrepareCommit, no marker yet;
- ``first-marker``: the first marker of a commit is written, the others are not.
"""

from __future__ import annotations

import os
import signal

_FLAG = os.environ.get("KCLI_CRASH_FLAG")
_POINT = os.environ.get("KCLI_CRASH_POINT")


def _crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


if _FLAG and _POINT == "prepare-commit":
    from kcli.broker.transactions import coordinator as _coordinator
    from kcli.broker.transactions.metadata import TransactionState as _State

    _send_markers = _coordinator.TransactionCoordinator.send_markers

    def _send_markers_or_crash(self, transactional_id):
        metadata = self.transaction(transactional_id)
        if metadata is not None and metadata.state == _State.PREPARE_COMMIT and os.path.exists(_FLAG):
            _crash()
        return _send_markers(self, transactional_id)

    _coordinator.TransactionCoordinator.send_markers = _send_markers_or_crash

elif _FLAG and _POINT == "first-marker":
    from kcli.broker.transactions import markers as _markers

    _write_marker = _markers.write_marker

    def _write_marker_then_crash(*args, **kwargs):
        _write_marker(*args, **kwargs)  # appended to the leader's log when it returns
        commit = args[7] if len(args) > 7 else kwargs["commit"]
        if commit and os.path.exists(_FLAG):
            _crash()

    _markers.write_marker = _write_marker_then_crash
