"""Files written so that a crash never leaves half of one: an atomic replace with its fsyncs, the umask a new
file gets, and the id git gives a file's bytes as a blob (what the journal and the written-files ledger compare)."""

from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    """The process umask, read without changing it where the system allows (os.umask is not thread-safe)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes | str, *, fsync: bool = True) -> None:
    """Write to a temporary file beside `path`, fsync, then rename over it: never a half-written file.

    `fsync=False` (a bulk import, which syncs the file system once before each commit, see `sync_files`)
    still never leaves a half-written file to a killed process: the rename only happens after the write.

    The file gets the mode a plain `open()` would give it (0666 less the umask, so a group sharing the vault
    can read it); mkstemp alone leaves 0600. A file an older version wrote 0600 gets that mode when rewritten.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), mode)
            fh.write(raw)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def sync_files(path: Path) -> None:
    """Flush the file system holding `path` to disk (syncfs on Linux, sync elsewhere): one call makes a whole
    batch of unsynced writes durable, instead of an fsync per file."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(path, os.O_RDONLY)
        try:
            if libc.syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    except (OSError, AttributeError):
        pass
    os.sync()



def blob_id(data: bytes) -> str:
    """The id git gives these bytes as a blob (`git hash-object`): what the journal records and compares."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def file_blob(path: Path) -> str | None:
    """`blob_id` of the regular file at `path`; None when nothing is there; "" for anything else (a folder, a
    link, a file that cannot be read): never what papervault wrote."""
    try:
        if path.is_symlink() or not path.exists():
            return None if not os.path.lexists(path) else ""
        if not path.is_file():
            return ""
        return blob_id(path.read_bytes())
    except OSError:
        return ""
