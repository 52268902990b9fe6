"""Floor experiment: the least CPU a Python process spends taking Produce-sized frames off a socket.

The broker benchmark's 1 KiB produce case moves about 310 MB in requests of about 0.5 MB. This
script sends the same volume, in frames of the same size, from one process to a receiver process
over TCP on 127.0.0.1, and measures the receiver's CPU seconds per GB (its process time from the
first frame to the last, start-up left out) for steps a broker cannot skip, each added to the last:

  - ``read``: frames cut by kcli's own FrameStream (asyncio, as the broker reads requests);
  - ``crc``: and CRC-32C over each frame (every batch's checksum is checked);
  - ``write``: and each frame written to a file (the log append: a pwrite into the page cache).

Nothing is parsed or answered beyond a 4-byte acknowledgement per frame, so the figures are a
floor under what kcli's broker (``bench/broker.py``'s ``CPU s/GB``) and the sender's side share.

Usage: .venv/bin/python bench/produce_floor.py [--megabytes N] [--frame-bytes N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STEPS = ("read", "crc", "write")


def receive(step: str, port: int, frames: int, path: str) -> None:
    """The receiver: ``frames`` frames from the sender at ``port``, each acknowledged."""
    from crc32c import crc32c

    from kcli.network.frame_stream import FrameStream

    done = asyncio.Event()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    position = 0
    first_cpu: float | None = None  # the receiver's CPU time when the first frame was whole

    class Receiver(FrameStream):
        def __init__(self) -> None:
            super().__init__(256 * 1024 * 1024, writable_frames=True)
            self.count = 0

        def frame_received(self, body) -> None:
            nonlocal position, first_cpu
            if first_cpu is None:
                first_cpu = time.process_time()
            if step != "read":
                crc32c(body)
            if step == "write":
                position += os.pwrite(fd, body, position)
            self.count += 1
            self.write(b"\0\0\0\0")
            if self.count == frames:
                done.set()

        def size_refused(self, size: int) -> None:
            raise SystemExit(f"bad frame size {size}")

    async def run() -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_connection(Receiver, "127.0.0.1", port)
        await done.wait()
        transport.close()

    asyncio.run(run())
    os.close(fd)
    # The CPU from the first frame to the last (start-up and imports left out), for frames - 1 frames.
    print(time.process_time() - first_cpu, flush=True)


def send(server: socket.socket, frames: int, frame_bytes: int, in_flight: int = 5) -> float:
    """Accept the receiver and send ``frames`` frames, ``in_flight`` ahead of the acknowledgements; the wall seconds."""
    connection, _ = server.accept()
    with connection:
        frame = frame_bytes.to_bytes(4, "big") + os.urandom(frame_bytes)
        started = time.perf_counter()
        sent = acknowledged_bytes = 0
        while acknowledged_bytes < 4 * frames:
            while sent < frames and sent - acknowledged_bytes // 4 < in_flight:
                connection.sendall(frame)
                sent += 1
            answer = connection.recv(4 * in_flight)
            if not answer:
                raise RuntimeError("the receiver closed the connection")
            acknowledged_bytes += len(answer)
        return time.perf_counter() - started


def measure(step: str, megabytes: int, frame_bytes: int, workdir: Path) -> tuple[float, float]:
    """(receiver CPU seconds per GB, wall seconds) for one run of ``step``."""
    frames = megabytes * 1_000_000 // frame_bytes
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        child = subprocess.Popen([sys.executable, __file__, "--receive", step, str(port), str(frames), str(workdir / "log")], stdout=subprocess.PIPE, text=True)
        wall = send(server, frames, frame_bytes)
        out, _ = child.communicate(timeout=120)
    if child.returncode != 0:
        raise RuntimeError(f"the {step} receiver failed")
    return float(out.strip().splitlines()[-1]) / ((frames - 1) * frame_bytes / 1e9), wall


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--receive":
        receive(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--megabytes", type=int, default=310, help="volume sent per run (default 310, the 1 KiB case's)")
    parser.add_argument("--frame-bytes", type=int, default=525_000, help="bytes per frame (default 525,000: librdkafka's 1 KiB produce requests)")
    parser.add_argument("--rounds", type=int, default=5, help="runs per step; the median is shown (default 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kcli-floor-") as directory:
        workdir = Path(directory)
        print(f"{args.megabytes} MB in frames of {args.frame_bytes:,} B, receiver CPU s/GB, median of {args.rounds}")
        for step in STEPS:
            runs = [measure(step, args.megabytes, args.frame_bytes, workdir) for _ in range(args.rounds)]
            cpu = statistics.median(run[0] for run in runs)
            print(f"  {step:<6} {cpu:5.2f} s/GB   (runs: {', '.join(f'{run[0]:.2f}' for run in runs)}; wall median {statistics.median(run[1] for run in runs):.2f} s)")


if __name__ == "__main__":
    main()
