"""Where a command's time goes: wall and CPU seconds per named phase, reported by `add --json` and `index --json`
as `timings` (bench/time_to_search.py prints them).

    with timing.recording() as t:        # the command
        ...
        with timing.phase("parse"):      # anywhere below it, without passing anything down
            ...
    t.as_dict()  # {"parse": {"wall_s": 1.2, "cpu_s": 0.4, "calls": 3}, ...}

CPU seconds are this process's (all its threads); work done in other processes (the parser's worker processes)
is reported by the code that waits for it with `add(name, wall, cpu)`. Phases may nest; a nested phase's time
is also inside its parent's. Outside `recording()` a phase costs two clock reads.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections import defaultdict

_CURRENT: contextvars.ContextVar["Timings | None"] = contextvars.ContextVar("papervault_timings", default=None)


class Timings:
    def __init__(self) -> None:
        self._wall: dict[str, float] = defaultdict(float)
        self._cpu: dict[str, float] = defaultdict(float)
        self._calls: dict[str, int] = defaultdict(int)

    def add(self, name: str, wall: float, cpu: float | None = None) -> None:
        self._wall[name] += wall
        if cpu is not None:
            self._cpu[name] += cpu
        self._calls[name] += 1

    def as_dict(self) -> dict[str, dict]:
        return {name: {"wall_s": round(self._wall[name], 3), "cpu_s": round(self._cpu.get(name, 0.0), 3),
                       "calls": self._calls[name]} for name in self._wall}


@contextlib.contextmanager
def recording():
    """Record the phases of the code inside (in this thread and the threads it starts with copied contexts)."""
    t = Timings()
    token = _CURRENT.set(t)
    try:
        yield t
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def phase(name: str):
    t = _CURRENT.get()
    if t is None:
        yield
        return
    w, c = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        t.add(name, time.perf_counter() - w, time.process_time() - c)


def add(name: str, wall: float, cpu: float | None = None) -> None:
    """Record time measured elsewhere (another process's CPU seconds, a wait)."""
    t = _CURRENT.get()
    if t is not None:
        t.add(name, wall, cpu)
