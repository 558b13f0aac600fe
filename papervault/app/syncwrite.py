"""What a `papervault sync` pass writes and reports, whatever the source: the report, the sync log, metadata
updates and `left_source` marks under the write lock (journaled like `add`, one commit), the guard against a
source that looks emptied, and a replaced PDF parsed again through `add`'s own writer.

The sources themselves (`papervault.app.syncsources`) decide what changed; the pass (`papervault.app.sync`) runs
them in order.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from papervault.app.syncstate import now_iso, sync_dir
from papervault.errors import PapervaultError, SourceError
from papervault.identity import refresh_head
from papervault.ingest import recover, sync_job
from papervault.models import SourceRecord
from papervault.sources.files import pdf_record
from papervault.vault.journal import Journal
from papervault.vault.paper import without_anchors
from papervault.workspace import Workspace

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


# --- shared by the sources --------------------------------------------------------------------------------------

def _stat(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


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


def _file_stats(paths: list[str]) -> dict[str, list[int] | None]:
    """{path: [size, mtime_ns]} of a record's PDFs, main text first (dicts keep their order)."""
    return {str(p): _stat(Path(p)) for p in paths}


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


