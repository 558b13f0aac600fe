"""Tables: PyMuPDF's table finder, run only on pages with a table caption, written as Markdown or HTML.

A table without a ruling grid (no rules at all, or booktabs-style horizontal rules only) is rebuilt from the
words next to its caption: rows from the words' baselines, columns from x-gaps that are free in (almost) every
row. A grid that does not look like a table (one column, mostly one cell per row, prose) is not used.
"""

from __future__ import annotations

import html

import pymupdf

from papervault.parse.layout import Block, Rect, inside, overlap_x, overlap_y, union
from papervault.parse.text import clean
from papervault.vault.paper import escape_html

MAX_CELLS = 5000


def find_tables(page: pymupdf.Page, clip: Rect | None = None, strategy: str = "lines") -> list:
    """PyMuPDF tables on the page (or within `clip`); an empty list when the finder fails."""
    # PyMuPDF prints an advert for its layout package from the table finder when that package is not loaded.
    getattr(pymupdf, "no_recommend_layout", lambda: None)()
    try:
        kwargs = {"strategy": strategy}
        if clip is not None:
            kwargs["clip"] = pymupdf.Rect(clip)
        if strategy == "text":
            kwargs.update(min_words_vertical=2, min_words_horizontal=1)
        return list(page.find_tables(**kwargs).tables)
    except Exception:
        return []


def candidates(caption: Block, tables: list, col: tuple[float, float]) -> list[tuple[float, str, object]]:
    """(distance, "below" | "above", table) for the tables in the caption's column, nearest first."""
    cb = caption.bbox
    out = []
    for t in tables:
        r = tuple(t.bbox)
        if overlap_x(r, (col[0], 0, col[1], 0)) < 0.5 * min(r[2] - r[0], col[1] - col[0]):
            continue
        if r[1] >= cb[3] - 4:
            d, side = r[1] - cb[3], "below"
        elif r[3] <= cb[1] + 4:
            d, side = (cb[1] - r[3]) * 1.5, "above"  # below wins ties
        else:
            d, side = 0.0, "below"
        if d < 250:
            out.append((d, side, t))
    return sorted(out, key=lambda o: o[0])


def assign(options: dict[int, list[tuple[float, str, object]]]) -> dict[int, object]:
    """One table per caption (keys are caption ids, values their `candidates`), no table twice.

    Captions whose tables can only be on one side are served first; the others then prefer the side the
    page's resolved captions use (two tables stacked under their two captions: the second caption is as near
    to the first table, above it, as to its own below it)."""
    chosen: dict[int, object] = {}
    taken: set[tuple] = set()
    votes = {"below": 0, "above": 0}

    def free(k: int) -> list:
        return [o for o in options[k] if _key(o[2]) not in taken]

    pending = [k for k, opts in options.items() if opts]
    while pending:
        pending = [k for k in pending if free(k)]
        if not pending:
            break
        k = min(pending, key=lambda k: (len({o[1] for o in free(k)}), free(k)[0][0]))
        opts = free(k)
        sides = {o[1] for o in opts}
        if len(sides) > 1 and votes["below"] != votes["above"]:
            prefer = "below" if votes["below"] > votes["above"] else "above"
            opts = [o for o in opts if o[1] == prefer]
        d, side, t = opts[0]
        chosen[k] = t
        taken.add(_key(t))
        votes[side] += 1
        pending.remove(k)
    return chosen


def _key(t) -> tuple:
    return tuple(round(v) for v in t.bbox)


def plausible(rows: list[list[str | None]]) -> bool:
    """Whether a grid looks like a table at all: two rows and two columns or more, most rows with two cells."""
    if len(rows) < 2 or max((len(r) for r in rows), default=0) < 2:
        return False
    return sum(1 for r in rows if sum(1 for c in r if c) >= 2) >= 0.5 * len(rows)


# The small words of sentences: a third of the words of prose, a few in a table.
SMALL_WORDS = frozenset("a an the of and or to in on at by for with from as is are was be been it its this that these "
                        "which we our not can".split())


