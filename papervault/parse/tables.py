"""Tables: PyMuPDF's table finder, run only on pages with a table caption, written as Markdown or HTML."""

from __future__ import annotations

import html

import pymupdf

from papervault.parse.layout import Block, Rect, overlap_x

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


def nearest_table(caption: Block, tables: list, col: tuple[float, float], used: set[int]):
    """The table just below the caption (the usual place), else just above; within its column."""
    cb = caption.bbox
    best, best_d = None, 1e9
    for i, t in enumerate(tables):
        if i in used:
            continue
        r = tuple(t.bbox)
        if overlap_x(r, (col[0], 0, col[1], 0)) < 0.5 * min(r[2] - r[0], col[1] - col[0]):
            continue
        if r[1] >= cb[3] - 4:
            d = r[1] - cb[3]
        elif r[3] <= cb[1] + 4:
            d = (cb[1] - r[3]) * 1.5  # below wins ties
        else:
            d = 0
        if d < best_d and d < 250:
            best, best_d = i, d
    return best


def table_text(table, words: list | None = None) -> str:
    """The table as Markdown, or as HTML when cells are merged (Markdown cannot span cells).

    With the page's `words` (from `page.get_text("words")`), cell text is rebuilt from whole words: the table
    finder's own extraction glues words together in some fonts ("Number ofNodes").
    """
    try:
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
    if not rows or not keep:
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
    from papervault.parse.text import clean

    return " ".join(clean(str(c)).split())


def _markdown(rows: list[list[str]]) -> str:
    def esc(c: str) -> str:
        return c.replace("|", "\\|")

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
