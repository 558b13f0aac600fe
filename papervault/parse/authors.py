"""The authors of a paper: the names under its title (or above it), without affiliations and e-mails."""

from __future__ import annotations

import re

from papervault.lineshapes import is_person_name
from papervault.parse.layout import Block, Line
from papervault.parse.lines import _BODY_START, _NOT_TITLE, _affiliation, _glue, _names_line, is_author_line, is_banner
from papervault.parse.structure import parse_authors

def find_authors(blocks: list[Block], title: list[Line], height: float) -> list[str]:
    """Names on the lines below the title and above the abstract; affiliations and e-mails left out."""
    if not title:
        return []
    bottom = max(ln.bbox[3] for ln in title)
    left, right = min(ln.bbox[0] for ln in title), max(ln.bbox[2] for ln in title)
    title_ids = {id(ln) for ln in title}
    all_lines, _ = _glue([ln for b in blocks if b.kind in ("text", "heading", "title") for ln in b.lines
                          if id(ln) not in title_ids])
    width = max((ln.bbox[2] for ln in all_lines), default=right) - min((ln.bbox[0] for ln in all_lines), default=left)
    if right - left < 0.5 * width:  # a title in one column: its authors are under it, not in the other column
        left, right = left - 0.1 * width, right + 0.25 * width
    else:
        left, right = -1e9, 1e9
    lines = sorted((ln for ln in all_lines if ln.bbox[1] >= bottom - 1
                    and ln.bbox[1] < 0.8 * height and ln.bbox[2] > left and ln.bbox[0] < right),
                   key=lambda ln: (round(ln.bbox[1] / 3), ln.bbox[0]))
    texts: list[str] = []
    for ln in lines:
        t = ln.text.strip()
        if _BODY_START.match(t) or len(t) > 200 or _sentence(t):
            break                         # the abstract or the body: names from here on are cited or thanked
        if re.match(r"^by\s+", t, re.I):
            t = t[3:]
        if _NOT_TITLE.match(t) and not is_author_line(t) or _affiliation(t):
            continue
        texts.append(_spaced(ln, t))
        if len(texts) > 16:
            break
    return _split_runs(parse_authors(texts))


_NAME_LOWER = {"and", "of", "de", "da", "van", "von", "der", "den", "la", "le", "di", "du", "dos", "das", "del",
               "y", "et", "al", "the", "for", "at", "in", "und"}


def _sentence(text: str) -> bool:
    """A line of running text ("This article draws attention to a central dispute in the inter-"): five words
    or more in lower case that are not particles or the "and" and "of" of names and affiliations."""
    return sum(1 for w in re.findall(r"\b[a-z][a-z'’-]+\b", text) if w not in _NAME_LOWER) >= 5


def _authors_above(blocks: list[Block], title: list[Line]) -> list[str]:
    """Names set above the title (an author line first, then the title), with their affiliation under them."""
    top = min(ln.bbox[1] for ln in title)
    title_ids = {id(ln) for ln in title}
    lines, _ = _glue([ln for b in blocks if b.kind in ("text", "heading", "title") for ln in b.lines
                      if id(ln) not in title_ids and ln.bbox[3] <= top + 1])
    lines.sort(key=lambda ln: (ln.bbox[1], ln.bbox[0]))
    names: list[str] = []
    for i, ln in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else None
        if _names_line(ln, nxt) and not is_banner(ln.text):
            names += parse_authors([_spaced(ln, ln.text.strip())])
    return _split_runs(names)



def _split_runs(names: list[str]) -> list[str]:
    """Names run together without separators ("S E Robertson S Walker") split before each new initial."""
    out = []
    for n in names:
        words = n.split()
        if len(words) < 4:
            out.append(n)
            continue
        cur: list[str] = []
        for i, w in enumerate(words):
            initial = re.fullmatch(r"[A-Z]\.?", w) is not None
            if cur and initial and len(cur[-1]) > 2 and not re.fullmatch(r"[A-Z]\.?", cur[-1]) and len(cur) >= 2:
                out.append(" ".join(cur))
                cur = []
            cur.append(w)
        out.append(" ".join(cur))
    return out


_MARK = re.compile(r"[a-z\d*∗†‡§¶\ufffd,]{1,6}")
_SYMBOL = re.compile(r"[*∗†‡§¶\ufffd]+")


def _spaced(ln: Line, text: str) -> str:
    """Wide gaps between a line's spans kept as runs of spaces: names set side by side stay apart."""
    if len(ln.spans) < 2:
        return text
    out, prev = "", None
    big = max(s.size for s in ln.spans)
    for s in ln.spans:
        if not s.text.strip():
            continue
        if (_MARK.fullmatch(s.text.strip()) and s.size < 0.8 * big or _SYMBOL.fullmatch(s.text.strip())) \
                and out[-1:].isalpha():
            continue                      # a footnote or affiliation mark set small after a name ("Sornette^a")
        if prev is not None:
            gap = s.bbox[0] - prev
            touch = gap < 0.12 * s.size and out[-1:].isalpha() and s.text.strip()[:1].islower()   # "Bro" "wn"
            out += "   " if gap > 0.8 * s.size else "" if touch else " "
        out += s.text.strip()
        prev = s.bbox[2]
    return out if not text.lower().startswith("by ") else out[3:]




def clean_names(names: list[str]) -> list[str]:
    """People's names only: small capitals set apart glued ("E INAV" -> "Einav", "Rob ertson" is the repair's),
    a leading "By" dropped, names in capitals in title case, and whatever is not a person's name
    (`lineshapes.is_person_name`: "I. INTRODUCTION", "Stanford University", "Departamento de Fisica") left out."""
    out: list[str] = []
    for n in names:
        t = re.sub(r"^\s*by\s+", "", n, flags=re.I)
        t = re.sub(r"\b([A-Z]) ([A-Z]{2,})\b", r"\1\2", t)
        if t.isupper() and len(t) > 3:
            t = " ".join(w if re.fullmatch(r"(?:[A-Z]\.)+", w) else w.capitalize() for w in t.split())
        if is_person_name(t) and t not in out:
            out.append(t)
    return out
