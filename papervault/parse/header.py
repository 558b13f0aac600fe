"""Who wrote the paper, what it is called, and when: the header of the first page(s), read by layout.

The title is the dominant run of lines (largest type, highest on the page, joined across lines) once the
lines that are not the title are set aside: journal banners, download stamps, running heads, volume and
copyright lines, conference notes, institutions and author lines. The year is the paper's own date (a
copyright line, the conference or journal line, "Received ... revised ...", an arXiv stamp, a dated title
page), never a download or reprint date. Each field says where it came from (`layout` or `pdf-xmp`, the
document information a plausible producer wrote).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field

from papervault.lineshapes import is_person_name
from papervault.parse.authors import _authors_above, clean_names, find_authors
from papervault.parse.cover import read_cover
from papervault.parse.layout import Block, Line
from papervault.parse.lines import (_ARXIV_STAMP, _BAD_DATE, _BODY_START, _DATE_LINE, _GOOD_DATE, _JUNK_INFO_TITLE,
                                    _MONTH, _SHORT_YEAR, _VENUE, _YEAR, is_author_line, is_banner, norm, not_title)
from papervault.parse.references import find_doi
from papervault.parse.title import TitleChoice, choose_title, find_title, title_text, unspace

__all__ = ["Header", "read_header", "choose_title", "find_title", "find_authors", "find_year", "find_venue",
           "is_author_line", "is_banner", "not_title", "title_text", "unspace", "TitleChoice", "Line"]

@dataclass
class Header:
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv: str | None = None
    keywords: list[str] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)
    title_lines: list[Line] = field(default_factory=list)
    title_page: int = 0


def _years_in(text: str) -> list[int]:
    this_year = _dt.date.today().year
    return [int(y) for y in _YEAR.findall(text) if 1850 <= int(y) <= this_year + 1]


def find_year(lines: list[str], arxiv: str | None, rotated: list[str], title: str | None = None) -> int | None:
    """The paper's own year from its front-matter lines (first page or two, in reading order).

    Years of the header (above the abstract) count; further down only a year on a dated line does (a
    copyright line, the venue, "Received ..."): a year in a sentence ("contests in 2012") is not the paper's,
    and neither is a year of the title's own lines ("Early LISP History (1956-1959)" was not written in 1956).
    """
    scores: dict[int, float] = {}
    body_from = next((i for i, t in enumerate(lines) if _BODY_START.match(t.strip())), len(lines))
    in_title = f" {norm(title)} " if title else ""
    for i, raw in enumerate(lines):
        t = raw.strip()
        if not t or _BAD_DATE.search(t):
            continue
        if in_title and i < body_from and _years_in(t) and f" {norm(t)} " in in_title:
            continue
        ys = _years_in(t)
        cue = max((w for pat, w in _GOOD_DATE if pat.search(t)), default=0.0)
        if not ys:
            m = _SHORT_YEAR.search(t)
            if m and cue >= 4:
                yy = int(m.group(1))
                ys = [2000 + yy if yy <= _dt.date.today().year % 100 + 1 else 1900 + yy]
            else:
                continue
        if _DATE_LINE.match(t) or re.fullmatch(r"(?:1[89]|20)\d\d\.?", t):
            cue = max(cue, 5)
        if re.search(r"\b(?:received|submitted)\b", t, re.I):
            ys = ys[:1]  # "Received May 1994; revised June 1995": the first date is the paper's
        weight = cue if cue else (2.0 if i < body_from else 0.0)
        if not weight:
            continue
        for y in ys:
            scores[y] = scores.get(y, 0.0) + weight
    stamp = None
    for t in rotated:
        m = _ARXIV_STAMP.search(t)
        if m:
            ys = _years_in(t)
            stamp = ys[-1] if ys else None
    if stamp is None and arxiv and re.match(r"\d{4}\.", arxiv):
        stamp = 2000 + int(arxiv[:2])
    if stamp is not None:
        scores[stamp] = scores.get(stamp, 0.0) + 3
    if not scores:
        return None
    return max(scores.items(), key=lambda kv: (kv[1], kv[0]))[0]


def find_venue(lines: list[str], title: str) -> str | None:
    nt = norm(title)
    for t in lines[:60]:
        if nt and norm(t) and norm(t) in nt:
            continue
        m = _VENUE.search(t)
        if m:
            v = re.sub(r"\s+", " ", m.group(0)).strip(" ,.;:()")
            v = re.sub(r"^proceedings\s+of\s+the\s+", "", v, flags=re.I)
            v = re.split(r"\s*[,(]\s*(?:" + _MONTH + r"|\d)", v, flags=re.I)[0]
            if 5 <= len(v) <= 160 and sum(c.isalpha() for c in v) > 4:
                return v
    return None


def _plausible_info_title(info_title: str, page_text: str) -> bool:
    t = info_title.strip()
    if len(t) < 6 or _JUNK_INFO_TITLE.match(t) or not re.search(r"[A-Za-z]{3}", t):
        return False
    # Producers leave templates' and files' names behind; a title the first page does not print is one.
    return norm(t) in norm(page_text)


def _info_authors(info: dict, page_text: str) -> list[str]:
    """The document info's authors when each is a person whose family name the page prints; a name given family
    name first ("Jaravel Xavier") that the page prints the other way round ("Xavier Jaravel") is the page's."""
    info_author = (info.get("author") or "").strip()
    if not info_author or re.search(r"\b(?:admin|user|owner|unknown|author)\b", info_author, re.I):
        return []
    cand = [a.strip() for a in re.split(r";|,\s*(?:and\s+)?|\s+and\s+|&", info_author) if len(a.strip()) > 2]
    low = page_text.lower()
    flat = f" {norm(page_text)} "
    cand = [" ".join(a.split()[1:] + a.split()[:1]) if len(a.split()) == 2
            and f" {norm(' '.join(a.split()[::-1]))} " in flat and f" {norm(a)} " not in flat else a for a in cand]
    return cand if cand and all(a.split()[-1].lower() in low and is_person_name(a) for a in cand) else []


