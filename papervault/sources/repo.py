"""Code repositories as a source: a local folder or a git URL, its files and their hashes, its remotes, and
the code-host links in a paper's text that name it.

A URL is cloned into `<workspace>/.papervault/repos/<name>` (derived state: it can always be cloned again) and
fetched on later runs; a local folder is read in place, tracked and untracked-but-not-ignored files alike.
What is done with them (chunks, the `code` table, the code note, the commit) is the `add-repo` operation,
`papervault.add_repo`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

import git

from papervault.chunking.code import BUILD_FILES, detect_language
from papervault.errors import SourceError
from papervault.vault.store import ID_PATTERN

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1_000_000           # larger files are data or generated code, not worth a chunk
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", "site-packages", "dist", "build", ".eggs", "vendor", "third_party", "3rdparty",
             ".idea", ".vscode", "target", ".papervault", ".ipynb_checkpoints"}
_URL_RE = re.compile(r"^(?:https?|git|ssh|file)://|^[\w.-]+@[\w.-]+:")
# A code host link in a paper's text, with or without its scheme (papers often print `github.com/owner/repo`);
# PDF extraction may glue a trailing full stop or bracket to it.
HOST_URL_RE = re.compile(r"(?:https?://|(?<![\w.@/-]))(?:www\.)?"
                         r"(github\.com|gitlab\.com|bitbucket\.org|codeberg\.org)/"
                         r"([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)", re.I)

Progress = Callable[[str, int, int], None]


@dataclass
class RepoSource:
    """A repository ready to read: where its files are and which commit they are at."""

    name: str
    root: Path                      # folder whose files are indexed (paths are relative to it)
    source: str                     # what the user gave: URL or absolute path
    commit: str = ""                # HEAD SHA ("" for a folder that is not a git repository)
    branch: str | None = None
    remotes: list[str] = field(default_factory=list)
    dirty: bool = False
    git_root: Path | None = None


@dataclass
class RepoFile:
    path: str                       # relative, POSIX
    data: bytes
    sha256: str
    language: str | None

    @property
    def text(self) -> str:
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError:
            return self.data.decode("latin-1")


def is_url(target: str) -> bool:
    return bool(_URL_RE.match(target))


def repo_name(target: str) -> str:
    """A vault-safe name from a URL or folder: `https://github.com/a/My Repo.git` -> `My-Repo`."""
    stem = target.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    stem = re.sub(r"\.git$", "", stem)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-.") or "repo"
    return stem[:100]


def normalise_remote(url: str) -> str | None:
    """`git@github.com:Owner/Repo.git`, `https://github.com/owner/repo/tree/main` -> `github.com/owner/repo`."""
    u = url.strip()
    m = re.match(r"^[\w.-]+@([\w.-]+):(.+)$", u)
    if m:
        host, rest = m.group(1), m.group(2)
    else:
        m = re.match(r"^(?:https?|git|ssh)://(?:[^@/]+@)?([^/:]+)(?::\d+)?/(.+)$", u)
        if not m:
            return None
        host, rest = m.group(1), m.group(2)
    parts = [p for p in rest.split("/") if p]
    if len(parts) < 2:
        return None
    owner, name = parts[0], re.sub(r"\.git$", "", parts[1].rstrip(".,;:)]}>'\""))
    host = host.lower().removeprefix("www.")
    return f"{host}/{owner}/{name}".lower()


# --- retrieving -----------------------------------------------------------------------------------------------


def open_repo(workspace, target: str, *, name: str | None = None) -> RepoSource:
    """A local folder as it is, or a URL cloned (first time) or fetched (later) under `.papervault/repos/`."""
    name = name or repo_name(target)
    if not ID_PATTERN.match(name) or ".." in name:
        raise SourceError(f"{name!r} is not a usable repository name", fix="pass --name with letters, digits, - _ .")
    if is_url(target):
        return _clone_or_fetch(workspace, target, name)
    root = Path(target).expanduser().resolve()
    if not root.is_dir():
        raise SourceError(f"{target}: no such folder", fix="give the path of a repository folder or a git URL")
    try:
        repo = git.Repo(root, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return RepoSource(name=name, root=root, source=str(root))
    return _describe(repo, name, root, str(root))


def _describe(repo: git.Repo, name: str, root: Path, source: str) -> RepoSource:
    commit = repo.head.commit.hexsha if repo.head.is_valid() else ""
    try:
        branch = repo.active_branch.name
    except (TypeError, ValueError):           # detached HEAD
        branch = None
    remotes = [url for r in repo.remotes for url in r.urls]
    return RepoSource(name=name, root=root, source=source, commit=commit, branch=branch, remotes=remotes,
                      dirty=repo.is_dirty(untracked_files=False), git_root=Path(repo.working_tree_dir))


def _clone_or_fetch(workspace, url: str, name: str) -> RepoSource:
    dest = workspace.state_dir / "repos" / name
    try:
        if (dest / ".git").is_dir():
            repo = git.Repo(dest)
            origin = repo.remotes.origin if repo.remotes else None
            if origin is None or url not in list(origin.urls):
                raise SourceError(f"{dest} is a clone of another repository ({', '.join(origin.urls) if origin else '?'})",
                                  fix="pass --name to clone this one under another name")
            origin.fetch()
            # Our own clone, never edited by a person: follow the remote's branch exactly, even after a force-push.
            target = f"origin/{repo.active_branch.name}" if not repo.head.is_detached else "FETCH_HEAD"
            repo.git.reset("--hard", target)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            repo = git.Repo.clone_from(url, dest)
    except git.GitCommandError as exc:
        reason = (exc.stderr or str(exc)).strip().splitlines()[-1][:200] if (exc.stderr or str(exc)) else "git failed"
        raise SourceError(f"cannot clone or fetch {url} ({reason})",
                          fix="check the URL and your access, or clone it yourself and pass the folder") from None
    return _describe(repo, name, dest, url)


def list_files(src: RepoSource) -> list[str]:
    """Relative paths of the files to consider: git's view (tracked + untracked, not ignored) when it has one."""
    if src.git_root is not None:
        repo = git.Repo(src.git_root)
        rel = os.path.relpath(src.root, src.git_root)
        args = ["--cached", "--others", "--exclude-standard", "-z"]
        out = repo.git.ls_files(*args, "--", "." if rel == "." else rel)
        paths = []
        for p in sorted(set(filter(None, out.split("\0")))):
            full = src.git_root / p
            if full.is_file() and not full.is_symlink():     # tracked but deleted in the work tree: gone
                paths.append(PurePosixPath(os.path.relpath(full, src.root)).as_posix())
    else:
        paths = []
        for dirpath, dirnames, filenames in os.walk(src.root):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
            for f in filenames:
                full = Path(dirpath) / f
                if not f.startswith(".") and full.is_file() and not full.is_symlink():
                    paths.append(full.relative_to(src.root).as_posix())
    return sorted(p for p in paths if not (set(PurePosixPath(p).parts[:-1]) & SKIP_DIRS))


