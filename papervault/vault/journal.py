"""A write-ahead journal of what a command is about to write in the vault, so a killed command can be undone.

Before a writer touches `papers/<id>/`, it appends the id here; then, before each file it writes or removes
(`Vault.write`, `Vault.remove`, `Vault.remove_tree`), one line with the file's path, the git blob id of what was
there before (a copy of those bytes is kept beside the journal) and of what papervault is about to write (or
that it removes the file). The journal is cleared after the vault commit. If a command dies in between, the next
writer (or `papervault doctor --fix`) undoes what papervault wrote, identified by content: a file that still holds
exactly what papervault wrote gets back what it held before (or is removed, when papervault created it), and its
staged entry is unstaged when papervault staged it (what a person staged stays staged). A file that holds anything else (a line a person typed into it after papervault wrote
it, a file of theirs papervault never wrote) is kept as it is, and said so. The temporary files of atomic writes
and a `.git/index.lock` left by the killed git command go too. The interrupted work is then simply done again,
so the end state is the same as an uninterrupted run and nothing is half-written, duplicated or lost.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from papervault.errors import UnsafePathError, WorkspaceError
from papervault.vault import store as _store
from papervault.vault.paths import log
from papervault.vault.store import blob_id, file_blob, is_valid_id

BLOB = 40       # a git blob id: 40 hex characters


@dataclass
class Recovery:
    """What recovery did: `undone` (paths given back what they held, or removed; lock and temporary files
    deleted) and `kept` (paths changed since papervault wrote them: left as they are), one line each."""
    undone: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)

    def __iter__(self):         # a Recovery reads as the list of what was undone
        return iter(self.undone)

    def __len__(self) -> int:
        return len(self.undone)

    def __getitem__(self, i):
        return self.undone[i]

    def as_dict(self) -> dict:
        return {"undone": self.undone, "kept": self.kept}


class Journal:
    """`fsync=False` (a bulk import): each line is written before its file changes, which is all a killed
    process needs; the caller syncs the file system once before each commit (`papervault.vault.store.sync_files`)
    instead of an fsync per line."""

    def __init__(self, path: Path, vault, *, fsync: bool = True):
        self.path = Path(path)
        self.vault = vault
        self.fsync = fsync
        self._seen: set[str] = set()
        self._recorded: set[tuple[str, str | None]] = set()

    @property
    def kept_dir(self) -> Path:
        """Copies of what the journaled files held before papervault wrote them, named by their blob id."""
        return self.path.with_name(self.path.name + ".before")

    def _append(self, line: str) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            if self.fsync:
                os.fsync(fh.fileno())

    def touch(self, paper_id: str) -> None:
        """Record that `paper_id`'s folder is about to change (once per id); from now on until `clear`, every
        write the vault makes is recorded here before it is made."""
        _store._ACTIVE[self.vault._real] = self
        if paper_id in self._seen:
            return
        self._append(paper_id)
        self._seen.add(paper_id)

    def record(self, rel: str, path: Path, after: str | None) -> None:
        """Before `path` (`rel` in the vault) is written with content of blob id `after` (None: removed): what
        it holds now, kept, and what papervault is about to write, on one line."""
        if (rel, after) in self._recorded:
            return
        before = file_blob(path)
        if before:          # a copy of what was there, so that it can be put back
            self.kept_dir.mkdir(parents=True, exist_ok=True)
            copy = self.kept_dir / before
            if not copy.exists():
                data = path.read_bytes()
                tmp = copy.with_name(f".{before}.tmp")
                with open(tmp, "wb") as fh:
                    fh.write(data)
                    if self.fsync:
                        fh.flush()
                        os.fsync(fh.fileno())
                os.replace(tmp, copy)
        self._append(json.dumps({"path": rel, "before": before, "after": after}, ensure_ascii=False))
        self._recorded.add((rel, after))

    def clear(self) -> None:
        self._seen.clear()
        self._recorded.clear()
        active = _store._ACTIVE.get(self.vault._real)
        if active is self or getattr(active, "path", None) == self.path:      # cleared (or recovered): closed
            del _store._ACTIVE[self.vault._real]
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        if self.kept_dir.is_dir():
            for f in self.kept_dir.iterdir():
                f.unlink(missing_ok=True)
            try:
                self.kept_dir.rmdir()
            except OSError:
                pass

    def _lines(self) -> list[str]:
        if not self.path.exists():
            return []
        return [ln.strip() for ln in self.path.read_text(encoding="utf-8", errors="replace").splitlines()
                if ln.strip()]

    def pending(self) -> list[str]:
        """The paper ids the interrupted command was changing."""
        return [ln for ln in self._lines() if not ln.startswith("{")]

    def entries(self) -> dict[str, dict]:
        """Per journaled path: `before` (what it held first), `afters` (every content papervault was about to
        give it; None for a removal). A line that is not a valid entry (cut by the kill, or made by hand) is
        skipped: data read back is checked, never trusted."""
        out: dict[str, dict] = {}
        for ln in self._lines():
            if not ln.startswith("{"):
                continue
            try:
                e = json.loads(ln)
            except ValueError:
                continue
            rel, before, after = (e.get("path"), e.get("before"), e.get("after")) if isinstance(e, dict) else (None,) * 3
            if not (isinstance(rel, str) and _is_rel(rel) and _is_blob(before, empty=True) and _is_blob(after)):
                continue
            entry = out.setdefault(rel, {"before": before, "afters": set()})
            entry["afters"].add(after)
        return out

    def recover(self) -> Recovery:
        """Undo what an interrupted command wrote and left uncommitted; returns what was undone and kept.

        Handles a kill at any point: files half-written (temporary files of atomic writes), written but not
        staged, staged but not committed (`git add` done, `git commit` not), committed but not cleared, and the
        `.git/index.lock` a killed git command leaves. The lock is removed only when the journal shows a
        papervault command was interrupted (the caller holds the write lock, so that command is dead);
        otherwise it may be a person's git command at work, and recovery stops with a WorkspaceError naming the
        fix. Only a file holding exactly what papervault wrote is changed; any other is kept and reported.
        """
        done = Recovery()
        locks = git_locks(self.vault.root)
        if locks:
            if not self.path.exists():
                raise WorkspaceError(f"{locks[0]} exists: a git command in the vault is running, or was killed",
                                     fix="if none is running, run `papervault doctor --fix` (or delete the file)")
            for lock in locks:
                lock.unlink(missing_ok=True)
                done.undone.append(str(lock.relative_to(self.vault.root)))
        done.undone += remove_temp_files(self.vault.root)
        entries = self.entries()
        if not entries:
            self.clear()
            return done
        vault, repo = self.vault, self.vault.repo
        rels = list(entries)
        head = _head_blobs(repo, rels) if repo.head.is_valid() else {}
        to_unstage: list[str] = []
        kept: list[str] = []
        for rel, e in entries.items():
            path = vault.root / rel
            try:
                vault.guard(path, "write", follow=False)
            except UnsafePathError as exc:
                log.warning("%s", exc)
                done.kept.append(f"{rel}: {exc}")
                continue
            now = file_blob(path)
            before, afters = e["before"], e["afters"]
            if now == before:
                kept.append(rel)               # never written, or already as it was: only its staged entry may go
                continue
            if now not in afters:
                done.kept.append(f"{rel}: changed since papervault wrote it (a person's edit?): kept as it is")
                kept.append(rel)
                continue
            if (now is not None and head.get(rel) == now) or (now is None and rel not in head):
                to_unstage.append(rel)             # the write was committed before the kill: nothing to undo
                continue
            if before == "":
                done.kept.append(f"{rel}: not a file before papervault wrote it: left as papervault wrote it")
                continue
            if before is None:
                path.unlink(missing_ok=True)
                _prune_empty(path.parent, vault.root)
            else:
                data = self._before_bytes(before, head.get(rel), repo, rel)
                if data is None:
                    done.kept.append(f"{rel}: what it held before was not kept: left as papervault wrote it")
                    continue
                path.parent.mkdir(parents=True, exist_ok=True)
                _store.atomic_write(path, data)
            to_unstage.append(rel)
            done.undone.append(rel)
        # a staged entry is unstaged only when it is papervault's (what it wrote, staged, never committed): what a
        # person staged (in a file papervault then wrote into and gives back, or one it kept) stays staged
        index = index_blobs(repo, [*to_unstage, *kept]) if to_unstage or kept else {}
        to_unstage = [rel for rel in to_unstage if index.get(rel) in entries[rel]["afters"]] + \
            [rel for rel in kept if rel in index and index[rel] in entries[rel]["afters"]]
        if to_unstage and repo.head.is_valid():
            unstage(repo, to_unstage)
        vault.forget(rels)          # undone or kept, none of them is papervault's to commit any more
        self.clear()
        return done

    def _before_bytes(self, before: str, in_head: str | None, repo, rel: str) -> bytes | None:
        copy = self.kept_dir / before
        try:
            data = copy.read_bytes()
            if blob_id(data) == before:
                return data
        except OSError:
            pass
        if in_head == before:
            return repo.git.execute(["git", "cat-file", "blob", before], stdout_as_string=False)
        return None


def _is_blob(value, *, empty: bool = False) -> bool:
    return value is None or (empty and value == "") or (
        isinstance(value, str) and len(value) == BLOB and all(c in "0123456789abcdef" for c in value))


def _is_rel(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and ".." not in parts and ".git" not in parts and "\0" not in rel


def _head_blobs(repo, rels: list[str], chunk: int = 500) -> dict[str, str]:
    """{path: blob id} in HEAD of those of `rels` it has."""
    out: dict[str, str] = {}
    for i in range(0, len(rels), chunk):
        text = repo.git.execute(["git", "--literal-pathspecs", "ls-tree", "-r", "-z", "HEAD", "--",
                                 *rels[i:i + chunk]])
        for rec in text.split("\0"):
            meta, _, name = rec.partition("\t")
            bits = meta.split()
            if len(bits) == 3 and bits[1] == "blob":
                out[name] = bits[2]
    return out


def index_blobs(repo, rels: list[str], chunk: int = 500) -> dict[str, str]:
    """{path: blob id} in the index of those of `rels` it has."""
    out: dict[str, str] = {}
    for i in range(0, len(rels), chunk):
        text = repo.git.execute(["git", "--literal-pathspecs", "ls-files", "-s", "-z", "--", *rels[i:i + chunk]])
        for rec in text.split("\0"):
            meta, _, name = rec.partition("\t")
            bits = meta.split()
            if len(bits) == 3:
                out[name] = bits[1]
    return out


def unstage(repo, rels: list[str], chunk: int = 500) -> None:
    """Give these paths' index entries back what HEAD has (removed when HEAD has none); files are not touched."""
    for i in range(0, len(rels), chunk):
        repo.git.execute(["git", "--literal-pathspecs", "reset", "--quiet", "HEAD", "--", *rels[i:i + chunk]],
                         with_exceptions=False)


def _prune_empty(folder: Path, root: Path) -> None:
    """Remove `folder` and its parents while they are empty, up to (not including) a top folder of the vault."""
    while folder != root and folder.parent != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def git_locks(root: Path) -> list[Path]:
    """The lock files a git command killed in the vault leaves: the index's, HEAD's and a branch's (a commit
    killed while it moves the branch leaves `HEAD.lock` or `refs/heads/<branch>.lock`)."""
    git_dir = root / ".git"
    found = [p for p in (git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "ORIG_HEAD.lock") if p.exists()]
    refs = git_dir / "refs"
    if refs.is_dir():
        found += sorted(p for p in refs.rglob("*.lock") if p.is_file())
    return found


def remove_temp_files(root: Path) -> list[str]:
    """Delete the temporary files of atomic writes a killed command left (the files they replace are intact)."""
    done = []
    for tmp in temp_files(root):
        tmp.unlink(missing_ok=True)
        done.append(str(tmp.relative_to(root)))
    return done


def temp_files(root: Path) -> list[Path]:
    """Temporary files of atomic writes (`.<name>.<random>.tmp`) under `root`, outside `.git`."""
    return [p for p in root.rglob(".*.tmp") if ".git" not in p.relative_to(root).parts and p.is_file()]
