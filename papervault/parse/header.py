"""Who wrote the paper, what it is called, and when: the header of the first page(s), read by layout.

The title is the dominant run of lines (largest type, highest on the page, joined across lines) once the
lines that are not the title are set aside: journal banners, download stamps, running heads, volume and
copyright lines, conference notes, institutions and author lines. The year is the paper's own date (a
copyright line, the conference or journal line, "Received ... revised ...", an arXiv stamp, a dated title
page), never a download or reprint date. Each field says where it came from (`layout` or `pdf-xmp`, the
document information a plausible producer wrote).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field

from papervault.parse.layout import Block, Line, Span
from papervault.parse.references import find_doi
from papervault.parse.structure import parse_authors
from papervault.ids import SKIP_WORDS
from papervault.parse.words import dictionary_share, vocabulary

_YEAR = re.compile(r"(?<![\d/.-])(1[89]\d\d|20[0-4]\d)(?![\d])")
_SHORT_YEAR = re.compile(r"['’‘`](\d\d)\b")
_ARXIV_STAMP = re.compile(r"arXiv:\s?(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?", re.I)

# Lines that are never the title: words that start them (a whole word: "Doing ..." is not "doi"), and marks.
_NOT_TITLE = re.compile(
    r"^(?:(?:downloaded|accessed|retrieved|printed|generated|running\s+head|short\s+title|this\s+(?:paper|"
    r"article|version|work|document|report)|(?:to\s+)?appear(?:s|ed)?\s+in|accepted|published|preprint|"
    r"submitted|manuscript|draft|in\s+proceedings|proceedings\s+of|presented\s+(?:at|by)|copyright|"
    r"permission\s+to|all\s+rights|keywords?|index\s+terms|arxiv|issn|isbn|technical\s+report|"
    r"research\s+report|vol(?:ume|\.)?\s*\d+|no\.\s*\d+|number\s+\d+|supervised\s+by|advisor|received|"
    r"revised|editors?|edited\s+by|communicated\s+by|journal\s+of|transactions\s+on|communications\s+of|"
    r"annals\s+of|bulletin\s+of|ieee\s+transactions|acm\s+transactions|electronic\s+version|reprinted|"
    r"research\s+paper\s+competition|open\s+access|sponsored\s+by|contents\s+lists|available\s+online|"
    r"homepage|e-?mail|correspondence|corresponding)\b"
    r"|abstract(?:\s*$|\s*[.:\u2014\u2013-]|\s+(?:we|this|in|the|a|an|our)\b|\s+(?-i:[a-z]))"  # not "Abstract Interpretation"
    r"|doi\s*:|doi\.org|https?:|www\.|proc\.|tech\.\s+rep|©|\(c\)\s)", re.I)
_STAMP_ANYWHERE = re.compile(r"\b(?:downloaded\s+from|accessed\s+on|retrieved\s+from|printed\s+on|all\s+rights\s+"
                             r"reserved|creative\s+commons|licen[cs]ed?\s+under|this\s+paper\s+is\s+included|"
                             r"is\s+sponsored\s+by|usenix\s+association|memo\s+no\b)", re.I)
_INSTITUTION = re.compile(r"\b(?:universit(?:y|ies|é|ä|at)|institut(?:e|o)?|laborator(?:y|ies)|department|dept\.|"
                          r"college|school\s+of|faculty|research\s+(?:center|centre|lab)|labs?\b|inc\.|corporation|"
                          r"project\b|computation\s+center|centre\b|center\b|gmbh|ltd\.?|"
                          r"massachusetts|california|cambridge|berkeley|stanford)", re.I)
_VOLUME = re.compile(r"\b(?:vol(?:ume|\.)?\s*\d+|no\.\s*\d+|number\s+\d+|pp\.\s*\d+|pages\s+\d+\s*[-–]|"
                     r"issue\s+\d+)", re.I)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_DATE_LINE = re.compile(rf"^(?:\d{{1,2}}\s+)?{_MONTH}\s*(?:\d{{1,2}}(?:st|nd|rd|th)?,?\s*)?(?:1[89]|20)\d\d\.?$", re.I)
# Where a line's year is never the paper's: stamps of the copy, not of the paper.
_BAD_DATE = re.compile(r"\b(?:downloaded|accessed|retrieved|printed|generated|viewed|recreated|reprinted|"
                       r"electronic\s+version|scanned|digiti[sz]ed|this\s+version|last\s+(?:modified|updated)|"
                       r"compiled|typeset)\b", re.I)
# Where the body starts: an abstract (not a title such as "Abstract Interpretation: ..."), an introduction.
_BODY_START = re.compile(r"^(?:abstract(?:\s*$|\s*[.:\u2014\u2013-]|\s+(?:we|this|in|the|a|an|our)\b|\s+(?-i:[a-z]))"
                         r"|(?:summary|keywords|index\s+terms)\b|1\.?\s+introduction\b|introduction\s*$)", re.I)
# Where a line's year is the paper's own date, strongest first.
_GOOD_DATE = [
    (re.compile(r"(?:©|\(c\)|copyright)", re.I), 6),
    (re.compile(r"\b(?:received|submitted)\b", re.I), 6),
    (re.compile(r"\b(?:proceedings|conference|symposium|workshop|journal|transactions|communications|"
                r"annals|review|letters|volume|vol\.|in\s+press|to\s+appear|published|cidr|vldb|sigmod|"
                r"osdi|sosp|nsdi|usenix|pldi|popl|icml|neurips|nips|iclr|kdd|www|chi|ecoop|oopsla|ieee|acm|"
                r"pvldb|lncs|sigir|trec|competition|memorandum|technical\s+report|report)\b", re.I), 4),
    (re.compile(r"\b\d{1,3}\s?\(\d{1,3}\)\s?:\s?\d"), 4),   # "14(3): 268-280, 2021"
]
_VENUE = re.compile(r"\b(?:proceedings\s+of\s+(?:the\s+)?.{5,120}|(?:\d{4}\s+)?[A-Z][\w&.-]*(?:\s+[A-Z][\w&.-]*){0,6}\s+"
                    r"(?:conference|symposium|workshop)(?:\s+on\s+[\w ,&-]{3,80})?|(?:journal|transactions|"
                    r"communications|annals)\s+(?:of|on)\s+(?:the\s+)?[A-Z][\w ,&-]{2,80})", re.I)
_MEMO_PREFIX = re.compile(r"^(?:memo(?:randum)?|report|technical\s+report|note|working\s+paper)\s*(?:no\.?\s*)?"
                          r"[\w.-]*\s*(?:--|—|–|:|-)\s*", re.I)
_ARTICLE_TYPE = re.compile(r"^(?:research\s+(?:article|paper)|original\s+(?:article|research)|review\s+article|"
                           r"regular\s+paper|full\s+paper|short\s+paper|letter|article|invited\s+paper|"
                           r"position\s+paper|extended\s+abstract)$", re.I)
_JUNK_INFO_TITLE = re.compile(r"^(?:untitled|microsoft\s+word|document\d*|paper|title|template|main|"
                              r"\S+\.(?:dvi|tex|pdf|docx?|ps|indd))", re.I)


@dataclass
class Header:
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    venue: str | None = None
    doi: str | None = None
    arxiv: str | None = None
    keywords: list[str] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)
    title_lines: list[Line] = field(default_factory=list)
    title_page: int = 0


def norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def not_title(text: str) -> bool:
    """Whether a line of the first page is one of those that are never the title."""
    t = text.strip()
    letters = sum(c.isalpha() for c in t)
    if letters < 3 or _NOT_TITLE.match(t) or _STAMP_ANYWHERE.search(t) or _DATE_LINE.match(t):
        return True
    if "@" in t or re.search(r"https?://|www\.", t):
        return True
    if _VOLUME.search(t) and len(t) < 90:
        return True
    if _INSTITUTION.search(t) and len(t) < 90 and not re.search(r"[:?]", t):
        return True
    if _ARTICLE_TYPE.match(t.rstrip(".: ")):
        return True
    # An upper-case place line ("MASSACHUSETTS", "UNIVERSITY OF CALIFORNIA,") ends with a comma.
    if t.endswith(",") and t.isupper():
        return True
    return False


def is_author_line(text: str) -> bool:
    """A line of person names ("J.H. Saltzer, D.P. Reed and D.D. Clark*"), not a title."""
    t = text.strip()
    names = parse_authors([t])
    if not names:
        return False
    covered = sum(len(n) for n in names)
    letters = len(re.sub(r"[\s,;*†‡§¶∗\d]|\band\b", "", t))
    if covered < 0.6 * max(1, letters):
        return False
    # A short title in title case ("Liquid Types") parses as a name too: an author line has several
    # names, initials, or a footnote mark.
    if ":" in t or re.search(r"\b(?:of|for|with|and the|in|on|to)\b", t.replace(" and ", ",")):
        return False
    return len(names) >= 2 or bool(re.search(r"\b[A-Z]\.", t))


# A line set above a title that names a publisher, a series, an institution or the terms of circulation
# ("AMERICAN MATHEMATICAL SOCIETY", "BRICS", "IRVINE", "Do not quote or cite without permission of the authors.").
_BANNER_WORDS = re.compile(r"\b(?:SOCIETY|PRESS|SERIES|NOTES|CENT(?:ER|RE)|RESEARCH|SCIENCES?|UNIVERSITY|INSTITUTE|"
                           r"ASSOCIATION|ACADEMY|LABORATOR(?:Y|IES)|FOUNDATION|COUNCIL|DEPARTMENT|COLLEGE|SCHOOL|"
                           r"PUBLISHERS?|PROCEEDINGS|REPORTS?|MEMO(?:RANDUM)?|THESIS|DISSERTATION)\b")
_CIRCULATION = re.compile(r"\b(?:(?:please\s+)?do\s+not|don'?t)\s+(?:quote|cite|circulate|distribute|copy|reproduce)"
                          r"|without\s+(?:the\s+)?(?:written\s+)?permission|not\s+for\s+(?:distribution|citation|"
                          r"publication|quotation)|^\s*(?:draft|preliminary\s+draft|working\s+draft)\b"
                          r"|comments\s+welcome", re.I)
# Words that end a title line that goes on (or start one that continues the line above).
_CONNECTIVE = re.compile(r"(?:\b(?:of|for|and|in|on|to|the|a|an|with|by|from|into|via|under|over|at|as|its)|[:,\-–—])$",
                         re.I)
_PAREN_DATES = re.compile(r"^\(\s*(?:1[89]|20)\d\d\s*(?:[-–—]+\s*(?:(?:1[89]|20)\d\d|\d\d))?\s*\)$")
_STRONG = ("author block below", "author block above", "file name", "pdf metadata", "running head")


def is_banner(text: str) -> bool:
    """A publisher's, series', institution's or circulation line, never the title."""
    t = text.strip()
    if _CIRCULATION.search(t):
        return True
    letters = [c for c in t if c.isalpha()]
    if not letters or not all(c.isupper() for c in letters):
        return False
    return len(t.split()) <= 6 and bool(_BANNER_WORDS.search(t))