def is_readme(path: str) -> bool:
    return PurePosixPath(path).name.lower().startswith("readme")


def read_files(src: RepoSource, paths: list[str], warnings: list[str]) -> list[RepoFile]:
    """The chunkable files among `paths`, with their bytes and SHA-256; binary and huge files are skipped."""
    out = []
    for p in paths:
        lang = detect_language(p)
        if lang is None and PurePosixPath(p).name.lower() not in BUILD_FILES and not is_readme(p):
            continue
        full = src.root / p
        try:
            if full.stat().st_size > MAX_FILE_BYTES:
                warnings.append(f"{p}: skipped (larger than {MAX_FILE_BYTES // 1000} kB)")
                continue
            data = full.read_bytes()
        except OSError as exc:
            warnings.append(f"{p}: unreadable ({exc.strerror})")
            continue
        if b"\0" in data[:8192]:
            continue
        out.append(RepoFile(p, data, hashlib.sha256(data).hexdigest(), lang))
    return out


# --- linking papers -------------------------------------------------------------------------------------------


def code_urls(text: str) -> list[str]:
    """Code-host repository URLs in a text, normalised (`github.com/owner/repo`), in order of appearance."""
    seen: dict[str, None] = {}
    for m in HOST_URL_RE.finditer(text):
        norm = normalise_remote(f"https://{m.group(1)}/{m.group(2)}/{m.group(3)}")
        if norm:
            seen.setdefault(norm, None)
    return list(seen)


def normalised_remotes(remotes: list[str]) -> list[str]:
    """The remotes as `host/owner/repo`, without duplicates; remotes that name no repository are left out."""
    return list(dict.fromkeys(n for n in (normalise_remote(r) for r in remotes) if n))


def paper_code_urls(vault, pid: str) -> list[str]:
    """Normalised code-host URLs in a paper's own text: its full text (`paper.md`), note URL and abstract."""
    meta = vault.read_meta(pid)
    return code_urls(vault.read_fulltext(pid) + "\n" + (meta.url or "") + "\n" + (meta.abstract or ""))


def fulltext_link(pid: str, repo: str, urls: list[str], wanted: set[str]) -> dict | None:
    hit = next((u for u in urls if u in wanted), None)
    return {"paper_id": pid, "repo": repo, "how": "fulltext", "evidence": f"https://{hit}"} if hit else None


def find_paper_links(vault, remotes: list[str], repo: str) -> list[dict]:
    """Papers whose own text (full text or note URL) names one of the repository's remotes."""
    wanted = set(normalised_remotes(remotes))
    if not wanted:
        return []
    links = []
    for pid in vault.paper_ids():
        try:
            urls = paper_code_urls(vault, pid)
        except Exception:  # noqa: BLE001 - a broken note must not stop linking the others
            continue
        link = fulltext_link(pid, repo, urls, wanted)
        if link:
            links.append(link)
    return links


def checkout(workspace, repo: str, record: dict | None) -> RepoSource | str:
    """The repository's files as `add-repo` last read them (a URL's clone is not fetched), or why they are
    not there, with the fix."""
    source = (record or {}).get("source")
    if not source:
        return "its source was never recorded: run `papervault add-repo PATH --name " + repo + "`"
    if is_url(source):
        dest = workspace.state_dir / "repos" / repo
        if not (dest / ".git").is_dir():
            return f"its clone {dest} is gone: run `papervault add-repo {source}`"
        return _describe(git.Repo(dest), repo, dest, source)
    try:
        return open_repo(workspace, source, name=repo)
    except SourceError:
        return f"{source} is gone: run `papervault add-repo PATH --name {repo}` with its new place"
