"""Text clean-up: ligatures, spacing accents, de-hyphenation, and detecting text layers that are garbage.

The one text-cleaning module: the PDF reader cleans page text here, and the backends and survey stages that read
`paper.md` undo the hyphenation it kept ("repli- cation") with `dehyphen` and `one_line`."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
             "\ufb06": "st", "\u2010": "-", "\u2011": "-", "\u00ad": "", "\u200b": "", "\ufeff": ""}
# LaTeX's non-combining accents that pdfTeX emits before (or after) the letter: "L´eon" -> "Léon".
SPACING_ACCENTS = {"\u00b4": "\u0301", "`": "\u0300", "\u00a8": "\u0308", "\u02c6": "\u0302", "\u02dc": "\u0303",
                   "\u02c7": "\u030c", "\u00b8": "\u0327", "\u02da": "\u030a"}
_ACCENT_RE = re.compile("([" + "".join(k for k in SPACING_ACCENTS if k != "`") + "])\\s?([A-Za-z])")
_LIG_RE = re.compile("|".join(LIGATURES))


_NEEDS_CLEAN = re.compile("[" + "".join(LIGATURES) + "".join(k for k in SPACING_ACCENTS if k != "`") + "\u00a0]")


def clean(text: str) -> str:
    """Expand ligatures, fold spacing accents into letters, drop soft hyphens and zero-width characters."""
    if not text or not _NEEDS_CLEAN.search(text):
        return text  # the common case: one C-level scan, no work
    text = _LIG_RE.sub(lambda m: LIGATURES[m.group(0)], text)
    if any(a in text for a in SPACING_ACCENTS if a != "`"):
        text = _ACCENT_RE.sub(lambda m: unicodedata.normalize("NFC", m.group(2) + SPACING_ACCENTS[m.group(1)]), text)
    return text.replace("\u00a0", " ")


_BROKEN_WORD = re.compile(r"(\w)- (\w)")


def dehyphen(text: str) -> str:
    """Undo line-break hyphenation that survived as "repli- cation" (a hyphen, a space, then a lower-case
    letter); "Non- Volatile" keeps its hyphen."""
    return _BROKEN_WORD.sub(lambda m: m.group(1) + m.group(2) if m.group(2).islower() else m.group(0), text)


def one_line(text: str) -> str:
    """`text` on one line: every run of white space (line breaks included) as one space, none at the ends."""
    return " ".join(text.split())


_HYPHEN_END = re.compile(r"(\w)[-\u2010]$")
_WORD_START = re.compile(r"^[a-z]")


def join_lines(lines: list[str], hyphenated: set[str] | None = None) -> str:
    """Join the lines of a paragraph, removing line-break hyphens ("infor-" + "mation" -> "information").

    A hyphen is kept when the joined word appears hyphenated elsewhere in the document (`hyphenated`, lower
    case), so "state-of-the-" + "art" stays "state-of-the-art"; it is also kept before a capital or digit.
    """
    out = ""
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if not out:
            out = line
            continue
        if _HYPHEN_END.search(out) and re.match(r"^[A-Z0-9]", line):
            out = out + line  # "Non-" + "Volatile": a real hyphen before a capital or digit
        elif _HYPHEN_END.search(out) and _WORD_START.match(line):
            head = out.rsplit(None, 1)[-1][:-1]
            tail = re.match(r"[\w-]+", line).group(0)
            if hyphenated and f"{head}-{tail}".lower().strip(".,;:()[]") in hyphenated:
                out = out + line
            else:
                out = out[:-1] + line
        else:
            out = out + " " + line
    return re.sub(r"[ \t]{2,}", " ", out)


_HYPHEN_WORD = re.compile(r"\b[A-Za-z]+(?:-[A-Za-z]+)+\b")


def hyphenated_words(texts: list[str]) -> set[str]:
    """Words written with a hyphen inside a line somewhere in the document (evidence the hyphen is real)."""
    found: set[str] = set()
    for t in texts:
        for m in _HYPHEN_WORD.finditer(t):
            if not m.group(0).endswith("-"):
                found.add(m.group(0).lower())
    return found


def garbage_score(texts: list[str]) -> float:
    """How broken a page's text layer looks, 0 (fine) to 1 (unreadable).

    Counts the tell-tales of a font without a Unicode map (U+FFFD, private-use or control characters, runs of
    symbols), one glyph per line, and letters spaced out ("T h i s  i s"). Characters are counted once per
    page with a Counter and classified per distinct character: it runs on every page.
    """
    joined = "\n".join(texts)
    chars = len(joined) - max(0, len(texts) - 1)
    if chars <= 0:
        return 1.0
    counts = Counter(joined)
    bad = 0
    letters = vowels = 0
    for ch, n in counts.items():
        if ch.isascii():
            if ch.isalpha():
                letters += n
                if ch in "aeiouyAEIOUY":
                    vowels += n
            elif (ch < " " or ch == "\x7f") and ch not in "\t\n":
                bad += n
            continue
        if ch == "\ufffd" or unicodedata.category(ch) in ("Co", "Cc", "Cn"):
            bad += n
    bad_ratio = bad / chars
    words = joined.split()
    if not words:
        return 1.0
    single = sum(1 for w in words if len(w) == 1 and w.isalpha() and w not in ("a", "A", "I"))
    single_ratio = single / len(words)
    short_lines = sum(1 for t in texts if len(t.strip()) <= 2)
    short_line_ratio = short_lines / max(1, len(texts))
    # Letters that never form words: few vowels among letters is typical of shifted or remapped glyphs.
    vowel_ratio = vowels / max(1, letters)
    vowel_bad = 1.0 if letters > 200 and not (0.22 <= vowel_ratio <= 0.55) else 0.0
    return max(min(1.0, bad_ratio * 4), min(1.0, (single_ratio - 0.15) * 2.5) if single_ratio > 0.15 else 0.0,
               min(1.0, (short_line_ratio - 0.5) * 2) if short_line_ratio > 0.5 and len(texts) > 20 else 0.0,
               vowel_bad)


def norm_key(text: str) -> str:
    """A key for repeated running headers and footers: digits and case do not matter."""
    return re.sub(r"\d+", "#", re.sub(r"\s+", " ", text.strip().lower()))
