"""Weighted reciprocal-rank fusion, the one way the index merges rankings (paper search: full text, English and
multilingual vectors; code search: full text and vectors). A leaf of the index package."""

from __future__ import annotations

from collections import defaultdict


def rrf(rankings: list[tuple[list[str], float]], k: int) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: sum of weight / (k + rank) over the rankings a key appears in."""
    out: dict[str, float] = defaultdict(float)
    for keys, weight in rankings:
        for rank, key in enumerate(keys, start=1):
            out[key] += weight / (k + rank)
    return out