@dataclass
class TitleChoice:
    """The title the page's signals agree on: its lines, text, score, the evidence for it and a confidence."""

    lines: list[Line]
    text: str
    score: float = 0.0
    evidence: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    confidence: str = "low"


def _glue(lines: list[Line]) -> tuple[list[Line], dict[int, list[Line]]]:
    """Pieces of one line the text layer cut apart (drawn out of reading order: "Real" after "Time: ...",
    "Bro" "wn") glued left to right; no space where the glyphs touch. Returns the lines and, for each glued
    line, the lines it was made of."""
    out: list[Line] = []
    parts: dict[int, list[Line]] = {}
    for ln in sorted(lines, key=lambda ln: (ln.bbox[3], ln.bbox[0])):
        size = max(ln.size, 1.0)
        for j in range(len(out) - 1, max(-1, len(out) - 4), -1):
            prev = out[j]
            gap = ln.bbox[0] - prev.bbox[2]
            if abs(prev.bbox[3] - ln.bbox[3]) < 0.25 * size and abs(prev.size - ln.size) < 0.6 and -1 <= gap < 2 * size:
                sep = [] if gap < 0.12 * size or prev.text.endswith(" ") else \
                    [Span(" ", ln.size, ln.spans[0].font, 0, ln.bbox)]
                merged = Line(spans=[*prev.spans, *sep, *ln.spans],
                              bbox=(prev.bbox[0], min(prev.bbox[1], ln.bbox[1]), ln.bbox[2], max(prev.bbox[3], ln.bbox[3])),
                              block=prev.block)
                parts[id(merged)] = parts.pop(id(prev), [prev]) + [ln]
                out[j] = merged
                break
        else:
            out.append(ln)
    return out, parts


