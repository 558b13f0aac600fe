"""A code chunk (one row of the `code` table before embedding) and the text helpers every chunker shares."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

CHUNKER_VERSION = "code-2"   # code-2: definitions from the grammars' tags queries (JS, TS, Rust, Go, Java)

MAX_TEXT_CHARS = 6000      # a chunk's stored text; longer bodies are cut with a note of what was left out
EMBED_CHARS = 1200         # the head of a chunk that is embedded (MiniLM/BGE read ~256-512 tokens anyway)

KINDS = ("repository", "file", "function", "class", "module", "test", "config", "target", "stage")

_IDENT_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass
class CodeChunk:
    """One row of the `code` table before embedding."""

    repo: str
    path: str                  # relative, POSIX; "" for the repository chunk
    kind: str                  # one of KINDS
    symbol: str                # "train", "Trainer.step", "<module>", "__main__", "optimizer.lr", the file's module
    language: str
    start_line: int            # 1-based, inclusive
    end_line: int
    text: str
    signature: str = ""
    doc: str = ""
    calls: list[str] = field(default_factory=list)      # callee expressions as written ("self.step", "np.mean")
    imports: list[str] = field(default_factory=list)    # file chunks: what the file imports
    callees: list[str] = field(default_factory=list)    # resolved refs of what this chunk calls
    callers: list[str] = field(default_factory=list)    # resolved refs of what calls this chunk
    tests: list[str] = field(default_factory=list)      # test chunks: refs of what they test; others: tested by
    file_hash: str = ""

    @property
    def ref(self) -> str:
        return f"{self.path}::{self.symbol}"

    @property
    def id(self) -> str:
        return hashlib.sha256(f"{self.repo}\x1f{self.ref}\x1f{self.kind}\x1f{self.start_line}".encode()).hexdigest()[:24]

    @property
    def lines(self) -> str:
        return f"{self.start_line}-{self.end_line}"

    def embed_text(self) -> str:
        """What is embedded: the chunk's identity in words, then its signature, documentation and code head."""
        head = f"{self.kind} {self.symbol} ({' '.join(split_identifier(self.symbol))}) in {self.path or self.repo}"
        parts = [head]
        if self.signature:
            parts.append(self.signature)
        if self.doc:
            parts.append(self.doc)
        parts.append(self.text)
        return "\n".join(parts)[:EMBED_CHARS]

    def search_text(self) -> str:
        """What the full-text index sees: the text plus identifiers split into words (`parse_pdf` -> parse pdf)."""
        words = split_identifier(self.symbol) + split_identifier(self.path)
        return f"{self.symbol} {self.path} {' '.join(words)}\n{self.doc}\n{self.text}"


def split_identifier(name: str) -> list[str]:
    """`search_code`, `parseHTTPHeader`, `index/code.py` -> lower-case words, for full-text search."""
    return [w.lower() for w in _IDENT_SPLIT.findall(name)]


def cut_text(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """`text` cut at a line end before `limit` characters, with a note of how many lines were left out."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    head = head[: head.rfind("\n")] if "\n" in head else head
    return f"{head}\n… ({text[len(head):].count(chr(10)) + 1} more lines)"


def line_range(source: str, start: int, end: int) -> str:
    """Lines `start` to `end` (1-based, inclusive) of `source`."""
    return "\n".join(source.splitlines()[start - 1:end])
