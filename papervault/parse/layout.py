"""Page layout: lines from PyMuPDF's text dictionary, paragraphs, running headers/footers and reading order."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import pymupdf

from papervault.parse import repair
from papervault.parse.text import clean, norm_key

Rect = tuple[float, float, float, float]

# Ligatures are expanded by `clean` (MuPDF would keep them as one glyph with this flag cleared anyway);
# images are left out of the dictionary: figures come from get_image_info(), which is cheaper.
TEXT_FLAGS = pymupdf.TEXT_PRESERVE_WHITESPACE | pymupdf.TEXT_MEDIABOX_CLIP


@dataclass
class Span:
    text: str
    size: float
    font: str
    flags: int
    bbox: Rect

    @property
    def bold(self) -> bool:
        f = self.font.lower()
        return bool(self.flags & 16) or "bold" in f or f.endswith(("-b", ".b", "-bd")) or "-bold" in f or "cmbx" in f

    @property
    def superscript(self) -> bool:
        return bool(self.flags & 1)


@dataclass
class Line:
    spans: list[Span]
    bbox: Rect
    block: int = -1            # MuPDF block number; -1 for OCR lines

    # Cached: read many times by every pass. Lines are only mutated (spans glued) in extract_lines,
    # before anything reads these.
    @cached_property
    def text(self) -> str:
        return "".join(s.text for s in self.spans).strip()

    @cached_property
    def size(self) -> float:
        """Font size of most of the characters (superscripts and footnote marks do not count)."""
        c: Counter = Counter()
        for s in self.spans:
            c[round(s.size * 2) / 2] += len(s.text.strip())
        return c.most_common(1)[0][0] if c else 0.0

    @cached_property
    def bold(self) -> bool:
        total = sum(len(s.text.strip()) for s in self.spans)
        return total > 0 and sum(len(s.text.strip()) for s in self.spans if s.bold) >= 0.7 * total

    @property
    def fonts(self) -> set[str]:
        return {s.font for s in self.spans if s.text.strip()}


@dataclass
class Block:
    """A paragraph-like unit; `kind` is decided by later passes (heading, caption, equation, ...)."""

    lines: list[Line]
    page: int
    kind: str = "text"
    text: str = ""             # joined, cleaned text (set by `finish`)
    level: int = 0             # heading level
    number: str = ""           # heading / caption number
    data: dict = field(default_factory=dict)
    box: Rect | None = None    # for blocks without lines (an uncaptioned figure)

    @property
    def bbox(self) -> Rect:
        return self.box if self.box is not None else union([ln.bbox for ln in self.lines])

    @property
    def size(self) -> float:
        # Read by every pass; cached until lines are added (blocks only grow while they are being grouped).
        cached = self.__dict__.get("_size")
        if cached is not None and cached[0] == len(self.lines):
            return cached[1]
        c: Counter = Counter()
        for ln in self.lines:
            c[ln.size] += len(ln.text)
        value = c.most_common(1)[0][0] if c else 0.0
        self.__dict__["_size"] = (len(self.lines), value)
        return value

    @property
    def bold(self) -> bool:
        return bool(self.lines) and all(ln.bold for ln in self.lines)

    def char_share(self, pred: Callable[[Span], bool]) -> float:
        """The share of the block's (non-blank) characters that sit in spans for which `pred` holds."""
        total = hit = 0
        for ln in self.lines:
            for s in ln.spans:
                n = len(s.text.strip())
                total += n
                if n and pred(s):
                    hit += n
        return hit / total if total else 0.0

    @property
    def mono_share(self) -> float:
        return self.char_share(_is_mono)


def _is_mono(s: Span) -> bool:
    f = s.font.lower()
    return bool(s.flags & 8) or "mono" in f or "courier" in f or f.startswith(("cmtt", "sfmono", "inconsolata")) \
        or "typewriter" in f or "consol" in f


def union(rects) -> Rect:
    rects = list(rects)
    return (min(r[0] for r in rects), min(r[1] for r in rects), max(r[2] for r in rects), max(r[3] for r in rects))


def overlap_x(a: Rect, b: Rect) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0]))


def overlap_y(a: Rect, b: Rect) -> float:
    return max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def inside(inner: Rect, outer: Rect, tol: float = 2.0) -> bool:
    """Whether most of `inner` lies within `outer` (grown by `tol`)."""
    ix = max(0.0, min(inner[2], outer[2] + tol) - max(inner[0], outer[0] - tol))
    iy = max(0.0, min(inner[3], outer[3] + tol) - max(inner[1], outer[1] - tol))
    area = max(1e-6, (inner[2] - inner[0]) * (inner[3] - inner[1]))
    return ix * iy >= 0.6 * area


