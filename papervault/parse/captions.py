"""Figure and table captions: a block that starts with "Figure 3:" is a caption; "see Fig. 3" is a mention.

IEEE styles set a table's label on a line of its own ("TABLE IV", then the title centred on the next lines, often
in small capitals): a label alone on its line is a caption too, and `attach_titles` joins the title lines to it.
"""

from __future__ import annotations

import re

from papervault.parse.layout import Block
from papervault.parse.layout import overlap_x, overlap_y
from papervault.parse.text import join_lines

_NUM = r"(\d+|[A-Z]\.?\d+|[IVXLC]+)"
# The label must open the block and be followed by a delimiter (":", ".", "|", a dash) - or be set in bold,
# which is how styles without a delimiter (Springer: "Fig. 3 The architecture") mark it. A sentence that
# merely starts with "Figure 3 shows ..." has neither.
FIGURE_RE = re.compile(rf"^\s*(Figure|Fig\.?|FIGURE|FIG\.?)\s*{_NUM}\s*([:.|\u2014\u2013-])?\s*(.*)$", re.S)
TABLE_RE = re.compile(rf"^\s*(Table|TABLE|Tab\.)\s*{_NUM}\s*([:.|\u2014\u2013-])?\s*(.*)$", re.S)
# A table label alone on its line: "TABLE IV", "Table 3", "Table II." (the title follows below it).
TABLE_LABEL_RE = re.compile(rf"^\s*(Table|TABLE|Tab\.)\s*{_NUM}\s*[:.]?\s*$")
_VERBS = re.compile(r"^(shows?|presents?|depicts?|illustrates?|gives?|lists?|summari[sz]es?|compares?|is|are|"
                    r"was|were|has|have|reports?|contains?|describes?|plots?|and|or|in|of|to|with|we|also|above|"
                    r"below|further|then)\b", re.I)


def caption_of(block: Block) -> tuple[str, str, str] | None:
    """("figure" | "table", number, caption text) if the block is a caption, else None."""
    text = block.text
    for kind, rx in (("figure", FIGURE_RE), ("table", TABLE_RE)):
        m = rx.match(text)
        if not m:
            continue
        label_end = m.start(4) if m.group(4) else m.end(2)
        number, delim, rest = m.group(2).rstrip("."), m.group(3), m.group(4).strip()
        label_bold = _label_bold(block, label_end)
        if kind == "table" and block.lines and TABLE_LABEL_RE.match(block.lines[0].text):
            # The label is a line of its own: a caption, unless what follows continues a sentence.
            if rest[:1].islower():
                continue
            return kind, number, rest
        if not delim and not label_bold:
            continue
        if delim == "." and _VERBS.match(rest) and not label_bold:
            continue  # "Fig. 3. shows" never happens, but "Table 2. and ..." style false starts do
        if _VERBS.match(rest) and len(rest) > 0 and delim in (None, "", "-"):
            continue
        return kind, number, rest
    return None


def _label_bold(block: Block, upto: int) -> bool:
    first = block.lines[0]
    n = 0
    for s in first.spans:
        if n >= min(upto, 5):
            break
        if s.text.strip() and not s.bold:
            return False
        n += len(s.text)
    return n > 0


def attach_titles(captions: list[Block], blocks: list[Block], column) -> list[Block]:
    """Join to each table label that stands alone ("TABLE IV") the title lines set just below it.

    A title line is a block right under the label or the previous title line (a gap of less than about half a
    line), centred on the label, no larger than the label, and alone on its baseline in the label's column
    (`column(bbox)` gives its x-extent): a table row that follows has other cells beside it. Returns the blocks
    taken into captions (the caller drops them).
    """
    taken: list[Block] = []
    for cb in captions:
        if cb.kind != "table_caption" or cb.data.get("caption") or len(cb.lines) != 1:
            continue
        label = cb.lines[0]
        lh = max(1.0, label.bbox[3] - label.bbox[1])
        cx = (label.bbox[0] + label.bbox[2]) / 2
        c0, c1 = column(label.bbox)
        title: list[Block] = []
        bottom = cb.bbox[3]
        while len(title) < 4:
            nxt = None
            for b in blocks:
                if b is cb or b in title or b.kind != "text" or not b.lines:
                    continue
                x0, y0, x1, y1 = b.bbox
                if not (-2 <= y0 - bottom <= 0.5 * lh + 1) or abs((x0 + x1) / 2 - cx) > max(4.0, 0.03 * (x1 - x0)):
                    continue
                if b.size > label.size + 0.6 or caption_of(b):
                    continue
                if any(o is not b and o is not cb and o.lines and overlap_y(o.bbox, b.bbox) > 0.5 * (y1 - y0)
                       and overlap_x(o.bbox, (c0, 0, c1, 0)) > 0.5 * (o.bbox[2] - o.bbox[0]) for o in blocks):
                    continue  # a cell among others on its baseline: the table's first row
                nxt = b
                break
            if nxt is None:
                break
            title.append(nxt)
            bottom = nxt.bbox[3]
        if title:
            lines = [ln for b in title for ln in b.lines]
            cb.data["caption"] = join_lines([ln.text for ln in lines])
            cb.lines = cb.lines + lines
            cb.text = f"{cb.text} {cb.data['caption']}"
            taken.extend(title)
    return taken
