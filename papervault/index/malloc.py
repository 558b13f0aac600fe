"""The C allocator's arenas, bounded for the index's threads.

LanceDB (Rust, tokio), ONNX Runtime and Arrow allocate from many threads. glibc gives each contending thread an
arena of its own, up to eight per core, and memory freed in one arena is not reused by another: a sync that
writes, compacts and indexes window after window leaves each arena holding its own high-water mark, and the
resident size climbs with the number of windows, not with what a window holds. Two arenas, set before those
threads start, cost nothing measurable in speed here and keep the freed memory reusable (docs/scale.md gives the
figures). `trim()` hands the arenas' free pages back to the system between windows.

Only glibc has these calls; elsewhere (macOS, musl) both functions do nothing. A `MALLOC_ARENA_MAX` set in the
environment is the user's choice and is left as it is.
"""

from __future__ import annotations

import ctypes
import os
import sys

ARENAS = 2
_M_ARENA_MAX = -8   # mallopt parameter, glibc's malloc.h

_state: dict[str, object] = {"libc": None, "limited": None}


def _libc():
    if _state["libc"] is None:
        lib = False
        if sys.platform.startswith("linux"):
            try:
                candidate = ctypes.CDLL("libc.so.6")
                if hasattr(candidate, "mallopt") and hasattr(candidate, "malloc_trim"):
                    lib = candidate
            except OSError:
                pass
        _state["libc"] = lib
    return _state["libc"] or None


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Bound the allocator to `arenas` arenas for this process (once; before the index's threads start, so
    call it first). Returns whether the bound is in force."""
    if _state["limited"] is not None:
        return bool(_state["limited"])
    libc = _libc()
    limited = False
    if libc is not None and not os.environ.get("MALLOC_ARENA_MAX"):
        limited = bool(libc.mallopt(_M_ARENA_MAX, int(arenas)))
    _state["limited"] = limited
    return limited


def trim() -> None:
    """Return the allocator's free memory to the system (a window's buffers, once it is written)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(ctypes.c_size_t(0))
