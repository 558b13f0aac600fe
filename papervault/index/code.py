"""LanceDB tables `code` (code chunks with calls and callers), `links` (paper <-> repository) and `repos` (what
is known of each repository without its checkout: normalised remotes, the code note's inputs), and code search.

The tables live in the same database as `papers` and `chunks`. Updating a repository rewrites only the rows
that changed and embeds only chunks whose embedded text changed, so re-running `add-repo` after editing one
file costs one file's embeddings. Writers hold the workspace write lock (the caller takes it); readers never
lock.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import numpy as np
import pyarrow as pa

from papervault.chunking.code import CHUNKER_VERSION, KINDS, CodeChunk, split_identifier
from papervault.errors import IndexMismatchError, NotFoundError, PapervaultError
from papervault.index.embed import Embedder, vector_meta
from papervault.index.fusion import rrf
from papervault.index.tables import (CODE, create_table, open_db, recorded_meta as recorded, sql_list as _sql,
                                     table_names)
from papervault.models import now_iso

log = logging.getLogger(__name__)

LINKS = "links"
REPOS = "repos"
REBUILD_FIX = "run `papervault add-repo PATH --rebuild` for each repository to re-index its code"
WRITE_BATCH = 256
_LIST_COLUMNS = ("calls", "callees", "callers", "tests", "imports")
# Stemming helps a question ("parsing PDFs") meet a docstring ("parse a PDF"); identifiers are split into words
# before indexing, so stemming them does no harm. bench/code_search.py measures the choice.
FTS_OPTIONS: dict[str, Any] = {"stem": True, "remove_stop_words": True}


class CodeSearchError(PapervaultError):
    """A code search that cannot run as asked (unknown kind, no code indexed)."""


def code_meta(embedder: Embedder) -> dict[str, str]:
    return {**vector_meta(embedder), "dim": str(embedder.dim), **chunking_meta(embedder)}


def chunking_meta(embedder: Embedder) -> dict[str, str]:
    """What the rows depend on besides the model: the chunker, and the word pieces each text is cut to before
    it is embedded. Another value is no rebuild: the next `papervault index` or `add-repo` re-chunks every
    repository (`add_repo.rechunk_code`), keeps the vector of every text embedded as it would be now, and
    records the new values."""
    return {"chunker_version": CHUNKER_VERSION, "embed_max_tokens": str(embedder.settings.max_tokens)}


def code_schema(dim: int, meta: dict[str, str]) -> pa.Schema:
    return pa.schema([
        pa.field("id", pa.string()),
        pa.field("repo", pa.string()),
        pa.field("path", pa.string()),
        pa.field("start_line", pa.int32()),
        pa.field("end_line", pa.int32()),
        pa.field("symbol", pa.string()),
        pa.field("ref", pa.string()),            # path::symbol, what calls/callers/tests point at
        pa.field("kind", pa.string()),
        pa.field("language", pa.string()),
        pa.field("signature", pa.string()),
        pa.field("doc", pa.string()),
        pa.field("text", pa.string()),
        pa.field("search_text", pa.string()),    # text + identifiers split into words: what BM25 sees
        pa.field("calls", pa.list_(pa.string())),     # as written in the code
        pa.field("callees", pa.list_(pa.string())),   # resolved refs
        pa.field("callers", pa.list_(pa.string())),   # resolved refs
        pa.field("tests", pa.list_(pa.string())),     # test -> what it tests; definition -> tests of it
        pa.field("imports", pa.list_(pa.string())),
        pa.field("file_hash", pa.string()),      # SHA-256 of the file (the commit, for the repository row)
        pa.field("embed_hash", pa.string()),     # hash of the embedded text: unchanged -> vector reused
        pa.field("commit", pa.string()),         # the commit at which this row's file content was indexed
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ], metadata=meta)


def links_schema() -> pa.Schema:
    return pa.schema([
        pa.field("paper_id", pa.string()),
        pa.field("repo", pa.string()),
        pa.field("how", pa.string()),            # "explicit" (--paper) | "fulltext" (URL in the paper's text)
        pa.field("evidence", pa.string()),       # the URL found, or the command that linked them
        pa.field("created", pa.string()),
    ])


def repos_schema() -> pa.Schema:
    return pa.schema([
        pa.field("repo", pa.string()),
        pa.field("source", pa.string()),         # the URL or folder given to add-repo
        pa.field("remotes", pa.list_(pa.string())),  # normalised (`github.com/owner/repo`), what paper URLs match
        pa.field("note", pa.string()),           # JSON: what the code note is rendered from, papers aside
    ])


def _embed_hash(chunk: CodeChunk, model: str) -> str:
    return hashlib.sha256(f"{model}\x1f{chunk.embed_text()}".encode()).hexdigest()[:24]


def chunk_from_row(row: dict) -> CodeChunk:
    """A stored row back as a CodeChunk (vector left out), so unchanged files need no re-parse."""
    c = CodeChunk(repo=row["repo"], path=row["path"], kind=row["kind"], symbol=row["symbol"],
                  language=row["language"], start_line=int(row["start_line"]), end_line=int(row["end_line"]),
                  text=row["text"], signature=row["signature"] or "", doc=row["doc"] or "",
                  file_hash=row["file_hash"] or "")
    for col in _LIST_COLUMNS:
        setattr(c, col, list(row.get(col) or []))
    return c


@dataclass
class CodeIndexReport:
    """What one update of a repository's rows did."""

    repo: str
    chunks: int = 0
    embedded: int = 0
    reused: int = 0             # chunks that kept a stored vector (`chunks` less `embedded`)
    written: int = 0
    deleted: int = 0
    dropped_repos: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class CodeIndex:
    """The `code` and `links` tables of a workspace."""

    def __init__(self, workspace, embedder: Embedder | None = None):
        self.workspace = workspace
        self.embedder = embedder or Embedder.for_workspace(workspace)
        self._db = None

    @property
    def db(self):
        if self._db is None:
            self._db = open_db(self.workspace)
        return self._db

    def table(self, *, create: bool = False, check: bool = True):
        """The `code` table (None when absent and not `create`); raises when its embedding model differs."""
        if CODE in table_names(self.db):
            tbl = self.db.open_table(CODE)
            if check:
                self.check(tbl)
            return tbl
        if not create:
            return None
        meta = code_meta(self.embedder)
        return create_table(self.db, CODE, schema=code_schema(int(meta["dim"]), meta))

    def check(self, tbl) -> None:
        """Raise IndexMismatchError when the table was built with another embedding model (known without
        loading the model): its vectors are useless, only `--rebuild` helps. A chunker or token limit that
        differs is `rechunk_needed`, not an error."""
        have, want = recorded(tbl).get("embedding_model"), self.embedder.model_name
        if have != want:
            raise IndexMismatchError(f"the code index was built with the embedding model {have!r}, "
                                     f"the settings now give {want!r}", fix=REBUILD_FIX)
        have, want = recorded(tbl).get("embed_precision", "float32"), self.embedder.settings.precision
        if have != want:
            raise IndexMismatchError(f"the code index was built with [embed] precision {have!r}, "
                                     f"the settings now give {want!r}", fix=REBUILD_FIX)

    def rechunk_needed(self, tbl=None) -> str | None:
        """Why the repositories must be re-chunked (the chunker or `[embed] max_tokens` changed since they
        were last all chunked), or None; None too when there is no `code` table."""
        tbl = tbl if tbl is not None else self.table(check=False)
        if tbl is None:
            return None
        found, want = recorded(tbl), chunking_meta(self.embedder)
        have = found.get("chunker_version")
        if have != want["chunker_version"]:
            return (f"the code was chunked by chunker {have or 'of an older papervault'}, "
                    f"this papervault's is {want['chunker_version']}")
        have = found.get("embed_max_tokens")
        if have != want["embed_max_tokens"]:
            return (f"the code was embedded with [embed] max_tokens {have or 'unrecorded'}, "
                    f"the settings now give {want['embed_max_tokens']}")
        return None

    def recorded_max_tokens(self, tbl=None) -> int | None:
        """The `[embed] max_tokens` the stored vectors were made with (None when not recorded)."""
        tbl = tbl if tbl is not None else self.table(check=False)
        value = recorded(tbl).get("embed_max_tokens") if tbl is not None else None
        return int(value) if value and value.isdigit() else None

    def record_chunking(self) -> None:
        """Record the current chunker and token limit: every repository's rows are now made with them."""
        tbl = self.table(check=False)
        if tbl is not None and self.rechunk_needed(tbl):
            tbl.to_lance().update_schema_metadata(chunking_meta(self.embedder))
            tbl.checkout_latest()

    def repos(self) -> list[str]:
        tbl = self.table(check=False)
        if tbl is None:
            return []
        rows = tbl.search().where("kind = 'repository'").select(["repo"]).limit(100_000).to_list()
        return sorted({r["repo"] for r in rows})

    def rows(self, repo: str, *, with_vectors: bool = False) -> list[dict]:
        tbl = self.table()
        if tbl is None:
            return []
        q = tbl.search().where(f"repo = {_sql([repo])}")
        if not with_vectors:
            q = q.select([f.name for f in tbl.schema if f.name != "vector"])
        return q.limit(10_000_000).to_list()

    def file_hashes(self, repo: str) -> dict[str, str]:
        """path -> SHA-256 of every file indexed for `repo` (each indexed file has a file row)."""
        tbl = self.table()
        if tbl is None:
            return {}
        rows = tbl.search().where(f"repo = {_sql([repo])} AND kind = 'file'").select(["path", "file_hash"]) \
            .limit(10_000_000).to_list()
        return {r["path"]: r["file_hash"] for r in rows}

    def drop_repo(self, repo: str) -> int:
        tbl = self.table(check=False)
        if tbl is None:
            return 0
        cond = f"repo = {_sql([repo])}"
        n = tbl.count_rows(cond)
        tbl.delete(cond)
        for name in (LINKS, REPOS):
            if name in table_names(self.db):
                self.db.open_table(name).delete(cond)
        return n

    def reset_if_mismatched(self) -> list[str]:
        """Drop the whole `code` table when it was built with another embedding model; returns the repos lost."""
        tbl = self.table(check=False)
        if tbl is None:
            return []
        try:
            self.check(tbl)
            return []
        except IndexMismatchError:
            lost = self.repos()
            self.db.drop_table(CODE)
            return lost

    def write_repo(self, repo: str, chunks: list[CodeChunk], *, commit: str,
                   changed_paths: set[str] | None = None, vectors_max_tokens: int | None = None,
                   progress: Callable[[int, int], None] | None = None) -> CodeIndexReport:
        """Make the repository's rows equal `chunks`: embed what is new, rewrite what changed, delete the rest.

        A stored vector is kept for every chunk whose embedded text is stored already (under its id or, after
        a chunker change, under another), so re-chunking embeds only the texts the chunker changed.

        Args:
            changed_paths: files whose content changed in this run; their rows get `commit`. Rows of unchanged
                files keep the commit they were indexed at (their content is the same at `commit`).
            vectors_max_tokens: the `[embed] max_tokens` the stored vectors were made with, when it is not the
                current one: a stored vector is then kept only for a text neither limit cuts.
        """
        report = CodeIndexReport(repo, chunks=len(chunks))
        tbl = self.table(create=True)
        old = {r["id"]: r for r in self.rows(repo, with_vectors=True)}
        by_hash = {r["embed_hash"]: r["vector"] for r in old.values()}
        model = self.embedder.model_name
        changed_paths = changed_paths or set()
        if vectors_max_tokens == self.embedder.settings.max_tokens:
            vectors_max_tokens = None
        whole: dict[str, bool] = {}
        if vectors_max_tokens is not None:
            texts = {_embed_hash(c, model): c.embed_text() for c in chunks}
            texts = {h: t for h, t in texts.items() if h in by_hash}
            whole = dict(zip(texts, self.embedder.embedded_whole(list(texts.values()), vectors_max_tokens)))

        new_rows: list[dict] = []
        to_embed: list[tuple[dict, CodeChunk]] = []
        seen: set[str] = set()
        for c in chunks:
            if c.id in seen:            # two definitions with the same name on the same line: keep the first
                continue
            seen.add(c.id)
            prev = old.get(c.id)
            row = {
                "id": c.id, "repo": c.repo, "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
                "symbol": c.symbol, "ref": c.ref, "kind": c.kind, "language": c.language,
                "signature": c.signature, "doc": c.doc, "text": c.text, "search_text": c.search_text(),
                "calls": c.calls, "callees": c.callees, "callers": c.callers, "tests": c.tests,
                "imports": c.imports, "file_hash": c.file_hash, "embed_hash": _embed_hash(c, model),
                "commit": commit if (c.path in changed_paths or c.kind == "repository" or prev is None)
                else prev["commit"],
            }
            h = row["embed_hash"]
            if h in by_hash and (vectors_max_tokens is None or whole.get(h)):
                row["vector"] = by_hash[h]
                if prev is not None and all(_same(prev.get(k), v) for k, v in row.items()):
                    continue            # nothing about this row changed
            else:
                to_embed.append((row, c))
            new_rows.append(row)

        for i in range(0, len(to_embed), WRITE_BATCH):
            batch = to_embed[i:i + WRITE_BATCH]
            vecs = self.embedder.embed([c.embed_text() for _, c in batch])
            for (row, _), v in zip(batch, vecs):
                row["vector"] = v.astype(np.float32).tolist()
            report.embedded += len(batch)
            if progress:
                progress(report.embedded, len(to_embed))

        report.reused = len(seen) - report.embedded
        gone = [i for i in old if i not in seen]
        stale = gone + [r["id"] for r in new_rows if r["id"] in old]
        if stale:
            for i in range(0, len(stale), 500):
                tbl.delete(f"id IN ({_sql(stale[i:i + 500])})")
        if new_rows:
            tbl.add(pa.Table.from_pylist(new_rows, schema=tbl.schema))
        report.written, report.deleted = len(new_rows), len(gone)
        if new_rows or stale:
            self._maintain(tbl)
        return report

    def _maintain(self, tbl) -> None:
        """Compact and refresh the full-text index (new rows are only found by BM25 once indexed)."""
        from lancedb.index import FTS  # deferred: lancedb takes ~0.4 s to import (index/tables.py opens it)

        tbl.optimize()
        if tbl.count_rows():
            tbl.create_index("search_text", config=FTS(**FTS_OPTIONS), replace=True)

    # --- links ----------------------------------------------------------------------------------------------

    def links_table(self, *, create: bool = False):
        if LINKS in table_names(self.db):
            return self.db.open_table(LINKS)
        return create_table(self.db, LINKS, schema=links_schema()) if create else None

    def add_links(self, links: list[dict]) -> int:
        """Record paper <-> repository links (idempotent: an existing pair keeps its first record)."""
        if not links:
            return 0
        tbl = self.links_table(create=True)
        rows = [{"paper_id": l["paper_id"], "repo": l["repo"], "how": l["how"], "evidence": l.get("evidence", ""),
                 "created": l.get("created") or now_iso()} for l in links]
        tbl.merge_insert(["paper_id", "repo"]).when_not_matched_insert_all().execute(
            pa.Table.from_pylist(rows, schema=tbl.schema))
        return len(rows)

    def links(self, *, repo: str | None = None, paper_id: str | None = None) -> list[dict]:
        tbl = self.links_table()
        if tbl is None:
            return []
        clauses = []
        if repo:
            clauses.append(f"repo = {_sql([repo])}")
        if paper_id:
            clauses.append(f"paper_id = {_sql([paper_id])}")
        q = tbl.search()
        if clauses:
            q = q.where(" AND ".join(clauses))
        return sorted(q.limit(1_000_000).to_list(), key=lambda r: (r["repo"], r["paper_id"]))

    # --- repository records -------------------------------------------------------------------------------

    def put_repo(self, repo: str, *, source: str, remotes: list[str], note: dict) -> None:
        """Record a repository's normalised remotes and code-note inputs (replacing its previous record)."""
        # keys keep their order (not sorted): the note lists languages by rank
        row = {"repo": repo, "source": source, "remotes": list(remotes), "note": json.dumps(note)}
        old = self._repo_row(repo)
        if old is not None and {**old, "remotes": list(old["remotes"] or [])} == row:
            return
        tbl = self.db.open_table(REPOS) if REPOS in table_names(self.db) else \
            create_table(self.db, REPOS, schema=repos_schema())
        tbl.merge_insert("repo").when_matched_update_all().when_not_matched_insert_all().execute(
            pa.Table.from_pylist([row], schema=tbl.schema))

    def _repo_row(self, repo: str) -> dict | None:
        if REPOS not in table_names(self.db):
            return None
        rows = self.db.open_table(REPOS).search().where(f"repo = {_sql([repo])}").limit(1).to_list()
        return {k: rows[0][k] for k in ("repo", "source", "remotes", "note")} if rows else None

    def repo_record(self, repo: str) -> dict | None:
        """`{repo, source, remotes, note}` of a repository (note decoded), or None when add-repo never stored it
        (a workspace indexed before records existed: no remotes known, the note is refreshed by add-repo only)."""
        row = self._repo_row(repo)
        if row is None:
            return None
        return {**row, "remotes": list(row["remotes"] or []), "note": json.loads(row["note"] or "{}")}

    def known_remotes(self) -> dict[str, set[str]]:
        """Normalised remotes of every repository in the `code` table whose remotes are known."""
        indexed = set(self.repos())
        if not indexed or REPOS not in table_names(self.db):
            return {}
        rows = self.db.open_table(REPOS).search().select(["repo", "remotes"]).limit(1_000_000).to_list()
        return {r["repo"]: set(r["remotes"]) for r in rows if r["repo"] in indexed and r["remotes"]}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return list(a or []) == list(b or [])
    return a == b


