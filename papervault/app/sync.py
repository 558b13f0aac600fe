"""`papervault sync`: one pass over every source the workspace follows (`[sync]` in papervault.toml).

A pass adds what is new, updates what changed, marks what left its source (a Zotero item in the trash or out of
a followed collection, a file gone from a watched folder) without deleting its note, then brings the index up to
date. Its cost follows the changes, not the library: each source keeps a cursor in derived state
(`.papervault/sync/<source>.json`):

- Zotero: the database file's stat (an untouched `zotero.sqlite` is not even copied), and per followed item a
  stamp (the highest `version` and `dateModified` of the item, its attachments, notes and annotations) with the
  paper it became and the fields it last gave;
- a folder: each PDF's (size, mtime_ns) and content hash (a file whose stat is unchanged is not read);
- an arXiv query: the ids it already brought in.

What a person changed is kept: a field is updated from the source only while the note still has the value the
source gave last time; Zotero notes and annotations are appended to `reader-notes.md`, never rewritten; a note
body a person edited is never rewritten. A source that fails (Zotero locked, arXiv unreachable) is reported and
the others go on. Each pass is appended to `.papervault/sync/log.jsonl` (read by `papervault changes`).

A pass is declared once, as the pipeline SYNC (docs/architecture.md, "The pipeline and its executors"):

    recover -> sources -> index (embed-batch*) -> surveys

run by the executor it is given: in this process by default, the Prefect executor in the `sync` flow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from papervault.app.context import RunContext
from papervault.app.indexing import embedding_parts, update_index_reported
from papervault.app.refresh import surveys_gained
from papervault.app.syncstate import load_cursor, now_iso, read_log, save_cursor, sync_dir  # noqa: F401
from papervault.app.syncwrite import SyncReport, _log
from papervault.app.syncsources import SyncSource
from papervault.errors import InputError, LockedError, PapervaultError, WorkspaceError
from papervault.ingest import recover
from papervault.pipeline.executors import InProcess
from papervault.pipeline.runner import Run, run
from papervault.pipeline.stage import Pipeline, Stage
from papervault.registry import SYNC_SOURCES
from papervault.sources.catalog import catalog_path, counters as catalog_counters
from papervault.workspace import Workspace

Progress = Callable[[str, int, int | None], None]

# --- the pass ------------------------------------------------------------------------------------

def followed(ws: Workspace) -> list[SyncSource]:
    """Every source `[sync]` follows, of every kind the registry holds (`papervault.registry.SYNC_SOURCES`), in
    pass order: by each kind's `order` (Zotero, folders, arXiv queries, arXiv versions), then its name."""
    kinds = sorted(SYNC_SOURCES.items().items(), key=lambda kv: (getattr(kv[1], "order", 100), kv[0]))
    return [src for _, kind in kinds for src in kind.followed(ws)]


def sources(ws: Workspace, accept: frozenset[str] = frozenset()) -> list[tuple[str, Callable[[SyncReport], str]]]:
    """(name, one pass) of every source `[sync]` follows, in order; `accept` names the sources whose removals
    a person confirmed (`--accept-removals`)."""
    return [(src.name, lambda r, src=src: src.run(r, accept=src.name in accept)) for src in followed(ws)]


def require_sources(ws: Workspace, accept: frozenset[str] = frozenset()
                    ) -> list[tuple[str, Callable[[SyncReport], str]]]:
    """`sources`, or the error that says how to follow one."""

    todo = sources(ws, accept)
    if not todo:
        raise WorkspaceError("papervault.toml follows no source", fix="add a [sync] section: zotero = \"~/Zotero\", "
                             "folders = [\"~/Papers\"] or arxiv = [\"a saved query\"] (docs/sources.md)")
    return todo