def _names_line(ln: Line, below: Line | None) -> bool:
    """A line of person names: several names or initials, or one name over an affiliation or an e-mail."""
    t = ln.text.strip()
    if is_author_line(t):
        return True
    names = parse_authors([t])
    if len(names) != 1 or len(names[0]) < 0.8 * len(t.strip(" *†‡∗")) or re.search(r"[:?]", t):
        return False
    if below is None:
        return False
    nb = below.text.strip()
    return "@" in nb or _affiliation(nb) or bool(_INSTITUTION.search(nb))


def _extend(start: Line, lines: list[Line], ok: set[int], body: float, scanned: bool) -> list[Line]:
    """The run of title lines around `start`: up over the lines of the title set above it (a smaller first
    line, "Early" over "LISP History"), down over its continuation lines."""
    i = lines.index(start)
    out = [start]
    for ln in reversed(lines[:i]):      # up
        first = out[0]
        if ln.bbox[3] > first.bbox[3] - 0.5 * min(ln.size, first.size):       # beside it, not above it
            continue
        if ln.bbox[0] > max(l.bbox[2] for l in out) + 5 or ln.bbox[2] < min(l.bbox[0] for l in out) - 5:
            continue
        gap = first.bbox[1] - ln.bbox[3]
        if id(ln) not in ok or gap > 0.6 * max(ln.size, first.size) or ln.size < max(body + 1.5, 0.7 * start.size) \
                or ln.size > start.size + 0.6 or is_banner(ln.text) or _names_line(ln, first) or scanned:
            break
        out.insert(0, ln)
        if len(out) >= 4:
            return out
    for ln in lines[i + 1:]:            # down
        if ln.bbox[0] > max(l.bbox[2] for l in out) + 5 or ln.bbox[2] < min(l.bbox[0] for l in out) - 5:
            continue  # another column beside the title
        prev = out[-1]
        h = max(1.0, prev.bbox[3] - prev.bbox[1])
        if ln.bbox[1] < prev.bbox[1] + 0.3 * h:
            continue
        gap = ln.bbox[1] - prev.bbox[3]
        nxt = lines[lines.index(ln) + 1] if lines.index(ln) + 1 < len(lines) else None
        same = abs(ln.size - start.size) < 0.6 and start.size >= body + 2
        if _names_line(ln, nxt) and not (same and not is_author_line(ln.text) and not scanned and ln.bold == start.bold
                                         and ln.fonts == start.fonts):
            break
        if abs(ln.size - start.size) >= 0.6 and not scanned:
            # A line of another size goes on the title only when the words say so: the line above ends on a
            # connective or a colon, or this one opens with a parenthesis or a lower-case word.
            goes_on = _CONNECTIVE.search(prev.text.strip()) or re.match(r"^[(\[]|[a-z]", ln.text.strip())
            if not (goes_on and gap < 0.6 * h and ln.size >= max(body + 1.5, 0.65 * start.size)
                    and (not not_title(ln.text) or _PAREN_DATES.match(ln.text.strip())) and not is_banner(ln.text)):
                break
            if _PAREN_DATES.match(ln.text.strip()):
                out.append(ln)
                break
        elif gap > 1.1 * h:
            # Wide leading: a short line of the same type right under a short title line still belongs to it.
            if not (same and gap < 1.7 * h and ln.fonts == start.fonts and len(ln.text.split()) <= 4
                    and len(prev.text.split()) <= 4 and not not_title(ln.text)):
                break
        if not_title(ln.text) and not (same and not _STAMP_ANYWHERE.search(ln.text)) or is_banner(ln.text) \
                or (scanned and re.match(r"^by\b", ln.text, re.I)):
            break
        if scanned and len(out) >= 1 and not out[-1].text.rstrip().endswith((":", "-", ",")) \
                and ln.text[:1].islower() is False and len(out[-1].text) < 0.5 * len(ln.text):
            break
        out.append(ln)
        if len(out) >= 4:
            break
    return out


