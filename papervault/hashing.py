"""Content hashes that decide whether parsing, analysis or indexing must run again (DESIGN.md: Identity)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """SHA-256 hex of a file, read in blocks so a large PDF never sits in memory twice."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def group_sha256(hashes: list[str]) -> str:
    """One hash for main text + supplements: the hash of the sorted file hashes (a single file: its own hash)."""
    if len(hashes) == 1:
        return hashes[0]
    return hashlib.sha256("".join(sorted(hashes)).encode()).hexdigest()
