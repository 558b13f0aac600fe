"""The lines of a title page and what each is, by layout and text: never a title (banners, stamps, volume
and copyright lines, institutions, dates), an author line, an affiliation; and pieces of one line glued."""

from __future__ import annotations

import re

from papervault.lineshapes import is_column, is_person_name
from papervault.parse.layout import Line, Span
from papervault.parse.structure import parse_authors
from papervault.parse.words import vocabulary

_YEAR = re.compile(r"(?<![\d/.-])(1[89]\d\d|20[0-4]\d)(?![\d])")
_SHORT_YEAR = re.compile(r"['’‘`](\d\d)\b")
_ARXIV_STAMP = re.compile(r"arXiv:\s?(\d{4}\.\d{4,5}|[a-z-]+(?:\.[A-Z]{2})?/\d{7})(v\d+)?", re.I)

# Lines that are never the title: words that start them (a whole word: "Doing ..." is not "doi"), and marks.
_NOT_TITLE = re.compile(
    r"^(?:(?:downloaded|accessed|retrieved|printed|generated|running\s+head|short\s+title|this\s+(?:paper|"
    r"article|version|work|document|report)|(?:to\s+)?appear(?:s|ed)?\s+in|accepted|published|preprint|"
    r"submitted|manuscript|draft|in\s+proceedings|proceedings\s+of|presented\s+(?:at|by)|copyright|"
    r"permission\s+to|all\s+rights|keywords?|index\s+terms|arxiv|issn|isbn|technical\s+report|"
    r"research\s+report|rapport\s+(?:de\s+recherche|technique)|"
    r"vol(?:ume|\.)?\s*(?:\d+|[IVXLC]+\b)|no\.\s*\d+|number\s+\d+|supervised\s+by|advisor|received|"
    r"revised|editors?|edited\s+by|communicated\s+by|journal\s+of|transactions\s+on|communications\s+of|"
    r"annals\s+of|bulletin\s+of|ieee\s+transactions|acm\s+transactions|electronic\s+version|reprinted|"
    r"research\s+paper\s+competition|open\s+access|sponsored\s+by|contents\s+lists|available\s+online|"
    r"homepage|e-?mail|correspondence|corresponding|author\s*\(s\)\s*:|source\s*:|stable\s+url|working\s+paper|"
    r"nih\s+public\s+access|author\s+manuscript|public\s+access|this\s+pdf\s+is|extensive\s+quotation)\b"
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
    if _ARTICLE_TYPE.match(t.rstrip(".: ")) or is_column(t):
        return True                      # "Research Article", "Database Theory Column"
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
                           r"PUBLISHERS?|PROCEEDINGS|REPORTS?|MEMO(?:RANDUM)?|THESIS|DISSERTATION|JOURNAL|QUARTERLY|"
                           r"TRANSACTIONS|BULLETIN|MAGAZINE)\b")
_CIRCULATION = re.compile(r"\b(?:(?:please\s+)?do\s+not|don'?t)\s+(?:quote|cite|circulate|distribute|copy|reproduce)"
                          r"|without\s+(?:the\s+)?(?:written\s+)?permission|not\s+for\s+(?:distribution|citation|"
                          r"publication|quotation)|^\s*(?:draft|preliminary\s+draft|working\s+draft)\b"
                          r"|comments\s+welcome|further\s+reproduction", re.I)
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
    if is_author_line(t) or looks_like_name(t) and re.search(r"[∗*†‡]\s*$", t):
        return True                       # one name with its footnote mark ("Andrew Hodges∗")
    names = parse_authors([t])
    if len(names) != 1 or len(names[0]) < 0.8 * len(t.strip(" *†‡∗")) or re.search(r"[:?]", t):
        return False
    if t.isupper() and not looks_like_name(t):
        return False                      # "SEGMENTATION METHODS": the end of a title in capitals
    if below is None:
        return False
    nb = below.text.strip()
    return "@" in nb or _affiliation(nb) or bool(_INSTITUTION.search(nb))


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




def looks_like_name(text: str) -> bool:
    """A person's name as a line of its own: a name's shape (`lineshapes.is_person_name`) with an initial, a
    footnote mark or a word the dictionary does not know ("Henrik Kleven"), unlike a short title in title case
    ("Liquid Types")."""
    t = text.strip()
    if not is_person_name(t):
        return False
    vocab = vocabulary()
    words = re.findall(r"[^\W\d_]{2,}", t)
    unknown = [w for w in words if w.lower() not in vocab]
    if t.isupper():                      # in capitals a name is a guess: no word of it is a dictionary word
        return len(unknown) == len(words) > 0
    return bool(re.search(r"\b[A-Z]\.|[∗*†‡]\s*$", t)) or bool(unknown)
