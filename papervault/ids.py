"""Paper identity: normalised titles and BetterBibTeX-style citation keys (`lamport2001paxos`).

A key is the id of a paper everywhere (vault folder, `[@key]` citations, index rows), so it must be stable,
unique, readable, and always match `papervault.vault.store.ID_PATTERN`.
"""

from __future__ import annotations

import re
import unicodedata

from papervault.lineshapes import is_person_name

# Letters that NFKD does not decompose into ASCII; enough for author names in practice.
_FOLD = str.maketrans({
    "ß": "ss", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ø": "o", "Ø": "O", "đ": "d", "Đ": "D",
    "ł": "l", "Ł": "L", "þ": "th", "Þ": "Th", "ð": "d", "Ð": "D", "ı": "i", "ŋ": "ng",
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "’": "'", "‘": "'", "“": '"', "”": '"',
})

# LaTeX accents and commands that appear in BibTeX titles and names: {\"o}, \'{e}, \textit{X}, {\ss}.
_LATEX_SPECIAL = {r"\ss": "ss", r"\ae": "ae", r"\AE": "AE", r"\oe": "oe", r"\OE": "OE", r"\o": "o",
                  r"\O": "O", r"\l": "l", r"\L": "L", r"\i": "i", r"\j": "j", r"\aa": "a", r"\AA": "A"}
_LATEX_ACCENT = re.compile(r"\\[`'^\"~=.uvHcdbrkt]\s*\{?\s*([A-Za-z])\s*\}?")
_LATEX_SPECIAL_RE = re.compile(r"\\(ss|ae|AE|oe|OE|aa|AA|o|O|l|L|i|j)(?![A-Za-z])")
_LATEX_CMD = re.compile(r"\\[A-Za-z]+\*?\s*")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")

# Words BetterBibTeX skips when it picks the first significant title word (its default skip list, trimmed).
SKIP_WORDS = frozenset("""
a ab aboard about above across after against al along amid among an and anti around as at before behind
below beneath beside besides between beyond but by d da das de del dell dello dei degli della dem den der
des despite die do down du during ein eine einem einen einer eines el en et except for from gli i il in
inside into is l la las le les like lo los near nor of off on onto or over past per plus round save since
so some sur than the through to toward towards un una unas under underneath une unlike uno unos until up
upon versus via von while with within without yet zu zum
""".split())


# The provenance of an identity field the PDF alone gave (its layout, its XMP metadata, or a model's reading of its
# first page), not a person, a library or a resolved identifier: the fields `status` may doubt and `enrich` may
# confirm.
READ_FROM_PDF = frozenset({"layout", "pdf-xmp", "model"})


def fold(text: str) -> str:
    """ASCII-fold `text`: strip LaTeX accent commands and diacritics (Gödel, G{\\"o}del -> Godel)."""
    if not text:
        return ""
    if text.isascii() and "\\" not in text:
        return text
    text = _LATEX_ACCENT.sub(r"\1", text)
    text = _LATEX_SPECIAL_RE.sub(lambda m: _LATEX_SPECIAL["\\" + m.group(1)], text)
    text = text.translate(_FOLD)
    text = unicodedata.normalize("NFKD", text)
    return text.encode("ascii", "ignore").decode("ascii")


def normalize_title(title: str | None) -> str:
    """A title reduced to lowercase ASCII words separated by single spaces, for exact-match dedup.

    Case, accents, LaTeX markup (`{BERT}`, `\\emph{x}`), punctuation and whitespace do not count; word order and
    digits do (`Part I` vs `Part II` stay different).
    """
    if not title:
        return ""
    text = fold(title)
    text = _LATEX_CMD.sub(" ", text)
    text = text.lower().replace("'", "")   # "Lamport's" and "Lamports" are the same word
    return _NON_ALNUM.sub(" ", text).strip()


def last_name(author: str) -> str:
    """The family name of an author written "First Last", "Last, First" or "{Org Name}"."""
    author = (author or "").strip()
    if not author:
        return ""
    if "," in author:
        return author.split(",", 1)[0].strip()
    if author.startswith("{") and author.endswith("}"):
        return author[1:-1]
    parts = author.split()
    # Keep lowercase particles with the family name ("Ludwig van Beethoven" -> "van Beethoven"), as BibTeX does.
    i = len(parts) - 1
    while i > 0 and parts[i - 1][:1].islower():
        i -= 1
    return " ".join(parts[i:])