def _file_words(name: str | None) -> set[str]:
    """The words of a file name, as a person names a paper ("lelewer-data-compression.pdf")."""
    if not name:
        return set()
    stem = re.sub(r"\.pdf$", "", name.rsplit("/", 1)[-1], flags=re.I)
    stem = re.sub(r"([a-z])([A-Z])", r"\1 \2", stem)
    return {w for w in norm(stem).split() if len(w) > 1 and not w.isdigit()}


def _significant(text: str) -> list[str]:
    return [w for w in norm(text).split() if w not in SKIP_WORDS and not w.isdigit()]


def _score(c: TitleChoice, lines: list[Line], body: float, big: float, height: float, stop: float | None,
           file_words: set[str], info_title: str, repeats: list[str]) -> None:
    ev, flags = [], []
    size = max(ln.size for ln in c.lines)
    s = 4.0 * max(0.0, size - body) / max(1.0, big - body)
    if all(ln.bold for ln in c.lines):
        s += 0.5
        ev.append("bold")
    s -= 1.0 * c.lines[0].bbox[1] / max(1.0, height)
    text = c.text
    words = norm(text).split()
    last = lines.index(c.lines[-1]) if c.lines[-1] in lines else len(lines) - 1
    lo, hi = min(ln.bbox[0] for ln in c.lines), max(ln.bbox[2] for ln in c.lines)
    wide = (hi - lo) * 0.25 + 20
    after = [ln for ln in lines[last + 1:] if (stop is None or ln.bbox[1] < stop + 1)
             and ln.bbox[0] < hi + wide and ln.bbox[2] > lo - wide][:5]      # under it, not in the next column
    below_first = after[0] if after else None
    if is_author_line(text) or (len(c.lines) == 1 and _names_line(c.lines[0], below_first)):
        s -= 6
        flags.append("author line")
    if is_banner(text):
        s -= 6
        flags.append("banner")
    letters = [ch for ch in text if ch.isalpha()]
    if len(words) == 1 and letters and all(ch.isupper() for ch in letters) and not text.rstrip().endswith(":"):
        s -= 6      # one upper-case word over the title: a series, a place, an acronym's banner ("BRICS")
        flags.append("banner")
    elif len(words) == 1:
        s -= 1.5
        flags.append("one word")
    share = dictionary_share([re.sub(r"\b[A-Z][A-Z\d]+\b", " ", text)])     # acronyms ("TREC") are not broken words
    if share is not None and share < 0.5:
        s -= 3
        flags.append("not words")
    if text[:1].islower():
        s -= 2
        flags.append("starts mid-word")
    # The author block right under the title (an affiliation or a line of smaller type may come between),
    # never under another line of title type.
    for j, ln in enumerate(after[:3]):
        nxt = after[j + 1] if j + 1 < len(after) else None
        if "@" in ln.text or _names_line(ln, nxt):
            s += 2
            ev.append("author block below")
            break
        if ln.size >= size - 1 or j >= 1:
            break
    first = lines.index(c.lines[0]) if c.lines[0] in lines else 0
    before = [ln for ln in lines[max(0, first - 3):first] if ln.bbox[3] < c.lines[0].bbox[3] - 2]
    if before and any(_names_line(ln, before[k + 1] if k + 1 < len(before) else c.lines[0])
                      for k, ln in enumerate(before[-2:])) and not is_banner(before[-1].text):
        s += 1
        ev.append("author block above")
    sig = _significant(text)
    if file_words and sig:
        hit = sum(w in file_words for w in sig)
        if hit >= 2 and (hit / len(sig) >= 0.6 or hit >= 3 and hit / len(file_words) >= 0.6):
            s += 3 * hit / len(sig)
            ev.append("file name")
    nt = norm(text)
    if info_title and nt and len(words) >= 2 and (norm(info_title) == nt or (nt in norm(info_title)
                                                  and len(nt) > 0.6 * len(norm(info_title)))):
        s += 3
        ev.append("pdf metadata")
    if len(words) >= 2 and any(nt in norm(r) or (norm(r) in nt and len(norm(r)) > 0.6 * len(nt)) for r in repeats):
        s += 2
        ev.append("running head")
    c.score, c.evidence, c.flags = round(s, 3), ev, flags


