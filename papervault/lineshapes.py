"""What a line of a title page is, from its text alone: a person's name, an institution, an address, a running
header or column name. Pure text (no PDF library), so the header reader and the note analysis share it."""

from __future__ import annotations

import re

# Words of an organisation's name: a person is never called this.
INSTITUTION = re.compile(
    r"\b(?:universit(?:y|ies|é|ä|at|e|à|ad|ade|eit|eit)|universidad(?:e)?|institut(?:e|o|s)?|laborator(?:y|ies|ium)|department|dept\.?|"
    r"departament\w*|departement|fachbereich|facultad|facult[ée]|"
    r"college|school|faculty|research|centre|center|labs?|inc|corp(?:oration)?|company|gmbh|ltd|llc|plc|"
    r"asa|ag|ab|s\.?a\.?|n\.?v\.?|b\.?v\.?|foundation|society|association|academy|council|agency|group|"
    r"division|consortium|organi[sz]ation|ministry|hospital|observatory|polytechnic|polytechnique|"
    r"[ée]cole|inria|cnrs|epfl|eth|mit|m\.i\.t\.?|ibm|microsoft|google|facebook|meta|amazon|intel|yahoo|"
    r"nokia|ericsson|xerox|parc|bell|at&t|search|transfer|systems|technologies|technology|sciences?|"
    r"engineering|informatics|computing|press|publishers?|proceedings|journal|transactions|project)\b",
    re.I)
# An address: a postal code, a street, a country or a state in an address line.
ADDRESS = re.compile(
    r"\b(?:\d{4,6}|[A-Z]{1,2}\d[\dA-Z]?\s?\d[A-Z]{2}|street|st\.|road|rd\.|avenue|ave\.|boulevard|blvd|"
    r"strasse|straße|platz|p\.?\s?o\.?\s+box|box\s+\d+|usa|u\.s\.a\.?|sweden|germany|france|england|"
    r"united\s+kingdom|uk|italy|spain|netherlands|denmark|norway|finland|switzerland|austria|japan|china|"
    r"canada|australia|israel|india|korea|taiwan|belgium|portugal|greece|poland|brazil)\b", re.I)
# Column and section names of a journal set where a title would be ("Database Theory Column").
COLUMN = re.compile(r"^(?:[\w&-]+\s+){0,4}(?:column|corner|department|forum|viewpoint|news|editorial|letters?|"
                    r"book\s+reviews?|highlights|perspectives?|views|reviews)\.?$", re.I)
_PARTICLES = {"de", "van", "von", "der", "den", "la", "le", "di", "da", "del", "du", "dos", "das", "y", "bin", "ibn",
              "ter", "ten", "zu", "af", "st."}
_FUNCTION_WORDS = {"of", "the", "from", "for", "in", "on", "with", "to", "a", "an", "at", "by", "into", "via", "versus",
                   "vs", "and", "is", "are", "introduction", "abstract", "contents", "summary", "keywords",
                   "chapter", "section", "appendix", "references", "thesis", "degree", "text", "size", "font", "as", "or", "not", "its", "their", "our", "we", "this", "that", "using", "under"}
_NAME_WORD = re.compile(r"^(?:[A-Z]\.(?:-?[A-Z]\.)*|[A-Z][a-z'’]?\.?|(?:Mc|Mac|O['’]|D['’])?[A-Z\u00C0-\u00DE]"
                        r"[a-z\u00DF-\u00FF\u0100-\u017F'’]+(?:[A-Z][a-z]+)?"       # "DeCandia", "McKusick"
                        r"(?:-[A-Z\u00C0-\u00DE][a-z\u00DF-\u00FF\u0100-\u017F'’]+)?"
                        r"|[A-Z\u00C0-\u00DE]{2,}(?:-[A-Z]{2,})?)$")


def is_person_name(text: str) -> bool:
    """A person's name ("Per Martin-Löf", "J.H. Saltzer", "Robbert van Renesse"), never an organisation
    ("Stanford University", "FAST Search and Transfer ASA"), a place or a phrase."""
    t = " ".join(re.sub(r"[∗*†‡§¶\d,]+$", "", text.strip()).split())
    if not t or len(t) > 60 or "@" in t or any(ch.isdigit() for ch in t) or INSTITUTION.search(t) or ADDRESS.search(t) \
            or is_column(t):
        return False
    words = re.sub(r"(?<=\.)(?=[A-Z])", " ", t).split()   # "J.H." -> "J." "H."
    if not 2 <= len(words) <= 6:
        return False
    if words[0] in _PARTICLES or words[-1] in _PARTICLES:
        return False                                   # "van", "de" inside a name, never at its ends ("Sheng Di")
    if any(w.lower() in _FUNCTION_WORDS for w in words):
        return False                                   # "Evidence from the Industry" is a phrase
    if re.fullmatch(r"[A-Z]\.?", words[-1]) and not re.fullmatch(r"[A-Z][a-z]", words[0]):
        return False                                   # "Saltzer J." read backwards is not how a page prints it
    upper = [w for w in words if w.isupper() and len(w) > 2]
    if upper and len(upper) == len(words):
        return all(_NAME_WORD.match(w.capitalize()) for w in words)
    return all(_NAME_WORD.match(w) or w.lower() in _PARTICLES for w in words)


def is_institution(text: str) -> bool:
    """An affiliation or an organisation's name: "Stanford University", "Microsoft Research Graphics Group"."""
    return bool(INSTITUTION.search(text))


def is_address(text: str) -> bool:
    """An address line: "Chalmers Tekniska Högskola, 41296 Göteborg, SWEDEN. rjmh@cs..."."""
    t = text.strip()
    return "@" in t or bool(ADDRESS.search(t) and ("," in t or len(t.split()) <= 4))


def is_column(text: str) -> bool:
    """A journal's column or section name set in title type: "Database Theory Column"."""
    return bool(COLUMN.match(text.strip())) and len(text.split()) <= 5
