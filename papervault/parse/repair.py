"""Repairs of broken text layers: words rebuilt from glyph geometry, and glyphs mapped to their Unicode.

Old TeX PDFs (Type 3 bitmap fonts from dvips) get spaces where the glyphs touch and none where they do not:
"S E Rob ertson S W alk er", "F un tional Rea tiv e". Their Computer Modern text fonts use the OT1
encoding, where an en dash sits at `{`, an em dash at `|` and the ff/fi/fl/ffi/ffl ligatures in control
codes ("Ok api at TREC{"); a ligature without a Unicode map comes out as U+FFFD ("She�eld"). Some
publishers' fonts map quotes and dashes to letters of another code page ("łworsež", "DSGÐthe").

`needs_repair` is a cheap test of a page's lines; `rebuild_lines` re-reads a flagged page glyph by glyph
(`rawdict`) and sets the spaces where the gaps between the glyphs say they are.
"""

from __future__ import annotations

import re

# Short words that are real English words: the other 1-3 letter tokens of a page are fragments.
_SHORT_WORDS = frozenset("""
a i an as at be by do go he if in is it me my no of on or so to up us we am are but can did for had has her
him his how its let may new not now off old one our out own per put run say see set she the too two use via
was way who why yes yet you all and any ask big few got end far get lot low men few key map max min row sum
top log bit non pre sub co re vs et al ii iii iv vi fig eq ref sec tab cf ie eg ms kb mb gb tb ok id db io
os ip cpu gpu api sql xml web i.e e.g etc
""".split())
_TOKEN = re.compile(r"[A-Za-z]+")

# OT1 (Computer Modern text fonts): code points that are not the character they look like in the text layer.
_OT1 = {"{": "\u2013", "|": "\u2014", "\x0b": "ff", "\x0c": "fi", "\x0d": "fl", "\x0e": "ffi", "\x0f": "ffl",
        "\x7b": "\u2013", "\x10": "\u0131", "\x19": "\u00df", "\x1a": "\u00e6", "\x1b": "\u0153",
        "\x1c": "\u00f8"}
_OT1_FONT = re.compile(r"^(?:cm(?:r|bx|sl|ti|ss|csc|dunh|b|fib|u)\d|t3font|type3)|^[A-Z]{6}\+cm(?:r|bx|sl|ti)"
                       r"|type\s*3", re.I)
_LIGATURE_GUESS = ("fi", "ffi", "ff", "fl", "ffl")
_PUNCT = re.compile(r"ł(?=[A-Za-z])|(?<=[A-Za-z.,!?])ž|(?<=[A-Za-z0-9ž”).,!?])[ÐÑ](?=[A-Za-z0-9\s“ł(])|"
                    r"(?<=[A-Za-z])Õ(?=[a-z])|(?<=\s)Ò(?=[A-Za-z])|(?<=[A-Za-z.,])Ó")
_PUNCT_MAP = {"ł": "\u201c", "ž": "\u201d", "Ð": "\u2014", "Ñ": "\u2014", "Õ": "\u2019", "Ò": "\u201c",
              "Ó": "\u201d"}


_MATH_FONT = re.compile(r"^(?:[A-Z]{6}\+)?(?:cmmi|cmsy|cmex|msam|msbm|eufm|rsfs|lcmss|stmary|wasy)", re.I)


def is_math_font(font: str) -> bool:
    return bool(_MATH_FONT.match(font))


def is_ot1_font(font: str) -> bool:
    """A TeX text font in the OT1 encoding (Computer Modern by name, or a dvips Type 3 font)."""
    name = font.split("+", 1)[-1]
    return bool(_OT1_FONT.search(name) or _OT1_FONT.search(font))


def map_ot1(text: str) -> str:
    """OT1 code points of a TeX font to their Unicode ("TREC{" -> "TREC–", "\\x0cle" -> "file")."""
    if not any(c in text for c in _OT1):
        return text
    out = []
    for i, c in enumerate(text):
        if c in "{|":
            # A dash only between or after word characters; a brace in running text stays a brace.
            prev = text[i - 1] if i else " "
            if prev.isalnum() or prev in ")]" or (i + 1 < len(text) and text[i + 1].isdigit() and prev == " "):
                out.append(_OT1[c])
                continue
            out.append(c)
        else:
            out.append(_OT1.get(c, c))
    return "".join(out)


def map_punctuation(text: str) -> str:
    """Quotes and dashes a font mapped to letters of another code page ("łworsež" -> "“worse”")."""
    if not any(c in text for c in _PUNCT_MAP):
        return text
    # "ł...ž" only as a pair on the line: a Polish name keeps its letters.
    if "ł" in text and "ž" not in text:
        text_ok = text.replace("ł", "\0")
    else:
        text_ok = text
    out = _PUNCT.sub(lambda m: _PUNCT_MAP[m.group(0)], text_ok)
    return out.replace("\0", "ł")


def fix_replacement_chars(text: str, known: set[str] | frozenset[str] = frozenset()) -> str:
    """U+FFFD inside a word: the ligature (fi, ffi, ff, fl, ffl) that makes a word the document uses."""
    if "\ufffd" not in text:
        return text

    def sub(m: re.Match) -> str:
        word = m.group(0)
        for lig in _LIGATURE_GUESS:
            cand = word.replace("\ufffd", lig)
            if cand.lower() in known:
                return cand
        return word.replace("\ufffd", _guess_ligature(word))

    return re.sub(r"[A-Za-z]+\ufffd[A-Za-z]*|\ufffd[A-Za-z]+", sub, text)


def _guess_ligature(word: str) -> str:
    """The likeliest ligature from its neighbours when the document does not settle it."""
    i = word.find("\ufffd")
    after = word[i + 1:i + 2].lower()
    before = word[i - 1:i].lower() if i else ""
    if after in ("c",) or (after == "e" and before in "aeiou" and before):
        return "ffi"     # e_cient, o_ce, She_eld
    if after in ("l",) and before:
        return "fl"
    if after in ("e", "r", "u") and before in ("a", "e", "i", "o", "u", "u"):
        return "ff"      # e_ect, o_er, bu_er
    return "fi"          # _le, _nd, de_ne, speci_c


def fragment_share(texts: list[str]) -> float:
    """The share of a page's short alphabetic tokens that are not words: high when spaces split words."""
    tokens = [t for line in texts for t in _TOKEN.findall(line)]
    if len(tokens) < 12:
        return 0.0
    bad = sum(1 for t in tokens if len(t) <= 3 and t.lower() not in _SHORT_WORDS)
    return bad / len(tokens)


def needs_repair(texts: list[str]) -> bool:
    """Whether a page's text layer looks split inside words (so its spaces are rebuilt from the glyphs)."""
    return fragment_share(texts) > 0.12


def line_text_from_chars(spans: list[dict]) -> list[str]:
    """Each span's text rebuilt from its glyph boxes: a space where the gap between glyphs is a word gap,
    none where the glyphs touch (the text layer's own spaces are not trusted)."""
    out: list[str] = []
    prev_end = None
    prev_size = None
    for s in spans:
        size = s.get("size") or 10.0
        buf = []
        for ch in s.get("chars", ()):
            c = ch["c"]
            x0, x1 = ch["bbox"][0], ch["bbox"][2]
            if c.isspace():
                continue
            if prev_end is not None:
                gap = x0 - prev_end
                thr = 0.16 * max(size, prev_size or size)
                if gap > thr:
                    buf.append(" ")
            buf.append(c)
            prev_end, prev_size = max(x1, x0 + 0.01), size
        out.append("".join(buf))
    return out