def find_title(blocks: list[Block], height: float, scanned: bool = False) -> list[Line]:
    """The lines of the title on one page ([] when there is none)."""
    best = choose_title(blocks, height, scanned=scanned)
    return best.lines if best else []


def choose_title(blocks: list[Block], height: float, *, scanned: bool = False, file_name: str | None = None,
                 info_title: str = "", repeats: list[str] | tuple = ()) -> TitleChoice | None:
    """The title of one page, chosen among the runs of large lines in its top part by the signals of the
    PDF: type size and weight, an author block (names, affiliations, e-mails) under it, the words of the file
    name, the document's metadata title, the running head of the next pages; with the evidence and a
    confidence (`high` when the largest type and one more signal agree, or two signals do, and the text is
    neither an author line, a banner, one word nor broken words)."""
    raw = [ln for b in blocks if b.kind in ("text", "title", "heading") for ln in b.lines
           if ln.bbox[1] < 0.62 * height]
    if not raw:
        return None
    glued, parts = _glue(raw)
    lines = sorted(glued, key=lambda ln: (ln.bbox[1], ln.bbox[0]))
    sizes = [ln.size for ln in lines]
    body = max(set(sizes), key=lambda s: sum(len(ln.text) for ln in lines if ln.size == s))
    x0, x1 = min(ln.bbox[0] for ln in lines), max(ln.bbox[2] for ln in lines)
    stop = next((ln.bbox[1] for ln in lines if ln.bbox[0] < x0 + 0.4 * (x1 - x0)
                 and _BODY_START.match(ln.text.strip())), None)
    cands = [ln for ln in lines if not not_title(ln.text) and (stop is None or ln.bbox[1] < stop - 1)]
    if not cands:
        return None
    ok = {id(ln) for ln in cands}
    big = max((ln.size for ln in cands if len(ln.text.strip()) >= 3), default=body)
    if scanned or big < body + 1.0:
        # Type of one size (a typewritten memo, an OCR'd scan): the first lines that are left.
        starts = cands[:4]
    else:
        starts = sorted((ln for ln in cands if ln.size >= body + 1.0), key=lambda ln: -ln.size)[:8]
    fw = _file_words(file_name)
    runs: list[list[Line]] = []
    for st in starts:
        run = _extend(st, lines, ok, body, scanned)
        if run not in runs:
            runs.append(run)
    # A run inside a longer one is the same title cut short.
    runs = [r for r in runs if not any(r != o and all(any(x is y for y in o) for x in r) for o in runs)]
    choices = [TitleChoice(r, title_text(r)) for r in runs]
    for c in choices:
        _score(c, lines, body, big, height, stop, fw, info_title, list(repeats))
    # The largest type among the runs that are not an author line, a banner or a fragment.
    top = max((max(ln.size for ln in c.lines) for c in choices if not c.flags), default=big)
    for c in choices:
        if max(ln.size for ln in c.lines) >= top - 0.5 and not c.flags:
            c.evidence.insert(0, "largest type")
    choices.sort(key=lambda c: -c.score)
    best = choices[0]
    margin = best.score - choices[1].score if len(choices) > 1 else 99.0
    strong = sum(e in best.evidence for e in _STRONG)
    if not best.flags and margin >= 1.0 and (("largest type" in best.evidence and strong >= 1) or strong >= 2):
        best.confidence = "high"
    if scanned:
        best.evidence.append("OCR")
    best.lines = [p for ln in best.lines for p in parts.get(id(ln), [ln])]
    return best


