"""A write-ahead journal of the paper folders a command is changing, so a killed command can be undone.

Before a writer touches `papers/<id>/`, it appends the id here (fsynced). The journal is cleared after the
vault commit. If a command dies in between, the next writer rolls those folders back to the last commit
(a new folder is removed; changed files are restored; untracked files removed), except a note a person
edited, which is kept as it is. The interrupted work is then simply done again, so the end state is the
same as an uninterrupted run and nothing is half-written or duplicated.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from papervault.vault.frontmatter import body_hash, split


class Journal:
    def __init__(self, path: Path, vault):
        self.path = Path(path)
        self.vault = vault
        self._seen: set[str] = set()

    def touch(self, paper_id: str) -> None:
        """Record that `paper_id`'s folder is about to change (once per id)."""
        if paper_id in self._seen:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(paper_id + "\n")
            fh.flush()
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
        """Undo what an interrupted command left uncommitted; returns what was rolled back."""
        done: list[str] = []
        for tmp in self.vault.root.rglob(".*.tmp"):
            if ".git" not in tmp.parts:
                tmp.unlink(missing_ok=True)
                done.append(str(tmp.relative_to(self.vault.root)))
        ids = self.pending()
        if not ids:
            return done
        repo = self.vault.repo
        head_ok = repo.head.is_valid()
        for pid in dict.fromkeys(ids):
            pdir = self.vault.papers_dir / pid
            rel = f"papers/{pid}"
            tracked = set(repo.git.ls_files("--", rel).splitlines()) if head_ok else set()
            if not tracked:
                if pdir.exists():
                    shutil.rmtree(pdir)
                    done.append(rel + "/")
                continue
            changed = set(repo.git.diff("--name-only", "HEAD", "--", rel).splitlines())
            untracked = set(repo.git.ls_files("--others", "--exclude-standard", "--", rel).splitlines())
            for f in sorted(changed | untracked):
                path = self.vault.root / f
                if f.endswith("/note.md") and path.exists() and _edited_by_person(path):
                    continue
                if f in tracked:
                    repo.git.checkout("HEAD", "--", f)
                else:
                    path.unlink(missing_ok=True)
                done.append(f)
        self.clear()
        return done


def _edited_by_person(path: Path) -> bool:
    try:
        data, body = split(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return True  # unreadable: never destroy it
    return bool(data.get("generated_hash")) and body_hash(body) != data.get("generated_hash")
