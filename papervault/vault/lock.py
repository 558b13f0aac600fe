"""The workspace writer lock: an flock on `.papervault/write.lock`, released by the kernel if the holder dies."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from papervault.errors import LockedError

FILL_HOLDER = "index --fill"   # index/fill.py: holds the lock one batch at a time
ARRIVAL_HOLDER = "add (full parse)"   # app/arrival.py: the full parses of one batch written, analysed, committed
BATCH_HOLDERS = (FILL_HOLDER, ARRIVAL_HOLDER)   # background workers that hold the lock a batch at a time
FILL_GRACE = 300.0             # seconds another writer waits for such a holder (a batch, or its last maintenance)


class WriteLock:
    def __init__(self, path: Path, *, command: str, wait: float = 0.0):
        self.path = Path(path)
        self.command = command
        self.wait = wait
        self._fd: int | None = None

    def _holder(self) -> str:
        try:
            info = json.loads(self.path.read_text() or "{}")
            return f"`papervault {info.get('command', '?')}` (pid {info.get('pid', '?')})"
        except (OSError, ValueError):
            return "another papervault command"

    def _holder_command(self) -> str | None:
        try:
            return json.loads(self.path.read_text() or "{}").get("command")
        except (OSError, ValueError):
            return None

    def acquire(self) -> "WriteLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait
        extended = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not extended and self._holder_command() in BATCH_HOLDERS:
                    # a background fill or arrival worker holds the lock for one batch at a time: wait it out
                    deadline, extended = max(deadline, time.monotonic() + FILL_GRACE), True
                if time.monotonic() >= deadline:
                    holder = self._holder()
                    os.close(fd)
                    raise LockedError(f"{holder} is writing this workspace",
                                      fix="wait for it to finish and run the command again") from None
                time.sleep(0.2)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "command": self.command, "since": time.time()}).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
