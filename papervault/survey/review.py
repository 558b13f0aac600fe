"""Review of notes through git: which notes wait for a person, what changed since the last review, sign-off.

A review is a commit whose message starts with `review: <id>`; it sets the note's status to "reviewed".
Re-analysing a note sets it back to "analysed", so it shows up again for review with its diff.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import git

from papervault.errors import NotFoundError
from papervault.models import PaperMeta, now_iso
from papervault.vault.store import Vault, check_id
from papervault.identity import identity_doubt

REVIEW_PREFIX = "review: "


@dataclass
class Pending:
    """A note waiting for review."""

    paper_id: str
    title: str
    status: str
    analyser: str | None
    updated: str | None
    last_review: str | None          # SHA of the last review commit, None if never reviewed
    has_new_version: bool            # note.new.md beside an edited note
    identity: str | None = None      # why its title or id is low-confidence (papervault.identity.identity_doubt)


@dataclass
class ReviewDiff:
    paper_id: str
    since: str | None                # the last review commit (None: since the note was first committed)
    since_date: str | None
    commits: list[dict] = field(default_factory=list)   # commits touching the paper since then, newest first
    diff: str = ""                   # unified diff of the paper's files since then (working tree included)
    new_version: str = ""            # diff of note.md -> note.new.md, when the tool left a new version beside it


def _rel(vault: Vault, path: Path) -> str:
    return str(path.resolve().relative_to(vault.root.resolve()))


def last_review(vault: Vault, paper_id: str) -> git.Commit | None:
    """The newest commit that marked this paper reviewed."""
    check_id(paper_id)
    repo = vault.repo
    if not repo.head.is_valid():
        return None
    rel = _rel(vault, vault.note_path(paper_id))
    for c in repo.iter_commits(paths=rel):
        first = c.message.strip().splitlines()[0] if c.message.strip() else ""
        if first.startswith(f"{REVIEW_PREFIX}{paper_id}") and (len(first) == len(REVIEW_PREFIX) + len(paper_id)
                                                               or first[len(REVIEW_PREFIX) + len(paper_id)] in " ,("):
            return c
    return None


def pending(vault: Vault, *, include_unanalysed: bool = False) -> list[Pending]:
    """Notes not yet reviewed: analysed ones (and, if asked, ones only parsed), oldest update first."""
    wanted = {"analysed"} | ({"parsed", "metadata"} if include_unanalysed else set())
    out = []
    for meta in vault.iter_meta():
        if meta.status not in wanted:
            continue
        lr = last_review(vault, meta.id)
        out.append(Pending(meta.id, meta.title, meta.status, meta.analyser, meta.updated,
                           lr.hexsha if lr else None, (vault.paper_dir(meta.id) / "note.new.md").is_file(),
                           identity_doubt(meta)))
    return sorted(out, key=lambda p: (p.updated or "", p.paper_id))


def changes(vault: Vault, paper_id: str) -> ReviewDiff:
    """What changed in a paper's folder since its last review (or since it was first committed)."""
    if not vault.has_paper(paper_id):
        raise NotFoundError(f"no paper {paper_id!r} in the vault", fix="see `papervault list`")
    repo = vault.repo
    pdir = _rel(vault, vault.paper_dir(paper_id))
    lr = last_review(vault, paper_id)
    commits = list(repo.iter_commits(paths=pdir)) if repo.head.is_valid() else []
    if lr is not None:
        since = lr
        newer = []
        for c in commits:
            if c.hexsha == lr.hexsha:
                break
            newer.append(c)
    else:
        since = commits[-1] if commits else None
        newer = commits[:-1] if commits else []
    if since is not None:
        # against the working tree, so uncommitted edits by a person show too
        diff = repo.git.diff(since.hexsha, "--", f"{pdir}/note.md", f"{pdir}/paper.md")
    else:
        diff = ""
    new_path = vault.paper_dir(paper_id) / "note.new.md"
    new_version = ""
    if new_path.is_file():
        new_version = repo.git.diff("--no-index", "--", _rel(vault, vault.note_path(paper_id)), _rel(vault, new_path),
                                    with_exceptions=False)
    return ReviewDiff(paper_id, since.hexsha if since is not None else None,
                      since.committed_datetime.isoformat() if since is not None else None,
                      [{"sha": c.hexsha, "message": c.message.strip().splitlines()[0], "date": c.committed_datetime.isoformat()}
                       for c in newer], diff, new_version)


def mark_reviewed(vault: Vault, paper_id: str, *, reviewer: str | None = None, comment: str | None = None) -> str | None:
    """Set the note's status to "reviewed" and commit it (with any edits the reviewer made to it).

    Returns the commit SHA. The body is not touched, so a reviewer's edits stay theirs and a later analysis
    writes `note.new.md` beside them instead of overwriting.
    """
    meta: PaperMeta = vault.read_meta(paper_id)
    extra = {"reviewed": now_iso()}
    if reviewer:
        extra["reviewed_by"] = reviewer
    vault.update_meta(paper_id, status="reviewed", **extra)
    message = f"{REVIEW_PREFIX}{paper_id} (was {meta.status}{f', by {reviewer}' if reviewer else ''})"
    if comment:
        message += f"\n\n{comment.strip()}"
    return vault.commit(message, paths=[vault.note_path(paper_id)])