def removable(ws: Workspace, names: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The sources `--accept-removals` names (`zotero`, `folder:PATH` or the folder's PATH as papervault.toml
    writes it); a name no followed Zotero or folder has is a one-line error."""
    have = [src.name for src in followed(ws) if src.removable]
    out = set()
    for name in names:
        name = name if name in have else f"folder:{name}"
        if name not in have:
            raise InputError(f"--accept-removals {name.removeprefix('folder:')!r} names no source this workspace "
                             "follows", fix="give one of: " + (", ".join(have) or "(none: see [sync])"))
        out.add(name)
    return frozenset(out)


@dataclass
class SyncState:
    accept: frozenset[str]
    progress: Progress | None = None
    index: bool = True
    report: SyncReport = field(default_factory=SyncReport)
    run: Run | None = None
    stopped: bool = False


def _recover(r: Run, st: SyncState) -> dict:
    """Undo what a killed pass (or add) wrote and left uncommitted, before this pass writes: {undone, kept},
    empty when there was nothing; a writer at work (the lock held) is left alone."""
    ws = r.context.ws
    try:
        with ws.write_lock("sync"):
            done = recover(ws)
    except LockedError:
        return {}
    return done.as_dict() if done.undone or done.kept else {}


def _sources(r: Run, st: SyncState) -> None:
    """One pass over each followed source, with what bringing add's catalog in step cost it."""
    ws, report = r.context.ws, st.report
    todo = require_sources(ws, st.accept)
    cat = catalog_path(ws)
    seen = start = catalog_counters(cat)
    for n, (name, one) in enumerate(todo, 1):
        t = time.perf_counter()
        try:
            entry = {"source": name, "status": one(report)}
        except PapervaultError as exc:      # one source failing never stops the others
            entry = {"source": name, "status": "failed", "error": str(exc)}
        except Exception as exc:
            entry = {"source": name, "status": "failed", "error": f"internal error: {type(exc).__name__}: {exc}"}
        entry["seconds"] = round(time.perf_counter() - t, 3)
        now = catalog_counters(cat)     # what bringing add's catalog in step cost this source (rebuilt or caught up)
        entry["catalog"] = {k: now[k] - seen[k] for k in now}
        seen = now
        report.sources.append(entry)
        if st.progress:
            st.progress("sync", n, len(todo))
    report.costs["catalog"] = {k: seen[k] - start[k] for k in seen}


def _index(r: Run, st: SyncState) -> dict | None:
    """The one index update, when anything changed or an earlier pass died before its index was done."""
    ws = r.context.ws
    flag = sync_dir(ws) / "index-pending"
    if not (st.index and (st.report.changed or flag.exists())):
        return None
    sync_dir(ws).mkdir(parents=True, exist_ok=True)
    flag.touch()        # a pass that dies before the index is done leaves it for the next pass
    report = update_index_reported(ws, **embedding_parts(r))
    if "error" not in report:
        flag.unlink(missing_ok=True)
    return report


def _surveys(r: Run, st: SyncState) -> list[dict]:
    """The surveys whose topic the pass's new papers would enter (papervault.app.refresh); never fails a pass."""
    index = st.report.index
    added = {e["paper"] for e in st.report.added if e.get("paper")}
    if index is None or "error" in index or not added:
        return []
    try:
        return surveys_gained(r.context.ws, added)
    except Exception as exc:        # a survey that cannot be scored is said, the pass's work is done
        return [{"survey": None, "error": f"{type(exc).__name__}: {exc}"[:300]}]


def _set(name: str):
    def then(st: SyncState, value: Any) -> None:
        setattr(st.report, name, value)
    return then


SYNC = Pipeline("sync", (
    Stage("recover", _recover, writer=True, then=_set("recovered")),
    Stage("sources", _sources, writer=True),
    Stage("index", _index, writer=True, then=_set("index")),
    Stage("surveys", _surveys, writer=True, then=_set("surveys_gained")),
), doc="one pass over every followed source, then the index")


def sync(ws: Workspace, *, progress: Progress | None = None, index: bool = True,
         accept_removals: tuple[str, ...] | list[str] = (), executor: Any = None) -> SyncReport:
    """One pass over every followed source, then the index: SYNC through `executor` (in this process when
    None). `accept_removals` names the sources whose papers may all be marked as gone this pass (a person
    emptied them on purpose)."""
    ws.require()
    t0 = time.perf_counter()
    st = SyncState(removable(ws, accept_removals), progress, index)
    require_sources(ws, st.accept)      # no source followed: the error that says how, before any work
    run(SYNC, RunContext(ws), st, executor or InProcess())
    report = st.report
    report.seconds = round(time.perf_counter() - t0, 3)
    if report.changed or report.inbox or report.surveys_gained or any(s["status"] == "failed" for s in report.sources):
        _log(ws, report)
    return report
