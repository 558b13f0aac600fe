"""The sources `papervault sync` follows, each one pass that adds what is new, updates what changed and marks
what left: a Zotero library, a watched folder of PDFs, a saved arXiv query, and new versions of the vault's arXiv
papers. Each is a `SyncSource` found in the registry (`papervault.registry.SYNC_SOURCES`, the entry-point group
`papervault.sync_sources`), where another package can add its own.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, ClassVar, Iterable, Protocol, runtime_checkable

from papervault.app import inbox
from papervault.app.syncstate import ingest_records as _ingest, load_cursor, now_iso, save_cursor
from papervault.app.syncwrite import (SyncReport, _Writer, _check_removals, _clear_marks, _file_stats, _record_ingest,
                                      _reparse, _slug, _snapshot, _stat)
from papervault.app.versions import arxiv_papers, sync_versions
from papervault.errors import PapervaultError, SourceError
from papervault.hashing import file_sha256, group_sha256
from papervault.models import SourceRecord
from papervault.sources import arxiv
from papervault.sources import zotero as z
from papervault.sources.files import pdf_record
from papervault.sources.problems import SourceProblem
from papervault.workspace import Workspace


@runtime_checkable
class SyncSource(Protocol):
    """One source a sync pass follows. `followed(ws)` gives those of its kind that `[sync]` names; a source
    lists what it holds now (`list_items`: item -> what says it changed), fetches items as records
    (`fetch`), and runs one pass (`run`: "changed" or "unchanged"), which reads through the same two."""

    kind: ClassVar[str]         # its name in the registry
    order: ClassVar[int]        # where its sources come in a pass (the built-ins: 10 to 40; default 100)
    name: str                   # in reports and the sync log: zotero, folder:PATH, arxiv:QUERY, arxiv_versions
    removable: ClassVar[bool]   # whether it marks papers gone (and so `--accept-removals` may name it)

    @classmethod
    def followed(cls, ws: Workspace) -> list["SyncSource"]: ...

    def list_items(self) -> dict[str, Any]: ...

    def fetch(self, items: Iterable[str]) -> list[SourceRecord | SourceProblem]: ...

    def run(self, report: SyncReport, *, accept: bool = False) -> str: ...


# --- Zotero ------------------------------------------------------------------------------------------

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
    try:
        got = z.read_followed(data_dir, s.collections,
                              lambda key, stamp: key not in known or known[key].get("stamp") != stamp)
    except sqlite3.OperationalError as exc:
        raise SourceError(f"{db}: could not be read ({exc})",
                          fix="Zotero may be writing it: the next pass tries again") from None
    report.skipped += [{"source": "zotero", "item": r.source, "reason": r.message} for r in got.problems]
    current, records, trashed, all_keys = got.stamps, got.records, got.trashed, got.all_keys
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
                known[k] = {"stamp": current[k], "paper": papers[r.source], "fields": _snapshot(r),
                            "pdfs": _file_stats(r.pdfs)}
        _clear_marks(ws, report, "zotero", {k: papers[r.source] for k, r in new.items() if papers.get(r.source)})
    if changed or gone:
        with ws.write_lock("sync"):
            writer = _Writer(ws, "zotero")
            for k, r in changed.items():
                _update_item(writer, report, known, k, r, current[k])
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


def _update_item(writer: _Writer, report: SyncReport, known: dict[str, dict], k: str, r: SourceRecord,
                 stamp: str) -> None:
    """Item `k`, changed in Zotero, into its paper's note (the fields a person did not edit) and the cursor."""
    ws = writer.ws
    pid = known[k]["paper"]
    if not ws.vault.has_paper(pid):
        report.skipped.append({"source": "zotero", "item": k, "paper": pid,
                               "reason": "its paper was deleted from the vault"})
        known[k]["stamp"] = stamp
        return
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
    known[k] = {"stamp": stamp, "paper": pid, "fields": _snapshot(r),
                "pdfs": known[k].get("pdfs") if "pdfs" in known[k] else _file_stats(r.pdfs),
                "want": _file_stats(r.pdfs)}


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


