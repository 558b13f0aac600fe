"""The vault's git history of its papers: which were added, updated and deleted since a time.

A commit adding a paper's `note.md` added the paper, one deleting it deleted it, and one changing any other file
of its folder updated it (what changed is named: note, full text, highlights and notes, figures, or the file).
"""

from __future__ import annotations

import datetime as _dt
import subprocess
from pathlib import Path

# What an update of a paper's folder changed, by file.
WHAT = {"note.md": "note", "paper.md": "full text", "reader-notes.md": "highlights and notes"}


def paper_changes(root: Path, when: _dt.datetime) -> tuple[dict[str, dict], dict[str, dict], dict[str, dict]]:
    """(added, updated, deleted) papers by id since `when` (aware), oldest first, from `git log` of the vault at
    `root`: {id, at, commit, why} for added and deleted, {id, at, commit, what} for updated. Empty when git
    cannot read the history."""
    # git reads --since itself (a long history is not walked past it) but does not read every date: far ones
    # (before 1970, after 2099) it ignores, listing everything. Each commit's own time is compared below too.
    git_since = [f"--since={when.isoformat()}"] if 1971 <= when.year <= 2099 else []
    proc = subprocess.run(["git", "-C", str(root), "log", *git_since, "--reverse",
                           "--format=@@%H %cI %s", "--name-status", "--", "papers"],
                          capture_output=True, text=True)
    added: dict[str, dict] = {}
    updated: dict[str, dict] = {}
    deleted: dict[str, dict] = {}
    sha = at = subject = ""
    early = False
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        if line.startswith("@@"):
            sha, at, subject = (line[2:].split(" ", 2) + ["", ""])[:3]
            try:
                early = _dt.datetime.fromisoformat(at) < when
            except ValueError:
                early = False
            continue
        if early:
            continue
        parts = line.split("\t")
        if len(parts) < 2:
            continue
        status, path = parts[0], parts[-1]
        bits = path.split("/")
        if len(bits) < 3 or bits[0] != "papers":
            continue
        pid, name = bits[1], "/".join(bits[2:])
        if name == "note.md" and status.startswith("A"):
            added[pid] = {"id": pid, "at": at, "commit": sha[:12], "why": subject[:200]}
            deleted.pop(pid, None)
            updated.pop(pid, None)     # its other files, listed before note.md in the same commit
        elif name == "note.md" and status.startswith("D"):
            deleted[pid] = {"id": pid, "at": at, "commit": sha[:12], "why": subject[:200]}
            added.pop(pid, None)
            updated.pop(pid, None)
        elif pid not in added:
            e = updated.setdefault(pid, {"id": pid, "at": at, "commit": sha[:12], "what": []})
            e.update(at=at, commit=sha[:12])
            what = WHAT.get(name, "figures" if name.startswith("figures/") else name)
            if what not in e["what"]:
                e["what"].append(what)
    return added, updated, deleted
