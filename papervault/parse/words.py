"""Dictionary words: how much of a page's text is made of real words, the measure of a readable text layer.

The dictionary (words.txt) is the whole-word vocabulary of the all-MiniLM-L6-v2 tokenizer, BERT's uncased
WordPiece vocabulary: its 21,719 alphabetic ASCII entries of two letters or more. A word is a run of two or
more letters. bench/identity.py reports the same measure on the pages the parser repaired or OCR'd.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

_WORD = re.compile(r"[^\W\d_]{2,}")
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f]")


@cache
def vocabulary() -> frozenset[str]:
    text = resources.files("papervault.parse").joinpath("words.txt").read_text(encoding="utf-8")
    return frozenset(w for w in text.split("\n") if w and not w.startswith("#"))


@dataclass(frozen=True)
class WordCount:
    words: int          # runs of two or more letters
    known: int          # of them, dictionary words
    latin: float        # share of their letters in the Latin script (the dictionary says nothing of others)

    @property
    def share(self) -> float | None:
        return self.known / self.words if self.words else None


def count_words(texts: list[str]) -> WordCount:
    """Words of `texts`, how many are dictionary words, and how Latin their letters are."""
    vocab = vocabulary()
    found = [w for t in texts for w in _WORD.findall(t)]
    if not found:
        return WordCount(0, 0, 0.0)
    letters = sum(len(w) for w in found)
    latin = sum(len(_LATIN.findall(w)) for w in found)
    return WordCount(len(found), sum(w.lower() in vocab for w in found), latin / letters)


def dictionary_share(texts: list[str]) -> float | None:
    """The share of the words of `texts` that are dictionary words (None: no words)."""
    return count_words(texts).share
