"""What the MCP tools do over a workspace: checked inputs in, bounded JSON-ready dicts out; the reading and
searching itself is the application layer's (`papervault.app.reading`, `papervault.app.search`).

The server module only wraps these with descriptions and transports, so every tool can be tested (and
benchmarked) without an MCP session. Every id goes through `check_id`, every file through `resolve_inside`,
and every answer is cut to a size an agent's context can hold, saying so (`truncated`, `next_offset`).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from papervault.app import reading
from papervault.app.graph import neighbourhood
from papervault.app.ids import resolve_id
from papervault.app.reading import FigureRef, cut as _cut, outline, page_spans  # noqa: F401 - the tools' API
from papervault.app.search import search_papers
from papervault.errors import InputError, NotFoundError, PapervaultError
from papervault.pages import printed
from papervault.pdfstore import kept
from papervault.status import workspace_status
from papervault.vault import frontmatter
from papervault.vault.markdown import agent_markdown
from papervault.vault.paper import page_link
from papervault.vault.reader import FILENAME, parse
from papervault.vault.store import check_id
from papervault.workspace import Workspace

# Limits an agent cannot raise: they keep one answer well inside a model's context window.
MAX_LIMIT = 50
MAX_BUDGET = 20_000              # tokens of context around search hits
MAX_HIT_CHARS = 4_000            # one hit's text
MAX_RESULT_CHARS = 120_000       # one search answer, all hits together
MAX_READ_CHARS = reading.MAX_READ_CHARS
DEFAULT_READ_CHARS = reading.DEFAULT_READ_CHARS
MAX_PAGES = reading.MAX_PAGES    # pages in one `read`
MAX_NEIGHBOURS = reading.MAX_NEIGHBOURS
MAX_NOTE_CHARS = 20_000
MAX_LIST = 200
MAX_FIGURE_BYTES = reading.MAX_FIGURE_BYTES
MAX_QUERY_CHARS = 2_000
LEVELS = ("paper", "section", "paragraph", "figure", "table", "note")

Progress = Callable[[str, int, int | None], None]


# An argument an agent passed is out of range or malformed (the application layer raises the same type).
ToolInputError = InputError


def _bounded(query: str, hits: list[dict], size: Callable[[dict], int]) -> dict[str, Any]:
    """Hits with each text cut to MAX_HIT_CHARS and the whole answer kept under MAX_RESULT_CHARS."""
    out, used, truncated = [], 0, False
    for d in hits:
        if isinstance(d.get("text"), str):
            d["text"], cut = _cut(d["text"], MAX_HIT_CHARS)
            truncated |= cut
        n = size(d)
        if out and used + n > MAX_RESULT_CHARS:
            truncated = True
            break
        used += n
        out.append(d)
    result: dict[str, Any] = {"query": query, "count": len(out), "hits": out}
    if truncated:
        result["truncated"] = True
    return result


_check_limit = reading.check_limit


# --- the one rule for what an agent receives ---------------------------------------------------------

def for_agent(value: Any) -> Any:
    """`value` with `agent_markdown` applied to every string in it, at any depth: titles, authors, venues,
    abstracts, captions, section titles, notes, hits and passages all come out as text (`&lt;script>`), the way
    `read` gives a paper's text, so a client that renders an answer runs nothing from a paper, a bibliography
    or a shared vault. `agent_markdown` leaves text without a tag as it is (ids, paths, numbers)."""
    if isinstance(value, str):
        return agent_markdown(value)
    if isinstance(value, dict):
        return {k: for_agent(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [for_agent(v) for v in value]
    return value


def _agent_answer(method: Callable) -> Callable:
    """A tool whose whole answer goes through `for_agent`."""
    @functools.wraps(method)
    def tool(self, *args, **kwargs):
        return for_agent(method(self, *args, **kwargs))

    return tool


# --- the tools -----------------------------------------------------------------------------------

class VaultTools:
    """The MCP tools of one workspace; methods take plain arguments and return JSON-ready dicts."""

    def __init__(self, ws: Workspace):
        self.ws = ws.require()
        self.vault = ws.vault
        self._searcher = None
        self._code_searcher = None

    def paper(self, given: str) -> tuple[str, dict[str, str]]:
        """The current id of paper `given` (a former id left by `rekey` resolves to its paper) and what to add
        to the answer: `{"notice": "OLD is now NEW ..."}` when it was a former id, so the agent cites the new one."""
        ref = resolve_id(self.ws, given)
        return ref.id, ({"notice": f"{ref.notice()}; cite it as [@{ref.id}]"} if ref.renamed else {})

    @property
    def searcher(self):
        """One Searcher for the server's life: the embedding model loads once, not per call."""
        if self._searcher is None:
            from papervault.index.search import Searcher  # deferred: LanceDB and the model load on the first search

            self._searcher = Searcher(self.ws)
        return self._searcher

    # search ----------------------------------------------------------------------------------

    @_agent_answer
    def search(self, query: str, *, level: str | None = None, paper: str | None = None, year: str | None = None,
               venue: str | None = None, tag: str | None = None, limit: int = 10,
               budget: int | None = None) -> dict[str, Any]:
        query = (query or "").strip()
        if not query:
            raise ToolInputError("empty query", fix="pass the words or question to search for")
        query = query[:MAX_QUERY_CHARS]
        _check_limit(limit, "limit", MAX_LIMIT)
        if budget is not None:
            _check_limit(budget, "budget", MAX_BUDGET, low=0)
        if level is not None and level not in LEVELS:
            raise ToolInputError(f"unknown level {level!r}", fix=f"use one of {', '.join(LEVELS)}")
        renamed: dict[str, str] = {}
        if paper:
            paper, renamed = self.paper(paper)
        filters = {k: v for k, v in {"paper": paper, "year": year, "venue": venue, "tag": tag}.items() if v}
        told = len(self.searcher.notices)
        hits = search_papers(self.ws, query, limit=limit, level=level, filters=filters, budget=budget or None,
                             searcher=self.searcher)
        result = _bounded(query, [h.model_dump() for h in hits],
                          lambda d: len(d["text"]) + sum(len(str(c.get("text", ""))) for c in d.get("context") or []))
        for d in result["hits"]:       # a paper's text, shown as text even by a client that renders HTML
            d["text"] = agent_markdown(d["text"])
            for c in d.get("context") or []:
                if isinstance(c.get("text"), str):
                    c["text"] = agent_markdown(c["text"])
        self._mark_unfinished(result["hits"], result)
        if len(self.searcher.notices) > told:   # said once per server: e.g. a CJK question, English-only index
            result["notice"] = " ".join(self.searcher.notices[told:])
        if renamed:
            result["notice"] = " ".join(filter(None, [result.get("notice"), renamed["notice"]]))
        if not result["hits"]:
            result["hint"] = ("no hits: try other words, drop filters, or check `status` (the vault may not be "
                              "indexed: `papervault index`)")
        return result

    def _mark_unfinished(self, rows: list[dict], result: dict) -> None:
        """Mark each row (a hit or a located passage, by `paper_id`) of a paper still read by its first pass:
        `stage: "text layer"` and the pages that wait for OCR; the result says once what that means."""
        from papervault.parse.firstpass import unfinished  # deferred: read for the papers of these rows only

        waiting = unfinished(self.ws, list(dict.fromkeys(str(r.get("paper_id")) for r in rows if r.get("paper_id"))))
        for r in rows:
            info = waiting.get(str(r.get("paper_id")))
            if info is not None:
                r["stage"] = "text layer"
                if info["pending_pages"]:
                    r["pending_pages"] = info["pending_pages"]
        if waiting:
            result["unfinished"] = (f"{len(waiting)} of these papers {'is' if len(waiting) == 1 else 'are'} read by "
                                    "the text layer only (stage \"text layer\"): no headings, figures or tables yet, "
                                    "scanned pages (pending_pages) not OCR'd, not analysed; the full parse follows "
                                    "behind (see `status`)")

    def search_code(self, query: str, *, repo: str | None = None, language: str | None = None,
                    kind: str | None = None, limit: int = 10, budget: int | None = None) -> dict[str, Any]:
        query = (query or "").strip()[:MAX_QUERY_CHARS]
        if not query:
            raise ToolInputError("empty query", fix="pass the words, identifiers or question to search for")
        _check_limit(limit, "limit", MAX_LIMIT)
        if budget is not None:
            _check_limit(budget, "budget", MAX_BUDGET, low=0)
        if repo:
            check_id(repo)
        hits = self.code_searcher().search(query, limit=limit, repo=repo, language=language, kind=kind,
                                           budget=budget or None)
        return _bounded(query, [dict(h) for h in hits], lambda d: len(str(d)))

    def code_searcher(self):
        """The code table opened once; reopened while it does not exist yet (a repository may be added meanwhile)."""
        from papervault.index.code import CodeSearcher  # deferred: LanceDB, tree-sitter: not at server start-up

        if self._code_searcher is None or self._code_searcher.tbl is None:
            self._code_searcher = CodeSearcher(self.ws)
        return self._code_searcher

    # papers ----------------------------------------------------------------------------------

    @_agent_answer
    def list_papers(self, *, tag: str | None = None, year: str | None = None, venue: str | None = None,
                    author: str | None = None, status: str | None = None, title: str | None = None,
                    offset: int = 0, limit: int = 50) -> dict[str, Any]:
        _check_limit(limit, "limit", MAX_LIST)
        _check_limit(offset, "offset", 10**9, low=0)
        from papervault.app.papers import PaperFilter, list_papers  # deferred: the ingest path, not at start-up

        rows = list_papers(self.ws, PaperFilter(tag=tag, year=year, venue=venue, author=author, status=status,
                                                title=title))
        page = rows[offset:offset + limit]
        papers = [{"id": m.id, "title": m.title, "authors": m.authors[:6] + (["et al."] if len(m.authors) > 6 else []),
                   "year": m.year, "venue": m.venue, "status": m.status, "pages": m.pages, "tags": m.tags,
                   "doi": m.doi, "arxiv": m.arxiv} for m in page]
        nxt = offset + len(page)
        return {"total": len(rows), "offset": offset, "count": len(papers), "papers": papers,
                "next_offset": nxt if nxt < len(rows) else None}

    @_agent_answer
    def get_paper(self, paper_id: str) -> dict[str, Any]:
        paper_id, renamed = self.paper(paper_id)
        meta, body = self.vault.read_note(paper_id)
        fulltext = self.vault.read_fulltext(paper_id)
        sections, figures = outline(fulltext)
        note, cut = _cut(body, MAX_NOTE_CHARS)
        keep = ("id", "title", "authors", "year", "venue", "doi", "arxiv", "url", "abstract", "pages", "tags",
                "collections", "status", "analyser", "method", "datasets", "metrics", "baselines", "key_results",
                "code", "ocr_pages", "updated")
        data = meta.model_dump(exclude_none=True)
        out = {
            "id": paper_id,
            "meta": {k: data[k] for k in keep if k in data and data[k] not in ([], {}, "")},
            "sections": [{"path": s.path, "title": s.title, "level": s.level, "page": s.page} for s in sections],
            "figures": [{"number": f.number, "caption": f.caption, "page": f.page, "path": f.path} for f in figures],
            "note": agent_markdown(note),
            "has_fulltext": bool(fulltext),
            "fulltext": f"papers/{paper_id}/paper.md",
            "pdf": _pdf_path(self.ws, meta),
            "cite": f"[@{paper_id}]",
            # "text layer": searchable by its first pass, its layout, figures and OCR still to come
            "stage": "text layer" if (meta.parser or "").startswith("first-pass/") else "complete",
        }
        if out["stage"] == "text layer":
            from papervault.parse.firstpass import pending_pages  # deferred: only for a paper still arriving

            out["pending_pages"] = pending_pages(fulltext)     # scanned pages whose OCR has not run yet
        if cut:
            out["note_truncated"] = True
        out.update(renamed)
        highlights = self._reader_notes(paper_id, meta.page_labels)
        if highlights:
            out["reader_notes"] = highlights
        return out

    MAX_READER_ENTRIES = 100

    def _reader_notes(self, paper_id: str, page_labels: list[str]) -> list[dict[str, Any]]:
        """The reader's own highlights (with page and anchor) and notes, from reader-notes.md."""
        path = self.vault.paper_dir(paper_id) / FILENAME
        if not path.is_file():
            return []
        text = self.vault.safe_path(path).read_text(encoding="utf-8", errors="replace")
        out = []
        for e in parse(text, page_labels)[: self.MAX_READER_ENTRIES]:
            item = {"kind": e.kind, "text": agent_markdown(_cut(e.text, 4000)[0])}
            if e.comment:
                item["comment"] = agent_markdown(_cut(e.comment, 4000)[0])
            if e.page:
                item["page"] = e.page
                item["anchor"] = page_link(paper_id, e.page)
            out.append(item)
        return out

    @_agent_answer
    def citations(self, paper_id: str) -> dict[str, Any]:
        """The vault papers a paper cites and those citing it, with each edge's reference line and page."""
        paper_id, renamed = self.paper(paper_id)
        got = neighbourhood(self.ws, paper_id)
        for row in got["cites"] + got["cited_by"]:
            ev = row["evidence"]
            row["title"] = agent_markdown(row["title"])
            ev["reference"] = agent_markdown(ev["reference"])
            ev["cite"] = f"[@{ev['in']}, p. {ev['printed_page']}]" if ev["page"] else f"[@{ev['in']}]"
        got["paper"]["title"] = agent_markdown(got["paper"]["title"])
        return {**renamed, **got}

    @_agent_answer
    def survey_selection(self, slug: str) -> dict[str, Any]:
        """A survey's selection as `selection.md` holds it: the papers ticked (with title and year), and the works
        the selected papers cite that the vault lacks (`missing`: cited by, title, first author, year, DOI or
        arXiv id), so an agent can say what the vault is missing for the topic."""
        from papervault.survey import selection as S     # deferred: only a survey question needs it

        path = self.vault.guard(self.vault.survey_dir(slug) / S.FILENAME)
        if not path.is_file():
            raise NotFoundError(f"no survey {slug!r} with a selection.md",
                                fix=f"surveys in this vault: {', '.join(self.vault.survey_slugs()) or 'none'}")
        text = path.read_text(encoding="utf-8", errors="replace")[:2_000_000]
        try:
            meta, body = frontmatter.split(text)
        except ValueError:          # a broken frontmatter (a shared vault, a hand edit): the ticked lines still count
            meta, body = {}, text
        ticked, _ = S.parse_ids(body)
        papers = []
        for pid in ticked[:500]:
            try:
                m = self.vault.read_meta(pid)
                papers.append({"id": pid, "title": m.title, "year": m.year})
            except PapervaultError:
                papers.append({"id": pid, "title": None, "year": None, "note": "not in the vault"})

        def work(w: Any) -> dict[str, Any] | None:
            if not isinstance(w, dict):
                return None
            text = lambda k, n: str(w.get(k))[:n] if isinstance(w.get(k), (str, int)) else None  # noqa: E731
            cited = [str(c)[:200] for c in w.get("cited_by") or [] if isinstance(c, str)][:100]
            return {"title": text("title", 300), "author": text("author", 60), "year": text("year", 4),
                    "doi": text("doi", 200), "arxiv": text("arxiv", 40), "cited_by": cited, "key": text("key", 240)}

        listed = meta.get("missing") if isinstance(meta.get("missing"), list) else []
        missing = [x for x in (work(w) for w in listed[:100]) if x]
        return {"survey": slug, "topic": str(meta.get("topic") or "")[:1000], "papers": papers, "missing": missing}

    @_agent_answer
    def locate(self, quote: str, *, paper: str | None = None, limit: int = 5) -> dict[str, Any]:
        from papervault.app.locate import locate  # deferred: rapidfuzz and the index, not at start-up

        renamed: dict[str, str] = {}
        if paper is not None:
            paper, renamed = self.paper(paper)
        found = locate(self.ws, quote, paper=paper, limit=_check_limit(limit, "limit", 20))
        def labels(pid: str) -> list[str]:      # a citation says the printed page (223), the anchor the PDF page
            try:
                return self.ws.vault.read_meta(pid).page_labels
            except Exception:
                return []

        out = {"quote": quote[:300], **renamed, "found": [
            {**f.as_dict(), "title": agent_markdown(f.title), "text": agent_markdown(f.text[:1000]),
             "cite": f"[@{f.paper_id}, p. {printed(labels(f.paper_id), f.page)}]" if f.page else f"[@{f.paper_id}]"}
            for f in found]}
        if not found:
            from papervault.app.locate import not_yet_read  # deferred: as locate

            waiting = not_yet_read(self.ws, paper)
            if waiting:
                out["unfinished"] = waiting
        return out

    @_agent_answer
    def read(self, paper_id: str, *, section: str | None = None, pages: str | None = None,
             chunk_id: str | None = None, neighbours: int = 1, offset: int = 0,
             max_chars: int = DEFAULT_READ_CHARS) -> dict[str, Any]:
        paper_id, renamed = self.paper(paper_id)
        _check_limit(max_chars, "max_chars", MAX_READ_CHARS, low=200)
        _check_limit(offset, "offset", 10**9, low=0)
        given = [n for n, v in (("section", section), ("pages", pages), ("chunk_id", chunk_id)) if v]
        if len(given) > 1:
            raise ToolInputError(f"give only one of section, pages, chunk_id (got {', '.join(given)})")
        if chunk_id:
            return {**reading.read_chunk(self.ws, paper_id, chunk_id, neighbours), **renamed}
        got = reading.read_text(self.ws, paper_id, section=section, pages=pages, offset=offset, max_chars=max_chars)
        return {**got, "text": agent_markdown(got["text"]), **renamed}

    def figure(self, paper_id: str, figure: str) -> tuple[bytes, dict[str, Any]]:
        """The PNG bytes of a figure and what to say about it (caption, page, path)."""
        paper_id, renamed = self.paper(paper_id)
        path, info = reading.figure(self.ws, paper_id, figure)
        return path.read_bytes(), {**info, **renamed}

    @_agent_answer
    def status(self) -> dict[str, Any]:
        return workspace_status(self.ws)

    @_agent_answer
    def changes(self, since: str = "7d", *, limit: int = 100) -> dict[str, Any]:
        """Papers added, updated, marked as gone from their source, and deleted since `since` (`papervault
        changes`), at most `limit` of each kind, saying how many more there are."""
        from papervault.app.changes import changes  # deferred: the sources behind sync, not at start-up

        _check_limit(limit, "limit", MAX_LIST)
        out = changes(self.ws, (since or "7d")[:40])
        for kind in ("added", "updated", "marked", "deleted"):
            rows = out[kind]
            more = len(rows) - limit + out.pop(f"{kind}_more", 0)
            out[kind] = rows[:limit]
            if more > 0:
                out[f"{kind}_more"] = more
        return out

    # writes (only with --allow-write) --------------------------------------------------------

    def add_paper(self, inputs: list[str], *, backend: str | None = None, index: bool = True,
                  progress: Progress | None = None) -> dict[str, Any]:
        from papervault.app.adding import add as run_add  # deferred: a write tool, off by default

        inputs = [s.strip() for s in inputs or [] if s and s.strip()]
        if not inputs:
            raise ToolInputError("nothing to add", fix="pass PDF paths, arXiv ids, DOIs or URLs")
        if len(inputs) > 100:
            raise ToolInputError(f"{len(inputs)} inputs", fix="add at most 100 at a time")
        # the one add, ending with the papers searchable; every vector before the tool answers (the agent asked
        # for these papers now), so no background fill is left behind
        return run_add(self.ws, inputs, backend=backend, progress=progress, index=index, wait=True).as_dict()

    def add_repo(self, source: str, *, paper: str | None = None, name: str | None = None,
                 progress: Progress | None = None) -> dict[str, Any]:
        from papervault.app.papers import add_repo as run_add_repo  # deferred: a write tool, off by default

        renamed: dict[str, str] = {}
        if paper:
            paper, renamed = self.paper(paper)
        report = run_add_repo(self.ws, source, papers=[paper] if paper else [], name=name, progress=progress)
        self._code_searcher = None      # the code table may have been created or rebuilt
        return {**report.as_dict(), **renamed}

    def delete_paper(self, paper_id: str, *, progress: Progress | None = None) -> dict[str, Any]:
        from papervault.app.papers import delete  # deferred: a write tool, off by default

        paper_id, renamed = self.paper(paper_id)
        out = delete(self.ws, [paper_id], reason="requested over MCP", progress=progress)
        return {**out, "deleted": paper_id, **renamed}


def _pdf_path(ws, meta) -> str | None:
    """The absolute path of the paper's PDF kept by the workspace (`pdfs/<sha256>.pdf`); None when it has none.
    Only the store's copy is named: an original outside the workspace may be anywhere on the user's disk."""
    p = kept(ws.root, meta.pdf)
    return str(p) if p else None

