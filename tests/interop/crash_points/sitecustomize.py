"""Loaded by a broker process whose PYTHONPATH starts with this directory (Python imports
``sitecustomize`` at start-up): while the file named by ``KCLI_CRASH_AFTER_PREPARE_COMMIT``
exists, the transaction coordinator kills its own process with SIGKILL right after it has written
a PrepareCommit and before the first marker, the crash the recovery test needs."""

from __future__ import annotations

import os
import signal

_FLAG = os.environ.get("KCLI_CRASH_AFTER_PREPARE_COMMIT")

if _FLAG:
    from kcli.broker.transactions import coordinator as _coordinator
    from kcli.broker.transactions.metadata import TransactionState as _State

    _send_markers = _coordinator.TransactionCoordinator.send_markers

    def _send_markers_or_crash(self, transactional_id):
        metadata = self.transaction(transactional_id)
        if metadata is not None and metadata.state == _State.PREPARE_COMMIT and os.path.exists(_FLAG):
            os.kill(os.getpid(), signal.SIGKILL)
        return _send_markers(self, transactional_id)

    _coordinator.TransactionCoordinator.send_markers = _send_markers_or_crash
