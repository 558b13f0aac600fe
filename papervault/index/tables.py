"""The LanceDB table plumbing every index module shares: where the index lives and how to reach it, the table
names, opening and listing tables, compaction, the vector index, pruning old versions, and the metadata recorded
in a table's schema. A leaf: it imports no other index module, so `store`, `embed`, `code` and `multilingual`
all build on it without importing one another for it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
from datetime import timedelta
from typing import Iterable

import pyarrow as pa

from papervault.errors import WorkspaceError

log = logging.getLogger(__name__)

PAPERS = "papers"
CHUNKS = "chunks"
CODE = "code"

# Brute-force vector search costs about 1.9 ms per 1,000 rows here (185 ms at 100,000); from 20,000 rows on,
# IVF-PQ answers in ~10 ms whatever the size, finding 85% of the exact top 10 (bench/index.py, docs/index.md).
# Below it, exact search is fast enough and loses nothing.
VECTOR_INDEX_MIN_ROWS = 20_000
# Every write and compaction makes a table version; LanceDB keeps superseded versions' files for 7 days, so one
# `index` of 90,000 abstracts left 6.4 GB on disk for 1.1 GB of latest versions. After each index update, versions
# older than this go (never the latest): a reader moves to the latest version at every search, so only a search
# that stayed on an old version this long could miss its files (it is then reopened, index/search.py).
KEEP_VERSIONS = timedelta(minutes=10)
COMPACT_ROWS = 16_384   # rows a compacted fragment reaches; larger fragments are never rewritten by a sync


# The standard AWS variables -> LanceDB (object_store) storage options, for an index on S3 or MinIO.
S3_ENV = {"AWS_ENDPOINT_URL": "aws_endpoint", "AWS_ACCESS_KEY_ID": "aws_access_key_id",
          "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key", "AWS_SESSION_TOKEN": "aws_session_token",
          "AWS_REGION": "aws_region", "AWS_ALLOW_HTTP": "allow_http"}


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@\s]*)@")
_QUERY_VALUE = re.compile(r"(?P<key>[?&][^=&#\s]+=)(?P<value>[^&#\s]*)")
REDACTED = "***"


def redact_uri(uri: str) -> str:
    """An index URI as it may be printed: the credentials of its user part (`s3://KEY:SECRET@bucket/x`) and
    the values of its query string (`?X-Amz-Signature=...`, `?sas=...`) replaced by `***`."""
    uri = str(uri)
    head, sep, query = uri.partition("?")
    head = _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", head)
    if sep:
        query = _QUERY_VALUE.sub(lambda m: f"{m['key']}{REDACTED}", "?" + query)[1:]
    return head + sep + query


def redact(text: str, uri: str | None) -> str:
    """`text` (an error from LanceDB or the object store) with the secrets of `uri` taken out, wherever they
    appear: the whole URI, its user part, its query values."""
    text = str(text)
    if not uri:
        return text
    secrets = [str(uri)]
    m = _USERINFO.search(str(uri))
    if m and m["userinfo"]:
        secrets += [m["userinfo"], *m["userinfo"].split(":")]
    if "?" in str(uri):
        secrets += [v["value"] for v in _QUERY_VALUE.finditer("?" + str(uri).split("?", 1)[1])]
    for secret in sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True):
        text = text.replace(secret, redact_uri(uri) if secret == str(uri) else REDACTED)
    return _USERINFO.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)


def is_remote(workspace) -> bool:
    """Whether the index lives on object storage (s3://, gs://, az://): reached over the network."""
    uri = workspace.settings.index.uri or ""
    return uri.split("://", 1)[0].lower() in {"s3", "s3+ddb", "gs", "az"} if "://" in uri else False


def index_location(workspace) -> tuple[str, dict[str, str]]:
    """Where the index lives and how to reach it: (`[index] uri` or the local folder, storage options).

    A `s3://bucket/prefix` URI takes its endpoint and credentials from the standard AWS environment variables
    (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`)."""
    uri = workspace.settings.index.uri
    if not uri:
        workspace.index_dir.mkdir(parents=True, exist_ok=True)
        return str(workspace.index_dir), {}
    if "://" not in uri:
        return uri, {}
    scheme = uri.split("://", 1)[0].lower()
    if scheme not in {"s3", "s3+ddb", "gs", "az", "file", "memory"}:
        raise WorkspaceError(f"the index URI {redact_uri(uri)!r} has an unknown scheme {scheme!r}",
                             fix="set [index] uri to a folder or s3://bucket/prefix (PAPERVAULT_INDEX_URI)")
    options = {opt: os.environ[var] for var, opt in S3_ENV.items() if os.environ.get(var)} if scheme.startswith("s3") else {}
    return uri, options


# A remote index that could not be reached, by (uri, options): the error, and until when it is given again without
# asking. Reaching an unreachable endpoint costs about 5 s of the object store's own retries, and one command opens
# the index several times (the recorded model, then the index itself): `status` took 16 s against a closed port.
_UNREACHABLE: dict[tuple, tuple[float, WorkspaceError]] = {}
UNREACHABLE_FOR_S = 60.0


def _store_reason(text: str, uri: str) -> str:
    """The object store's error in a few words: its Rust debug dump runs to a kilobyte."""
    said = " ".join(text.split())
    m = re.search(r"uri: Some\((\w+://[^/\s)]+)", said)
    host = redact_uri(m.group(1)) if m else "the endpoint"
    if "ConnectionRefused" in said:
        return f"{host} refused the connection (is the object store running?)"
    if re.search(r"dns error|kind: Connect\b|TimedOut|timed out", said):
        return f"{host} cannot be reached"
    if re.search(r"InvalidAccessKeyId|SignatureDoesNotMatch|AccessDenied|\b403\b", said):
        return f"{host} refused the credentials"
    if "NoSuchBucket" in said:
        return f"the bucket does not exist at {host}"
    return redact(said, uri)[:200]


def open_db(workspace):
    """The LanceDB connection of a workspace (`[index] uri`, default `.papervault/index`; may be s3://...).

    A remote index that did not answer is not asked again by this process for UNREACHABLE_FOR_S seconds: the
    same error is raised at once (a long-running MCP server asks again after that)."""
    import lancedb  # deferred: lancedb (and pyarrow's dataset layer) takes a second to import

    uri, options = index_location(workspace)
    key = (uri, tuple(sorted(options.items())))
    known = _UNREACHABLE.get(key)
    if known and known[0] > time.monotonic():
        raise known[1]
    try:
        return lancedb.connect(uri, storage_options=options or None)
    except (OSError, ValueError, RuntimeError) as exc:
        err = WorkspaceError(f"cannot open the index at {redact_uri(uri)}: {_store_reason(str(exc), uri)}",
                             fix="check [index] uri and the AWS_* variables (endpoint, credentials, region)")
        if "://" in uri and not uri.startswith(("file://", "memory://")):
            _UNREACHABLE[key] = (time.monotonic() + UNREACHABLE_FOR_S, err)
        raise err from None


def table_names(db) -> list[str]:
    """The tables of the index that hold a version. A process killed while creating a table leaves it listed
    with no version, and opening it fails; it never held a row, so it reads as absent here, and `create_table`
    clears it."""
    return [name for name in listed_tables(db) if _committed(db, name)]


def listed_tables(db) -> list[str]:
    """Every table LanceDB lists, with those an interrupted run left unfinished."""
    names = db.list_tables()
    return list(getattr(names, "tables", names))


def _committed(db, name: str) -> bool:
    try:
        db.open_table(name)
    except ValueError as exc:
        if "was not found" in str(exc):
            return False
        raise
    return True


def create_table(db, name: str, **kwargs):
    """`db.create_table`, first clearing what a process killed while creating the table left (see `table_names`):
    callers hold the index's write lock, so no other process is creating it."""
    if name in listed_tables(db) and not _committed(db, name):
        log.warning("index: table %s was left unfinished by an interrupted run; it is made again", name)
        db.drop_table(name)
    return db.create_table(name, **kwargs)


def has_fts(table) -> bool:
    """Whether this version of the table carries its full-text index (a table overwritten by a rebuild does not,
    until the writer builds it again)."""
    try:
        return any(getattr(ix, "index_type", "") == "FTS" for ix in table.list_indices())
    except Exception:  # noqa: BLE001 - a version without index metadata
        return False


def add_vector_index(table, dim: int) -> None:
    """An IVF-PQ index on `vector` once the table holds VECTOR_INDEX_MIN_ROWS rows with vectors of their own, made
    once: later rows join it through `optimize()`, which assigns them to the trained partitions without reading
    the rows indexed before. Its partitions stay those trained then; `papervault index --rebuild` trains them
    again over the whole table.

    Never while rows wait for the background fill (`pending`, index/store.py): their placeholder vectors are all
    the same, so the partitions would be trained on thousands of copies of one point (LanceDB then warns that
    most clusters are empty) and on vectors the fill replaces. The fill's own update builds it once they are real.
    What the library prints while it trains goes to the index log (`library_output`), not the terminal."""
    pending = "pending" in table.schema.names
    if pending and table.count_rows("pending = true"):
        return
    n = table.count_rows()
    # LanceDB names the type "IvfPq": a check for "IVF" never matched, and every sync rebuilt the index
    if n >= VECTOR_INDEX_MIN_ROWS and not any(ix.index_type.upper().startswith("IVF") for ix in table.list_indices()):
        from lancedb.index import IvfPq  # deferred with lancedb itself (see open_db)

        with library_output():
            table.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=max(16, int(n ** 0.5)),
                                                      num_sub_vectors=max(1, dim // 16)))


# Where the native libraries' own output goes (LanceDB's Rust side writes its warnings straight to the process's
# stderr: "KMeans: more than 10% of clusters are empty", "partition 88 is empty, skipping"): the workspace's
# .papervault/logs/index.log, set by the index that opens the tables (`set_library_log`).
_library_log: str | None = None


def set_library_log(path) -> None:
    """Send what LanceDB prints while it trains or updates an index to this file (None: discarded)."""
    global _library_log
    _library_log = str(path) if path else None


@contextlib.contextmanager
def library_output():
    """While it lasts, what native code writes to stderr (file descriptor 2) goes to the index log instead of
    the person's terminal; Python's own output is flushed first, so nothing of ours is taken with it."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield
        return
    target = _library_log or os.devnull
    try:
        if _library_log:
            os.makedirs(os.path.dirname(_library_log), exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError:
        fd = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(fd, 2)
        yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(saved, 2)
        os.close(saved)
        os.close(fd)


def optimize(table) -> None:
    """Compact the small fragments the writes made, then take the new rows into the existing indexes.

    LanceDB's `optimize()` compacts towards fragments of a million rows, so every window rewrote the table's
    one large fragment with the new rows: at 90,000 papers that held 247 MB for the papers table alone, and more
    as the library grew. Fragments of COMPACT_ROWS are left as they are; only the smaller ones are merged."""
    ds = table.to_lance()
    with library_output():     # new rows into a vector index warn of its empty partitions ("partition N is empty")
        ds.optimize.compact_files(target_rows_per_fragment=COMPACT_ROWS)
        table.checkout_latest()
        table.to_lance().optimize.optimize_indices()
    table.checkout_latest()


def prune_versions(table) -> None:
    """Drop the files of table versions older than KEEP_VERSIONS (the latest is always kept)."""
    try:
        table.to_lance().cleanup_old_versions(older_than=KEEP_VERSIONS)
    except Exception as exc:  # noqa: BLE001 - space, not correctness: the next update tries again
        log.warning("index: could not prune old versions of %s: %s", table.name, exc)


def batches(table, size: int = 4096) -> pa.RecordBatchReader:
    """A table's rows as a stream of record batches, with its schema (and the metadata recorded in it)."""
    return pa.RecordBatchReader.from_batches(table.schema, table.to_lance().to_batches(batch_size=size))


def columns(table, names: list[str]) -> pa.Table:
    """Only these columns of every row: `to_arrow()` would read the whole table first, vectors and texts
    included (about 3 KB a paper, 250 MB at 90,000 papers, to compare two short strings)."""
    return table.search().select(names).limit(None).to_arrow()


def sql_list(values: Iterable[str]) -> str:
    """Values as a quoted SQL list for a LanceDB filter (`'a', 'b'`), each quote doubled."""
    return ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)


def recorded_meta(table) -> dict[str, str]:
    """The metadata recorded in a table's schema (model, dimension, chunker, settings)."""
    return {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()}


def recorded_meta_of(workspace) -> dict[str, str]:
    """The metadata recorded in the schema of the workspace's `chunks` table (else its `code` table), or {}."""
    try:
        db = open_db(workspace)
        names = table_names(db)
        table = next((t for t in (CHUNKS, CODE) if t in names), None)
        if table is None:
            return {}
        return recorded_meta(db.open_table(table))
    except Exception:  # noqa: BLE001 - an unreadable index is reported by the index itself, not here
        return {}
