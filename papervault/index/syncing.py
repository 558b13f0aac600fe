"""One sync of the paper index with the vault (`PaperIndex.sync`), as an object that holds its state: the papers
it read and still has to write (a window at a time), the progress it reports, which chunks keep a stored vector
and which are left to the fill, and what the multilingual space carried over.

A sync reads each paper's note and full text, skips a paper whose content hash is unchanged, chunks the others,
and writes a window of them at a time, a group of papers per write: an interrupted sync keeps the groups it
wrote. A chunk whose embedded text is stored already keeps its vector; only new texts are embedded.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Callable, Iterable

import numpy as np
import pyarrow as pa

from papervault.chunking.paper import chunk_paper, count_tokens, embed_text, text_key
from papervault.config import index_name
from papervault.errors import WorkspaceError
from papervault.index import multilingual as ml
from papervault.index.schema import (DEFERRED_LEVELS, PENDING, READY, _content_hash, chunk_meta, has_pending_column,
                                     placeholder, rechunk_needed)
from papervault.index.tables import CHUNKS, PAPERS, columns, recorded_meta, sql_list as _sql_list
from papervault.models import Chunk, PaperMeta
from papervault.parse.firstpass import is_first_pass
from papervault.pdfstore import kept
from papervault.timing import phase

log = logging.getLogger("papervault.index.store")

WRITE_BATCH = 256    # chunks per embedding call, between progress reports
GROUP_CHUNKS = 2048  # new chunks per write: an interrupted sync keeps the groups it wrote
WINDOW_CHUNKS = 8192  # chunks held in memory at once: a sync of 90,000 papers streams through windows


class IndexSync:
    """One sync of `index` (a `PaperIndex`: its tables, embedder, settings and maintenance) with the vault."""

    def __init__(self, index: Any, progress: Callable[[int, int], None] | None = None,
                 paper_ids: Iterable[str] | None = None, defer: bool = False, fill_pending: bool = True,
                 lexicon: bool | None = None):
        self.index, self.progress, self.defer = index, progress, defer
        # the lexicon is the whole vault's: a sync of some papers (a survey's) leaves it to the next full one,
        # unless asked (the last index step of an add by first pass: its Chinese questions are translated to
        # the English words of the text layer at once)
        self.lexicon = paper_ids is None if lexicon is None else lexicon
        self.fill_pending = fill_pending        # without defer: fill what an earlier deferred sync left
        self.paper_ids = None if paper_ids is None else list(paper_ids)
        self.papers, self.chunks = index._tables(create=True)
        self.done = 0                   # new chunk texts embedded so far ...
        self.total = 0                  # ... of those known (the total grows a window at a time)
        self.wrote = False              # rows written since the tables were last maintained
        self.updated: set[str] = set()  # papers of the window being written that the index had before
        self.keys: dict[str, str] = {}          # the window's chunk ids -> the key of the text they embed
        self.old_keys: dict[str, str] = {}      # the stored chunk ids of its updated papers -> their text key
        self.deferred: set[str] = set()         # the window's chunks left to the fill
        self.ml = {"carried": 0, "removed": 0}  # multilingual rows the rewrites carried over or dropped
        self.report: dict[str, Any] = {}

    def _tell(self) -> None:
        if self.progress:
            self.progress(self.done, self.total)

    def run(self) -> dict:
        """Bring the index in line with the vault; returns the report `PaperIndex.sync` describes."""
        t0 = time.perf_counter()
        index, vault = self.index, self.index.workspace.vault
        papers, chunks = self.papers, self.chunks
        indexed = {}
        if papers.count_rows():
            tab = columns(papers, ["paper_id", "content_hash"])
            indexed = dict(zip(tab["paper_id"].to_pylist(), tab["content_hash"].to_pylist()))
        name = index_name(index.embedder.settings, index.settings)
        paper_ids = self.paper_ids
        ids = vault.paper_ids() if paper_ids is None else [p for p in dict.fromkeys(paper_ids) if vault.has_paper(p)]
        report = self.report = {"papers": len(ids), "added": [], "updated": [], "removed": [], "unchanged": 0,
                                "chunks_embedded": 0, "chunks_reused": 0, "chunks_pending": 0, "errors": {}}
        todo: list[tuple[PaperMeta, list[Chunk], str, bool]] = []
        held = 0
        for pid in ids:
            try:
                item = self._read(pid, name, indexed)
            except Exception as exc:   # one bad note (broken YAML, unreadable file) never stops the batch
                report["errors"][pid] = str(exc)
                log.warning("index: skipped %s: %s", pid, exc)
                item = None
            if item is not None:
                todo.append(item)
                report["updated" if pid in indexed else "added"].append(pid)
                held += len(item[1])
            if held >= WINDOW_CHUNKS:   # written a window at a time: memory stays flat however large the vault
                self._write(todo)
                index._maintain(chunks, papers)   # indexes follow window by window, never the whole table at once
                todo, held, self.wrote = [], 0, False

        removed = sorted(set(indexed) - set(ids)) if paper_ids is None else []
        if removed:
            chunks.delete(f"paper_id IN ({_sql_list(removed)})")
            papers.delete(f"paper_id IN ({_sql_list(removed)})")
            report["removed"] = removed

        if todo:
            self._write(todo)
        if self.wrote or removed:
            index._maintain(chunks, papers)
        self._finish(name)
        report["seconds"] = round(time.perf_counter() - t0, 3)
        return report

    def _read(self, pid: str, name: str, indexed: dict[str, str]) -> tuple[PaperMeta, list[Chunk], str, bool] | None:
        """A paper's note and full text chunked, with its content hash; None when the index has it as it is."""
        index, vault, report = self.index, self.index.workspace.vault, self.report
        note_raw = vault.safe_path(vault.note_path(pid)).read_bytes()
        ft_path = vault.fulltext_path(pid)
        ft_raw = vault.safe_path(ft_path).read_bytes() if ft_path.is_file() else b""
        rn_path = vault.paper_dir(pid) / "reader-notes.md"
        rn_raw = vault.safe_path(rn_path).read_bytes() if rn_path.is_file() else b""
        # reader notes join the hash only when there are any: existing indexes stay current
        digest = _content_hash(note_raw + (b"\x00reader-notes\x00" + rn_raw if rn_raw else b""), ft_raw, name)
        if indexed.get(pid) == digest:
            report["unchanged"] += 1
            return None
        with phase("index: read and chunk"):
            meta, body = vault.read_note(pid)
        if meta.id != pid:   # rows are keyed by folder; indexing it under `id` would never converge
            raise WorkspaceError(f"note id {meta.id!r} differs from its folder papers/{pid}/; not indexed",
                                 fix=f"set `id: {pid}` in its frontmatter, or rename the folder")
        fulltext = ft_raw.decode("utf-8", errors="replace")
        with phase("index: read and chunk"):
            chunked = chunk_paper(meta, fulltext, body, index.settings, rn_raw.decode("utf-8", errors="replace"))
        return meta, chunked, digest, bool(fulltext.strip())

    def _finish(self, name: str) -> None:
        """After the writes: the settings recorded once every paper is chunked with them, what an earlier deferred
        sync left filled (unless this one defers too), and the multilingual space brought along."""
        index, report, papers, chunks = self.index, self.report, self.papers, self.chunks
        if not report["errors"] and self.paper_ids is None:
            # Every paper now carries chunks made with the current settings: record them (a sync interrupted
            # before this point leaves the old values, and the next sync finishes the re-chunking).
            expected = chunk_meta(index.embedder, index.settings)
            for table in (chunks, papers):
                if rechunk_needed(table, expected) or recorded_meta(table).get("index_name") != expected["index_name"]:
                    table.to_lance().update_schema_metadata(expected)
                    table.checkout_latest()
        report["index_name"] = name
        if not self.defer and self.fill_pending and has_pending_column(chunks) \
                and chunks.count_rows(f"{PENDING} = true"):
            # what an earlier deferred sync left to a fill (stopped, or still running: its writes wait for ours)
            filled = index.fill(progress=self.progress, chunks=chunks, papers=papers, multilingual=False)
            report["chunks_embedded"] += filled["filled"]
        if index.multilingual:
            # The second space follows `chunks` by chunk id: only ids it lacks are embedded, so switching it on
            # for an existing index, or finishing an interrupted sync, embeds nothing twice.

            with phase("index: multilingual space (chunks and lexicon)"):
                done = ml.sync(index.db, chunks, ml.MultilingualEmbedder(index.embedder.settings.vector_cache),
                               progress=self.progress, lexicon=self.lexicon,
                               embed_batches=index.embed_ml_batches)
            done["removed"] += self.ml["removed"]   # rows the re-chunked papers' rewrite dropped
            report["multilingual"] = {**done, "carried": self.ml["carried"]}
        report["chunks"] = chunks.count_rows()

    def _old_vectors(self, paper_ids: list[str]) -> tuple[dict[str, np.ndarray], dict[str, str]]:
        """The stored vectors of these papers by the digest of the text they embed ({text key: vector}), and
        the stored chunk ids by the same digest ({chunk id: text key}), for the multilingual rows to follow.

        Keyed by text, not by id: ids made by an older chunker (paper-1 put its version in them) differ from
        today's for the same text, and the vector depends only on the text (and the model, checked apart). The
        text is rebuilt from the stored row exactly as it was embedded (`embed_text` of its level, title,
        section path and text)."""
        chunks = self.chunks
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

    def _write(self, todo: list) -> None:
        """Embed what is new and write, a group of papers at a time: an interrupted sync keeps what it finished."""
        report = self.report
        updated = self.updated = set(report["updated"])
        with phase("index: stored vectors to reuse"):
            by_text, old_keys = self._old_vectors([m.id for m, *_ in todo if m.id in updated])
        old: dict[str, np.ndarray] = {}     # new chunk id -> the stored vector of the same embedded text
        keys: dict[str, str] = {}           # new chunk id -> its text key
        for m, cs, *_ in todo:
            for c in cs:
                keys[c.id] = key = text_key(embed_text(c, m.title or m.id))
                if key in by_text:
                    old[c.id] = by_text[key]
        self.keys, self.old_keys = keys, old_keys
        # a paper read by its first pass has every row but its paper row deferred: its text layer's headings and
        # tables are a guess the full parse replaces, and the add that makes it searchable embeds only that row
        deferred = self.deferred = {c.id for m, cs, *_ in todo for c in cs
                                    if self.defer and c.id not in old and (c.level in DEFERRED_LEVELS or (
                                        c.level != "paper" and is_first_pass(m.parser)))}
        total = sum(c.id not in old and c.id not in deferred for _, cs, *_ in todo for c in cs)
        report["chunks_embedded"] += total
        report["chunks_pending"] += len(deferred)
        report["chunks_reused"] += sum(len(cs) for _, cs, *_ in todo) - total - len(deferred)
        self.total += total     # a window at a time: the total grows as the sync reads the vault
        self.wrote = True
        self._tell()
        group, size = [], 0
        for item in todo:
            group.append(item)
            size += sum(c.id not in old and c.id not in deferred for c in item[1])
            if size >= GROUP_CHUNKS:
                self._write_group(group, old)
                group, size = [], 0
        if group:
            self._write_group(group, old)

    def _write_group(self, group: list, old: dict[str, np.ndarray]) -> None:
        index, deferred = self.index, self.deferred
        need = [(c, m.title or m.id) for m, cs, *_ in group for c in cs if c.id not in old and c.id not in deferred]
        stand_in = placeholder(index.embedder.dim)
        fresh: dict[str, np.ndarray] = {}
        batches = [need[i:i + WRITE_BATCH] for i in range(0, len(need), WRITE_BATCH)]
        if index.embed_batches is not None and batches:
            texts = [[embed_text(c, title) for c, title in batch] for batch in batches]
            with phase("index: embed (English)"):
                for batch, vecs in zip(batches, index.embed_batches(texts)):
                    fresh.update(zip((c.id for c, _ in batch), vecs))
            self.done += len(need)
            self._tell()
            batches = []
        for batch in batches:
            with phase("index: embed (English)"):
                vecs = index.embedder.embed([embed_text(c, title) for c, title in batch])
            fresh.update(zip((c.id for c, _ in batch), vecs))
            self.done += len(batch)
            self._tell()

        chunk_rows, paper_rows = [], []
        for meta, cs, digest, has_ft in group:
            # The text comes from the PDF: a merged paper's hits name it, not the .bib entry that came first;
            # the workspace's own copy (pdfs/<sha256>.pdf) first, as the original may have moved.
            stored = kept(index.workspace.root, meta.pdf)
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
            self._write_rows(group, chunk_rows, paper_rows)

    def _write_rows(self, group: list, chunk_rows: list[dict], paper_rows: list[dict]) -> None:
        papers, chunks = self.papers, self.chunks
        group_ids = sorted({m.id for m, *_ in group})
        pids = _sql_list(group_ids)
        chunk_tab = pa.Table.from_pylist(chunk_rows, schema=chunks.schema)
        paper_tab = pa.Table.from_pylist(paper_rows, schema=papers.schema)
        if any(pid in self.updated for pid in group_ids):   # set by _write, the only caller
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
        if self.index.names == (PAPERS, CHUNKS) and self.index.multilingual:
            moved = ml.follow(self.index.db, sorted({m.id for m, *_ in group}), chunk_rows, self.keys, self.old_keys)
            for key in ("carried", "removed"):
                self.ml[key] += moved[key]