def _segment(run: str) -> list[str]:
    """Letters run together ("DataCompression", "DATACOMPRESSION") split into words: at case changes, else
    into the fewest dictionary words."""
    pieces = re.findall(r"[A-Z][a-z]+|[A-Z]+(?![a-z])|[a-z]+|\d+|[^A-Za-z\d]", run)
    vocab = vocabulary()
    if len(pieces) > 1 and all(p.lower() in vocab or not p.isalpha() for p in pieces):
        return pieces
    low = run.lower()
    n = len(low)
    best: list[tuple[float, int]] = [(0.0, 0)] + [(1e9, 0)] * n
    for j in range(1, n + 1):
        for i in range(max(0, j - 24), j):
            w = low[i:j]
            cost = 1.0 if (w in vocab and (len(w) > 1 or w in "ai")) or w.isdigit() else 5.0 * len(w)
            if best[i][0] + cost < best[j][0]:
                best[j] = (best[i][0] + cost, i)
    out, j = [], n
    while j > 0:
        i = best[j][1]
        out.append(run[i:j])
        j = i
    return out[::-1]


def unspace(text: str) -> str:
    """A letter-spaced line ("D a t a C o m p r e s s i o n", each glyph its own word) made words again;
    a gap wider than one space (two or more spaces) is kept as a word break."""
    toks = text.split()
    if len(toks) < 4 or sum(len(t) == 1 for t in toks) < 0.7 * len(toks):
        return text
    words = []
    for group in re.split(r"\s{2,}", text.strip()):
        g = group.split()
        if len(g) >= 3 and sum(len(t) == 1 for t in g) >= 0.7 * len(g):
            words.extend(_segment("".join(g)))
        else:
            words.extend(g)
    return " ".join(words)


def title_text(lines: list[Line]) -> str:
    text = ""
    for ln in lines:
        t = ln.text.strip()
        if text.endswith("-") and len(text) > 1 and text[-2].isalpha() and t[:1].isupper():
            text += t            # "The UNIX Time-" + "Sharing System"
        elif text.endswith("-") and len(text) > 1 and text[-2].isalpha() and t[:1].islower():
            text = text[:-1] + t
        else:
            text = f"{text} {t}" if text else t
    text = _MEMO_PREFIX.sub("", unspace(text))
    text = re.sub(r"\s*[∗*†‡§¶]+\s*$", "", re.sub(r"\s+", " ", text)).strip()
    text = re.sub(r"(\w)[∗*†‡§¶]\d*$", r"\1", text)
    return text.rstrip(" ,;")


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
        if _BODY_START.match(t) \
                or len(t) > 200:
            break
        if re.match(r"^by\s+", t, re.I):
            t = t[3:]
        if _NOT_TITLE.match(t) and not is_author_line(t) or _affiliation(t):
            continue
        texts.append(_spaced(ln, t))
        if len(texts) > 16:
            break
    return _split_runs(parse_authors(texts))


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


