"""What a page holds besides its running text: captions, figures (captioned, uncaptioned and drawn in text),
tables, equations and code, each found on the page's blocks and claimed so the text does not repeat it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from papervault.models import Figure, Table
from papervault.parse import equations, figures, tables
from papervault.parse.captions import attach_titles, caption_of
from papervault.parse.layout import Block, inside, reading_order


@dataclass
class _PageLayout:
    """One page being laid out: its blocks and the span of its running text, which columns are measured by."""

    page: Any
    pno: int
    blocks: list[Block]
    warnings: list[str]
    width: float = 0.0
    text_left: float = 0.0
    text_right: float = 0.0

    def __post_init__(self) -> None:
        self.width = self.page.rect.width
        self.text_left = min(b.bbox[0] for b in self.blocks)
        self.text_right = max(b.bbox[2] for b in self.blocks)

    def column(self, rect) -> tuple[float, float]:
        return figures.column_span(rect, self.width, self.text_left, self.text_right)


def page_objects(page, pno, blocks, body, figs, tabs, used_names, warnings, scanned=False) -> list[Block]:
    """Captions, figures, tables, equations and code on one page; returns its blocks in reading order."""
    lay = _PageLayout(page, pno, blocks, warnings)
    captions = _mark_captions(lay)
    # Tables first: their ruling lines would otherwise be taken for vector figures.
    tcaps = [b for b in captions if b.kind == "table_caption"]
    log = figures.bbox_log(page) if tcaps else None   # read once for tables and figures when either needs it
    table_rects = _page_tables(lay, tcaps, captions, tabs, log) if tcaps else []
    fcaps = [b for b in captions if b.kind == "figure_caption"]
    # Drawings are only clustered when a figure caption asks for them; images are looked at when the page has
    # any, since a large uncaptioned picture is still a figure.
    regions = [] if scanned else figures.graphic_regions(page, warnings, pno, drawings=bool(fcaps),
                                                          exclude=table_rects, log=log)
    regions = [(r, k) for r, k in regions if not any(inside(r, t, tol=6) for t in table_rects)]
    taken = _captioned_figures(lay, fcaps, regions, figs, used_names)
    _uncaptioned_figures(lay, regions, taken, figs, used_names)
    _mark_equations_and_code(lay, body)
    return reading_order([b for b in blocks if b.kind != "consumed"], lay.width)


def _mark_captions(lay: _PageLayout) -> list[Block]:
    """The page's figure and table captions, marked as such; an IEEE label alone on its line ("TABLE IV")
    takes the title on the lines below it."""
    captions = []
    for b in lay.blocks:
        cap = caption_of(b)
        if cap:
            b.kind = cap[0] + "_caption"
            b.number, b.data["caption"] = cap[1], cap[2]
            captions.append(b)
    for b in attach_titles(captions, lay.blocks, lay.column):
        b.kind = "consumed"
    return captions


def _page_tables(lay: _PageLayout, tcaps: list[Block], captions: list[Block], tabs: list[Table], log) -> list:
    """The table of each table caption (a ruled grid, else one rebuilt from the words beside the caption);
    its text blocks are consumed. Returns the rectangles of the tables found."""
    page, blocks = lay.page, lay.blocks
    words = page.get_text("words")
    paths = tables.page_paths(log)
    cols = [lay.column(cb.bbox) for cb in tcaps]
    # The table finder's cost grows with the characters it looks at: it only sees the caption's column,
    # between the nearest paragraphs of running text above and below the caption.
    zones = {id(cb): _table_zone(cb, blocks, col, page.rect) for cb, col in zip(tcaps, cols)}
    ruled = tables.find_in_zones(page, [zones[id(cb)] for cb in tcaps], paths)
    options = {id(cb): tables.candidates(cb, ts, col) for cb, ts, col in zip(tcaps, ruled, cols)}
    chosen = tables.assign(options)
    found = {}
    table_rects: list = []
    for cb in tcaps:  # ruled grids first: they bound the word-built tables of the other captions
        tab = chosen.get(id(cb))
        md = tables.table_text(tab, words) if tab is not None else ""
        if md:
            found[id(cb)] = (tab, md)
            table_rects.append(tuple(tab.bbox))
    rules = tables.horizontal_rules(paths)
    for cb in tcaps:
        if id(cb) not in found:
            # No ruling grid (or booktabs rules only): the grid is rebuilt from the words beside the caption.
            others = [b.bbox for b in captions if b is not cb] + table_rects
            tab = tables.table_from_words(words, zones[id(cb)], cb.bbox, rules, others)
            md = tables.table_text(tab) if tab is not None else ""
            if not md:
                lay.warnings.append(f"page {lay.pno}: Table {cb.number} has a caption but no grid was recognised; "
                                    f"its text is kept as paragraphs")
                continue
            found[id(cb)] = (tab, md)
            table_rects.append(tuple(tab.bbox))
    for cb in tcaps:
        if id(cb) not in found:
            continue
        tab, md = found[id(cb)]
        rect = tuple(tab.bbox)
        cb.data["table"] = md
        tabs.append(Table(number=cb.number, page=lay.pno, caption=cb.data["caption"], markdown=md))
        for b in blocks:
            if b.kind == "text" and inside(b.bbox, rect, tol=3):
                b.kind = "consumed"
    return table_rects


def _captioned_figures(lay: _PageLayout, fcaps: list[Block], regions: list, figs: list[Figure],
                       used_names: set) -> list:
    """The figure of each figure caption: the picture next to it, else (pseudo-code, listings) a crop of the
    column above it. Returns the rectangles taken."""
    page, pno = lay.page, lay.pno
    taken: list = []
    for cb in fcaps:
        col = lay.column(cb.bbox)
        found = figures.figure_region(cb, regions, lay.blocks, col)
        if found is None:
            # No picture next to the caption: a figure drawn with text (pseudo-code, listings). Its text
            # stays in the Markdown; the PNG is a crop of the column above the caption.
            rect = _text_figure_rect(cb, lay.blocks, col)
            kind = "page" if rect is None else "vector"
            rect = rect or tuple(page.rect)
        else:
            rect, kind = found
            for b in figures.blocks_inside(rect, lay.blocks):
                b.kind = "consumed"
        taken.append(rect)
        name = _unique(f"fig-{_slug(cb.number)}", used_names)
        try:
            png = figures.crop_png(page, rect, dpi=72 if kind == "page" else figures.CROP_DPI)
        except Exception as exc:
            lay.warnings.append(f"page {pno}: Figure {cb.number} could not be rendered ({type(exc).__name__})")
            continue
        fig = Figure(number=cb.number, page=pno, caption=cb.data["caption"], filename=name, png=png, kind=kind,
                     bbox=tuple(round(v, 1) for v in rect))
        figs.append(fig)
        cb.data["figure"] = fig
    return taken


def _uncaptioned_figures(lay: _PageLayout, regions: list, taken: list, figs: list[Figure], used_names: set) -> None:
    """Large pictures that no caption claimed are figures too (uncaptioned), embedded where they stand."""
    page, pno = lay.page, lay.pno
    parea = page.rect.width * page.rect.height
    for r, k in regions:
        if k != "raster" or (r[2] - r[0]) * (r[3] - r[1]) < 0.04 * parea or any(inside(r, t, tol=8) for t in taken):
            continue
        name = _unique(f"fig-p{pno}", used_names)
        try:
            png = figures.crop_png(page, r)
        except Exception:
            continue
        fig = Figure(number="", page=pno, caption="", filename=name, png=png, kind="raster",
                     bbox=tuple(round(v, 1) for v in r))
        figs.append(fig)
        for b in figures.blocks_inside(r, lay.blocks):
            b.kind = "consumed"
        lay.blocks.append(Block(lines=[], page=pno, kind="figure", box=r, data={"figure": fig}))
        taken.append(r)


def _mark_equations_and_code(lay: _PageLayout, body) -> None:
    """Display equations (with their LaTeX and number) and monospaced code among the page's text blocks."""
    for b in lay.blocks:
        if b.kind != "text":
            continue
        col = lay.column(b.bbox)
        if equations.is_display_equation(b, body, col):
            b.kind = "equation"
            b.data["latex"], b.number = equations.to_latex(b)
        elif len(b.lines) >= 2 and b.mono_share > 0.7:
            b.kind = "code"


