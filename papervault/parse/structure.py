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


def effective_size(block: Block) -> float:
    """The block's font size, reading small capitals ("I. I<small>NTRODUCTION</small>", IEEE style) at the
    size of their large letters: most of their characters are set smaller than the body text."""
    if not block.text.isupper():
        return block.size
    sizes: Counter = Counter()
    for ln in block.lines:
        for s in ln.spans:
            n = sum(c.isalpha() for c in s.text)
            if n:
                sizes[round(s.size * 2) / 2] += n
    if len(sizes) < 2:
        return block.size
    top = max(sizes)
    low = sizes.most_common(1)[0][0]
    letters = [c for c in block.text if c.isalpha()]
    if low < top and 0.6 * top <= low <= 0.9 * top and letters and all(c.isupper() for c in letters):
        return top
    return block.size


def is_italic(block: Block) -> bool:
    """Most of the block's characters are set in an italic or oblique font."""
    return block.char_share(_italic_span) >= 0.7


def _italic_span(s) -> bool:
    f = s.font.lower()
    return bool(s.flags & 2) or "ital" in f or "oblique" in f or f.endswith(("-it", "-i")) or "cmti" in f


def is_ocr(block: Block) -> bool:
    """The block was read by OCR: its sizes are estimates and it has no bold or italic."""
    return bool(block.lines) and bool(block.lines[0].spans) and block.lines[0].spans[0].font == "ocr"


# A theorem-like statement or a run-in paragraph label is not a section: "Definition 12 (...)", "Lemma 3.",
# "Example 4: ...", "THEOREM 2. [...]".
_STATEMENT = re.compile(r"^(?i:theorem|lemma|definition|corollary|proposition|claim|remark|example|fact|conjecture|"
                        r"proof|observation|assumption|property|exercise|problem|algorithm|step|case|note)"
                        r"(?:\s*[\d.:(\[]|\s+[A-Z](?:\b|\.))")
# A table-of-contents entry ends with its page number ("Introduction 1", "Abstract ii").
TOC_ENTRY = re.compile(r"\s(?:\d{1,4}|[ivxlc]{1,7})$")


def heading_candidate(block: Block, body: float, strict: bool = False) -> tuple[str, str] | None:
    """(number, title) if the block looks like a section heading, else None.

    `strict` (OCR'd text, whose sizes are estimates): only numbered headings with a clean title and the known
    section names count."""
    if block.kind != "text" or not block.lines or len(block.lines) > 3:
        return None
    text = block.text.strip()
    if len(text) < 2 or len(text) > 120 or len(text.split()) > 14:
        return None
    if text.endswith("-") or _STATEMENT.match(text):
        return None  # the first line of a paragraph, or a theorem-like statement
    if strict or is_ocr(block):
        return _strict_candidate(block, text)
    size = effective_size(block)
    big = size >= body + 0.9
    bold = block.bold
    upper = text.isupper() and sum(c.isalpha() for c in text) >= 4
    styled = big or bold or upper
    small = size < body - 1.2
    m = _NUMBERED.match(text)
    if m:
        num, title = m.group("num"), m.group("title").strip()
        if title.endswith((",", ";")) or re.search(r"\d{3,}", title) or title[:1].islower():
            return None
        if re.search(r"[a-z]{2}\.\s+[A-Z]", title):
            return None  # a run-in heading followed by its paragraph: "Whole Program Analysis. Due to ..."
        roman_or_letter = not num[0].isdigit()
        if roman_or_letter and not (styled and (upper or bold or big)):
            # "A. Subsection" in italics under roman-numbered sections (IEEE); `refine_headings` keeps it
            # only when the paper has roman-numbered sections.
            if not (len(num) == 1 and num in "ABCDEFGH" and not small and not title.endswith(".")
                    and is_italic(block)):
                return None
            return num, title
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
            and (big or bold and len(text.split()) <= 10) and not re.match(r"^[\d\W]+$", text) \
            and not text[:1].islower() and not re.match(r"^[|+*=<>(\[{]", text) \
            and not re.search(r"[a-z]{2}\.\s+[A-Z]", text):
        # Not a keyword of pseudo-code ("return", "else"), nor a run-in label with its paragraph.
        return "", text
    return None


_CLEAN_TITLE = re.compile(r"^[A-Z\u00c0-\u00de][A-Za-z\u00c0-\u024f'’ ,&-]{1,80}$")


