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
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from papervault.app import inbox
from papervault.app.inbox import load as inbox_load
from papervault.app.indexing import update_index_reported as update_index
from papervault.app.refresh import surveys_gained
from papervault.app.syncstate import ingest_records as _ingest, load_cursor, now_iso, save_cursor, sync_dir  # noqa: F401
from papervault.app.versions import stale_surveys, sync_versions
from papervault.errors import InputError, LockedError, PapervaultError, SourceError, WorkspaceError
from papervault.hashing import file_sha256, group_sha256
from papervault.identity import refresh_head
from papervault.ingest import recover, sync_job
from papervault.models import SourceRecord
from papervault.sources import arxiv
from papervault.sources import zotero as z
from papervault.sources.catalog import catalog_path, counters as catalog_counters
from papervault.sources.files import pdf_record
from papervault.vault.journal import Journal
from papervault.vault.paper import without_anchors
from papervault.workspace import Workspace

Progress = Callable[[str, int, int | None], None]

# The record fields a source's update may change (only while the note still says what the source said).
FIELDS = ("title", "authors", "year", "venue", "doi", "url", "abstract")
LISTS = ("tags", "collections")


@dataclass
class SyncReport:
    added: list[dict] = field(default_factory=list)     # {source, item, paper, reason}
    updated: list[dict] = field(default_factory=list)   # {source, item, paper, fields, kept?, reason}
    marked: list[dict] = field(default_factory=list)    # {source, item, paper, reason}
    skipped: list[dict] = field(default_factory=list)   # {source, item?, reason}
    sources: list[dict] = field(default_factory=list)   # {source, status: changed|unchanged|failed, seconds, error?}
    commits: list[str] = field(default_factory=list)
    versions: list[dict] = field(default_factory=list)  # {paper, item, version: {from, to}, summary}
    stale_surveys: list[dict] = field(default_factory=list)     # {survey, paper, cited, now, quotes, reason}
    surveys_gained: list[dict] = field(default_factory=list)    # {survey, topic, entering, reason}
    inbox: list[dict] = field(default_factory=list)     # {id, query, title, score, reason}: new in the inbox
    recovered: dict = field(default_factory=dict)       # what undoing a killed run did first: {undone, kept}
    index: dict | None = None
    costs: dict = field(default_factory=dict)           # per source: what the pass read and asked (arxiv_versions)
    started: str = field(default_factory=now_iso)
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.marked)

    def as_dict(self) -> dict:
        return {"started": self.started, "seconds": self.seconds, "added": self.added, "updated": self.updated,
                "marked": self.marked, "skipped": self.skipped, "sources": self.sources, "commits": self.commits,
                "versions": self.versions, "stale_surveys": self.stale_surveys,
                "surveys_gained": self.surveys_gained, "inbox": self.inbox,
                "index": self.index, "costs": self.costs, "recovered": self.recovered}


# --- derived state -------------------------------------------------------------------------------

def _slug(kind: str, name: str) -> str:
    return f"{kind}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"