def extract_lines(page: pymupdf.Page) -> tuple[list[Line], list[Line]]:
    """Horizontal text lines of a page, and the rotated ones apart (margin stamps such as arXiv's)."""
    lines, rotated, _ = extract_lines_repaired(page)
    return lines, rotated


def extract_lines_repaired(page: pymupdf.Page) -> tuple[list[Line], list[Line], bool]:
    """`extract_lines`, with the text layer repaired where it is broken; the flag says it was.

    Glyphs of TeX's OT1 fonts and mis-mapped quotes and dashes are mapped to their Unicode on every page; a
    page whose words look split by spaces (`repair.needs_repair`) is read again glyph by glyph and its words
    rebuilt from the gaps between the glyphs.
    """
    lines, rotated, mapped = _lines_from(page.get_text("dict", flags=TEXT_FLAGS), chars=False)
    if repair.needs_repair([ln.text for ln in lines]):
        raw = page.get_text("rawdict", flags=TEXT_FLAGS)
        fixed, rot2, _ = _lines_from(raw, chars=True)
        before = repair.fragment_share([ln.text for ln in lines])
        if fixed and repair.fragment_share([ln.text for ln in fixed]) < before:
            return fixed, rot2, True
    return lines, rotated, mapped


def _lines_from(d: dict, chars: bool) -> tuple[list[Line], list[Line], bool]:
    lines: list[Line] = []
    rotated: list[Line] = []
    mapped = False
    for bno, b in enumerate(d.get("blocks", ())):
        if b.get("type") != 0:
            continue
        prev: Line | None = None
        for ln in b.get("lines", ()):
            raw_spans = ln.get("spans", ())
            texts = repair.line_text_from_chars(raw_spans) if chars else [s["text"] for s in raw_spans]
            spans = []
            for s, t in zip(raw_spans, texts):
                if not t:
                    continue
                fixed = _fix_glyphs(t, s["font"])
                mapped = mapped or fixed != t
                spans.append(Span(clean(fixed), s["size"], s["font"], s["flags"], tuple(s["bbox"])))
            if chars:
                # Spaces between spans: the rebuilt texts carry none at their edges.
                for i in range(1, len(spans)):
                    gap = spans[i].bbox[0] - spans[i - 1].bbox[2]
                    if gap > 0.16 * spans[i].size and not spans[i - 1].text.endswith(" ") \
                            and not spans[i].text.startswith(" "):
                        spans[i].text = " " + spans[i].text
            if not spans or not "".join(s.text for s in spans).strip():
                continue
            line = Line(spans=spans, bbox=tuple(ln["bbox"]), block=bno)
            dx, dy = ln.get("dir", (1, 0))
            if abs(dy) > 0.1 or dx < 0:
                rotated.append(line)
                continue
            # Justified text is sometimes cut into several "lines" on one baseline: glue them back.
            if prev is not None and abs(prev.bbox[3] - line.bbox[3]) < 2.0 and 0 <= line.bbox[0] - prev.bbox[2] < 3 * line.spans[0].size:
                gap = [] if prev.spans[-1].text.endswith(" ") or line.spans[0].text.startswith(" ") else \
                    [Span(" ", line.spans[0].size, line.spans[0].font, 0, line.bbox)]
                prev.spans.extend(gap + line.spans)
                prev.bbox = union([prev.bbox, line.bbox])
                continue
            lines.append(line)
            prev = line
    return lines, rotated, mapped


def _fix_glyphs(text: str, font: str) -> str:
    if repair.is_math_font(font):
        return text
    if repair.is_ot1_font(font):
        text = repair.map_ot1(text)
    return repair.fix_replacement_chars(repair.map_punctuation(text))


_PAGE_NUMBER = re.compile(r"^(page\s*)?[\divxlcIVXLC]{1,6}(\s*(of|/)\s*\d+)?$", re.I)


def find_running_lines(pages: list[list[Line]], heights: list[float]) -> set[tuple[int, int]]:
    """(page index, line index) of running headers, footers and page numbers to drop.

    A line in the top or bottom 9% of the page is running when its text (digits ignored) recurs on at least
    two other pages in the same band, or when it is just a page number.
    """
    bands: list[list[tuple[int, str]]] = []
    counts: Counter = Counter()
    for pi, lines in enumerate(pages):
        h = heights[pi]
        found = []
        for li, ln in enumerate(lines):
            if ln.bbox[3] < 0.09 * h or ln.bbox[1] > 0.91 * h:
                key = ("t" if ln.bbox[3] < 0.5 * h else "b") + norm_key(ln.text)
                found.append((li, key))
        bands.append(found)
        for key in {k for _, k in found}:
            counts[key] += 1
    need = 3 if len(pages) >= 4 else 2
    drop: set[tuple[int, int]] = set()
    for pi, found in enumerate(bands):
        for li, key in found:
            text = pages[pi][li].text.strip()
            if counts[key] >= need or _PAGE_NUMBER.match(text):
                drop.add((pi, li))
    return drop


