"""What a search front end says around the hits: a query it refuses before searching, and, when there are
no hits, the precise reason (an empty index, a rebuild in progress, filters that exclude everything)."""

from __future__ import annotations

import json
from typing import Any

from papervault.errors import InputError, NotFoundError
from papervault.wording import plural
from papervault.workspace import Workspace
from papervault.vault.lock import WriteLock


def check_query(ws: Workspace, query: str, *, paper: str | None = None) -> str:
    """The query, stripped; an empty query or an unknown `paper` id is an error naming what to do."""
    query = (query or "").strip()
    if not query:
        raise InputError("the search query is empty", fix='give words or a question, e.g. papervault search "quorum leases"')
    if paper is not None and not ws.vault.has_paper(paper):
        raise NotFoundError(f"no paper {paper!r} in the vault", fix="see `papervault list` for the paper ids")
    return query


def rebuilding(ws: Workspace) -> dict[str, Any] | None:
    """The writer lock's holder when it is `papervault index` (pid, command), else None."""
    lock = WriteLock(ws.lock_path, command="search")
    try:
        lock.acquire()
    except Exception:  # noqa: BLE001 - held: read who holds it
        try:
            info = json.loads(ws.lock_path.read_text() or "{}")
        except (OSError, ValueError):
            return None
        return info if str(info.get("command", "")).startswith("index") else None
    else:
        lock.release()
        return None


def why_no_hits(ws: Workspace, *, filters: dict[str, Any] | None = None, level: str | None = None) -> str:
    """One line saying why a search found nothing."""
    from papervault.index.store import CHUNKS, open_db, table_names  # deferred: pyarrow, not at MCP start-up

    busy = rebuilding(ws)
    try:
        db = open_db(ws)
        chunks = db.open_table(CHUNKS).count_rows() if CHUNKS in table_names(db) else 0
    except Exception:  # noqa: BLE001 - an unreadable index reads as an empty one here
        chunks = 0
    if busy:
        return (f"No results: `papervault index` (pid {busy.get('pid', '?')}) is rebuilding the index right now; "
                "search again when it finishes.")
    if not chunks:
        n = len(ws.vault.paper_ids())
        if not n:
            return "No results: the vault has no papers yet. Add some with `papervault add FILE.pdf`."
        return f"No results: the index is empty ({plural(n, 'paper')} in the vault). Run `papervault index`."
    given = {k: v for k, v in (filters or {}).items() if v}
    if level:
        given["level"] = level
    if given:
        shown = ", ".join(f"--{k} {v}" for k, v in given.items())
        return f"No results with {shown} ({plural(chunks, 'chunk')} indexed). Drop or widen a filter."
    return f"No results for this query ({plural(chunks, 'chunk')} indexed). Try other words."


def search_papers(ws: Workspace, query: str, *, limit: int = 10, level: str | None = None,
                  filters: dict[str, Any] | None = None, budget: int | None = None, searcher=None) -> list:
    """The hits for `query` (an `index.search.Searcher`'s, `searcher` or a new one), less a section hit whose
    own paragraph is also a hit: what the command line and the MCP `search` tool both answer."""
    if searcher is None:
        from papervault.index.search import Searcher  # deferred: pyarrow and the model, not at MCP start-up

        searcher = Searcher(ws)
    return without_own_sections(searcher.search(query, limit=limit, level=level, filters=filters or None,
                                                budget=budget))


def without_own_sections(hits: list) -> list:
    """The hits less a section whose own paragraph is also a hit (the same passage twice): the paragraph,
    which is more precise, takes the better of the two ranks."""
    out, used = [], set()
    for i, h in enumerate(hits):
        if i in used:
            continue
        if h.level == "section":
            j = next((j for j in range(i + 1, len(hits)) if j not in used and hits[j].level == "paragraph"
                      and (hits[j].paper_id, hits[j].section) == (h.paper_id, h.section)), None)
            if j is not None:
                used.add(j)
                h = hits[j]
        out.append(h)
    return out