def _log(ws: Workspace, report: SyncReport) -> None:
    sync_dir(ws).mkdir(parents=True, exist_ok=True)
    line = {"at": report.started, "added": report.added, "updated": report.updated, "marked": report.marked,
            "versions": report.versions, "inbox": report.inbox, "surveys_gained": report.surveys_gained, "failed": [s for s in report.sources if s["status"] == "failed"]}
    with open(sync_dir(ws) / "log.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, ensure_ascii=False) + "\n")


def read_log(ws: Workspace) -> list[dict]:
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


# --- writing into the vault ----------------------------------------------------------------------

def _record_ingest(report: SyncReport, source: str, add_report, papers: dict[str, str],
                   items: dict[str, str]) -> None:
    """Say what `_ingest` did: `items` maps a record's source to the item name the report shows."""
    added = set(add_report.added)
    merged = {m["source"]: m for m in add_report.merged}
    problems = {p.source: p.error for p in add_report.problems}
    for src, item in items.items():
        pid = papers.get(src)
        if src in problems and (pid is None or pid not in added):
            report.skipped.append({"source": source, "item": item, "reason": problems[src]})
        elif pid in added:
            report.added.append({"source": source, "item": item, "paper": pid, "reason": "new in the source"})
        elif src in merged:
            report.updated.append({"source": source, "item": item, "paper": pid,
                                   "reason": f"already in the vault ({merged[src]['reason']}): merged"})
        elif pid:
            report.skipped.append({"source": source, "item": item, "paper": pid,
                                   "reason": "already in the vault, nothing new"})
    for w in add_report.warnings:
        report.skipped.append({"source": source, "item": w.source, "reason": f"warning: {w.error}"})


class _Writer:
    """Metadata updates and marks of one source, under the write lock, journaled like `add`, one commit."""

    def __init__(self, ws: Workspace, what: str):

        self.ws, self.vault, self.what = ws, ws.vault, what
        recover(ws)         # what a killed writer left is undone first, so this journal starts empty
        self.journal = Journal(ws.state_dir / "journal" / "add", ws.vault)
        self.touched: list[Path] = []
        self.lines: list[str] = []

    def update(self, pid: str, rec: SourceRecord, before: dict) -> tuple[list[str], list[str]]:
        """Fields of `rec` that changed since `before` (what the source said last time) written into the note,
        unless a person changed them in the vault; reader notes appended. Returns (changed, kept) field names."""

        meta = self.vault.read_meta(pid)
        changes: dict[str, Any] = {}
        kept: list[str] = []
        for f in FIELDS:
            new, old, have = getattr(rec, f), before.get(f), getattr(meta, f)
            if new in (None, "", []) or new == old or new == have:
                continue
            if have in (None, "", []) or have == old:
                changes[f] = new
            else:
                kept.append(f)          # the note says something else than the source did: a person's edit
        for f in LISTS:
            have = list(getattr(meta, f))
            gone = set(before.get(f) or []) - set(getattr(rec, f))
            value = [x for x in have if x not in gone] + [x for x in getattr(rec, f) if x not in have]
            if value != have:
                changes[f] = value
        if getattr(meta, "left_source", None):
            changes["left_source"] = None       # back in the source (restored from the trash)
        notes = self._append_notes(pid, rec)
        if changes:
            self.journal.touch(pid)
            self.vault.update_meta(pid, **changes)
            refresh_head(self.vault, pid)       # the note's title line follows, unless its body was edited
        done = [f for f in changes if f != "left_source"] + (["reader notes"] if notes else [])
        if changes or notes:
            self.touched.append(self.vault.paper_dir(pid))
            self.lines.append(f"- {pid}: updated {', '.join(done) or 'back in the source'}")
        return done, kept

    def _append_notes(self, pid: str, rec: SourceRecord) -> bool:
        """Zotero notes and annotations the paper's `reader-notes.md` does not hold yet, appended after what is
        there (a person's own lines in that file stay as they are)."""
        path = self.vault.guard(self.vault.paper_dir(pid) / "reader-notes.md")
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        new = "\n\n".join(n.strip() for n in rec.reader_notes if n.strip() and n.strip() not in old)
        if not new:
            return False
        self.journal.touch(pid)
        self.vault.write(path, (old.rstrip() + "\n\n" + new).strip() + "\n")
        return True

    def mark(self, pid: str, source: str, reason: str) -> bool:
        if not self.vault.has_paper(pid):
            return False
        meta = self.vault.read_meta(pid)
        if getattr(meta, "left_source", None):
            return False
        self.journal.touch(pid)
        self.vault.update_meta(pid, left_source={"source": source, "reason": reason, "since": now_iso()})
        self.touched.append(self.vault.paper_dir(pid))
        self.lines.append(f"- {pid}: marked ({reason})")
        return True

    def commit(self) -> str | None:
        if not self.touched:
            self.journal.clear()
            return None
        sha = self.vault.commit(f"sync: {self.what}: {len(self.lines)} changed\n\n" + "\n".join(self.lines[:200]),
                                list(dict.fromkeys(self.touched)))
        self.journal.clear()
        return sha


# --- Zotero --------------------------------------------------------------------------------------

def _stat(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _zotero_stamps(lib) -> dict[int, str]:
    """Per item: its highest version and dateModified with those of its attachments, notes and annotations, and
    how many of them there are (a child moved to the trash changes the count)."""
    nd = (lambda col: f" AND {col} NOT IN (SELECT itemID FROM deletedItems)") if lib.deleted else (lambda col: "")
    parts = ["SELECT itemID AS root, version, dateModified FROM items",
             "SELECT a.parentItemID, i.version, i.dateModified FROM itemAttachments a JOIN items i "
             "ON i.itemID = a.itemID WHERE a.parentItemID IS NOT NULL" + nd("a.itemID")]
    if "itemNotes" in lib.tables:
        parts.append("SELECT n.parentItemID, i.version, i.dateModified FROM itemNotes n JOIN items i "
                     "ON i.itemID = n.itemID WHERE n.parentItemID IS NOT NULL" + nd("n.itemID"))
    if "itemAnnotations" in lib.tables:
        parts.append("SELECT a.parentItemID, i.version, i.dateModified FROM itemAnnotations an "
                     "JOIN itemAttachments a ON a.itemID = an.parentItemID JOIN items i ON i.itemID = an.itemID "
                     "WHERE a.parentItemID IS NOT NULL" + nd("an.itemID"))
    sql = ("SELECT root, MAX(version), MAX(dateModified), COUNT(*) FROM (" + " UNION ALL ".join(parts)
           + ") GROUP BY root")
    return {r[0]: f"{r[1]}|{r[2]}|{r[3]}" for r in lib.conn.execute(sql)}


def _snapshot(rec: SourceRecord) -> dict:
    return {f: getattr(rec, f) for f in (*FIELDS, *LISTS)}


# A pass that would mark more than half of a source's papers as gone, and at least this many, is not what a person
# does (an emptied or half-written Zotero database, a folder unmounted or emptied): the source is stopped, nothing
# changed, until it looks sane again or the person confirms with `papervault sync --accept-removals SOURCE`.
REMOVALS_MIN = 3


def _check_removals(label: str, gone: int, total: int, accept: bool) -> None:
    if accept or gone < REMOVALS_MIN or 2 * gone <= total:
        return
    raise SourceError(f"{label} looks emptied: this pass would mark {gone} of its {total} papers as gone from it, "
                      "so nothing was changed", fix="if you did remove them, run `papervault sync "
                      f"--accept-removals {label}`; otherwise the next pass tries again")


def _clear_marks(ws: Workspace, report: SyncReport, label: str, back: dict[str, str]) -> None:
    """Papers `back` ({item: paper}) in their source again: the `left_source` mark this source put on them is
    removed (one commit), and the pass says so instead of "already in the vault"."""
    todo = {}
    for item, pid in back.items():
        try:
            left = getattr(ws.vault.read_meta(pid), "left_source", None) if ws.vault.has_paper(pid) else None
        except PapervaultError:
            continue
        if isinstance(left, dict) and left.get("source") == label:
            todo[item] = pid
    if not todo:
        return
    with ws.write_lock("sync"):
        writer = _Writer(ws, label)
        for item, pid in todo.items():
            writer.journal.touch(pid)
            ws.vault.update_meta(pid, left_source=None)
            writer.touched.append(ws.vault.paper_dir(pid))
            writer.lines.append(f"- {pid}: back in the source")
        sha = writer.commit()
    if sha:
        report.commits.append(sha)
    cleared = set(todo)
    report.skipped[:] = [e for e in report.skipped if not (e.get("source") == label and e.get("item") in cleared
                                                           and "nothing new" in e.get("reason", ""))]
    report.updated += [{"source": label, "item": item, "paper": pid, "fields": ["left_source"],
                        "reason": "back in the source: its mark was cleared"} for item, pid in todo.items()]


def sync_zotero(ws: Workspace, report: SyncReport, *, force: bool = False, accept: bool = False) -> str:
    """One pass over the Zotero library of `[sync] zotero`; returns "changed" or "unchanged"."""

    s = ws.settings.sync
    data_dir = Path(s.zotero).expanduser()
    if not data_dir.is_absolute():
        data_dir = (ws.root / data_dir).resolve()
    db = data_dir / "zotero.sqlite"
    if not db.is_file():
        raise SourceError(f"no zotero.sqlite in {data_dir}", fix="set [sync] zotero to the Zotero data directory")
    stat = [_stat(db), _stat(data_dir / "zotero.sqlite-wal")]
    cursor = load_cursor(ws, "zotero")
    follow = {"dir": str(data_dir), "collections": sorted(s.collections)}
    known: dict[str, dict] = cursor.get("items", {}) if cursor.get("follow") == follow else {}
    if not force and cursor.get("stat") == stat and cursor.get("follow") == follow:
        # the database file is as it was: no item changed; a PDF replaced in storage/ is seen by its stat
        replaced = _replaced_pdfs(ws, known, report)
        if replaced:
            save_cursor(ws, "zotero", {"stat": stat, "follow": follow, "items": known, "synced": now_iso()})
        return "changed" if replaced else "unchanged"
    tmp = Path(tempfile.mkdtemp(prefix="papervault-sync-"))
    try:
        copy = z._copy_database(data_dir, tmp)
        conn = z._connect(copy, db)
        try:
            lib = z._Library(conn, data_dir, z.base_attachment_dir(data_dir))
            items: dict[int, tuple] = {}
            for coll in (s.collections or [None]):
                for row in lib.item_ids(coll, None):
                    items[row[0]] = row
            stamps = _zotero_stamps(lib)
            trashed = {r[0] for r in conn.execute("SELECT i.key FROM items i JOIN deletedItems d USING (itemID)")} \
                if lib.deleted else set()
            all_keys = {r[0] for r in conn.execute("SELECT key FROM items")}
            current = {row[1]: (iid, stamps.get(iid, "")) for iid, row in items.items()}
            todo = [items[iid] for key, (iid, stamp) in current.items()
                    if key not in known or known[key].get("stamp") != stamp]
            records: dict[str, SourceRecord] = {}
            for r in lib.records(sorted(todo), data_dir):
                if isinstance(r, SourceRecord):
                    records[r.zotero_key] = r
                else:
                    report.skipped.append({"source": "zotero", "item": r.source, "reason": r.message})
        finally:
            conn.close()
    except sqlite3.OperationalError as exc:
        raise SourceError(f"{db}: could not be read ({exc})",
                          fix="Zotero may be writing it: the next pass tries again") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    gone = [k for k in known if k not in current]
    _check_removals("zotero", sum(1 for k in gone if known[k].get("paper")),
                    sum(1 for e in known.values() if e.get("paper")), accept)
    new = {k: r for k, r in records.items() if k not in known or not known[k].get("paper")}
    changed = {k: r for k, r in records.items() if k not in new}
    if new:
        add_report, papers = _ingest(ws, list(new.values()), "sync zotero")
        report.commits += add_report.commits
        _record_ingest(report, "zotero", add_report, papers, {r.source: k for k, r in new.items()})
        for k, r in new.items():
            if papers.get(r.source):
                known[k] = {"stamp": current[k][1], "paper": papers[r.source], "fields": _snapshot(r),
                            "pdfs": _file_stats(r.pdfs)}
        _clear_marks(ws, report, "zotero", {k: papers[r.source] for k, r in new.items() if papers.get(r.source)})
    if changed or gone:
        with ws.write_lock("sync"):
            writer = _Writer(ws, "zotero")
            for k, r in changed.items():
                pid = known[k]["paper"]
                if not ws.vault.has_paper(pid):
                    report.skipped.append({"source": "zotero", "item": k, "paper": pid,
                                           "reason": "its paper was deleted from the vault"})
                    known[k]["stamp"] = current[k][1]
                    continue
                done, kept = writer.update(pid, r, known[k].get("fields") or {})
                if done:
                    entry = {"source": "zotero", "item": k, "paper": pid, "fields": done,
                             "reason": "changed in Zotero"}
                    if kept:
                        entry["kept"] = kept
                    report.updated.append(entry)
                elif kept:
                    report.skipped.append({"source": "zotero", "item": k, "paper": pid,
                                           "reason": f"changed in Zotero, but {', '.join(kept)} edited in the "
                                                     "vault: kept as edited"})
                else:
                    report.skipped.append({"source": "zotero", "item": k, "paper": pid,
                                           "reason": "modified in Zotero, nothing papervault keeps changed"})
                known[k] = {"stamp": current[k][1], "paper": pid, "fields": _snapshot(r),
                            "pdfs": known[k].get("pdfs") if "pdfs" in known[k] else _file_stats(r.pdfs),
                            "want": _file_stats(r.pdfs)}
            for k in gone:
                pid = known[k].get("paper")
                reason = ("moved to Zotero's trash" if k in trashed else
                          "removed from the followed collections" if k in all_keys and s.collections else
                          "deleted from Zotero")
                if pid and writer.mark(pid, "zotero", reason):
                    report.marked.append({"source": "zotero", "item": k, "paper": pid, "reason": reason})
                del known[k]
            sha = writer.commit()
            if sha:
                report.commits.append(sha)
    replaced = _replaced_pdfs(ws, known, report)
    save_cursor(ws, "zotero", {"stat": stat, "follow": follow, "items": known, "synced": now_iso()})
    return "changed" if (new or changed or gone or replaced) else "unchanged"


def _file_stats(paths: list[str]) -> dict[str, list[int] | None]:
    """{path: [size, mtime_ns]} of a record's PDFs, main text first (dicts keep their order)."""
    return {str(p): _stat(Path(p)) for p in paths}


def _replaced_pdfs(ws: Workspace, known: dict[str, dict], report: SyncReport) -> list[str]:
    """Items whose PDF files changed since they were last read (a replaced attachment: another file, or the same
    file with other bytes): their paper is parsed again from the main PDF, its full text, note (a note a person
    edited is kept, the new one goes to `note.new.md`) and index brought up to date. The cost is one stat per
    followed PDF; only a file whose stat changed is hashed. Returns the items parsed again."""

    out = []
    for key, entry in known.items():
        pid, was = entry.get("paper"), entry.get("pdfs")
        want = entry.pop("want", None)
        files = want if want is not None else was
        if not pid or not files or was is None:
            if want is not None:
                entry["pdfs"] = want
            continue
        now = _file_stats(list(files))
        if now == was:
            continue
        paths = [p for p, st in now.items() if st is not None]
        if not paths or not ws.vault.has_paper(pid):
            entry["pdfs"] = now
            continue
        try:
            sha = group_sha256([file_sha256(Path(p)) for p in paths])
        except OSError as exc:
            report.skipped.append({"source": "zotero", "item": key, "paper": pid,
                                   "reason": f"attachment cannot be read: {exc.strerror or exc}"})
            continue
        if sha == ws.vault.read_meta(pid).sha256:
            entry["pdfs"] = now         # touched, or another path to the same bytes
            continue
        try:
            done = _reparse(ws, pid, [Path(p) for p in paths], sha, source=_zotero_source(ws, pid, key),
                            what="sync zotero", reason="Zotero attachment replaced")
        except PapervaultError as exc:
            done = {"error": str(exc)}
        if done.get("error"):
            report.skipped.append({"source": "zotero", "item": key, "paper": pid, "reason": done["error"]})
            continue            # tried again next pass (the stat stays as it was)
        entry["pdfs"] = now
        report.commits += [c for c in [done.get("commit")] if c]
        report.updated.append({"source": "zotero", "item": key, "paper": pid, "fields": ["full text"],
                               "reason": "the Zotero attachment was replaced: parsed again"
                                         + ("; the note was edited by a person and kept (the new one is "
                                            "note.new.md)" if done.get("kept") else "")})
        out.append(key)
    return out


def _zotero_source(ws: Workspace, pid: str, key: str) -> str | None:
    """The paper's `zotero://` source for item `key` (so a re-parse adds no file path to its sources)."""
    try:
        sources = ws.vault.read_meta(pid).sources
    except PapervaultError:
        return None
    return next((x for x in sources if x.startswith("zotero://") and x.endswith("/" + key)), None)


# --- folders -------------------------------------------------------------------------------------

def _pdfs(folder: Path) -> dict[str, list[int]]:
    out = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            if name.lower().endswith(".pdf") and not name.startswith("."):
                p = Path(root) / name
                st = _stat(p)
                if st:
                    out[str(p.relative_to(folder))] = st
    return out


def sync_folder(ws: Workspace, folder_setting: str, report: SyncReport, *, accept: bool = False) -> str:
    """One pass over a watched folder of PDFs; returns "changed" or "unchanged".

    Files are known by their content: a file whose bytes are another known file's (moved, renamed, two files
    swapped) is that paper, never parsed into the other one. A file that no longer reads as a paper (cut short,
    emptied) leaves its paper as it was, with one line in the report."""

    folder = Path(folder_setting).expanduser()
    if not folder.is_absolute():
        folder = (ws.root / folder).resolve()
    name = _slug("folder", str(folder))
    label = f"folder:{folder_setting}"
    if not folder.is_dir():
        raise SourceError(f"watched folder {folder} does not exist", fix="create it or remove it from [sync] folders")
    cursor = load_cursor(ws, name)
    known: dict[str, dict] = cursor.get("files", {})
    by_sha = {e["sha"]: e["paper"] for e in known.values() if e.get("sha") and e.get("paper")}
    now = _pdfs(folder)
    fresh, replaced, moved = [], [], {}
    for rel, st in now.items():
        before = known.get(rel)
        if before and before.get("stat") == st:
            continue
        if before and before.get("refused") == st:
            report.skipped.append({"source": label, "item": rel, "paper": before.get("paper"),
                                   "reason": before.get("problem") or "the file does not read as its paper"})
            continue
        try:
            sha = file_sha256(folder / rel)
        except OSError as exc:
            report.skipped.append({"source": label, "item": rel, "reason": f"cannot read: {exc.strerror or exc}"})
            continue
        if before and before.get("sha") == sha:
            before["stat"] = st         # touched, same bytes (or back as they were)
            before.pop("refused", None)
            before.pop("problem", None)
            continue
        if sha in by_sha:               # another known file's bytes: that paper, moved here
            moved[rel] = {"stat": st, "sha": sha, "paper": by_sha[sha]}
            continue
        (replaced if before and before.get("paper") else fresh).append((rel, st, sha))
    gone = [rel for rel in known if rel not in now]
    held = {e["paper"] for rel, e in known.items() if rel in now and rel not in moved and e.get("paper")}
    held |= {e["paper"] for e in moved.values()} | {known[rel]["paper"] for rel, _, _ in replaced}
    leaving = {known[rel]["paper"]: rel for rel in known if (rel not in now or rel in moved)
               and known[rel].get("paper") and known[rel]["paper"] not in held}
    _check_removals(label, len(leaving), len({e["paper"] for e in known.values() if e.get("paper")}), accept)
    where = {e["sha"]: r for r, e in known.items() if e.get("sha") and e.get("paper")}
    for rel, entry in moved.items():
        was = where.get(entry["sha"])
        known[rel] = entry
        report.skipped.append({"source": label, "item": rel, "paper": entry["paper"],
                               "reason": f"the same file as {was} was (moved, renamed or swapped): its paper"})
    if fresh:
        recs = {rel: pdf_record([folder / rel]) for rel, _, _ in fresh}
        add_report, papers = _ingest(ws, list(recs.values()), "sync folder")
        report.commits += add_report.commits
        _record_ingest(report, label, add_report, papers, {r.source: rel for rel, r in recs.items()})
        for rel, st, sha in fresh:
            pid = papers.get(recs[rel].source)
            if pid:
                known[rel] = {"stat": st, "sha": sha, "paper": pid}
        _clear_marks(ws, report, label, {rel: known[rel]["paper"] for rel, _, _ in fresh if rel in known})
    _clear_marks(ws, report, label, {rel: e["paper"] for rel, e in moved.items()})
    for rel, st, sha in replaced:
        pid = known[rel]["paper"]
        try:
            done = _reparse(ws, pid, folder / rel, sha)
        except PapervaultError as exc:
            done = {"error": str(exc)}
        if done.get("error"):
            problem = f"not read again, the paper is kept as it was: {done['error']}"
            report.skipped.append({"source": label, "item": rel, "paper": pid, "reason": problem})
            known[rel]["refused"], known[rel]["problem"] = st, problem[:500]
            continue
        report.commits += [c for c in [done.get("commit")] if c]
        report.updated.append({"source": label, "item": rel, "paper": pid, "fields": ["full text"],
                               "reason": "the file's content changed: parsed again"
                                         + ("; the note was edited by a person and kept" if done.get("kept") else "")})
        known[rel] = {"stat": st, "sha": sha, "paper": pid}
    for rel in gone:
        del known[rel]
    found = {known[rel]["paper"] for rel, _, _ in fresh if rel in known}
    leaving = {pid: rel for pid, rel in leaving.items() if pid not in found}     # merged into by a new file
    if leaving:
        with ws.write_lock("sync"):
            writer = _Writer(ws, label)
            for pid, rel in leaving.items():
                reason = ("file removed from the watched folder" if rel not in now else
                          "the file now holds another paper's content")
                if writer.mark(pid, label, reason):
                    report.marked.append({"source": label, "item": rel, "paper": pid, "reason": reason})
            sha = writer.commit()
            if sha:
                report.commits.append(sha)
    save_cursor(ws, name, {"folder": str(folder), "files": known, "synced": now_iso()})
    return "changed" if (fresh or replaced or gone or moved) else "unchanged"


_WORD = re.compile(r"[^\W\d_]{2,}")


def _words(text: str) -> int:
    return len(_WORD.findall(without_anchors(text)))


def _shrank(vault, pid: str, parsed) -> str | None:
    """Why a new parse of a paper's file is not the paper any more (a file cut short or emptied reads as a few
    words, or none), or None. Such a parse never replaces the full text and note the paper has."""
    now = _words(parsed.markdown)
    if now < 5:
        return f"the file now reads as {now} words on {parsed.pages} page(s) (cut short or emptied?)"
    try:
        had = _words(vault.read_fulltext(pid))
    except (OSError, PapervaultError):
        return None
    if had >= 100 and now * 10 < had:
        return f"the file now reads as {now} words where the paper had {had} (cut short?)"
    return None


def _reparse(ws: Workspace, pid: str, paths: Path | list[Path], sha: str, *, source: str | None = None,
             what: str = "sync folder", reason: str = "file replaced") -> dict:
    """Parse a paper's replaced PDF again and write its full text (and its note, unless a person edited it),
    through `add`'s own writer: journaled, one commit. `source` names the record (default: the file)."""

    rec = pdf_record(paths if isinstance(paths, list) else [paths])
    if source:
        rec = rec.model_copy(update={"source": source})
    with sync_job(ws, what) as job:
        parsed = job.parse_one(rec)
        if isinstance(parsed, str):
            return {"error": parsed}
        shrank = _shrank(job.vault, pid, parsed)
        if shrank:
            return {"error": shrank}
        meta = job.vault.read_meta(pid)
        meta.sources = list(dict.fromkeys([*meta.sources, rec.source]))
        edited = job.vault.is_edited(pid)
        job.store_again(meta, rec, parsed, sha, origin="pdf", reason=reason)
        return {"commit": job.commit(), "kept": edited}


# --- arXiv saved queries -------------------------------------------------------------------------

def sync_arxiv(ws: Workspace, query: str, report: SyncReport) -> str:
    """A saved query's new matches into the inbox (`papervault.app.inbox`), metadata only: nothing is added to
    the vault until a person accepts one (`papervault inbox accept ID`)."""

    name = _slug("arxiv", query)
    cursor = load_cursor(ws, name)
    seen = set(cursor.get("seen", []))
    found = arxiv.search(query, ws.settings.sync.arxiv_max, ws.settings)
    fresh = [c for c in found if c.record.arxiv and c.record.arxiv not in seen]
    new = []
    if fresh:
        in_vault, texts = inbox.vault_arxiv(ws)
        new = inbox.add_matches(ws, query, fresh, in_vault, texts, now_iso())
        report.inbox += [{k: e[k] for k in ("id", "query", "title", "score", "reason")} for e in new]
        seen |= {c.record.arxiv for c in fresh}
    save_cursor(ws, name, {"query": query, "seen": sorted(seen), "synced": now_iso()})
    return "changed" if new else "unchanged"


# --- the pass ------------------------------------------------------------------------------------

def sources(ws: Workspace, accept: frozenset[str] = frozenset()) -> list[tuple[str, Callable[[SyncReport], str]]]:
    """(name, one pass) of every source `[sync]` follows, in order; `accept` names the sources whose removals
    a person confirmed (`--accept-removals`)."""
    s = ws.settings.sync
    out: list[tuple[str, Callable[[SyncReport], str]]] = []
    if s.zotero:
        out.append(("zotero", lambda r: sync_zotero(ws, r, accept="zotero" in accept)))
    for folder in s.folders:
        out.append((f"folder:{folder}",
                    lambda r, f=folder: sync_folder(ws, f, r, accept=f"folder:{f}" in accept)))
    for query in s.arxiv:
        out.append((f"arxiv:{query}", lambda r, q=query: sync_arxiv(ws, q, r)))
    if s.arxiv_versions:

        out.append(("arxiv_versions", lambda r: sync_versions(ws, r)))
    return out


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
    s = ws.settings.sync
    have = (["zotero"] if s.zotero else []) + [f"folder:{f}" for f in s.folders]
    out = set()
    for name in names:
        name = name if name in have else f"folder:{name}"
        if name not in have:
            raise InputError(f"--accept-removals {name.removeprefix('folder:')!r} names no source this workspace "
                             "follows", fix="give one of: " + (", ".join(have) or "(none: see [sync])"))
        out.add(name)
    return frozenset(out)


def sync(ws: Workspace, *, progress: Progress | None = None, index: bool = True,
         accept_removals: tuple[str, ...] | list[str] = ()) -> SyncReport:
    """One pass over every followed source, then the index (when anything changed, or an earlier pass died
    before its index was brought up to date). `accept_removals` names the sources whose papers may all be
    marked as gone this pass (a person emptied them on purpose)."""
    ws.require()
    t0 = time.perf_counter()
    report = SyncReport()
    todo = require_sources(ws, removable(ws, accept_removals))
    report.recovered = _recover_first(ws)
    cat = catalog_path(ws)
    seen = start = catalog_counters(cat)
    for n, (name, run) in enumerate(todo, 1):
        t = time.perf_counter()
        try:
            status = run(report)
            entry = {"source": name, "status": status}
        except PapervaultError as exc:      # one source failing never stops the others
            entry = {"source": name, "status": "failed", "error": str(exc)}
        except Exception as exc:
            entry = {"source": name, "status": "failed", "error": f"internal error: {type(exc).__name__}: {exc}"}
        entry["seconds"] = round(time.perf_counter() - t, 3)
        now = catalog_counters(cat)     # what bringing add's catalog in step cost this source (rebuilt or caught up)
        entry["catalog"] = {k: now[k] - seen[k] for k in now}
        seen = now
        report.sources.append(entry)
        if progress:
            progress("sync", n, len(todo))
    flag = sync_dir(ws) / "index-pending"
    if index and (report.changed or flag.exists()):
        sync_dir(ws).mkdir(parents=True, exist_ok=True)
        flag.touch()        # a pass that dies before the index is done leaves it for the next pass
        report.index = update_index(ws)
        if "error" not in report.index:
            flag.unlink(missing_ok=True)
            report.surveys_gained = _surveys_gained(ws, report)
    report.costs["catalog"] = {k: seen[k] - start[k] for k in seen}
    report.seconds = round(time.perf_counter() - t0, 3)
    if report.changed or report.inbox or report.surveys_gained or any(s["status"] == "failed" for s in report.sources):
        _log(ws, report)
    return report


def _recover_first(ws: Workspace) -> dict:
    """Undo what a killed pass (or add) wrote and left uncommitted, before this pass writes: {undone, kept},
    empty when there was nothing; a writer at work (the lock held) is left alone."""
    try:
        with ws.write_lock("sync"):
            done = recover(ws)
    except LockedError:
        return {}
    return done.as_dict() if done.undone or done.kept else {}


def _surveys_gained(ws: Workspace, report: SyncReport) -> list[dict]:
    """The surveys whose topic the pass's new papers would enter (papervault.app.refresh); never fails a pass."""

    added = {e["paper"] for e in report.added if e.get("paper")}
    try:
        return surveys_gained(ws, added) if added else []
    except Exception as exc:        # a survey that cannot be scored is said, the pass's work is done
        return [{"survey": None, "error": f"{type(exc).__name__}: {exc}"[:300]}]


# --- what changed --------------------------------------------------------------------------------

def parse_since(since: str | None) -> _dt.datetime:
    """`7d`, `12h`, `30m`, `2w` ago, or a date (YYYY-MM-DD) or ISO time, as an aware UTC datetime."""


    text = (since or "7d").strip().lower()
    m = re.fullmatch(r"(\d{1,6})\s*([mhdw])", text)
    now = _dt.datetime.now(_dt.timezone.utc)
    if m:
        n = int(m.group(1))
        try:
            return now - {"m": _dt.timedelta(minutes=n), "h": _dt.timedelta(hours=n), "d": _dt.timedelta(days=n),
                          "w": _dt.timedelta(weeks=n)}[m.group(2)]
        except OverflowError:
            raise InputError(f"--since {since!r} reaches back before the year 1",
                             fix="give a shorter duration, or a date like 2000-01-01") from None
    try:
        when = _dt.datetime.fromisoformat(text.upper() if "t" in text else text)
    except ValueError:
        raise InputError(f"--since {since!r} is neither a duration nor a date",
                         fix="give 7d, 12h, 30m, 2w, or a date like 2026-01-31") from None
    when = when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)
    if when > now:
        raise InputError(f"--since {since!r} is in the future", fix="give a date before today, or 7d, 12h, 2w")
    return when


MAX_CHANGES = 1000      # entries per kind in one answer (the rest counted)


def changes(ws: Workspace, since: str | None = "7d") -> dict:
    """Papers added, updated and deleted since `since` (from the vault's git history: a commit adding a note
    added the paper, one changing its folder updated it) and marked as gone from their source (the sync log)."""

    ws.require()
    when = parse_since(since)
    vault = ws.vault
    out: dict[str, Any] = {"since": when.isoformat(), "added": [], "updated": [], "marked": [], "deleted": [],
                           "versions": [], "inbox": [], "stale_surveys": [], "surveys_gained": []}
    # git reads --since itself (a long history is not walked past it) but does not read every date: far ones
    # (before 1970, after 2099) it ignores, listing everything. Each commit's own time is compared below too.
    git_since = [f"--since={when.isoformat()}"] if 1971 <= when.year <= 2099 else []
    proc = subprocess.run(["git", "-C", str(vault.root), "log", *git_since, "--reverse",
                           "--format=@@%H %cI %s", "--name-status", "--", "papers"],
                          capture_output=True, text=True)
    added: dict[str, dict] = {}
    updated: dict[str, dict] = {}
    deleted: dict[str, dict] = {}
    sha = at = subject = ""
    early = False
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        if line.startswith("@@"):
            sha, at, subject = (line[2:].split(" ", 2) + ["", ""])[:3]
            try:
                early = _dt.datetime.fromisoformat(at) < when
            except ValueError:
                early = False
            continue
        if early:
            continue
        parts = line.split("\t")
        if len(parts) < 2:
            continue
        status, path = parts[0], parts[-1]
        bits = path.split("/")
        if len(bits) < 3 or bits[0] != "papers":
            continue
        pid, name = bits[1], "/".join(bits[2:])
        if name == "note.md" and status.startswith("A"):
            added[pid] = {"id": pid, "at": at, "commit": sha[:12], "why": subject[:200]}
            deleted.pop(pid, None)
            updated.pop(pid, None)     # its other files, listed before note.md in the same commit
        elif name == "note.md" and status.startswith("D"):
            deleted[pid] = {"id": pid, "at": at, "commit": sha[:12], "why": subject[:200]}
            added.pop(pid, None)
            updated.pop(pid, None)
        elif pid not in added:
            e = updated.setdefault(pid, {"id": pid, "at": at, "commit": sha[:12], "what": []})
            e.update(at=at, commit=sha[:12])
            what = {"note.md": "note", "paper.md": "full text", "reader-notes.md": "highlights and notes"}.get(
                name, "figures" if name.startswith("figures/") else name)
            if what not in e["what"]:
                e["what"].append(what)
    for kind, found in (("added", added), ("updated", updated), ("deleted", deleted)):
        rows = list(found.values())
        for e in rows[:MAX_CHANGES]:
            if kind != "deleted" and vault.has_paper(e["id"]):
                try:
                    meta = vault.read_meta(e["id"])
                except PapervaultError as exc:   # a note that leads out of the vault, or broken: said, not read
                    e["problem"] = str(exc)[:300]
                    continue
                e["title"] = meta.title
                if getattr(meta, "left_source", None):
                    e["left_source"] = meta.left_source
        out[kind] = rows[:MAX_CHANGES]
        if len(rows) > MAX_CHANGES:
            out[f"{kind}_more"] = len(rows) - MAX_CHANGES
    for entry in read_log(ws):
        try:
            at = _dt.datetime.fromisoformat(entry.get("at", ""))
        except ValueError:
            continue
        if at < when:
            continue
        for m in entry.get("marked", []):
            out["marked"].append({"id": m.get("paper"), "at": entry["at"], "source": m.get("source"),
                                  "item": m.get("item"), "reason": m.get("reason")})
        for v in entry.get("versions", []):
            out["versions"].append({"id": v.get("paper"), "at": entry["at"], "item": v.get("item"),
                                    "version": v.get("version"), "summary": v.get("summary")})
        for g in entry.get("surveys_gained", []):
            if g.get("survey"):
                out["surveys_gained"].append({**g, "at": entry["at"]})
        for e in entry.get("inbox", []):
            out["inbox"].append({"id": e.get("id"), "at": entry["at"], "query": e.get("query"),
                                 "title": e.get("title"), "score": e.get("score"), "reason": e.get("reason")})
    out["marked"] = _still_marked(vault, out["marked"])
    for kind in ("marked", "versions", "inbox"):
        out[kind] = out[kind][:MAX_CHANGES]

    held = inbox_load(ws)["items"]
    out["inbox"] = [e for e in out["inbox"] if e["id"] in held]      # accepted or dismissed since: not news
    out["stale_surveys"] = stale_surveys(ws)
    return out


def _still_marked(vault, marked: list[dict]) -> list[dict]:
    """The marks of the sync log whose paper still carries one (a paper back in its source is not news), the
    latest mark of a paper once."""
    out: dict[str, dict] = {}
    for m in marked:
        pid = m.get("id")
        if not isinstance(pid, str) or pid in out and out[pid] is None:
            continue
        if pid not in out:
            try:
                left = getattr(vault.read_meta(pid), "left_source", None) if vault.has_paper(pid) else None
            except PapervaultError:
                left = None
            if not left:
                out[pid] = None
                continue
        out[pid] = m
    return [m for m in out.values() if m is not None][:MAX_CHANGES]
