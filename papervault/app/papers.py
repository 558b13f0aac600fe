"""Bringing code in, listing and deleting papers: what `add-repo`, `list` and `delete` do, for every front end (the
CLI commands and the MCP tools call these). `add` is `papervault.app.adding.add`: it ends with the index step."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from papervault.errors import InputError
from papervault.models import PaperMeta
from papervault.vault.store import check_id
from papervault.workspace import Workspace
from papervault.app.ids import resolve_ids
from papervault.errors import IndexMismatchError

Progress = Callable[[str, int, int | None], None]

YEAR_RE = re.compile(r"^\s*(\d{4})?\s*(-|\.\.)?\s*(\d{4})?\s*$")


def year_range(year: str | int | None) -> tuple[int, int] | None:
    """The one year-filter grammar: `2019`, `2015-2020`, `2015..2020`, `2015..` or `..2020` (None: no filter)."""
    if year is None or year == "":
        return None
    m = YEAR_RE.match(str(year))
    if not m or not (m.group(1) or m.group(3)) or (m.group(2) is None and m.group(3)):
        raise InputError(f"invalid year {year!r}",
                         fix="give a year like 2019 or a range like 2015-2020, 2015.. or ..2020")
    if not m.group(2):
        return int(m.group(1)), int(m.group(1))
    lo, hi = int(m.group(1) or 0), int(m.group(3) or 9999)
    return (min(lo, hi), max(lo, hi))


@dataclass
class PaperFilter:
    """What `list` keeps; every field optional, text matches are case-insensitive substrings."""

    tag: str | None = None
    year: str | int | None = None
    venue: str | None = None
    author: str | None = None
    status: str | None = None
    title: str | None = None

    def compile(self) -> Callable[[PaperMeta], bool]:
        years = year_range(self.year)

        def keep(m: PaperMeta) -> bool:
            if self.tag and self.tag not in m.tags:
                return False
            if years and (m.year is None or not years[0] <= m.year <= years[1]):
                return False
            if self.venue and self.venue.lower() not in (m.venue or "").lower():
                return False
            if self.author and not any(self.author.lower() in a.lower() for a in m.authors):
                return False
            if self.status and m.status != self.status:
                return False
            if self.title and self.title.lower() not in (m.title or "").lower():
                return False
            return True

        return keep


def list_papers(ws: Workspace, filters: PaperFilter | None = None, **kw: Any) -> list[PaperMeta]:
    """The vault's papers that pass `filters` (or the filter fields given as keywords), in id order."""
    keep = (filters or PaperFilter(**kw)).compile()
    return [m for m in ws.require().vault.iter_meta() if keep(m)]


def add_repo(ws: Workspace, source: str, *, papers: list[str] | tuple[str, ...] = (), name: str | None = None,
             rebuild: bool = False, progress: Progress | None = None):
    """Index a repository's code, link it to papers and write its code note; returns the AddRepoReport."""
    from papervault.add_repo import add_repo as run_add_repo  # deferred: tree-sitter, for repositories only

    if papers:
        papers = list(dict.fromkeys(r.id for r in resolve_ids(ws.require(), papers)))
    if name:
        check_id(name)
    source = (source or "").strip()
    if not source:
        raise InputError("no repository given", fix="pass a local path or a git URL")
    return run_add_repo(ws.require(), source, papers=list(papers), name=name, rebuild=rebuild, progress=progress)


def rechunk_code(ws: Workspace, *, embedder=None, progress: Progress | None = None) -> dict[str, Any] | None:
    """What `papervault index` does for code: when the chunker or `[embed] max_tokens` changed since the
    repositories were chunked, re-chunk them (reusing the vectors of unchanged texts) and commit their rewritten
    code notes. Returns the report with its one `line`, or None when nothing was to do (no code indexed, or
    chunked as now). A table built with another embedding model is not touched: its `line` names the rebuild.
    The caller holds the write lock."""
    if not _has_local_tables(ws) or not any(ws.vault.code_dir.glob("*.md")):
        return None                     # no repository was ever added: the code index is not even opened
    # deferred: pyarrow and tree-sitter only when a repository was added (`list` and `show` load neither)
    from papervault.index.code import CodeIndex
    from papervault.add_repo import rechunk_code as run

    try:
        report = run(ws, index=CodeIndex(ws, embedder), progress=progress)
    except IndexMismatchError as exc:
        return {"line": f"code index: not re-chunked: {exc}"}
    if report is None:
        return None
    out = report.as_dict()
    out["vault_commit"] = ws.vault.commit(f"index: re-chunked the code of {', '.join(report.repos)}",
                                          report.changed) if report.changed else None
    out["line"] = report.line()
    return out


