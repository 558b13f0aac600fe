"""Whether a background worker (the paragraph fill, the arrival worker) holds a workspace: the one check both use.

A worker holds an exclusive `flock` on its lock file for as long as it runs and writes its pid to its state
file as soon as it holds the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import Callable, Iterator

STATE_WAIT_TRIES = 20   # the state file is asked again this many times, 0.1 s apart


def holder(lock: Path, state: Callable[[], dict], tries: int = STATE_WAIT_TRIES) -> int | None:
    """The pid of the worker holding `lock` (-1: one holds it, pid not yet known), or None."""
    if not lock.exists():
        return None
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        # A worker writes its pid as soon as it holds the lock; the state read in that instant may still be the
        # previous worker's (finished) or missing: ask again for a moment before answering "one runs, pid unknown".
        for _ in range(tries):
            info = state()
            if info.get("pid") and not info.get("finished"):
                return int(info["pid"])
            time.sleep(0.1)
        return -1
    finally:
        os.close(fd)
    return None


@contextlib.contextmanager
def held(lock: Path) -> Iterator[bool]:
    """Hold `lock` exclusively for the block, as a worker does for as long as it runs: yields True, or False at
    once when another worker holds it (the block then says so and does nothing)."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