def _ascii_word(text: str) -> str:
    return _NON_ALNUM.sub("", fold(text).lower())


def first_title_word(title: str | None) -> str:
    """The first title word that is not a skip word or a number ("The Part-Time Parliament" -> "part")."""
    words = normalize_title(title).split()
    for w in words:
        if w not in SKIP_WORDS and not w.isdigit():
            return w
    return words[0] if words else ""


def _suffix(n: int) -> str:
    """0 -> "", 1 -> "a", 26 -> "z", 27 -> "aa" (BetterBibTeX's disambiguation suffixes)."""
    out = ""
    while n > 0:
        n -= 1
        out = chr(ord("a") + n % 26) + out
        n //= 26
    return out


def unique_key(base: str, taken: set[str] | frozenset[str]) -> str:
    """`base`, or `base` + a, b, ..., z, aa, ... : the first that is not in `taken`. Does not change `taken`."""
    base = base[:96]
    n = 0
    while True:
        cand = base + _suffix(n)
        if cand not in taken:
            return cand
        n += 1


def short_title(title: str | None, words: int = 2) -> str:
    """The first `words` distinct significant words of a title, run together ("Liquid Types" -> "liquidtypes")."""
    out: list[str] = []
    for w in normalize_title(title).split():
        if w not in SKIP_WORDS and not w.isdigit() and w not in out:
            out.append(w)
        if len(out) == words:
            break
    return "".join(out)[:30]


def key_name(authors: list[str], title: str | None, confident: bool = True) -> str:
    """The name part of a key: the first author's family name as lowercase ASCII ("lamport"), or "" when the
    key may not be built from it: no author, a first "author" made of the title's own words ("Liquid Types"
    read as a name: all its words the title's, no initial), or, not `confident`, a first author that is not a person's name ("Stanford University")."""
    if not authors:
        return ""
    first = authors[0]
    if not confident and not is_person_name(first):
        return ""
    words = set(normalize_title(first).split())
    if words and words <= set(normalize_title(title).split()) and not re.search(r"\b[A-Z]\.", first):
        return ""       # "Liquid Types" read as a name; a title that is the author line ("J.H. Saltzer, ...") keeps it
    return _ascii_word(last_name(first))[:30]


def key_base(authors: list[str], year: int | None, title: str | None, confident: bool = True) -> str:
    """The key before disambiguation: last name + year + first significant title word (`lamport2001paxos`).

    Not `confident` (an identity the PDF's layout gave with low confidence), the key holds only what is likely
    right: the first author's surname and the year when the first author is a person's name (`saltzer1981`),
    else a short form of the title and the year (`liquidtypes2008`), never "anon" nor a word of a line that
    may be an affiliation or an address. Either way the name is never made of the title's own words
    (`key_name`)."""
    y = str(year) if isinstance(year, int) and 0 < year < 10000 else ""
    name = key_name(authors, title, confident)
    if not confident or (authors and not name):
        base = f"{name}{y}" if name else f"{short_title(title)}{y}"
        if base and not base.isdigit():
            return base if base[0].isalpha() else "p" + base
    word = first_title_word(title)[:30]
    base = f"{name or 'anon'}{y}{word}"
    return base if base[0].isalnum() else "p" + base


def make_key(authors: list[str], year: int | None, title: str | None, taken: set[str], confident: bool = True) -> str:
    """A new, unique BetterBibTeX-style key; `taken` is the set of ids in use (not modified)."""
    return unique_key(key_base(authors, year, title, confident), taken)


_KEY_BAD = re.compile(r"[^A-Za-z0-9_.-]+")


def sanitize_key(user_key: str | None) -> str | None:
    """A user's own citation key made safe as an id (`Smith:2001/x` -> `Smith_2001_x`); None if nothing usable is left.

    Keys that are already valid are returned unchanged, so a BibTeX or Better BibTeX key survives as-is.
    """
    if not user_key:
        return None
    key = fold(user_key.strip())
    key = _KEY_BAD.sub("_", key)
    while ".." in key:
        key = key.replace("..", ".")
    key = key.lstrip("_.-")[:100].rstrip(".")
    return key or None