def _scan_folder(folder: Path, label: str, now: dict[str, list[int]], known: dict[str, dict],
                 report: SyncReport) -> tuple[list[tuple], list[tuple], dict[str, dict]]:
    """What the folder's files are now against the cursor `known` (updated in place for files touched but not
    changed): the new files and those whose content changed, as (path, stat, sha256), and the files that hold a
    known file's bytes under another name, {path: cursor entry}. Only a file whose stat changed is read."""
    by_sha = {e["sha"]: e["paper"] for e in known.values() if e.get("sha") and e.get("paper")}
    fresh: list[tuple] = []
    replaced: list[tuple] = []
    moved: dict[str, dict] = {}
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
    return fresh, replaced, moved


def _mark_left(ws: Workspace, label: str, leaving: dict[str, str], now: dict[str, list[int]],
               report: SyncReport) -> None:
    """Mark the papers `leaving` ({paper: path}) the folder: its file removed, or now another paper's content."""
    if not leaving:
        return
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


def sync_folder(ws: Workspace, folder_setting: str, report: SyncReport, *, accept: bool = False,
                source: FolderSource | None = None) -> str:
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
    source = source or FolderSource(ws, folder_setting)
    now = source.list_items()
    fresh, replaced, moved = _scan_folder(folder, label, now, known, report)
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
        rels = [rel for rel, _, _ in fresh]
        recs = dict(zip(rels, source.fetch(rels)))
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
    _mark_left(ws, label, leaving, now, report)
    save_cursor(ws, name, {"folder": str(folder), "files": known, "synced": now_iso()})
    return "changed" if (fresh or replaced or gone or moved) else "unchanged"


# --- arXiv saved queries -------------------------------------------------------------------------

def sync_arxiv(ws: Workspace, query: str, report: SyncReport, *, source: ArxivQuerySource | None = None) -> str:
    """A saved query's new matches into the inbox (`papervault.app.inbox`), metadata only: nothing is added to
    the vault until a person accepts one (`papervault inbox accept ID`)."""

    name = _slug("arxiv", query)
    cursor = load_cursor(ws, name)
    seen = set(cursor.get("seen", []))
    listed = (source or ArxivQuerySource(ws, query)).list_items()
    fresh = [c for i, c in listed.items() if i not in seen]
    new = []
    if fresh:
        in_vault, texts = inbox.vault_arxiv(ws)
        new = inbox.add_matches(ws, query, fresh, in_vault, texts, now_iso())
        report.inbox += [{k: e[k] for k in ("id", "query", "title", "score", "reason")} for e in new]
        seen |= {c.record.arxiv for c in fresh}
    save_cursor(ws, name, {"query": query, "seen": sorted(seen), "synced": now_iso()})
    return "changed" if new else "unchanged"




# --- the sources, as the registry holds them -----------------------------------------------------------------


def _folder_path(ws: Workspace, setting: str) -> Path:
    folder = Path(setting).expanduser()
    return folder if folder.is_absolute() else (ws.root / folder).resolve()


def _zotero_dir(ws: Workspace) -> Path:
    data_dir = Path(ws.settings.sync.zotero).expanduser()
    return data_dir if data_dir.is_absolute() else (ws.root / data_dir).resolve()


