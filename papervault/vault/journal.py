"""A write-ahead journal of the paper folders a command is changing, so a killed command can be undone.

Before a writer touches `papers/<id>/`, it appends the id here (fsynced). The journal is cleared after the
vault commit. If a command dies in between, the next writer rolls those folders back to the last commit
(a new folder is unstaged and removed; changed files, staged or not, are restored; files new to a folder
are unstaged and removed), except a note a person edited, which is kept as it is. The temporary files of
atomic writes and a `.git/index.lock` left by the killed git command go too. The interrupted work is then
simply done again, so the end state is the same as an uninterrupted run and nothing is half-written or
duplicated.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from papervault.errors import UnsafePathError, WorkspaceError
from papervault.vault.frontmatter import body_hash, split
from papervault.vault.paths import log
from papervault.vault.store import is_valid_id


class Journal:
    """`fsync=False` (a bulk import): each line is written before its folder changes, which is all a killed
    process needs; the caller syncs the file system once before each commit (`papervault.vault.store.sync_files`)
    instead of an fsync per paper."""

    def __init__(self, path: Path, vault, *, fsync: bool = True):
        self.path = Path(path)
        self.vault = vault
        self.fsync = fsync
        self._seen: set[str] = set()

    def touch(self, paper_id: str) -> None:
        """Record that `paper_id`'s folder is about to change (once per id)."""
        if paper_id in self._seen:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(paper_id + "\n")
            fh.flush()
            if self.fsync:
                os.fsync(fh.fileno())
        self._seen.add(paper_id)

    def clear(self) -> None:
        self._seen.clear()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def pending(self) -> list[str]:
        if not self.path.exists():
            return []
        return [ln.strip() for ln in self.path.read_text(encoding="utf-8").splitlines() if ln.strip()]

    def recover(self) -> list[str]:
        """Undo what an interrupted command left uncommitted; returns what was rolled back.

        Handles a kill at any point: files half-written (temporary files of atomic writes), changes written
        but not staged, staged but not committed (`git add` done, `git commit` not), and the `.git/index.lock`
        a killed git command leaves. The lock is removed only when the journal shows a papervault command was
        interrupted (the caller holds the write lock, so that command is dead); otherwise it may be a person's
        git command at work, and recovery stops with a WorkspaceError naming the fix.
        """
        done: list[str] = []
        ids = [pid for pid in dict.fromkeys(self.pending()) if is_valid_id(pid)]
        locks = git_locks(self.vault.root)
        if locks:
            if not self.path.exists():
                raise WorkspaceError(f"{locks[0]} exists: a git command in the vault is running, or was killed",
                                     fix="if none is running, run `papervault doctor --fix` (or delete the file)")
            for lock in locks:
                lock.unlink(missing_ok=True)
                done.append(str(lock.relative_to(self.vault.root)))
        done += remove_temp_files(self.vault.root)
        if not ids:
            self.clear()
            return done
        repo = self.vault.repo
        head_ok = repo.head.is_valid()
        rels = [f"papers/{pid}" for pid in ids]
        in_head = _git_files(repo, ["ls-tree", "-r", "--name-only", "HEAD"], rels) if head_ok else set()
        staged = _git_files(repo, ["ls-files"], rels)                         # in the index (added or not)
        untracked = _git_files(repo, ["ls-files", "--others", "--exclude-standard"], rels)
        changed = (_git_files(repo, ["diff", "--name-only", "HEAD"], rels)
                   | _git_files(repo, ["diff", "--cached", "--name-only", "HEAD"], rels)) if head_ok else set()
        for pid, rel in zip(ids, rels):
            pdir = self.vault.papers_dir / pid
            mine = {f for f in in_head if f.startswith(rel + "/")}
            if not mine:   # a paper this command created: unstage it and remove it
                was_staged = any(f.startswith(rel + "/") for f in staged)
                if was_staged:
                    repo.git.rm("-r", "--cached", "--quiet", "--ignore-unmatch", "--", rel)
                if was_staged or pdir.exists() or pdir.is_symlink():
                    try:
                        self.vault.remove_tree(pdir)      # the write guard: never through a link out
                    except UnsafePathError as exc:
                        log.warning("%s", exc)
                        continue
                    except OSError:
                        shutil.rmtree(pdir, ignore_errors=True)
                    done.append(rel + "/")
                continue
            for f in sorted(f for f in (changed | staged | untracked) if f.startswith(rel + "/")):
                path = self.vault.root / f
                if f.endswith("/note.md") and path.exists() and _edited_by_person(path):
                    continue
                if f in mine:
                    if f in changed:
                        repo.git.checkout("HEAD", "--", f)     # restores the index entry and the file
                        done.append(f)
                else:
                    if f in staged:
                        repo.git.rm("--cached", "--quiet", "--ignore-unmatch", "--", f)
                    try:
                        self.vault.remove(path)
                    except UnsafePathError as exc:
                        log.warning("%s", exc)
                        continue
                    done.append(f)
        self.clear()
        return done


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


def _git_files(repo, command: list[str], rels: list[str], chunk: int = 500) -> set[str]:
    """The paths a git listing command prints for `rels`, asked in chunks (a big import journals many ids)."""
    out: set[str] = set()
    for i in range(0, len(rels), chunk):
        text = repo.git.execute(["git", *command, "--", *rels[i:i + chunk]])
        out.update(ln for ln in text.splitlines() if ln)
    return out


def _edited_by_person(path: Path) -> bool:
    try:
        data, body = split(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # unreadable: never destroy it
    return bool(data.get("generated_hash")) and body_hash(body) != data.get("generated_hash")
