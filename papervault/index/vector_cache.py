"""A vector cache shared by workspaces: a text embedded once by a model is never embedded again.

The index already reuses the vectors of unchanged chunk texts within one workspace. This cache carries them
across workspaces (a copy of a vault, a colleague's clone on the same machine, a `--rebuild`, the index moved to
S3), the way `[parse] cache_dir` carries parses. It is off unless `[embed] vector_cache` (or
`PAPERVAULT_EMBED_VECTOR_CACHE`) names a folder.

Each vector is keyed by the SHA-256 of the vector space (the settings a vector depends on:
`EmbedSettings.vector_key()`, or the multilingual model's name) and the exact text embedded, so a change of
model or token limit never serves an old vector. One SQLite file in WAL mode holds them: several processes
(parallel `add`/`index` workers, a Dask cluster on one host) read and add at once; a write that meets a busy
file waits, and a cache that cannot be written is skipped (the vectors were computed anyway).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

log = logging.getLogger(__name__)

FILE = "vectors.sqlite"
_LOOKUP = 500          # keys per SELECT (SQLite's variable limit is 32,766; smaller statements stay fast)


class VectorCache:
    def __init__(self, folder: str | Path, space: dict[str, Any]):
        self.folder = Path(folder).expanduser()
        self.space = hashlib.sha256(json.dumps(space, sort_keys=True).encode()).digest()
        self._conn: sqlite3.Connection | None = None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.folder / FILE, timeout=60, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, dim INTEGER, vec BLOB) WITHOUT ROWID")
            self._conn = conn
        return self._conn

    def key(self, text: str) -> bytes:
        return hashlib.sha256(self.space + text.encode("utf-8", "surrogatepass")).digest()

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        out: dict[bytes, np.ndarray] = {}
        db = self._db()
        uniq = list(dict.fromkeys(keys))
        for i in range(0, len(uniq), _LOOKUP):
            part = uniq[i:i + _LOOKUP]
            rows = db.execute(f"SELECT key, dim, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part)
            for key, dim, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape[0] == dim:
                    out[key] = vec
        return out

    def put(self, keys: Sequence[bytes], vecs: np.ndarray) -> None:
        rows = [(k, int(v.shape[0]), np.ascontiguousarray(v, dtype=np.float32).tobytes()) for k, v in zip(keys, vecs)]
        try:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR IGNORE INTO vectors (key, dim, vec) VALUES (?, ?, ?)", rows)
            db.execute("COMMIT")
        except sqlite3.Error as exc:   # a full disk or a read-only folder costs the cache, never the index
            log.warning("vector cache %s not written: %s", self.folder, exc)
            try:
                self._db().execute("ROLLBACK")
            except sqlite3.Error:
                pass

    def embed(self, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Vectors of `texts`: cached ones read, the others computed by `compute` (texts in, rows out) and
        added. Rows come back in the order of `texts`."""
        keys = [self.key(t) for t in texts]
        try:
            found = self.get(keys)
        except sqlite3.Error as exc:
            log.warning("vector cache %s not read: %s", self.folder, exc)
            found = {}
        todo = [i for i, k in enumerate(keys) if k not in found]
        if not todo:
            return np.stack([found[k] for k in keys])
        fresh = compute([texts[i] for i in todo])
        out = np.empty((len(texts), fresh.shape[1]), dtype=np.float32)
        out[todo] = fresh
        for i, k in enumerate(keys):
            if k in found:
                out[i] = found[k]
        new = {keys[i]: out[i] for i in reversed(todo)}    # a text given twice is stored once
        self.put(list(new), np.stack(list(new.values())))
        return out