def _is_running_text(b: Block, col: tuple[float, float]) -> bool:
    """A paragraph of body text: several lines filling a text column, in sentences (table rows are short,
    numeric, or without the small words of prose). Under a caption as wide as the page, the paragraphs of
    either column count."""
    if b.kind not in ("text", "heading") or len(b.lines) < 3 or len(b.text) < 200:
        return False
    width = b.bbox[2] - b.bbox[0]
    if width < 0.4 * (col[1] - col[0]):
        return False
    full = sum(1 for ln in b.lines if ln.bbox[2] - ln.bbox[0] > 0.8 * width)
    letters = sum(c.isalpha() for c in b.text)
    words = b.text.lower().split()
    small = sum(1 for w in words if w in tables.SMALL_WORDS)
    return full >= 0.6 * len(b.lines) and letters > 0.6 * len(b.text) and small >= 0.12 * len(words)


def _table_zone(cb: Block, blocks: list[Block], col: tuple[float, float], prect) -> tuple:
    """Where the table of caption `cb` can be: its column, from the paragraph of running text above the
    caption (tables may sit over their caption) to the one below it, at most 420/520 pt away."""
    top = max(prect.y0, cb.bbox[1] - 420)
    bottom = min(prect.y1, cb.bbox[3] + 520)
    for b in blocks:
        if b is cb or b.bbox[2] < col[0] + 2 or b.bbox[0] > col[1] - 2 or not _is_running_text(b, col):
            continue
        if b.bbox[3] <= cb.bbox[1] + 1:
            top = max(top, b.bbox[3] - 1)
        elif b.bbox[1] >= cb.bbox[3] - 1:
            bottom = min(bottom, b.bbox[1] + 1)
    return (col[0] - 8, top, col[1] + 8, bottom)


def _text_figure_rect(cb: Block, blocks: list[Block], col) -> tuple | None:
    """The area between the caption and the nearest long paragraph above it in its column, if it is tall."""
    top = 0.0
    for b in blocks:
        if b is cb or b.bbox[3] > cb.bbox[1] + 1 or b.bbox[2] < col[0] or b.bbox[0] > col[1]:
            continue
        if b.kind in ("text", "heading") and len(b.text) > 200 and b.mono_share < 0.5 or b.kind.endswith("caption"):
            top = max(top, b.bbox[3])
    if cb.bbox[1] - top < 40 or top == 0.0:
        return None
    return (col[0], top + 2, col[1], cb.bbox[1] - 2)


def _slug(number: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", number).strip("-").lower() or "x"


def _unique(stem: str, used: set[str]) -> str:
    name, i = f"{stem}.png", 1
    while name in used:
        i += 1
        name = f"{stem}-{i}.png"
    used.add(name)
    return name
