"""A problem with one input (a bad BibTeX entry, a URL serving HTML): reported, and the batch goes on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SourceProblem:
    """One input that could not become a record; `str()` is the one-line message shown to the user."""

    source: str                 # the file, URL or id it came from
    message: str                # what is wrong and how to fix it, one line
    line: int | None = None     # 1-based line in `source`, when it is a text file

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.message}"