def dense(rows: list[list[str | None]]) -> bool:
    """Whether a grid built from words is a table rather than scattered words: three rows or more, most cells
    filled in most rows (the axis ticks and legends of a chart make a sparse grid), short cells, and not prose
    (whose lines can share a wide gap by chance, and whose "cells" are long and full of small words)."""
    if len(rows) < 3:
        return False
    fills = sorted(sum(1 for c in r if c != "") / len(r) for r in rows if r)  # a merged cell counts as filled
    cells = sum(len(r) for r in rows)
    if fills[(len(fills) - 1) // 2] < 0.6 or sum(1 for r in rows for c in r if c != "") < 0.6 * cells:
        return False
    sizes = sorted(len(c.split()) for r in rows for c in r if c)
    if sizes[len(sizes) // 2] > 6:
        return False
    words = [w for r in rows for c in r if c for w in c.lower().split()]
    return sum(1 for w in words if w in SMALL_WORDS) < 0.25 * len(words)


class WordTable:
    """A table rebuilt from words: `cells` is a list of rows of text, None where a merged cell covers it."""

    def __init__(self, bbox: Rect, cells: list[list[str | None]]):
        self.bbox = bbox
        self.cells = cells

    def extract(self) -> list[list[str | None]]:
        return self.cells


def page_paths(log: list) -> list[Rect]:
    """The boxes of the page's vector paths (strokes and fills), from its bounding-box log (`figures.bbox_log`)."""
    return [tuple(r) for kind, r in log if kind in ("stroke-path", "fill-path")]


def horizontal_rules(paths: list[Rect]) -> list[Rect]:
    """Thin horizontal strokes and bars (table rules) among `paths`."""
    return [r for r in paths if r[3] - r[1] < 2.0 and r[2] - r[0] > 20]


def find_in_zones(page: pymupdf.Page, zones: list[Rect], paths: list[Rect]) -> list[list]:
    """The ruled tables of each zone (one list per zone).

    The finder is not run on a zone without a path that could make a cell border other than a horizontal
    rule (no ruled grid can be there), and runs once for zones that overlap so much that their union is no
    larger than the two apart (its cost grows with the area it looks at)."""
    groups: list[list] = []
    for i, z in enumerate(zones):
        if not any(r[3] - r[1] >= 2.0 and z[0] <= (r[0] + r[2]) / 2 <= z[2] and z[1] <= (r[1] + r[3]) / 2 <= z[3]
                   for r in paths):
            continue
        for g in groups:
            u = union([g[0], z])
            if overlap_x(g[0], z) * overlap_y(g[0], z) > 0 and _area(u) <= _area(g[0]) + _area(z):
                g[0] = u
                g[1].append(i)
                break
        else:
            groups.append([z, [i]])
    out: list[list] = [[] for _ in zones]
    for rect, members in groups:
        found = find_tables(page, clip=rect)
        for i in members:
            out[i] = [t for t in found if inside(tuple(t.bbox), zones[i], tol=4)]
    return out


def _area(r: Rect) -> float:
    return max(0.0, r[2] - r[0]) * max(0.0, r[3] - r[1])



def table_from_words(words: list, zone: Rect, caption: Rect, rules: list[Rect], barriers: list[Rect]):
    """The table next to a caption, rebuilt from the page's `words` (`page.get_text("words")`) in `zone`.

    The caption's two sides are tried: the lines of words nearest to the caption, continued outwards while
    the lines follow each other closely, and not past another caption or table (`barriers`). The plausible
    grid nearer to the caption wins (below on a tie). None when neither side looks like a table.
    """
    zx0, zy0, zx1, zy1 = zone
    pool = []
    for w in words:
        x0, y0, x1, y1 = w[:4]
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        # Whole words of the column only (the zone's sides have a margin for the finder): the line ends of the
        # next column stay out.
        if not (zx0 + 6 <= x0 and x1 <= zx1 - 6 and zy0 <= cy <= zy1) or not w[4].strip():
            continue
        if caption[0] - 1 <= cx <= caption[2] + 1 and caption[1] - 1 <= cy <= caption[3] + 1:
            continue
        if any(b[0] - 1 <= cx <= b[2] + 1 and b[1] - 1 <= cy <= b[3] + 1 for b in barriers):
            continue
        pool.append(w)
    if len(pool) < 4:
        return None
    heights = sorted(w[3] - w[1] for w in pool)
    h = heights[len(heights) // 2]
    pool = [w for w in pool if w[3] - w[1] < 1.8 * h]  # rotated labels (vertical words) are left out
    best = None
    for side in ("below", "above"):
        if side == "below":
            ws = [w for w in pool if w[1] >= caption[3] - 1]
            limit = min([b[1] for b in barriers if b[1] >= caption[3] - 1 and _over_x(b, zone)] + [zy1])
            ws = [w for w in ws if w[3] <= limit + 1]
        else:
            ws = [w for w in pool if w[3] <= caption[1] + 1]
            limit = max([b[3] for b in barriers if b[3] <= caption[1] + 1 and _over_x(b, zone)] + [zy0])
            ws = [w for w in ws if w[1] >= limit - 1]
        lines = _lines(ws)
        if side == "above":
            lines.reverse()
        lines = _adjacent(lines, caption, side, h, rules)
        if len(lines) < 2:
            continue
        if side == "above":
            lines.reverse()
        cells = _grid(lines, h, rules)
        if cells is None or not plausible(cells) or not dense(cells):
            continue
        gap = lines[0][1] - caption[3] if side == "below" else caption[1] - lines[-1][3]
        if best is None or gap < best[0] - 2:
            x0 = min(w[0] for ln in lines for w in ln[4])
            x1 = max(w[2] for ln in lines for w in ln[4])
            best = (gap, WordTable((x0, lines[0][1], x1, lines[-1][3]), cells))
    return best[1] if best else None


def _over_x(b: Rect, zone: Rect) -> bool:
    return overlap_x(b, (zone[0], 0, zone[2], 0)) > 0.3 * min(b[2] - b[0], zone[2] - zone[0])


def _lines(ws: list) -> list[tuple]:
    """Words grouped into text lines by vertical overlap: (x0, y0, x1, y1, words left to right)."""
    out: list[list] = []
    for w in sorted(ws, key=lambda w: ((w[1] + w[3]) / 2, w[0])):
        if out:
            cur = out[-1]
            top, bottom = cur[1], cur[3]
            ov = min(bottom, w[3]) - max(top, w[1])
            if ov > 0.5 * min(bottom - top, w[3] - w[1]):
                cur[4].append(w)
                cur[0], cur[1], cur[2], cur[3] = min(cur[0], w[0]), min(top, w[1]), max(cur[2], w[2]), max(bottom, w[3])
                continue
        out.append([w[0], w[1], w[2], w[3], [w]])
    for ln in out:
        ln[4].sort(key=lambda w: w[0])
    return [tuple(ln) for ln in out]


def _adjacent(lines: list[tuple], caption: Rect, side: str, h: float, rules: list[Rect]) -> list[tuple]:
    """The run of lines that starts next to the caption and continues while lines follow closely."""
    out: list[tuple] = []
    edge = caption[3] if side == "below" else caption[1]
    for ln in lines:
        gap = ln[1] - edge if side == "below" else edge - ln[3]
        lo, hi = (edge, ln[1]) if side == "below" else (ln[3], edge)
        ruled = any(lo - 1 <= (r[1] + r[3]) / 2 <= hi + 1 for r in rules)
        allowed = max(4.0 * h, 30.0) if not out else (2.5 if ruled else 1.6) * h
        if gap > allowed:
            break
        out.append(ln)
        edge = ln[3] if side == "below" else ln[1]
    return out


# long: one sweep of the lines' coverage of the x-axis finds the column separators, then cuts each line into
# cells with them
def _grid(lines: list[tuple], h: float, rules: list[Rect]) -> list[list[str | None]] | None:
    """Cells from text lines: column separators are x-gaps at least half a line high that (almost) no line
    covers; a line's words between two separators form a cell, words across a separator a merged cell."""
    min_gap = 0.5 * h
    x_lo = min(ln[0] for ln in lines)
    x_hi = max(ln[2] for ln in lines)
    # Coverage of the x-axis by the lines' words (overlapping words of a line count once).
    events = []
    spans = []
    for ln in lines:
        merged: list[list[float]] = []
        for w in ln[4]:
            if merged and w[0] <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], w[2])
            else:
                merged.append([w[0], w[2]])
        spans.append(merged)
        for a, b in merged:
            events += [(a, 1), (b, -1)]
    events.sort()
    thr = 1 if len(lines) >= 6 else 0  # a heading that spans columns crosses their gap in one line
    free: list[list[float]] = []
    level, x = 0, x_lo
    for pos, delta in events:
        if level <= thr and pos > x:
            if free and abs(free[-1][1] - x) < 1e-6:
                free[-1][1] = pos
            else:
                free.append([x, pos])
        level += delta
        x = pos
    # A free gap is crossed only by cells that reach past both its sides (spanning headings); words lying
    # inside it form a sparse column of their own.
    seps: list[tuple[float, float]] = []
    segs = _segments(lines, min_gap)
    for a, b in free:
        if a <= x_lo + 1e-6 or b >= x_hi - 1e-6:
            continue
        pieces = [(a, b)]
        for s0, s1 in segs:
            if s0 >= a - 0.5 and s1 <= b + 0.5:
                pieces = [p for q in pieces for p in ((q[0], min(q[1], s0)), (max(q[0], s1), q[1])) if p[1] > p[0]]
        seps += [p for p in pieces if p[1] - p[0] >= min_gap]
    seps.sort()
    if not seps or len(seps) > 25:
        return None
    ncols = len(seps) + 1

    def col_of(x: float, end: bool = False) -> int:
        # A cell's start belongs past every gap that opens before it; its end only past the gaps it crosses.
        return sum(1 for s in seps if (s[1] if end else s[0]) < x)

    rows: list[list[str | None]] = []
    row_lines: list[tuple] = []
    for ln in lines:
        cells: list[str | None] = [""] * ncols
        cur: list = []
        for w in ln[4] + [None]:
            # Words a plain space apart stay in one cell, even where a longer cell reaches into the gap.
            if cur and (w is None or w[0] - cur[-1][2] >= min_gap
                        and any(s[0] < w[0] and s[1] > cur[-1][2] for s in seps)):
                first, last = col_of(cur[0][0] + 0.5), max(col_of(cur[0][0] + 0.5), col_of(cur[-1][2] - 0.5, end=True))
                text = " ".join(x[4] for x in cur)
                cells[first] = f"{cells[first]} {text}".strip() if cells[first] else text
                for j in range(first + 1, last + 1):
                    cells[j] = None
                cur = []
            if w is not None:
                cur.append(w)
        # A line of its own that only continues cells of the row above (a wrapped cell): joined to that row.
        filled = sum(1 for c in cells if c)
        if rows and not cells[0] and None not in cells and None not in rows[-1] and filled <= ncols / 2 \
                and not any(row_lines[-1][3] - 1 <= (r[1] + r[3]) / 2 <= ln[1] + 1 for r in rules):
            prev = rows[-1]
            for j, c in enumerate(cells):
                if c:
                    prev[j] = f"{prev[j]} {c}".strip()
            row_lines[-1] = ln
            continue
        rows.append(cells)
        row_lines.append(ln)
    return rows


def _segments(lines: list[tuple], min_gap: float) -> list[tuple[float, float]]:
    """Runs of words closer than `min_gap` within each line (a cell's words), as x-intervals."""
    out = []
    for ln in lines:
        cur = None
        for w in ln[4]:
            if cur is not None and w[0] - cur[1] < min_gap:
                cur[1] = max(cur[1], w[2])
            else:
                if cur is not None:
                    out.append(tuple(cur))
                cur = [w[0], w[2]]
        if cur is not None:
            out.append(tuple(cur))
    return out


def table_text(table, words: list | None = None) -> str:
    """The table as Markdown, or as HTML when cells are merged (Markdown cannot span cells).

    With the page's `words` (from `page.get_text("words")`), cell text is rebuilt from whole words: the table
    finder's own extraction glues words together in some fonts ("Number ofNodes").
    """
    try:
        if isinstance(table, WordTable):
            rows = table.cells
        else:
            rows = _rows_from_words(table, words) if words is not None else table.extract()
    except Exception:
        return ""
    if not rows or sum(len(r) for r in rows) > MAX_CELLS:
        return ""
    rows = [[_cell(c) for c in r] for r in rows]
    ncols = max(len(r) for r in rows)
    rows = [r + [""] * (ncols - len(r)) for r in rows]
    # Drop columns and rows that are empty everywhere (artefacts of ruling lines).
    keep = [j for j in range(ncols) if any(r[j] not in ("", None) for r in rows)]
    rows = [[r[j] for j in keep] for r in rows]
    rows = [r for r in rows if any(c not in ("", None) for c in r)]
    if not rows or not keep or not plausible(rows):
        return ""
    if any(c is None for r in rows for c in r):
        return _html(rows)
    return _markdown(rows)


def _rows_from_words(table, words: list) -> list[list[str | None]]:
    rows = []
    x0, y0, x1, y1 = table.bbox
    inside = [w for w in words if x0 - 1 <= (w[0] + w[2]) / 2 <= x1 + 1 and y0 - 1 <= (w[1] + w[3]) / 2 <= y1 + 1]
    for row in table.rows:
        out = []
        for cell in row.cells:
            if cell is None:
                out.append(None)
                continue
            cx0, cy0, cx1, cy1 = cell
            ws = [w for w in inside if cx0 - 1 <= (w[0] + w[2]) / 2 <= cx1 + 1 and cy0 - 1 <= (w[1] + w[3]) / 2 <= cy1 + 1]
            ws.sort(key=lambda w: (w[5], w[6], w[7]))  # block, line, word number: reading order
            out.append(" ".join(w[4] for w in ws))
        rows.append(out)
    return rows


def _cell(c) -> str | None:
    if c is None:
        return None  # PyMuPDF's marker for a cell covered by a merged neighbour

    return " ".join(clean(str(c)).split())


def _markdown(rows: list[list[str]]) -> str:
    def esc(c: str) -> str:
        return escape_html(c).replace("|", "\\|")

    head, body = rows[0], rows[1:]
    out = ["| " + " | ".join(esc(c) for c in head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(esc(c) for c in r) + " |" for r in body]
    return "\n".join(out)


def _html(rows: list[list[str | None]]) -> str:
    """HTML with colspan/rowspan recovered from the None cells PyMuPDF leaves under a merged cell."""
    n, m = len(rows), len(rows[0])
    covered = [[False] * m for _ in range(n)]
    out = ["<table>"]
    for i in range(n):
        cells = []
        for j in range(m):
            if covered[i][j] or rows[i][j] is None:
                continue
            cs = 1
            while j + cs < m and rows[i][j + cs] is None and not covered[i][j + cs]:
                cs += 1
            rs = 1
            while i + rs < n and all(rows[i + rs][jj] is None for jj in range(j, j + cs)):
                rs += 1
            for ii in range(i, i + rs):
                for jj in range(j, j + cs):
                    covered[ii][jj] = True
            tag = "th" if i == 0 else "td"
            attrs = (f' colspan="{cs}"' if cs > 1 else "") + (f' rowspan="{rs}"' if rs > 1 else "")
            cells.append(f"<{tag}{attrs}>{html.escape(rows[i][j])}</{tag}>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)
