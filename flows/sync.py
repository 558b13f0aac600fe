"""The Prefect flow `sync`: one pass of `papervault sync` (the declaration papervault.app.sync.SYNC, on the
Prefect executor) as a flow run, so the Prefect UI
shows each pass, what it added, updated and marked (the run's table artifact `papervault-sync`, its result
and its logs), and the sources that failed.

It runs two ways, the same flow both times:

- a deployment with an interval schedule in prefect.yaml (`prefect deploy --name sync`, a process worker on the
  `papervault` pool runs it; the workspace is the run's `workspace` parameter, else the worker's
  PAPERVAULT_WORKSPACE);
- `papervault sync --every 1h`: Prefect's own `serve` runs it on that interval in the command's process, for a
  person without a server (`served_deployment` builds what it serves).

A pass is safe to kill: its writes go through `add`'s journal and commits, its cursors are saved after its
commits, and the index is brought up to date by the next pass when a pass died before it.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from typing import Any

os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")

from prefect import flow, get_run_logger, serve as prefect_serve  # noqa: E402
from prefect.artifacts import create_table_artifact  # noqa: E402

from flows.executor import PrefectExecutor  # noqa: E402
from papervault.app.sync import sync as run_sync  # noqa: E402
from papervault.errors import InputError  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402

INTERVAL_RE = re.compile(r"^\s*(\d{1,6})\s*(s|m|min|h|d|w)\s*$", re.I)
UNITS = {"s": "seconds", "m": "minutes", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}
MIN_INTERVAL = _dt.timedelta(minutes=1)


def parse_interval(text: str) -> _dt.timedelta:
    """`30m`, `1h`, `1d`, `2w` (`90s` and more) as a timedelta; at least a minute."""
    m = INTERVAL_RE.match(text or "")
    if not m:
        raise InputError(f"--every {text!r} is not an interval", fix="give a number and a unit: 30m, 1h, 1d, 2w")
    value = _dt.timedelta(**{UNITS[m.group(2).lower()]: int(m.group(1))})
    if value < MIN_INTERVAL:
        raise InputError(f"--every {text!r} is shorter than a minute", fix="give 1m or more")
    return value


@flow(name="sync", log_prints=True)
def sync(workspace: str | None = None, index: bool = True) -> dict[str, Any]:
    """One pass over every source the workspace's [sync] follows; the report of `papervault sync --json`."""
    ws = Workspace.resolve(workspace).require()
    report = run_sync(ws, index=index, executor=PrefectExecutor()).as_dict()
    log = get_run_logger()
    log.info("sync of %s: added %d, updated %d, marked %d, skipped %d", ws.root, len(report["added"]),
             len(report["updated"]), len(report["marked"]), len(report["skipped"]))
    for s in report["sources"]:
        if s["status"] == "failed":
            log.warning("source %s failed: %s", s["source"], s["error"])
    publish(report)
    if report["sources"] and all(s["status"] == "failed" for s in report["sources"]):
        raise RuntimeError("every source failed: " + "; ".join(f"{s['source']}: {s['error']}" for s in report["sources"]))
    return report


ARTIFACT_KEY = "papervault-sync"
MAX_ROWS = 200


def _cell(value: Any, limit: int = 300) -> str:
    """A value from a source (a title, a file name, an error) as one line of plain text for the UI's table."""
    return " ".join(str(value if value is not None else "").split())[:limit]


def report_rows(report: dict[str, Any]) -> list[dict[str, str]]:
    """One row per change of a pass (added, updated, marked, new in the inbox, failed source), at most
    MAX_ROWS; the cells are plain text (the UI shows a table artifact's cells as text, never as HTML)."""
    rows = []
    for kind in ("added", "updated", "marked"):
        for e in report[kind]:
            rows.append({"change": kind, "source": _cell(e.get("source")), "item": _cell(e.get("item")),
                         "paper": _cell(e.get("paper")), "why": _cell(e.get("reason"))})
    for e in report.get("inbox", []):
        rows.append({"change": "inbox", "source": _cell(e.get("query")), "item": _cell(e.get("id")),
                     "paper": "", "why": _cell(e.get("reason"))})
    for s in report["sources"]:
        if s["status"] == "failed":
            rows.append({"change": "failed", "source": _cell(s["source"]), "item": "", "paper": "",
                         "why": _cell(s.get("error"))})
    return rows[:MAX_ROWS]


def summary(report: dict[str, Any]) -> str:
    failed = sum(s["status"] == "failed" for s in report["sources"])
    return (f"added {len(report['added'])}, updated {len(report['updated'])}, marked {len(report['marked'])}, "
            f"skipped {len(report['skipped'])}, inbox {len(report.get('inbox', []))}, failed sources {failed}")


def publish(report: dict[str, Any]) -> None:
    """The pass's changes as a table artifact of its flow run (key `papervault-sync`): the Prefect UI shows
    what each run added, updated and marked, and its failed sources; the description is the pass's counts."""
    rows = report_rows(report) or [{"change": "none", "source": "", "item": "", "paper": "",
                                    "why": "nothing new in any source"}]
    create_table_artifact(rows, key=ARTIFACT_KEY, description=summary(report))


def served_deployment(workspace: str, every: _dt.timedelta, *, index: bool = True):
    """The deployment `papervault sync --every` serves: this flow, on `every`, for `workspace`."""
    return sync.to_deployment(name="sync-every", interval=every, parameters={"workspace": workspace, "index": index},
                              description=f"papervault sync of {workspace} every {every}")


def serve(workspace: str, every: _dt.timedelta, *, index: bool = True) -> None:
    """Serve `served_deployment` until stopped (Prefect's own scheduler and runner, in this process)."""
    prefect_serve(served_deployment(workspace, every, index=index))