def _strict_candidate(block: Block, text: str) -> tuple[str, str] | None:
    """OCR'd text: a known section name alone on its line, or "3.2 Title" with a clean title of words."""
    if len(block.lines) > 2:
        return None
    key = text.lower().rstrip(".:")
    if key in KNOWN_SECTIONS and len(block.lines) == 1:
        return "", text.rstrip(".:")
    m = _NUMBERED.match(text)
    if m and m.group("num")[0].isdigit():
        num, title = m.group("num"), m.group("title").strip().rstrip(".")
        words = title.split()
        if _CLEAN_TITLE.match(title) and 1 <= len(words) <= 8 and (title.lower() in KNOWN_SECTIONS or all(
                w[:1].isupper() or w.lower() in _SMALL_WORDS for w in words)):
            return num, title
    return None


_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "the", "to",
                "vs", "via", "with"}


def is_roman(number: str) -> bool:
    return bool(number) and bool(re.fullmatch(r"[IVX]{1,5}", number))


def refine_headings(heads: list[tuple[Block, str, str]]) -> list[tuple[Block, str, str]]:
    """Numbering schemes that only the whole paper tells apart.

    IEEE style numbers sections "I.", "II." and their subsections "A.", "B.": when the paper has roman-numbered
    sections, a lettered heading in another style is a subsection (its level is set in `assign_levels`); in a
    paper without them an italic lettered line is not a heading."""
    romans = {num for b, num, _ in heads if is_roman(num)}
    ieee = len(romans) >= 2
    out = []
    for b, num, title in heads:
        if len(num) == 1 and num in "ABCDEFGH" and is_italic(b) and not b.bold and not ieee:
            continue
        out.append((b, num, title))
    return out


def number_depth(number: str) -> int:
    if not number:
        return 0
    return number.count(".") + 1


def assign_levels(heads: list[tuple[Block, str, str]]) -> None:
    """Set `block.level`: numbered headings by their depth; unnumbered ones by the style of numbered ones."""
    style_level: dict = {}
    styles = {id(b): _style(b) for b, _, _ in heads}  # computed once per heading
    sizes_of = {id(b): effective_size(b) for b, _, _ in heads}
    romans = {styles[id(b)] for b, num, _ in heads if is_roman(num)}
    ieee = len({num for _, num, _ in heads if is_roman(num)}) >= 2

    def depth(b: Block, num: str) -> int:
        # Under roman-numbered sections, "A." in another style is a subsection, "A.1" one level deeper.
        if ieee and num[:1] in "ABCDEFGH" and not is_roman(num) and styles[id(b)] not in romans:
            return number_depth(num) + 1
        return number_depth(num)

    for b, num, _ in heads:
        if num:
            key = styles[id(b)]
            lvl = depth(b, num)
            style_level[key] = min(style_level.get(key, 9), lvl)
    sizes = sorted(set(sizes_of.values()), reverse=True)
    for b, num, title in heads:
        st, size = styles[id(b)], sizes_of[id(b)]
        if num:
            b.level = min(6, depth(b, num))
        elif title.lower() in KNOWN_SECTIONS:
            b.level = 1
        elif st in style_level:
            b.level = style_level[st]
        elif style_level:
            top = [k for k, v in style_level.items() if v == 1]
            top_size = max((k[0] for k in top), default=0)
            b.level = 1 if size >= top_size else min(3, max(style_level.values()) + 1)
        else:
            b.level = min(3, sizes.index(size) + 1)


def _style(b: Block) -> tuple:
    return (effective_size(b), b.bold, b.text.isupper(), is_italic(b))


_NAME_STOP = re.compile(r"\b(university|universit[aä]t|institute|inc\.?|corp|department|dept|laborator(?:y|ies)|"
                        r"\w*labs?|research|college|school|centre|center|google|microsoft|ibm|facebook|intel|amazon|"
                        r"usa|u\.s\.a|california|cambridge|email|abstract|ca|ny|ma|technology|sciences?|engineering|"
                        r"computer|faculty|foundation|project|memo|group|division|street|road|avenue|uc|san|santa|"
                        r"[ée]cole|normale|sup[ée]rieure|polytechnique|inria|cnrs|epfl|national|academy|hospital)\b",
                        re.I)


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
