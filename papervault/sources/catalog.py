"""The vault's catalog on disk: what `add` needs to know of every paper already there, in SQLite.

`add` must find the paper a record already is (dedup), know which ids are taken and which file hashes are
stored, and which papers still lack their kept PDF. Held in memory, that grows with the library (about
5 KB a paper); here it lives in `.papervault/catalog.sqlite` and is looked up row by row, so an import of
90,000 records runs in the memory of one batch.

The catalog is derived state, like the index: it records the vault commit it describes. When the vault moved
without it (a sync pass's metadata commit, a `delete`, a `git pull`, a committed edit), it catches up: the papers
`git diff` names between the two commits are dropped and read again from their notes, so the cost follows the
change, not the library. It is rebuilt from every note (streamed, one note at a time) only when that cannot be
done: no commit recorded, a recorded commit git no longer knows, more than half of the papers changed, a new
schema, or uncommitted changes under `papers/`. `add` writes its rows in one SQLite transaction that it commits
right after each vault commit, with the new commit's id; a catch-up is one transaction that ends at the new
commit. A killed `add` or catch-up leaves the catalog at the last vault commit it saw, never ahead of the vault.

The catalog counts its rebuilds, catch-ups and the notes it read for them (`counters`, kept across rebuilds), so a
caller can say what opening it cost (`papervault sync --json` does, per source).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Iterable, Iterator

import git

from papervault.models import PaperMeta
from papervault.sources.dedup import DedupIndex, _Entry
from papervault.vault.store import commit_id, is_valid_id

SCHEMA_VERSION = "1"

_TABLES = """
CREATE TABLE IF NOT EXISTS info (k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE IF NOT EXISTS ids (id TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS entries (id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS arxiv (k TEXT PRIMARY KEY, id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS doi (k TEXT PRIMARY KEY, id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS filekey (file TEXT NOT NULL, key TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (file, key));
CREATE TABLE IF NOT EXISTS titles (title TEXT NOT NULL, id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS titles_title ON titles (title);
CREATE TABLE IF NOT EXISTS words (word TEXT NOT NULL, id TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS words_word ON words (word);
CREATE TABLE IF NOT EXISTS hashes (sha TEXT PRIMARY KEY, id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pdfs (id TEXT PRIMARY KEY, sha TEXT NOT NULL, pdf TEXT);
CREATE TABLE IF NOT EXISTS counters (k TEXT PRIMARY KEY, n INTEGER NOT NULL);
"""

# The tables that hold rows of a paper (by its `id` column), cleared by a rebuild and, per paper, by a catch-up.
_PAPER_TABLES = ("ids", "entries", "arxiv", "doi", "filekey", "titles", "words", "hashes", "pdfs")
COUNTERS = ("rebuilds", "catch_ups", "notes_read")


def catalog_path(ws) -> Path:
    return ws.state_dir / "catalog.sqlite"


def counters(path: Path) -> dict[str, int]:
    """The counters of the catalog at `path` (zeros when there is none yet), read without opening it as a
    catalog: no rebuild, no catch-up."""
    out = dict.fromkeys(COUNTERS, 0)
    if not Path(path).is_file():
        return out
    try:
        db = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True)
        try:
            out.update((k, n) for k, n in db.execute("SELECT k, n FROM counters") if k in out)
        finally:
            db.close()
    except sqlite3.Error:
        pass        # an older catalog without the table, or one being replaced: nothing counted yet
    return out


def _dump(e: _Entry) -> str:
    return json.dumps([e.title, sorted(e.names), e.year, sorted(e.stems), sorted(e.dois), e.arxiv,
                       {f: sorted(k) for f, k in sorted(e.keys.items())}], ensure_ascii=False)


def _load(pid: str, data: str) -> _Entry:
    title, names, year, stems, dois, arxiv, keys = json.loads(data)
    return _Entry(pid, title, frozenset(names), year, frozenset(stems), set(dois), arxiv,
                  {f: set(k) for f, k in keys.items()})


class SqliteStore:
    """`papervault.sources.dedup.MemoryStore`'s tables as SQLite tables (same answers, nothing held)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def _one(self, sql: str, *args) -> str | None:
        row = self.db.execute(sql, args).fetchone()
        return row[0] if row else None

    def __len__(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]

    def entry(self, paper_id: str) -> _Entry | None:
        data = self._one("SELECT data FROM entries WHERE id = ?", paper_id)
        return _load(paper_id, data) if data is not None else None

    def entries(self, paper_ids: Iterable[str]) -> dict[str, _Entry]:
        ids = list(paper_ids)
        out: dict[str, _Entry] = {}
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            rows = self.db.execute(f"SELECT id, data FROM entries WHERE id IN ({','.join('?' * len(part))})", part)
            out.update((pid, _load(pid, data)) for pid, data in rows)
        return out

    def put(self, entry: _Entry) -> None:
        self.db.execute("INSERT OR REPLACE INTO entries (id, data) VALUES (?, ?)", (entry.id, _dump(entry)))
        self.add_id(entry.id)

    def add_id(self, paper_id: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO ids (id) VALUES (?)", (paper_id,))

    def has_id(self, paper_id: str) -> bool:
        return self._one("SELECT 1 FROM ids WHERE id = ?", paper_id) is not None

    def by_arxiv(self, ax: str) -> str | None:
        return self._one("SELECT id FROM arxiv WHERE k = ?", ax)

    def set_arxiv(self, ax: str, paper_id: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO arxiv (k, id) VALUES (?, ?)", (ax, paper_id))

    def by_doi(self, doi: str) -> str | None:
        return self._one("SELECT id FROM doi WHERE k = ?", doi)

    def set_doi(self, doi: str, paper_id: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO doi (k, id) VALUES (?, ?)", (doi, paper_id))

    def by_file_key(self, file: str, key: str) -> str | None:
        return self._one("SELECT id FROM filekey WHERE file = ? AND key = ?", file, key)

    def set_file_key(self, file: str, key: str, paper_id: str) -> None:
        self.db.execute("INSERT OR IGNORE INTO filekey (file, key, id) VALUES (?, ?, ?)", (file, key, paper_id))

    def by_title(self, title: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM titles WHERE title = ? ORDER BY rowid", (title,))]

    def add_title(self, title: str, words: Iterable[str], paper_id: str) -> None:
        self.db.execute("INSERT INTO titles (title, id) VALUES (?, ?)", (title, paper_id))
        self.db.executemany("INSERT INTO words (word, id) VALUES (?, ?)", [(w, paper_id) for w in words])

    def word_counts(self, words: Iterable[str]) -> dict[str, int]:
        ws = list(words)
        if not ws:
            return {}
        rows = self.db.execute(f"SELECT word, COUNT(*) FROM words WHERE word IN ({','.join('?' * len(ws))}) "
                               "GROUP BY word", ws)
        return dict(rows)

    def word_ids(self, word: str, limit: int) -> list[str]:
        rows = self.db.execute("SELECT id FROM words WHERE word = ? ORDER BY rowid DESC LIMIT ?", (word, limit))
        return [r[0] for r in rows][::-1]


class _Hashes:
    """The stored files' content hashes -> paper id (`sha in hashes`, `hashes[sha]`, `hashes[sha] = id`)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def get(self, sha: str) -> str | None:
        row = self.db.execute("SELECT id FROM hashes WHERE sha = ?", (sha,)).fetchone()
        return row[0] if row else None

    def __contains__(self, sha: object) -> bool:
        return isinstance(sha, str) and self.get(sha) is not None

    def __getitem__(self, sha: str) -> str:
        pid = self.get(sha)
        if pid is None:
            raise KeyError(sha)
        return pid

    def __setitem__(self, sha: str, paper_id: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO hashes (sha, id) VALUES (?, ?)", (sha, paper_id))


class Catalog:
    """The catalog of one vault: a dedup index, the ids in use, the file hashes; see the module docstring."""

    def __init__(self, path: Path, vault):
        self.path = Path(path)
        self.vault = vault
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: transactions are ours (BEGIN ... COMMIT), one per vault commit.
        self.db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode = WAL")
        self.db.execute("PRAGMA synchronous = NORMAL")
        self.db.execute("PRAGMA cache_size = -8000")   # 8 MB of pages, whatever the library's size
        self.db.executescript(_TABLES)
        self.store = SqliteStore(self.db)
        self.dedup = DedupIndex(store=self.store)
        self.hashes = _Hashes(self.db)
        self.rebuilt = False
        self.caught_up: list[str] = []      # the papers a catch-up read again (see `catch_up`)

    @classmethod
    def open(cls, ws) -> "Catalog":
        """The workspace's catalog, brought in step with its vault (rebuilt if the vault moved without it)."""
        cat = cls(catalog_path(ws), ws.vault)
        head = cat._head()
        was = commit_id(cat._info("head"), f"{catalog_path(ws).name} info.head") or ""
        # Papers with uncommitted changes (a person's edit, a folder copied in) are read again at every open, and
        # so are those that had some last time (an edit undone): their notes say more than the commit does.
        dirty = cat._dirty()
        try:
            was_dirty = {p for p in json.loads(cat._info("dirty") or "[]") if is_valid_id(p)}
        except (TypeError, ValueError):
            was_dirty = set()
        if cat._info("version") != SCHEMA_VERSION:
            cat.rebuild(head)
        elif (was != head or dirty or was_dirty) and not cat.catch_up(was, head, dirty | was_dirty):
            cat.rebuild(head)
        cat.db.execute("INSERT OR REPLACE INTO info (k, v) VALUES ('dirty', ?)", (json.dumps(sorted(dirty)),))
        cat.db.execute("BEGIN")
        return cat

    def _info(self, key: str) -> str | None:
        row = self.db.execute("SELECT v FROM info WHERE k = ?", (key,)).fetchone()
        return row[0] if row else None

    def _head(self) -> str:
        repo = self.vault.repo
        return repo.head.commit.hexsha if repo.head.is_valid() else ""

    def _dirty(self) -> set[str]:
        """The papers with uncommitted changes under papers/ (a person's edit, a folder copied in)."""
        out = self.vault.repo.git.execute(["git", "status", "--porcelain", "-z", "--untracked-files=all", "--",
                                           "papers"])
        return {m for m in re.findall(r"(?:^|[ \0])papers/([^/\0]+)/", out) if is_valid_id(m)}

    def _metas(self) -> Iterator[PaperMeta]:
        for pid in self.vault.paper_ids():
            self.store.add_id(pid)        # a folder whose note is broken still holds its id
            try:
                yield self.vault.read_meta(pid)
            except Exception:  # noqa: BLE001 - an unreadable note is not a paper to match (as iter_meta)
                continue

    def _count(self, **add: int) -> None:
        self.db.executemany("INSERT INTO counters (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = n + ?",
                            [(k, n, n) for k, n in add.items()])

    def rebuild(self, head: str) -> None:
        """Every table again from the notes, streamed; ends committed at vault commit `head`."""
        db = self.db
        db.execute("BEGIN")
        for table in ("info", *_PAPER_TABLES):
            db.execute(f"DELETE FROM {table}")
        read = 0
        for meta in self._metas():
            self.dedup.add(meta, meta.id)
            self.note_paper(meta)
            read += 1
        db.executemany("INSERT INTO info (k, v) VALUES (?, ?)", [("version", SCHEMA_VERSION), ("head", head)])
        self._count(rebuilds=1, notes_read=read)
        db.execute("COMMIT")
        self.rebuilt = True

    def _changed_papers(self, old: str, new: str) -> set[str] | None:
        """The paper ids whose folder `git diff` names between commits `old` and `new`, or None when git cannot
        say (a commit it no longer knows: a rebased or re-cloned vault)."""
        if not commit_id(old) or not commit_id(new):
            return None
        try:
            out = self.vault.repo.git.execute(["git", "diff", "--name-only", "--no-renames", "-z",
                                               "--end-of-options", old, new, "--", "papers"])
        except git.GitCommandError:
            return None
        return {parts[1] for path in out.split("\0") if len(parts := path.split("/")) > 2 and parts[0] == "papers"}

    def catch_up(self, old: str | None, new: str, extra: set[str] | None = None) -> bool:
        """Bring the catalog from vault commit `old` to `new` by reading again only the papers changed between
        them; False (nothing done) when a rebuild is the way: git cannot say what changed, or more than half of
        the papers did. One transaction: a kill leaves the catalog at `old`."""
        changed = set() if old == new else self._changed_papers(old or "", new)
        if changed is not None:
            changed |= extra or set()
        if changed is None or (len(changed) > 1000 and len(changed) > len(self.store) // 2):
            return False
        db = self.db
        db.execute("BEGIN")
        try:
            ids = sorted(changed)
            for i in range(0, len(ids), 500):
                part = ids[i:i + 500]
                marks = ",".join("?" * len(part))
                for table in _PAPER_TABLES:
                    db.execute(f"DELETE FROM {table} WHERE id IN ({marks})", part)
            read = 0
            for pid in ids:
                if not (is_valid_id(pid) and self.vault.has_paper(pid)):
                    continue            # deleted (or never a paper): its rows are gone
                self.store.add_id(pid)
                read += 1
                try:
                    meta = self.vault.read_meta(pid)
                except Exception:  # noqa: BLE001 - an unreadable note is not a paper to match (as rebuild)
                    continue
                self.dedup.add(meta, meta.id)
                self.note_paper(meta)
            db.execute("INSERT OR REPLACE INTO info (k, v) VALUES ('head', ?)", (new,))
            self._count(catch_ups=1, notes_read=read)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.caught_up = ids
        return True

    def note_paper(self, meta: PaperMeta) -> None:
        """Remember a paper's stored file hash, and whether it has files whose PDF the store may keep."""
        if meta.sha256:
            if self.hashes.get(meta.sha256) is None:
                self.hashes[meta.sha256] = meta.id
            if meta.files:
                self.db.execute("INSERT OR REPLACE INTO pdfs (id, sha, pdf) VALUES (?, ?, ?)",
                                (meta.id, meta.sha256, meta.pdf))

    def pdf_candidates(self) -> Iterator[tuple[str, str | None]]:
        """(paper id, kept PDF name or None) of every paper with a file hash and source files."""
        yield from self.db.execute("SELECT id, pdf FROM pdfs ORDER BY id")

    def committed(self) -> None:
        """The vault just committed: this run's rows become the catalog of that commit."""
        self.db.execute("INSERT OR REPLACE INTO info (k, v) VALUES ('head', ?)", (self._head(),))
        self.db.execute("COMMIT")
        self.db.execute("BEGIN")

    def close(self) -> None:
        """Drop what was not committed with a vault commit, and close."""
        try:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
        finally:
            self.db.close()
