"""A paper's citation neighbourhood in the vault: the vault papers it cites and those that cite it, each edge
with its evidence (the reference line that names the cited paper and the page it is printed on).

The matching is the survey's (`papervault.survey.citations.Matcher`: DOI, arXiv id, or a title of three words
or more, across line-break hyphenation). `papervault graph PAPER_ID` and the MCP tool `citations` call it.
"""

from __future__ import annotations

from typing import Any

from papervault.errors import PapervaultError
from papervault.workspace import Workspace
from papervault.pages import printed
from papervault.survey.citations import Matcher, cited_with_evidence, reference_lines
from papervault.vault.paper import page_link


def _entry(meta) -> dict[str, Any]:
    return {"id": meta.id, "title": meta.title or meta.id, "year": meta.year}


def _evidence(citing, ref) -> dict[str, Any]:
    """An edge's evidence: the reference line in the citing paper (`citing` is its meta), the PDF page it is
    on with that page's anchor, and the page the paper prints there (what a citation says)."""
    out: dict[str, Any] = {"in": citing.id, "reference": ref.text, "page": ref.page, "printed_page": None,
                           "anchor": None}
    if ref.page:
        out.update(printed_page=printed(citing.page_labels, ref.page), anchor=page_link(citing.id, ref.page))
    return out


def neighbourhood(ws: Workspace, paper_id: str) -> dict[str, Any]:
    """{"paper", "cites": [...], "cited_by": [...], "has_references"}: each neighbour with `evidence`."""
    v = ws.vault
    metas = {}
    for pid in v.paper_ids():
        try:
            metas[pid] = v.read_meta(pid)
        except (PapervaultError, OSError, ValueError):
            continue        # a broken note is not a neighbour; `papervault doctor` reports it
    me = v.read_meta(paper_id)
    ids = list(metas)
    matcher = Matcher(ids, [metas[i].title or "" for i in ids], [(metas[i].doi or "").lower() for i in ids],
                      [metas[i].arxiv or "" for i in ids], [list(metas[i].authors or []) for i in ids],
                      [metas[i].year for i in ids])

    def text_of(pid: str) -> str:
        if not v.fulltext_path(pid).is_file():
            return ""
        try:
            return v.read_fulltext(pid)
        except (OSError, PapervaultError):
            return ""

    own = text_of(paper_id)
    cites = []
    for pid, ref in sorted(cited_with_evidence(matcher, own).items()):
        if pid != paper_id and pid in metas:
            cites.append({**_entry(metas[pid]), "evidence": _evidence(me, ref)})
    single = Matcher([paper_id], [me.title or ""], [(me.doi or "").lower()], [me.arxiv or ""], [list(me.authors or [])],
                     [me.year])
    cited_by = []
    for pid in ids:
        if pid == paper_id:
            continue
        text = text_of(pid)
        if not text:
            continue
        got = cited_with_evidence(single, text)
        if paper_id in got:
            cited_by.append({**_entry(metas[pid]), "evidence": _evidence(metas[pid], got[paper_id])})
    cited_by.sort(key=lambda d: (d["year"] is None, d["year"] or 0, d["id"]))
    cites.sort(key=lambda d: (d["year"] is None, d["year"] or 0, d["id"]))
    return {"paper": _entry(me), "has_references": bool(own) and bool(_refs(own)), "cites": cites,
            "cited_by": cited_by}


def _refs(text: str) -> bool:
    return bool(reference_lines(text))