class ZoteroSource:
    """`[sync] zotero`: the items of a Zotero library (of `[sync] collections`), each stamped by its own and its
    children's versions, read from a copy of the database."""

    kind: ClassVar[str] = "zotero"
    order: ClassVar[int] = 10
    removable: ClassVar[bool] = True

    def __init__(self, ws: Workspace):
        self.ws, self.name = ws, "zotero"

    @classmethod
    def followed(cls, ws: Workspace) -> list[SyncSource]:
        return [cls(ws)] if ws.settings.sync.zotero else []

    def list_items(self) -> dict[str, Any]:
        return z.read_followed(_zotero_dir(self.ws), self.ws.settings.sync.collections, lambda k, s: False).stamps

    def fetch(self, items: Iterable[str]) -> list[SourceRecord | SourceProblem]:
        wanted = set(items)
        got = z.read_followed(_zotero_dir(self.ws), self.ws.settings.sync.collections, lambda k, s: k in wanted)
        return [*got.records.values(), *got.problems]

    def run(self, report: SyncReport, *, accept: bool = False) -> str:
        return sync_zotero(self.ws, report, accept=accept)


class FolderSource:
    """A folder of `[sync] folders`: its PDFs, each stamped by its size and modification time."""

    kind: ClassVar[str] = "folder"
    order: ClassVar[int] = 20
    removable: ClassVar[bool] = True

    def __init__(self, ws: Workspace, setting: str):
        self.ws, self.setting, self.name = ws, setting, f"folder:{setting}"

    @classmethod
    def followed(cls, ws: Workspace) -> list[SyncSource]:
        return [cls(ws, f) for f in ws.settings.sync.folders]

    def list_items(self) -> dict[str, Any]:
        return _pdfs(_folder_path(self.ws, self.setting))

    def fetch(self, items: Iterable[str]) -> list[SourceRecord | SourceProblem]:
        folder = _folder_path(self.ws, self.setting)
        return [pdf_record([folder / rel]) for rel in items]

    def run(self, report: SyncReport, *, accept: bool = False) -> str:
        return sync_folder(self.ws, self.setting, report, accept=accept, source=self)


class ArxivQuerySource:
    """A saved query of `[sync] arxiv`: its matches on arXiv, by id; a pass puts new ones in the inbox."""

    kind: ClassVar[str] = "arxiv"
    order: ClassVar[int] = 30
    removable: ClassVar[bool] = False

    def __init__(self, ws: Workspace, query: str):
        self.ws, self.query, self.name = ws, query, f"arxiv:{query}"

    @classmethod
    def followed(cls, ws: Workspace) -> list[SyncSource]:
        return [cls(ws, q) for q in ws.settings.sync.arxiv]

    def list_items(self) -> dict[str, Any]:
        found = arxiv.search(self.query, self.ws.settings.sync.arxiv_max, self.ws.settings)
        return {c.record.arxiv: c for c in found if c.record.arxiv}

    def fetch(self, items: Iterable[str]) -> list[SourceRecord | SourceProblem]:
        listed = self.list_items()
        return [listed[i].record for i in items if i in listed]

    def run(self, report: SyncReport, *, accept: bool = False) -> str:
        return sync_arxiv(self.ws, self.query, report, source=self)


class ArxivVersionsSource:
    """`[sync] arxiv_versions`: the vault's arXiv papers, each by the arXiv id its note holds; a pass brings in
    the versions arXiv lists after the one a paper holds (`papervault.app.versions`)."""

    kind: ClassVar[str] = "arxiv_versions"
    order: ClassVar[int] = 40
    removable: ClassVar[bool] = False

    def __init__(self, ws: Workspace):
        self.ws, self.name = ws, "arxiv_versions"

    @classmethod
    def followed(cls, ws: Workspace) -> list[SyncSource]:
        return [cls(ws)] if ws.settings.sync.arxiv_versions else []

    def list_items(self) -> dict[str, Any]:
        return arxiv_papers(self.ws, {})[0]

    def fetch(self, items: Iterable[str]) -> list[SourceRecord | SourceProblem]:
        papers = self.list_items()
        latest = arxiv.latest_versions([papers[p] for p in items if p in papers], self.ws.settings)
        return [rec for _, rec in latest.values()]

    def run(self, report: SyncReport, *, accept: bool = False) -> str:
        return sync_versions(self.ws, report)
