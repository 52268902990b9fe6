"""``consumer-groups --describe --watch SECONDS`` (kcli's own): the offsets tables again every
SECONDS, each with the lag's change since the round before, until SIGINT (exit 130) or SIGTERM
(exit 143). On a terminal each round clears the screen and redraws, under a line naming the
interval and the time; on a pipe or file the rounds follow one another as plain tables."""

from __future__ import annotations

import signal
import sys
import time
from datetime import datetime

import typer

from kcli.errors import EXIT_SIGINT, EXIT_SIGTERM

CLEAR = "\x1b[H\x1b[2J"


class _Terminated(Exception):
    pass


def watch(command, seconds: float) -> bool:
    """Run the rounds; only a signal ends them (the exit code says which)."""
    out = command.out
    terminal = not out.json and sys.stdout.isatty()  # the Output writes to stdout

    def on_term(signum, frame) -> None:
        raise _Terminated

    previous_handler = signal.signal(signal.SIGTERM, on_term)
    previous: dict | None = None
    try:
        while True:
            if terminal:
                out.now(f"{CLEAR}Every {seconds:g}s: consumer groups at {datetime.now().strftime('%H:%M:%S')}")
            groups = command.describe_all(command.group_ids())
            previous = command.describe_offsets(groups, previous if previous is not None else {})
            out.flush()
            time.sleep(seconds)
    except KeyboardInterrupt:
        out.flush()
        raise typer.Exit(EXIT_SIGINT) from None
    except _Terminated:
        out.flush()
        raise typer.Exit(EXIT_SIGTERM) from None
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
