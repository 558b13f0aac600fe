"""The sync's derived state, below `sync`, `inbox` and `versions`, which all use it: the folder
`.papervault/sync/`, the cursors in it, and an import of records as `add` does it."""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from papervault.hashing import file_sha256, group_sha256
from papervault.models import SourceRecord
from papervault.vault.store import atomic_write
from papervault.workspace import Workspace


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def sync_dir(ws: Workspace) -> Path:
    return ws.state_dir / "sync"


def load_cursor(ws: Workspace, name: str) -> dict:
    path = sync_dir(ws) / f"{name}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}       # none yet, or unreadable (derived state): the next pass rebuilds it


def save_cursor(ws: Workspace, name: str, data: dict) -> None:
    sync_dir(ws).mkdir(parents=True, exist_ok=True)
    atomic_write(sync_dir(ws) / f"{name}.json", json.dumps(data, ensure_ascii=False, sort_keys=True))


def ingest_records(ws: Workspace, records: list[SourceRecord], what: str) -> tuple[Any, dict[str, str]]:
    """Import `records` as `add` does (its journal, dedup and one commit); returns the AddReport and, for each
    record's source, the paper it is now (new, merged or unchanged)."""
    from papervault.ingest import sync_job  # deferred: ingest loads the parser and the sources

    with sync_job(ws, what) as job:
        job.run(records)
        job.commit()
        papers = {}
        for rec in records:
            match = job.dedup.find(rec)
            if match is None and rec.pdfs:
                try:
                    pid = job.by_hash.get(group_sha256([file_sha256(Path(p)) for p in rec.pdfs]))
                except OSError:
                    pid = None
                if pid:
                    papers[rec.source] = pid
            elif match is not None:
                papers[rec.source] = match.paper_id
    return job.report, papers


def read_log(ws: Workspace) -> list[dict]:
    """The sync log, `.papervault/sync/log.jsonl`: one entry per pass that changed something."""
    path = sync_dir(ws) / "log.jsonl"
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue        # a line cut by a killed pass
    return out