def delete(ws: Workspace, paper_ids: list[str], *, reason: str = "", progress: Progress | None = None) -> dict[str, Any]:
    """Delete papers: their folders (one vault commit), their index rows and their links to code repositories.

    Every id is checked before anything is removed: an unknown id refuses the whole request.
    """
    if not paper_ids:
        raise InputError("no paper to delete", fix="give one or more paper ids (see `papervault list`)")
    for pid in paper_ids:
        check_id(pid)
    ws.require()
    vault = ws.vault
    with ws.write_lock("delete"):
        refs = resolve_ids(ws, paper_ids)     # an unknown id refuses the whole request; a former id is followed
        ids = list(dict.fromkeys(r.id for r in refs))
        dirs = [vault.paper_dir(pid) for pid in ids]
        for d in dirs:      # the write guard on every folder first: one linked out of the vault refuses them all
            vault.guard(d, "delete")
        for pid in ids:
            vault.delete_paper(pid)
        code_paths = _drop_code_links(ws, ids)
        shown = ", ".join(ids[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
        message = f"delete: {shown}" + (f" ({reason})" if reason else "")
        sha = vault.commit(message, [*dirs, *code_paths])
    out: dict[str, Any] = {"deleted": ids, "commit": sha, "code_notes": [str(p.name) for p in code_paths]}
    renamed = {r.given: r.id for r in refs if r.renamed}
    if renamed:
        out["renamed"] = renamed
    out["index"] = _drop_index_rows(ws, ids)
    if progress:
        progress("index", 1, 1)
    return out


def _has_local_tables(ws: Workspace) -> bool:
    return bool(ws.settings.index.uri) or any(ws.index_dir.glob("*.lance"))


def _drop_index_rows(ws: Workspace, ids: list[str]) -> dict[str, int] | str:
    """Only the deleted papers' rows go: nothing else is re-embedded (a sync would embed unindexed papers too)."""
    if not _has_local_tables(ws):
        return {"chunks_removed": 0}       # no tables: nothing to drop, and no LanceDB import
    from papervault.index.store import PaperIndex  # deferred: pyarrow only when there is an index
    with ws.write_lock("index", wait=30):
        index = PaperIndex(ws)
        return {"chunks_removed": sum(index.delete_paper(pid) for pid in ids)}


def _drop_code_links(ws: Workspace, ids: list[str]) -> list[Path]:
    """Remove the papers' rows from the `links` table and rewrite the code notes that listed them."""
    if not _has_local_tables(ws) or not ws.vault.code_dir.is_dir():
        return []
    # deferred: pyarrow and tree-sitter only when a repository was added
    from papervault.index.code import LINKS, CodeIndex
    from papervault.index.store import table_names
    from papervault.add_repo import refresh_code_note

    index = CodeIndex(ws)
    if LINKS not in table_names(index.db):
        return []
    gone = set(ids)
    repos = sorted({l["repo"] for pid in ids for l in index.links(paper_id=pid)})
    if not repos:
        return []
    index.links_table().delete("paper_id IN (" + ", ".join("'" + p.replace("'", "''") + "'" for p in gone) + ")")
    changed: list[Path] = []
    for repo in repos:
        record = index.repo_record(repo)
        note, touched, _ = refresh_code_note(ws, index, repo, record["note"] if record else None)
        changed += ([note] if note else []) + touched
    return changed


def metadata_lines(meta: PaperMeta) -> list[str]:
    """A paper's bibliographic record as `Field: value` lines (what `show` prints for a paper with no text)."""
    out = [f"# {meta.title or meta.id}", ""]
    rows = [("Authors", "; ".join(meta.authors)), ("Year", meta.year), ("Venue", meta.venue), ("DOI", meta.doi),
            ("arXiv", meta.arxiv), ("URL", meta.url), ("Tags", ", ".join(meta.tags)),
            ("Collections", ", ".join(meta.collections)), ("Status", meta.status)]
    rows += [(k.capitalize(), v) for k, v in sorted(meta.bib.items()) if k != "entrytype" and v and v != meta.venue]
    out += [f"{k}: {v}" for k, v in rows if v not in (None, "", [])]
    if meta.abstract:
        out += ["", "Abstract:", " ".join(str(meta.abstract).split())]
    if meta.sources:
        out += ["", "Sources:"] + [f"- {src}" for src in meta.sources]
    if meta.status == "metadata":
        out += ["", "No full text yet: add its PDF (`papervault add FILE.pdf`) to parse and analyse it."]
    return out
