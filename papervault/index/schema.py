"""What the paper index's tables hold and record: their schemas, the metadata a table records of what built it
(model, dimension, chunker and its settings) and the checks against it, a paper's content hash, and the
placeholder a pending passage holds until the fill embeds it."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa

from papervault.chunking.paper import CHUNKER_VERSION
from papervault.config import IndexSettings, index_name
from papervault.errors import IndexMismatchError
from papervault.index.embed import Embedder, vector_meta
from papervault.index.tables import recorded_meta
from papervault.vault import paper as paper_md

REBUILD_FIX = "run `papervault index --rebuild` to rebuild the index with the current settings"
RECHUNK_FIX = "run `papervault index` to re-chunk the papers with the current settings"
# A recorded metadata key named by its setting, in messages (the others keep their recorded names).
META_LABELS = {"embed_max_tokens": "[embed] max_tokens", "embed_precision": "[embed] precision"}
# What an index records nothing of holds the value it had before the setting existed.
META_DEFAULTS = {"embed_precision": "float32"}
# Passages whose vectors a sync may leave to the fill (`[index] background_fill`, docs/index.md "Searchable
# first, passages behind"): paragraphs are two thirds of a paper's embedded tokens, and the full-text ranking
# finds them from the first second; every other level (papers, sections, notes, figures, tables, highlights) is
# embedded by the sync itself. Such a row is written with `pending` true and PLACEHOLDER as its vector, which no
# vector query returns (`READY`); `PaperIndex.fill` embeds them and clears the flag.
DEFERRED_LEVELS = ("paragraph",)
FILL_BATCH = 128     # passages per fill write: a killed fill loses at most one batch of work
PENDING = "pending"
READY = "pending = false"   # the vector-query filter: rows whose vector is their own


def placeholder(dim: int) -> np.ndarray:
    """The vector a pending row holds until the fill embeds it: a unit vector (an index over cosine distance
    must never see a zero vector); no vector query returns a pending row."""
    vec = np.zeros(dim, dtype=np.float32)
    vec[0] = 1.0
    return vec


def has_pending_column(table) -> bool:
    """Whether this `chunks` table has the `pending` column (tables built before it existed have not: every
    row of those has its own vector)."""
    return PENDING in table.schema.names


def chunk_meta(embedder: Embedder, settings: IndexSettings) -> dict[str, str]:
    """What the chunks depend on: the chunker and its settings. Another value only means the papers are
    re-chunked by the next sync (their content hashes change with it), which reuses the vector of every chunk
    whose embedded text is unchanged and then records the new values."""
    return {"chunker_version": CHUNKER_VERSION, "chunk_settings": json.dumps(settings.chunk_key(), sort_keys=True),
            "index_name": index_name(embedder.settings, settings)}


def index_meta(embedder: Embedder, settings: IndexSettings | None = None) -> dict[str, str]:
    """What the vectors and chunk ids depend on; recorded in the tables' schema metadata."""
    return {**vector_meta(embedder), "dim": str(embedder.dim), **chunk_meta(embedder, settings or IndexSettings())}


