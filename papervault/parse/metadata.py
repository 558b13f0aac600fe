"""Metadata found in the PDF itself (document info, first page, arXiv stamp) for when no source gave it."""

from __future__ import annotations

import datetime as _dt
import re

import pymupdf

from papervault.parse.layout import Block
from papervault.parse.references import find_arxiv, find_doi

_JUNK_TITLE = re.compile(r"^(untitled|microsoft word|document\d*|paper|title|\S+\.(dvi|tex|pdf|doc|docx|ps))", re.I)
_YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20[0-4]\d)(?!\d)")
_ARXIV_STAMP = re.compile(r"arXiv:(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?", re.I)


def pdf_metadata(doc: pymupdf.Document, pages: list[list[Block]], rotated: list[str]) -> dict:
    """title, authors, year, doi, arxiv, keywords, as far as the PDF tells; absent keys are unknown."""
    info = doc.metadata or {}
    out: dict = {}
    title = (info.get("title") or "").strip()
    if title and not _JUNK_TITLE.match(title) and len(title) > 5:
        out["title"] = title
    author = (info.get("author") or "").strip()
    if author and not re.search(r"\b(admin|user|owner|unknown)\b", author, re.I):
        out["authors"] = [a.strip() for a in re.split(r";|,\s*(?:and\s+)?|\s+and\s+", author) if len(a.strip()) > 2]
    kw = (info.get("keywords") or "").strip()
    if kw:
        out["keywords"] = [k.strip() for k in re.split(r"[;,]", kw) if k.strip()][:20]
    first = "\n".join(b.text for b in (pages[0] if pages else []))
    # Only the front matter: DOIs in the bibliography belong to other papers.
    head = first[:6000]
    for t in rotated:
        m = _ARXIV_STAMP.search(t)
        if m:
            out["arxiv"] = m.group(1)
            break
    if "arxiv" not in out:
        m = _ARXIV_STAMP.search(head)
        if m:
            out["arxiv"] = m.group(1)
    doi = find_doi(head) or find_doi(" ".join(rotated))
    if doi:
        out["doi"] = doi
    year = None
    if "arxiv" in out and re.match(r"\d{4}\.", out["arxiv"]):
        year = 2000 + int(out["arxiv"][:2])
    if year is None:
        # The first page's copyright line, conference name or date; the most frequent plausible year wins.
        this_year = _dt.date.today().year
        years = [int(y) for y in _YEAR.findall(head) if int(y) <= this_year + 1]
        if years:
            year = max(set(years), key=lambda y: (years.count(y), y))
    if year is None:
        m = re.match(r"D:(\d{4})", info.get("creationDate") or "")
        if m and 1990 <= int(m.group(1)) <= _dt.date.today().year:
            year = int(m.group(1))
    if year:
        out["year"] = year
    return out