def read_header(pages: list[list[Block]], heights: list[float], *, info: dict | None = None,
                rotated: list[str] | None = None, scanned: set[int] | frozenset[int] = frozenset(),
                cover: bool = False, file_name: str | None = None, repeats: list[str] | None = None) -> Header:
    """The header of a paper from the blocks of its first pages (0-based `scanned` page indices); `file_name`
    (a person's own label, often the title slugged) and `repeats` (the running heads of the next pages) are
    signals for the title."""
    info = info or {}
    rotated = rotated or []
    h = Header()
    info_title = (info.get("title") or "").strip()
    # The running heads of the next pages (dropped from their text) often repeat the title.
    signals = dict(file_name=file_name, info_title=info_title, repeats=list(repeats or ()))
    tp = 1 if cover and len(pages) > 1 else 0
    choice = choose_title(pages[tp], heights[tp], scanned=tp in scanned, **signals) if pages else None
    if choice is None and tp and pages:
        tp = 0
        choice = choose_title(pages[0], heights[0], scanned=0 in scanned, **signals)
    title_lines = choice.lines if choice else []
    h.title_page, h.title_lines = tp, title_lines
    front = [ln.text for p in pages[:tp + 2] for b in p for ln in b.lines]   # blocks in reading order
    page_text = " ".join(ln.text for b in (pages[tp] if pages else []) for ln in b.lines)
    layout_title = choice.text if choice else ""
    if info_title and _plausible_info_title(info_title, page_text) and (
            not layout_title or norm(layout_title) in norm(info_title) or norm(info_title) in norm(layout_title)
            or len(norm(info_title)) > 0.8 * len(norm(layout_title))):
        h.title, h.provenance["title"] = re.sub(r"\s+", " ", info_title), "pdf-xmp"
        h.provenance["title_confidence"] = "high"
        h.provenance["title_evidence"] = "pdf metadata printed on the first page"
    elif layout_title:
        h.title, h.provenance["title"] = layout_title, "layout"
        h.provenance["title_confidence"] = choice.confidence
        h.provenance["title_evidence"] = "; ".join(choice.evidence + [f"not: {f}" for f in choice.flags]) or "none"
    # A cover page that labels its fields ("Author(s): ...", "Chapter Title: ...") states the identity outright.
    labelled = read_cover([ln.text for b in pages[0] for ln in b.lines]) if pages else None
    if labelled:
        h.title, h.provenance["title"] = labelled.title, "layout"
        h.provenance.update(title_confidence="high", title_evidence="labelled fields of a cover page")
    authors = labelled.authors if labelled and labelled.authors else \
        find_authors(pages[tp], title_lines, heights[tp]) if pages else []
    if not authors and pages and title_lines:
        authors = _authors_above(pages[tp], title_lines)
    authors = clean_names(authors)
    # A "name" made of the title's own words is a piece of the title, never its author.
    tw = set(norm(h.title).split())
    authors = [a for a in authors if not (set(norm(a).split()) <= tw)]
    cand = _info_authors(info, page_text)
    if cand:
        authors, h.provenance["authors"] = cand, "pdf-xmp"
    if authors and "authors" not in h.provenance:
        h.provenance["authors"] = "layout"
    h.authors = authors
    head = "\n".join(front)[:8000]
    for t in rotated:
        m = _ARXIV_STAMP.search(t)
        if m:
            h.arxiv = m.group(1)
            break
    if h.arxiv is None:
        m = _ARXIV_STAMP.search(head)
        if m:
            h.arxiv = m.group(1)
    if h.arxiv:
        h.provenance["arxiv"] = "layout"
    h.doi = find_doi(head[:6000]) or find_doi(" ".join(rotated))
    if h.doi:
        h.provenance["doi"] = "layout"
    h.year = find_year(front[:120], h.arxiv, rotated, h.title)
    if h.year:
        h.provenance["year"] = "layout"
    h.venue = (labelled.venue if labelled else None) or find_venue(front, h.title)
    if h.venue:
        h.provenance["venue"] = "layout"
    kw = (info.get("keywords") or "").strip()
    if kw:
        h.keywords = [k.strip() for k in re.split(r"[;,]", kw) if k.strip()][:20]
    return h