# --- search ---------------------------------------------------------------------------------------------------

RESULT_COLUMNS = ["id", "repo", "path", "start_line", "end_line", "symbol", "ref", "kind", "language", "signature",
                  "doc", "text", "calls", "callees", "callers", "tests", "commit"]


def count_tokens(text: str) -> int:
    """Approximate tokens of code (words and punctuation marks), close enough to keep within a budget."""
    return len(re.findall(r"\w+|[^\w\s]", text))


def _fts_query(query: str) -> str:
    # Identifiers in the query are split as the indexed text was (`parse_pdf` also matches `parse pdf`).
    words = re.findall(r"\w+", query)
    extra = [w for tok in words for w in split_identifier(tok) if w != tok.lower()]
    return " ".join(words + extra) or query


def _where(repo: str | None, language: str | None, kind: str | Iterable[str] | None) -> str | None:
    clauses = []
    if repo:
        clauses.append(f"repo = {_sql([repo])}")
    if language:
        clauses.append(f"language = {_sql([language.lower()])}")
    if kind:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        bad = sorted(set(kinds) - set(KINDS))
        if bad:
            raise CodeSearchError(f"unknown kind(s) {bad}", fix=f"use one of {', '.join(KINDS)}")
        clauses.append(f"kind IN ({_sql(kinds)})")
    return " AND ".join(f"({c})" for c in clauses) or None