def group_blocks(lines: list[Line], page: int) -> list[Block]:
    """Cut lines into paragraphs: a new one at a MuPDF block break, a style change, a gap or an indent."""
    blocks: list[Block] = []
    cur: list[Line] = []
    left = None
    for ln in lines:
        if cur:
            prev = cur[-1]
            h = max(1.0, prev.bbox[3] - prev.bbox[1])
            new = False
            if ln.block != prev.block or ln.block == -1:
                # OCR lines carry no block: continue while the next line sits right below and overlaps.
                if not (ln.block == -1 and 0 <= ln.bbox[1] - prev.bbox[3] < 0.8 * h
                        and overlap_x(ln.bbox, prev.bbox) > 0.3 * (prev.bbox[2] - prev.bbox[0])):
                    new = True
                elif ln.bbox[0] - left > 12 and abs(prev.bbox[0] - left) < 4:
                    new = True  # an indented first line
            if not new and (abs(ln.size - prev.size) > 0.6 or ln.bold != prev.bold and (
                    len(prev.text) < 80 or len(ln.text) < 80) and _standalone(prev, ln)):
                new = True
            if not new and ln.bbox[1] - prev.bbox[3] > 0.9 * h:
                new = True
            if not new and ln.block != -1 and 6 < ln.bbox[0] - left < 40 and abs(prev.bbox[0] - left) < 3 \
                    and prev.bbox[2] < max(c.bbox[2] for c in cur) - 0 and len(cur) > 0 and _ended(prev):
                new = True  # paragraph indent inside one MuPDF block
            if not new and ln.bbox[1] > prev.bbox[3] + 0.2 * h and ln.bbox[0] > prev.bbox[2]:
                new = True  # the next line starts to the right of the previous one: another column
            if new:
                blocks.append(Block(cur, page))
                cur = []
        if not cur:
            left = ln.bbox[0]
        cur.append(ln)
        left = min(left, ln.bbox[0])
    if cur:
        blocks.append(Block(cur, page))
    return blocks


def _ended(line: Line) -> bool:
    return line.text.rstrip().endswith((".", ":", "?", "!", ")"))


def _standalone(prev: Line, ln: Line) -> bool:
    # A bold line followed by a regular one (or the reverse) is a heading boundary only if the bold line
    # is a line of its own, not bold words that happen to fill a line.
    return True


def reading_order(blocks: list[Block], width: float) -> list[Block]:
    """Sort blocks for reading: full-width blocks cut the page into bands; in a band, left column then right.

    This handles one column, two columns, and two-column pages with a full-width title, abstract or figure.
    """
    if len(blocks) < 2:
        return list(blocks)
    xs0 = [b.bbox[0] for b in blocks]
    xs1 = [b.bbox[2] for b in blocks]
    mid = (min(xs0) + max(xs1)) / 2
    span = max(xs1) - min(xs0)

    def side(b: Block) -> int:
        x0, _, x1, _ = b.bbox
        if x1 <= mid + 0.02 * span:
            return 0
        if x0 >= mid - 0.02 * span:
            return 1
        return -1  # crosses the middle: full width

    sides = [side(b) for b in blocks]
    if not any(s == 1 for s in sides) or not any(s == 0 for s in sides):
        return sorted(blocks, key=lambda b: (b.bbox[1], b.bbox[0]))
    full = sorted((b for b, s in zip(blocks, sides) if s == -1), key=lambda b: b.bbox[1])
    cols = [(b, s) for b, s in zip(blocks, sides) if s != -1]
    out: list[Block] = []
    top = -1e9
    for cut in full + [None]:
        bottom = cut.bbox[1] if cut is not None else 1e9
        band = [(b, s) for b, s in cols if top - 1 <= (b.bbox[1] + b.bbox[3]) / 2 < bottom]
        for b, s in sorted(band, key=lambda bs: (bs[1], bs[0].bbox[1])):
            out.append(b)
        taken = {id(b) for b, _ in band}
        cols = [(b, s) for b, s in cols if id(b) not in taken]
        if cut is not None:
            out.append(cut)
            top = (cut.bbox[1] + cut.bbox[3]) / 2
    out.extend(b for b, _ in sorted(cols, key=lambda bs: (bs[1], bs[0].bbox[1])))
    return out
