"""Reading one paper: its outline (sections with pages, figures), a window of its text by section, pages or
offset, a passage with its neighbours by chunk id, and a figure's file.

The MCP tools call these with an id already resolved; what an agent receives (`agent_markdown`, size limits on
search answers) stays in the MCP server. Bad arguments raise `InputError`, an unknown section, page, chunk or
figure `NotFoundError`, each naming what to pass instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from papervault.errors import InputError, NotFoundError
from papervault.vault import paper as paper_md
from papervault.vault.paper import Section
from papervault.workspace import Workspace
from papervault.chunking.paper import chunk_paper

MAX_READ_CHARS = 50_000          # one window of text
DEFAULT_READ_CHARS = 12_000
MAX_PAGES = 20                   # pages in one read
MAX_NEIGHBOURS = 5               # passages either side of a chunk
MAX_CHUNK_CHARS = 4_000          # one passage's text
MAX_FIGURE_BYTES = 8 * 1024 * 1024
PAGES_RE = re.compile(r"^\s*(\d{1,5})\s*(?:-\s*(\d{1,5})\s*)?$")


def check_limit(value: int, name: str, high: int, low: int = 1) -> int:
    """`value` when it is an int in [low, high], else an InputError naming the bound."""
    if not isinstance(value, int) or value < low or value > high:
        raise InputError(f"{name} must be between {low} and {high}, not {value!r}", fix=f"pass {name} <= {high}")
    return value


def cut(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to `limit` characters (marked with an ellipsis), and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[:limit].rstrip() + " …", True


# --- the structure of paper.md (read by papervault.vault.paper, its one reader) ------------------------

@dataclass
class FigureRef:
    number: str
    caption: str        # the image's alt text as written: "Figure 3: ..."
    page: int | None
    path: str           # relative to the paper folder: "figures/fig-3.png"


def outline(fulltext: str) -> tuple[list[Section], list[FigureRef]]:
    """Sections (with their pages and line spans) and figures of a paper.md, in reading order."""
    doc = paper_md.read(fulltext)
    return doc.sections, [FigureRef(f.number, f.label, f.page, f.src) for f in doc.figures]


def page_spans(fulltext: str) -> dict[int, tuple[int, int]]:
    """Character span of every page (from its anchor to the next one) in paper.md."""
    return paper_md.read(fulltext).page_spans()


def _pages_in(text: str, first: int | None) -> tuple[int | None, int | None]:
    pages = paper_md.read(text).pages
    start = first if first is not None else (pages[0] if pages else None)
    end = max([p for p in [start, *pages] if p is not None], default=None)
    return start, end


def find_section(sections: list[Section], wanted: str) -> Section:
    """The section `wanted` names: its path, its title (with or without its number), or part of its path."""
    w = " ".join(wanted.split()).lower()
    for pick in (lambda s: s.path.lower() == w, lambda s: s.title.lower() == w,
                 lambda s: re.sub(r"^[\d.]+\s*", "", s.title).lower() == re.sub(r"^[\d.]+\s*", "", w),
                 lambda s: w in s.path.lower()):
        found = [s for s in sections if pick(s)]
        if found:
            return found[0]
    names = ", ".join(s.path for s in sections[:30])
    raise NotFoundError(f"no section {wanted!r}",
                        fix=f"sections are: {names}" if names else "this paper has no headings; read by pages")


# --- reading -------------------------------------------------------------------------------------

def read_text(ws: Workspace, paper_id: str, *, section: str | None = None, pages: str | None = None,
              offset: int = 0, max_chars: int = DEFAULT_READ_CHARS) -> dict[str, Any]:
    """A window of `max_chars` from `offset` of the paper's text, its section `section`, its pages `pages`
    ("4" or "4-6") or the whole of it, with the pages it spans, its anchor and `next_offset` to continue."""
    check_limit(max_chars, "max_chars", MAX_READ_CHARS, low=200)
    check_limit(offset, "offset", 10**9, low=0)
    if section and pages:
        raise InputError("give only one of section, pages")
    fulltext = ws.vault.read_fulltext(paper_id)
    if not fulltext:
        raise NotFoundError(f"paper {paper_id!r} has no full text (metadata only)",
                            fix="read its note with `get_paper`, or add its PDF")
    first_page = None
    if section:
        sections, _ = outline(fulltext)
        s = find_section(sections, section)
        lines = paper_md.split_lines(fulltext)     # the lines the reader numbered the section with
        text = "\n".join(lines[s.start:s.end])
        # the page of a section is the one open where it starts, even if its anchor came earlier
        first_page = s.page
        where: dict[str, Any] = {"section": s.path}
    elif pages:
        m = PAGES_RE.match(str(pages))
        if not m:
            raise InputError(f"invalid pages {pages!r}", fix="give a page like 3 or a range like 3-5")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            lo, hi = hi, lo
        if hi - lo + 1 > MAX_PAGES:
            raise InputError(f"{hi - lo + 1} pages asked for", fix=f"read at most {MAX_PAGES} pages at a time")
        spans = page_spans(fulltext)
        have = [p for p in range(lo, hi + 1) if p in spans]
        if not have:
            last = max(spans) if spans else 0
            raise NotFoundError(f"paper {paper_id!r} has no page {lo}" + (f"-{hi}" if hi != lo else ""),
                                fix=f"its pages are 1-{last}" if last else "it has no page anchors")
        text = fulltext[spans[have[0]][0]:spans[have[-1]][1]]
        first_page = have[0]
        where = {"pages": f"{have[0]}-{have[-1]}" if len(have) > 1 else str(have[0])}
    else:
        text = fulltext
        where = {"whole": True}
    if offset:
        # the page open at the cut is the last anchor before it
        before = paper_md.read(text).page_at(offset)
        if before is not None:
            first_page = before
    window = text[offset:offset + max_chars]
    page_start, page_end = _pages_in(window, first_page)
    nxt = offset + len(window)
    return {"paper_id": paper_id, **where, "page_start": page_start, "page_end": page_end,
            "anchor": paper_md.page_link(paper_id, page_start), "offset": offset, "text": window,
            "total_chars": len(text), "next_offset": nxt if nxt < len(text) else None}


def read_chunk(ws: Workspace, paper_id: str, chunk_id: str, neighbours: int = 1) -> dict[str, Any]:
    """The passage `chunk_id` (a search hit's) with `neighbours` passages either side in reading order."""
    check_limit(neighbours, "neighbours", MAX_NEIGHBOURS, low=0)
    if not re.fullmatch(r"[0-9a-f]{8,64}(?:-\d+)?", chunk_id or ""):
        raise InputError(f"invalid chunk id {chunk_id!r}", fix="pass the chunk_id of a search hit")
    meta, body = ws.vault.read_note(paper_id)
    chunks = chunk_paper(meta, ws.vault.read_fulltext(paper_id), body, ws.settings.index)
    pos = next((i for i, c in enumerate(chunks) if c.id == chunk_id), None)
    if pos is None:
        raise NotFoundError(f"no chunk {chunk_id!r} in paper {paper_id!r}",
                            fix="the paper changed since it was indexed; search again or read by section/pages")
    target = chunks[pos]
    # neighbours are the passages around it in reading order; section summaries would repeat them
    passage = {"paragraph", "figure", "table"}
    body_levels = passage if target.level in passage else {target.level}
    around = [c for c in chunks if c.level in body_levels]
    k = next(i for i, c in enumerate(around) if c.id == chunk_id)
    out = []
    for c in around[max(0, k - neighbours):k + neighbours + 1]:
        out.append({"chunk_id": c.id, "level": c.level, "section": c.section_path, "page": c.page_start,
                    "page_end": c.page_end, "text": cut(c.text, MAX_CHUNK_CHARS)[0], "target": c.id == chunk_id,
                    **({"figure": c.extra["figure"]} if c.extra.get("figure") else {})})
    return {"paper_id": paper_id, "chunk_id": chunk_id, "section": target.section_path,
            "page_start": min((c["page"] for c in out if c["page"]), default=None),
            "page_end": max((c["page_end"] or c["page"] for c in out if c["page"]), default=None),
            "anchor": paper_md.page_link(paper_id, target.page_start),
            "chunks": out}


def figure(ws: Workspace, paper_id: str, wanted: str) -> tuple[Path, dict[str, Any]]:
    """The file of figure `wanted` (a number as in "3", "Figure 3", or its path) of a paper, checked to be an
    image inside the paper's folder and under MAX_FIGURE_BYTES, and what to say about it (caption, page, path)."""
    given = wanted
    wanted = (wanted or "").strip()
    if not wanted:
        raise InputError("no figure given", fix="pass a figure number like 3 or a path from `get_paper`")
    _, figures = outline(ws.vault.read_fulltext(paper_id))
    num = paper_md.FIGURE_LABEL.match(wanted)
    number = num.group("num") if num else wanted
    ref = next((f for f in figures if f.number and f.number.lower() == number.lower()), None)
    if ref is None:
        ref = next((f for f in figures if f.path == wanted or Path(f.path).name == Path(wanted).name), None)
    if ref is None:
        known = ", ".join(f.number or f.path for f in figures[:40])
        raise NotFoundError(f"no figure {given!r} in {paper_id}",
                            fix=f"its figures are: {known}" if known else "this paper has no extracted figures")
    pdir = ws.vault.paper_dir(paper_id).resolve()
    path = ws.vault.resolve_inside(f"papers/{paper_id}/{ref.path}")
    if pdir not in path.parents:
        raise NotFoundError(f"figure path {ref.path!r} is outside the paper's folder")
    if path.suffix.lower() not in (".png", ".jpg", ".jpeg") or not path.is_file():
        raise NotFoundError(f"figure file {ref.path!r} is missing", fix="run `papervault add` again for this paper")
    size = path.stat().st_size
    if size > MAX_FIGURE_BYTES:
        raise InputError(f"figure {ref.path} is {size // 1024} KB, over the {MAX_FIGURE_BYTES // 1024} KB limit")
    return path, {"paper_id": paper_id, "number": ref.number, "caption": ref.caption, "page": ref.page,
                  "path": f"papers/{paper_id}/{ref.path}", "bytes": size,
                  "anchor": paper_md.page_link(paper_id, ref.page)}
