"""The background fill: the passages a deferred sync left (index/store.py, DEFERRED_LEVELS) embedded by a
process of their own, so `papervault index` returns as soon as the index is searchable.

One fill runs per workspace at a time (an flock on `.papervault/fill.lock`, released by the kernel if the process
dies). It takes the workspace write lock only around each batch it writes, so another writer waits at most one
batch for it (vault/lock.py gives a fill's holder that grace). It writes what it is doing to
`.papervault/fill.json` for `papervault status`, and its output to `.papervault/logs/fill.log`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from papervault.workerlock import held, holder

FILL_COMMAND = "index --fill"   # the write lock's holder name while a fill writes a batch
STATE_WAIT_TRIES = 20            # `running` asks the state file again this many times, 0.1 s apart
LINGER_POLL = 1.0                # seconds between looks for more paragraphs while the arrival worker writes


def lock_path(ws) -> Path:
    return ws.state_dir / "fill.lock"


def state_path(ws) -> Path:
    return ws.state_dir / "fill.json"


def running(ws) -> int | None:
    """The pid of the fill running on this workspace, or None."""
    return holder(lock_path(ws), lambda: state(ws), STATE_WAIT_TRIES)


def state(ws) -> dict:
    """What the last or current fill reported: pid, done, total, started, updated, finished (or {})."""
    try:
        return json.loads(state_path(ws).read_text())
    except (OSError, ValueError):
        return {}


def start(ws) -> int | None:
    """Start a fill process for this workspace unless one runs; returns its pid (None when one was running).
    The process is detached (its own session): it outlives the command that started it."""
    if running(ws):
        return None
    log_dir = ws.state_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "fill.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "papervault", "index", "--fill", "--quiet",
                                 "--workspace", str(ws.root)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
                                start_new_session=True, cwd=str(ws.root))
    return proc.pid


def run(ws, index, progress=None) -> dict:
    """Run the fill here (the `papervault index --fill` process): returns the fill's report, or
    {"running": pid} when another fill holds the workspace."""
    with held(lock_path(ws)) as mine:
        if not mine:
            return {"running": running(ws)}
        started = time.time()
        info = {"pid": os.getpid(), "started": started, "done": 0, "total": None}
        _write_state(ws, info)             # at once: `running` names this fill while pending() reads the index
        info["total"] = index.pending()
        _write_state(ws, info)

        def step(done: int, total: int) -> None:
            info.update(done=done, total=total, updated=time.time())
            _write_state(ws, info)
            if progress:
                progress("fill", done, total)

        # another writer waits for one batch of ours at most; we wait for a whole command of theirs
        from papervault.parse.firstpass import in_hand, waiting, writing  # deferred: only in the fill process

        # papers still read by their first pass are left to the fill the arrival worker starts after their parse
        report = {"filled": 0, "pending": 0}
        while True:
            rep = index.fill(progress=step, lock=lambda: ws.write_lock(FILL_COMMAND, wait=24 * 3600),
                             skip=lambda: [*waiting(ws), *in_hand(ws)])
            report = {"filled": report["filled"] + rep["filled"], "pending": rep["pending"]}
            if not writing(ws):
                break
            # the arrival worker writes more full parses: their paragraphs follow, the models kept loaded
            time.sleep(LINGER_POLL)
        info.update(finished=time.time(), filled=report["filled"], pending=report["pending"],
                    seconds=round(time.time() - started, 2))
        _write_state(ws, info)
        return report


def _write_state(ws, info: dict) -> None:
    tmp = state_path(ws).with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, state_path(ws))