_STOP_PART = re.compile(r"\b(?:universit\w*|institut\w*|laborator\w*|labs?|department|dept|inc|corp\w*|ltd|gmbh|"
                        r"college|school|faculty|research|centre|center|memo\w*|report|division|group|"
                        r"society|association|foundation|academy|consortium|council|agency|organi[sz]ation|"
                        r"(?:computer|information|mathematical)\s+sciences?)\b", re.I)


def _affiliation(text: str) -> bool:
    """A line of affiliations, addresses or report numbers under the names ("Bell Laboratories, Murray Hill",
    "Vrije Universiteit, Amsterdam"); lines that give each name its affiliation ("A, X University; B, Y
    Lab") are not, they are split name by name."""
    if ";" in text:
        return False
    if re.search(r"\b(?:1[89]|20)\d\d\b|\bno\.\s*\w", text, re.I):
        return True
    return bool(_STOP_PART.search(text) or _INSTITUTION.search(text))


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


def _spaced(ln: Line, text: str) -> str:
    """Wide gaps between a line's spans kept as runs of spaces: names set side by side stay apart."""
    if len(ln.spans) < 2:
        return text
    out, prev = "", None
    for s in ln.spans:
        if not s.text.strip():
            continue
        if prev is not None:
            gap = s.bbox[0] - prev
            touch = gap < 0.12 * s.size and out[-1:].isalpha() and s.text.strip()[:1].islower()   # "Bro" "wn"
            out += "   " if gap > 0.8 * s.size else "" if touch else " "
        out += s.text.strip()
        prev = s.bbox[2]
    return out if not text.lower().startswith("by ") else out[3:]


def _years_in(text: str) -> list[int]:
    this_year = _dt.date.today().year
    return [int(y) for y in _YEAR.findall(text) if 1850 <= int(y) <= this_year + 1]


def find_year(lines: list[str], arxiv: str | None, rotated: list[str], title: str | None = None) -> int | None:
    """The paper's own year from its front-matter lines (first page or two, in reading order).

    Years of the header (above the abstract) count; further down only a year on a dated line does (a
    copyright line, the venue, "Received ..."): a year in a sentence ("contests in 2012") is not the paper's,
    and neither is a year of the title's own lines ("Early LISP History (1956-1959)" was not written in 1956).
    """
    scores: dict[int, float] = {}
    body_from = next((i for i, t in enumerate(lines) if _BODY_START.match(t.strip())), len(lines))
    in_title = f" {norm(title)} " if title else ""
    for i, raw in enumerate(lines):
        t = raw.strip()
        if not t or _BAD_DATE.search(t):
            continue
        if in_title and i < body_from and _years_in(t) and f" {norm(t)} " in in_title:
            continue
        ys = _years_in(t)
        cue = max((w for pat, w in _GOOD_DATE if pat.search(t)), default=0.0)
        if not ys:
            m = _SHORT_YEAR.search(t)
            if m and cue >= 4:
                yy = int(m.group(1))
                ys = [2000 + yy if yy <= _dt.date.today().year % 100 + 1 else 1900 + yy]
            else:
                continue
        if _DATE_LINE.match(t) or re.fullmatch(r"(?:1[89]|20)\d\d\.?", t):
            cue = max(cue, 5)
        if re.search(r"\b(?:received|submitted)\b", t, re.I):
            ys = ys[:1]  # "Received May 1994; revised June 1995": the first date is the paper's
        weight = cue if cue else (2.0 if i < body_from else 0.0)
        if not weight:
            continue
        for y in ys:
            scores[y] = scores.get(y, 0.0) + weight
    stamp = None
    for t in rotated:
        m = _ARXIV_STAMP.search(t)
        if m:
            ys = _years_in(t)
            stamp = ys[-1] if ys else None
    if stamp is None and arxiv and re.match(r"\d{4}\.", arxiv):
        stamp = 2000 + int(arxiv[:2])
    if stamp is not None:
        scores[stamp] = scores.get(stamp, 0.0) + 3
    if not scores:
        return None
    return max(scores.items(), key=lambda kv: (kv[1], kv[0]))[0]


def find_venue(lines: list[str], title: str) -> str | None:
    nt = norm(title)
    for t in lines[:60]:
        if nt and norm(t) and norm(t) in nt:
            continue
        m = _VENUE.search(t)
        if m:
            v = re.sub(r"\s+", " ", m.group(0)).strip(" ,.;:()")
            v = re.sub(r"^proceedings\s+of\s+the\s+", "", v, flags=re.I)
            v = re.split(r"\s*[,(]\s*(?:" + _MONTH + r"|\d)", v, flags=re.I)[0]
            if 5 <= len(v) <= 160 and sum(c.isalpha() for c in v) > 4:
                return v
    return None


