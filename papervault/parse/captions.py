"""Figure and table captions: a block that starts with "Figure 3:" is a caption; "see Fig. 3" is a mention."""

from __future__ import annotations

import re

from papervault.parse.layout import Block

_NUM = r"(\d+|[A-Z]\.?\d+|[IVXLC]+)"
# The label must open the block and be followed by a delimiter (":", ".", "|", a dash) - or be set in bold,
# which is how styles without a delimiter (Springer: "Fig. 3 The architecture") mark it. A sentence that
# merely starts with "Figure 3 shows ..." has neither.
FIGURE_RE = re.compile(rf"^\s*(Figure|Fig\.?|FIGURE|FIG\.?)\s*{_NUM}\s*([:.|\u2014\u2013-])?\s*(.*)$", re.S)
TABLE_RE = re.compile(rf"^\s*(Table|TABLE|Tab\.)\s*{_NUM}\s*([:.|\u2014\u2013-])?\s*(.*)$", re.S)
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
