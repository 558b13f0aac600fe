"""Counts in messages: `1 paper`, `2 papers`, `0 surveys`, never `1 surveys` or `paper(s)`."""

from __future__ import annotations


def plural(n: int, word: str, words: str | None = None) -> str:
    """`n` and `word`, in the plural (`words`, else `word` + "s") unless `n` is 1."""
    return f"{n} {word if n == 1 else (words or word + 's')}"