def _result(row: dict, score: float) -> dict:
    lines = f"{row['start_line']}-{row['end_line']}"
    return {
        "repo": row["repo"], "path": row["path"], "start_line": row["start_line"], "end_line": row["end_line"],
        "lines": lines, "location": f"{row['path']}:{lines}" if row["path"] else row["repo"],
        "symbol": row["symbol"], "kind": row["kind"], "language": row["language"], "signature": row["signature"],
        "text": row["text"], "score": round(float(score), 6), "commit": row["commit"],
        "calls": list(row.get("calls") or []), "callees": list(row.get("callees") or []),
        "callers": list(row.get("callers") or []), "tests": list(row.get("tests") or []),
        "id": row["id"], "context": [],
    }


class CodeSearcher:
    """Opens the `code` table once; `search` can then run many times (the MCP server and the benchmark do)."""

    def __init__(self, workspace, embedder: Embedder | None = None):
        self.index = CodeIndex(workspace, embedder)
        self.settings = workspace.settings.index
        self.tbl = self.index.table()

    def search(self, query: str, *, limit: int = 10, repo: str | None = None, language: str | None = None,
               kind: str | list[str] | None = None, budget: int | None = None, mode: str = "hybrid") -> list[dict]:
        if self.tbl is None or not self.tbl.count_rows():
            raise CodeSearchError("no code is indexed in this workspace", fix="run `papervault add-repo PATH` first")
        if not query.strip():
            return []
        where = _where(repo, language, kind)
        n = max(limit * 4, 40)
        rankings: list[tuple[list[str], float]] = []
        rows: dict[str, dict] = {}
        if mode in ("hybrid", "fts"):
            q = self.tbl.search(_fts_query(query), query_type="fts", fts_columns="search_text")
            if where:
                q = q.where(where, prefilter=True)
            try:
                hits = q.select([*RESULT_COLUMNS, "_score"]).limit(n).to_list()
            except Exception as exc:  # noqa: BLE001 - a query the tokenizer rejects finds nothing by BM25
                log.debug("code full-text search failed: %s", exc)
                hits = []
            rows.update({h["id"]: h for h in hits})
            rankings.append(([h["id"] for h in hits], self.settings.fts_weight))
        if mode in ("hybrid", "vector"):
            vec = self.index.embedder.embed_query(query)
            q = self.tbl.search(vec, vector_column_name="vector").distance_type("cosine")
            if where:
                q = q.where(where, prefilter=True)
            hits = q.select([*RESULT_COLUMNS, "_distance"]).limit(n).to_list()
            for h in hits:
                rows.setdefault(h["id"], h)
            rankings.append(([h["id"] for h in hits], self.settings.vector_weight))
        scores = rrf(rankings, self.settings.rrf_k)
        best = sorted(scores, key=lambda i: -scores[i])[:limit]
        results = [_result(rows[i], scores[i]) for i in best]
        if budget is not None:
            self._expand(results, budget)
        return results

    def _expand(self, results: list[dict], budget: int) -> None:
        """Clip hits to the token budget, then add callees and callers of the best hits while budget remains."""
        used = 0
        for r in results:
            t = count_tokens(r["text"])
            room = max(0, budget - used)
            if t > room:
                r["text"] = _clip(r["text"], max(room, 40))
                t = count_tokens(r["text"])
            used += t
        if used >= budget:
            return
        wanted: list[tuple[dict, str, str]] = []
        for r in results:
            wanted += [(r, "callee", ref) for ref in r["callees"]] + [(r, "caller", ref) for ref in r["callers"]]
        if not wanted:
            return
        by_repo: dict[str, set[str]] = defaultdict(set)
        for r, _, ref in wanted:
            by_repo[r["repo"]].add(ref)
        found: dict[tuple[str, str], dict] = {}
        for repo, refs in by_repo.items():
            cond = f"repo = {_sql([repo])} AND ref IN ({_sql(sorted(refs))})"
            for row in self.tbl.search().where(cond).select(RESULT_COLUMNS).limit(len(refs) * 4).to_list():
                if row["kind"] not in ("file", "repository"):
                    found.setdefault((repo, row["ref"]), row)
        shown = {(r["repo"], f"{r['path']}::{r['symbol']}") for r in results}
        # round-robin over the hits in rank order, so the best hit's neighbours come first but all get some
        queues = {id(r): [(rel, ref) for rr, rel, ref in wanted if rr is r] for r in results}
        while used < budget and any(queues.values()):
            for r in results:
                q = queues[id(r)]
                while q:
                    rel, ref = q.pop(0)
                    row = found.get((r["repo"], ref))
                    if row is None or (r["repo"], ref) in shown:
                        continue
                    text = row["text"]
                    t = count_tokens(text)
                    if used + t > budget:
                        room = budget - used
                        if room < 40:
                            q.clear()
                            break
                        text, t = _clip(text, room), room
                    shown.add((r["repo"], ref))
                    r["context"].append({"relation": rel, "path": row["path"], "symbol": row["symbol"],
                                         "lines": f"{row['start_line']}-{row['end_line']}", "kind": row["kind"],
                                         "text": text})
                    used += t
                    break
                if used >= budget:
                    break


