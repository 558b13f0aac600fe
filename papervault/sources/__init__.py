"""Retrieval: every place researchers keep papers, read into `SourceRecord`s; dedup so a paper is stored once."""

from papervault.sources.problems import SourceProblem

__all__ = ["SourceProblem"]