def chunks_schema(dim: int, meta: dict[str, str]) -> pa.Schema:
    return pa.schema([
        pa.field("id", pa.string()),
        pa.field("paper_id", pa.string()),
        pa.field("level", pa.string()),
        pa.field("section_path", pa.string()),
        pa.field("page_start", pa.int32()),
        pa.field("page_end", pa.int32()),
        pa.field("ordinal", pa.int32()),
        pa.field("parent_id", pa.string()),
        pa.field("text", pa.string()),
        pa.field("fts_text", pa.string()),      # section path + text: what BM25 sees
        pa.field("tokens", pa.int32()),
        pa.field("extra", pa.string()),         # JSON: figure path, figure/table number, mentions
        # paper metadata, copied onto each chunk so filters run inside the one vector/FTS query
        pa.field("title", pa.string()),
        pa.field("year", pa.int32()),
        pa.field("venue", pa.string()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("source", pa.string()),
        pa.field("vector", pa.list_(pa.float32(), dim)),
        pa.field(PENDING, pa.bool_()),          # the vector is a placeholder until the fill embeds the text
    ], metadata=meta)


def papers_schema(dim: int, meta: dict[str, str]) -> pa.Schema:
    return pa.schema([
        pa.field("paper_id", pa.string()),
        pa.field("title", pa.string()),
        pa.field("authors", pa.list_(pa.string())),
        pa.field("year", pa.int32()),
        pa.field("venue", pa.string()),
        pa.field("doi", pa.string()),
        pa.field("arxiv", pa.string()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("source", pa.string()),
        pa.field("status", pa.string()),
        pa.field("pages", pa.int32()),
        pa.field("has_fulltext", pa.bool_()),
        pa.field("content_hash", pa.string()),
        pa.field("chunks", pa.int32()),
        pa.field("text", pa.string()),          # title + authors + abstract + keywords (the paper chunk)
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ], metadata=meta)


def check_meta(table, expected: dict[str, str]) -> None:
    """Raise IndexMismatchError when a table was built with another model, dimension or token limit."""
    found = recorded_meta(table)
    for key, want in expected.items():
        have = found.get(key, META_DEFAULTS.get(key))
        if have != want and key == "embedding_model" and have:
            # Both ways out: use the model the index was built with, or re-embed with the one now set.
            path = found.get("embedding_model_path")
            keep = f'[embed] model = "{have}"' + (f' and model_path = "{path}"' if path else "")
            raise IndexMismatchError(
                f"the index was built with the embedding model {have!r}, the settings now give {want!r}",
                fix=f"to search the index as built, set {keep} in papervault.toml (or PAPERVAULT_EMBED_MODEL); "
                    f"to re-embed with {want!r}, run `papervault index --rebuild`")
        if have != want and key == "embed_precision":
            raise IndexMismatchError(
                f"the index was built with [embed] precision {have!r}, the settings now give {want!r}",
                fix=f'to search the index as built, set [embed] precision = "{have}" (or remove the setting); '
                    f"to re-embed at {want}, run `papervault index --rebuild`")
        if have != want:
            label = META_LABELS.get(key, key)
            if have is None:
                raise IndexMismatchError(f"the index records no {label} (it was built by an older papervault); "
                                         f"the settings now give {want!r}", fix=REBUILD_FIX)
            raise IndexMismatchError(f"the index was built with {label} {have!r}, the settings now give {want!r}",
                                     fix=REBUILD_FIX)


def rechunk_needed(table, expected: dict[str, str]) -> str | None:
    """Why the papers must be re-chunked (the chunker or its settings changed since the last complete sync),
    or None."""
    found = recorded_meta(table)
    have, want = found.get("chunker_version"), expected["chunker_version"]
    if have != want:
        return f"the papers were chunked by chunker {have or 'of an older papervault'}, this papervault's is {want}"
    have, want = found.get("chunk_settings"), expected["chunk_settings"]
    if have == want:
        return None
    return f"the papers were chunked with {have or 'older settings'}, the settings now give {want}"


def _content_hash(note: bytes, fulltext: bytes, name: str) -> str:
    """A paper's content hash: its note and full text, the chunker, and the index name (the digest of every
    setting that changes its chunks or vectors), so a changed `chunk_tokens` re-chunks every paper.

    A full text with a code fence that nothing closes (a `paper.md` written before the writer escaped such
    lines) hashes with a mark: the reader now reads that fence as text, so the chunks an older reader made of it
    (every later passage on the fence's page) are made again once, and the other papers keep their chunks."""
    h = hashlib.sha256()
    for part in (CHUNKER_VERSION.encode(), name.encode(), b"\x00", note, b"\x00", fulltext):
        h.update(part)
    if _unclosed_fence(fulltext):
        h.update(b"\x00unclosed fence read as text")
    return h.hexdigest()[:32]


def _unclosed_fence(fulltext: bytes) -> bool:
    if b"```" not in fulltext and b"~~~" not in fulltext:
        return False
    text = fulltext.decode("utf-8", errors="replace")
    return paper_md.escape_unclosed_fence(text) != text