def _clip(text: str, tokens: int) -> str:
    out, n = [], 0
    for line in text.splitlines():
        k = count_tokens(line)
        if n + k > tokens:
            out.append("…")
            break
        out.append(line)
        n += k
    return "\n".join(out)


def search_code(workspace, query: str, *, limit: int = 10, repo: str | None = None, language: str | None = None,
                kind: str | list[str] | None = None, budget: int | None = None) -> list[dict]:
    """Hybrid (BM25 + vector, fused by reciprocal rank) search over the `code` table.

    Each result names its file and lines (`location`: `path:start-end`), symbol, kind, language, what it calls
    and what calls it. With `budget` (tokens), the results' texts are kept within it and the callers and
    callees of the best hits are added as `context` while room remains.
    """
    return CodeSearcher(workspace).search(query, limit=limit, repo=repo, language=language, kind=kind,
                                          budget=budget)


def get_code(workspace, repo: str, ref: str) -> dict:
    """One chunk by its ref (`path::symbol`), for `read`-style tools."""
    tbl = CodeIndex(workspace).table()
    if tbl is not None:
        rows = tbl.search().where(f"repo = {_sql([repo])} AND ref = {_sql([ref])}").select(RESULT_COLUMNS) \
            .limit(1).to_list()
        if rows:
            return _result(rows[0], 0.0)
    raise NotFoundError(f"no code chunk {ref!r} in repository {repo!r}", fix="find it with `search_code` first")