def _plausible_info_title(info_title: str, page_text: str) -> bool:
    t = info_title.strip()
    if len(t) < 6 or _JUNK_INFO_TITLE.match(t) or not re.search(r"[A-Za-z]{3}", t):
        return False
    # Producers leave templates' and files' names behind; a title the first page does not print is one.
    return norm(t) in norm(page_text)


def read_header(pages: list[list[Block]], heights: list[float], *, info: dict | None = None,
                rotated: list[str] | None = None, scanned: set[int] | frozenset[int] = frozenset(),
                cover: bool = False, file_name: str | None = None, repeats: list[str] | None = None) -> Header:
    """The header of a paper from the blocks of its first pages (0-based `scanned` page indices); `file_name`
    (a person's own label, often the title slugged) and `repeats` (the running heads of the next pages) are
    signals for the title."""
    info = info or {}
    rotated = rotated or []
    h = Header()
    info_title = (info.get("title") or "").strip()
    # The running heads of the next pages (dropped from their text) often repeat the title.
    signals = dict(file_name=file_name, info_title=info_title, repeats=list(repeats or ()))
    tp = 1 if cover and len(pages) > 1 else 0
    choice = choose_title(pages[tp], heights[tp], scanned=tp in scanned, **signals) if pages else None
    if choice is None and tp and pages:
        tp = 0
        choice = choose_title(pages[0], heights[0], scanned=0 in scanned, **signals)
    title_lines = choice.lines if choice else []
    h.title_page, h.title_lines = tp, title_lines
    front = [ln.text for p in pages[:tp + 2] for b in p for ln in b.lines]   # blocks in reading order
    page_text = " ".join(ln.text for b in (pages[tp] if pages else []) for ln in b.lines)
    layout_title = choice.text if choice else ""
    if info_title and _plausible_info_title(info_title, page_text) and (
            not layout_title or norm(layout_title) in norm(info_title) or norm(info_title) in norm(layout_title)
            or len(norm(info_title)) > 0.8 * len(norm(layout_title))):
        h.title, h.provenance["title"] = re.sub(r"\s+", " ", info_title), "pdf-xmp"
        h.provenance["title_confidence"] = "high"
        h.provenance["title_evidence"] = "pdf metadata printed on the first page"
    elif layout_title:
        h.title, h.provenance["title"] = layout_title, "layout"
        h.provenance["title_confidence"] = choice.confidence
        h.provenance["title_evidence"] = "; ".join(choice.evidence + [f"not: {f}" for f in choice.flags]) or "none"
    authors = find_authors(pages[tp], title_lines, heights[tp]) if pages else []
    if not authors and pages and title_lines:
        authors = _authors_above(pages[tp], title_lines)
    # A "name" made of the title's own words is a piece of the title, never its author.
    tw = set(norm(h.title).split())
    authors = [a for a in authors if not (set(norm(a).split()) <= tw)]
    info_author = (info.get("author") or "").strip()
    if info_author and not re.search(r"\b(?:admin|user|owner|unknown|author)\b", info_author, re.I):
        cand = [a.strip() for a in re.split(r";|,\s*(?:and\s+)?|\s+and\s+|&", info_author) if len(a.strip()) > 2]
        low = page_text.lower()
        if cand and all(a.split()[-1].lower() in low for a in cand):
            authors, h.provenance["authors"] = cand, "pdf-xmp"
    if authors and "authors" not in h.provenance:
        h.provenance["authors"] = "layout"
    h.authors = authors
    head = "\n".join(front)[:8000]
    for t in rotated:
        m = _ARXIV_STAMP.search(t)
        if m:
            h.arxiv = m.group(1)
            break
    if h.arxiv is None:
        m = _ARXIV_STAMP.search(head)
        if m:
            h.arxiv = m.group(1)
    if h.arxiv:
        h.provenance["arxiv"] = "layout"
    h.doi = find_doi(head[:6000]) or find_doi(" ".join(rotated))
    if h.doi:
        h.provenance["doi"] = "layout"
    h.year = find_year(front[:120], h.arxiv, rotated, h.title)
    if h.year:
        h.provenance["year"] = "layout"
    h.venue = find_venue(front, h.title)
    if h.venue:
        h.provenance["venue"] = "layout"
    kw = (info.get("keywords") or "").strip()
    if kw:
        h.keywords = [k.strip() for k in re.split(r"[;,]", kw) if k.strip()][:20]
    return h
