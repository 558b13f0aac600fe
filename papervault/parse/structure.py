"""Document structure: body font size, section headings (numbered or not), title, authors and abstract."""

from __future__ import annotations

import re
from collections import Counter

from papervault.parse.layout import Block

KNOWN_SECTIONS = {"abstract", "introduction", "background", "related work", "conclusion", "conclusions",
                  "references", "bibliography", "acknowledgments", "acknowledgements", "acknowledgment",
                  "acknowledgement", "appendix", "evaluation", "discussion", "results", "methods", "method",
                  "future work", "conclusions and future work", "summary", "motivation", "overview", "experiments",
                  "implementation", "design", "keywords", "index terms", "categories and subject descriptors",
                  "general terms", "preliminaries", "limitations", "contents", "notes"}
_NUMBERED = re.compile(r"^(?P<num>(?:\d{1,2}(?:\.\d{1,2}){0,3}|[A-H](?:\.\d{1,2}){0,3}|[IVX]{1,5}(?:\.[A-Z\d])?))"
                       r"(?P<dot>\.?)\s+(?P<title>[A-Za-z\u00c0-\u024f].{0,110})$")


def body_size(blocks: list[Block]) -> float:
    """The font size of most running text (weighted by characters)."""
    c: Counter = Counter()
    for b in blocks:
        for ln in b.lines:
            c[ln.size] += len(ln.text)
    return c.most_common(1)[0][0] if c else 10.0


def heading_candidate(block: Block, body: float) -> tuple[str, str] | None:
    """(number, title) if the block looks like a section heading, else None."""
    if block.kind != "text" or not block.lines or len(block.lines) > 3:
        return None
    text = block.text.strip()
    if len(text) < 2 or len(text) > 120 or len(text.split()) > 14:
        return None
    big = block.size >= body + 0.9
    bold = block.bold
    upper = text.isupper() and sum(c.isalpha() for c in text) >= 4
    styled = big or bold or upper
    small = block.size < body - 1.2
    m = _NUMBERED.match(text)
    if m:
        num, title = m.group("num"), m.group("title").strip()
        if title.endswith((",", ";")) or re.search(r"\d{3,}", title) or title[:1].islower():
            return None
        roman_or_letter = not num[0].isdigit()
        if roman_or_letter and not (styled and (upper or bold or big)):
            return None
        if num.count(".") == 0 and num.isdigit() and int(num) > 30:
            return None
        if title.lower().rstrip(".") in KNOWN_SECTIONS and not small:
            return num, title.rstrip(".")
        if styled and not small and not title.endswith("."):
            return num, title
        return None
    key = text.lower().rstrip(".:")
    if key in KNOWN_SECTIONS and (styled or len(text) < 40) and not small and len(block.lines) == 1:
        return "", text.rstrip(".:")
    if styled and not small and not text.endswith((".", ",", ";", ":")) and len(block.lines) <= 2 \
            and (big or bold and len(text.split()) <= 10) and not re.match(r"^[\d\W]+$", text):
        return "", text
    return None


def number_depth(number: str) -> int:
    if not number:
        return 0
    return number.count(".") + 1


def assign_levels(heads: list[tuple[Block, str, str]]) -> None:
    """Set `block.level`: numbered headings by their depth; unnumbered ones by the style of numbered ones."""
    style_level: dict = {}
    for b, num, _ in heads:
        if num:
            key = _style(b)
            lvl = number_depth(num)
            style_level[key] = min(style_level.get(key, 9), lvl)
    sizes = sorted({b.size for b, _, _ in heads}, reverse=True)
    for b, num, title in heads:
        if num:
            b.level = min(6, number_depth(num))
        elif title.lower() in KNOWN_SECTIONS:
            b.level = 1
        elif _style(b) in style_level:
            b.level = style_level[_style(b)]
        elif style_level:
            top = [k for k, v in style_level.items() if v == 1]
            top_size = max((k[0] for k in top), default=0)
            b.level = 1 if b.size >= top_size else min(3, max(style_level.values()) + 1)
        else:
            b.level = min(3, sizes.index(b.size) + 1)


def _style(b: Block) -> tuple:
    return (b.size, b.bold, b.text.isupper())


_NAME_STOP = re.compile(r"\b(university|universit[aä]t|institute|inc\.?|corp|department|dept|laboratory|labs?|research|"
                        r"college|school|centre|center|google|microsoft|ibm|facebook|intel|amazon|usa|u\.s\.a|"
                        r"california|cambridge|email|abstract|ca|ny|ma|technology|sciences?|engineering|"
                        r"computer|faculty|foundation|project|memo|group|division|street|road|avenue)\b", re.I)


def parse_authors(texts: list[str]) -> list[str]:
    """Person names from the lines between the title and the abstract; affiliations and e-mails left out."""
    names: list[str] = []
    for t in texts:
        if "@" in t or "http" in t.lower():
            continue
        t = re.sub(r"[\d∗*†‡§¶]+|\s+\band\b\s+|&", ",", t)
        for part in re.split(r"[,;]|\s{3,}", t):
            p = " ".join(part.split()).strip(" .")
            if not p or _NAME_STOP.search(p):
                continue
            words = p.split()
            if not 2 <= len(words) <= 5:
                continue
            if all(w[:1].isupper() or w.lower() in ("de", "van", "von", "der", "la", "di", "da", "del", "le")
                   for w in words) and not any(ch.isdigit() for ch in p) and p not in names:
                names.append(p)
    return names[:30]
