"""Code repositories as a source: a local folder or a git URL, its files and their hashes, and `add_repo`.

A URL is cloned into `<workspace>/.papervault/repos/<name>` (derived state: it can always be cloned again) and
fetched on later runs; a local folder is read in place, tracked and untracked-but-not-ignored files alike.
`add_repo` chunks only files whose content hash changed since the last run, updates the `code` table, links
the repository to papers (GitHub/GitLab URLs in a paper's own text, or `--paper`), records it in those papers'
`code` frontmatter, writes `vault/code/<repo>.md`, and commits the vault once.
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
import jinja2

from papervault.chunking.code import (CodeChunk, RepoSummary, chunk_file, detect_language, link_calls,
                                      repository_chunk, summarize_repo, BUILD_FILES)
from papervault.errors import NotFoundError, SourceError
from papervault.vault import frontmatter
from papervault.vault.store import ID_PATTERN, atomic_write

log = logging.getLogger(__name__)

BUILTIN_TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
NOTE_TEMPLATE = "code_note.md.j2"
MAX_FILE_BYTES = 1_000_000           # larger files are data or generated code, not worth a chunk
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", "site-packages", "dist", "build", ".eggs", "vendor", "third_party", "3rdparty",
             ".idea", ".vscode", "target", ".papervault", ".ipynb_checkpoints"}
_URL_RE = re.compile(r"^(?:https?|git|ssh|file)://|^[\w.-]+@[\w.-]+:")
# A code host link in a paper's text; PDF extraction may glue a trailing full stop or bracket to it.
HOST_URL_RE = re.compile(r"https?://(?:www\.)?(github\.com|gitlab\.com|bitbucket\.org|codeberg\.org)/"
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


def read_files(src: RepoSource, paths: list[str], warnings: list[str]) -> list[RepoFile]:
    """The chunkable files among `paths`, with their bytes and SHA-256; binary and huge files are skipped."""
    out = []
    for p in paths:
        lang = detect_language(p)
        if lang is None and PurePosixPath(p).name.lower() not in BUILD_FILES and not _is_readme(p):
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


def _is_readme(path: str) -> bool:
    return PurePosixPath(path).name.lower().startswith("readme")


# --- linking papers -------------------------------------------------------------------------------------------


def code_urls(text: str) -> list[str]:
    """Code-host repository URLs in a text, normalised (`github.com/owner/repo`), in order of appearance."""
    seen: dict[str, None] = {}
    for m in HOST_URL_RE.finditer(text):
        norm = normalise_remote(f"https://{m.group(1)}/{m.group(2)}/{m.group(3)}")
        if norm:
            seen.setdefault(norm, None)
    return list(seen)


def find_paper_links(vault, remotes: list[str], repo: str) -> list[dict]:
    """Papers whose own text (full text or note URL) names one of the repository's remotes."""
    wanted = {n for n in (normalise_remote(r) for r in remotes) if n}
    if not wanted:
        return []
    links = []
    for pid in vault.paper_ids():
        try:
            meta = vault.read_meta(pid)
        except Exception:  # noqa: BLE001 - a broken note must not stop linking the others
            continue
        text = vault.read_fulltext(pid) + "\n" + (meta.url or "") + "\n" + (meta.abstract or "")
        hit = next((u for u in code_urls(text) if u in wanted), None)
        if hit:
            links.append({"paper_id": pid, "repo": repo, "how": "fulltext", "evidence": f"https://{hit}"})
    return links


# --- the code note --------------------------------------------------------------------------------------------


def _template(workspace) -> jinja2.Template:
    dirs = [str(workspace.root / "templates"), str(BUILTIN_TEMPLATES)]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(dirs), autoescape=False, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    return env.get_template(NOTE_TEMPLATE)


def render_note(workspace, src: RepoSource, summary: RepoSummary, chunks: list[CodeChunk],
                papers: list[dict]) -> tuple[dict, str]:
    """The code note's frontmatter and body (no timestamps: an unchanged repository gives an identical note)."""
    kinds = [c.kind for c in chunks]
    stats = {"chunks": len(chunks), "functions": kinds.count("function"), "classes": kinds.count("class"),
             "tests": kinds.count("test"), "configs": kinds.count("config")}
    body = _template(workspace).render(name=src.name, source=src.source, commit=src.commit, dirty=src.dirty,
                                       branch=src.branch, summary=summary, papers=papers, stats=stats)
    meta = {"repo": src.name, "source": src.source, "commit": src.commit or None, "branch": src.branch,
            "languages": list(summary.languages), "papers": [p["id"] for p in papers], "files": summary.files,
            "chunks": len(chunks), "tags": ["code"], "generated_hash": frontmatter.body_hash(body)}
    return {k: v for k, v in meta.items() if v is not None}, body


def write_note(vault, name: str, meta: dict, body: str) -> Path:
    """Write `vault/code/<name>.md`; when a person edited it since, write `<name>.new.md` beside it instead."""
    path = vault.code_dir / f"{name}.md"
    text = frontmatter.join(meta, body)
    if path.exists():
        try:
            old_meta, old_body = frontmatter.split(path.read_text(encoding="utf-8"))
        except ValueError:
            old_meta, old_body = {}, ""
        edited = old_meta.get("generated_hash") and frontmatter.body_hash(old_body) != old_meta["generated_hash"]
        if edited:
            target = path.with_name(f"{name}.new.md")
            atomic_write(target, text)
            return target
        if path.read_text(encoding="utf-8") == text:
            return path
    atomic_write(path, text)
    return path


# --- add-repo -------------------------------------------------------------------------------------------------


@dataclass
class AddRepoReport:
    repo: str
    source: str
    commit: str
    files: int = 0                  # chunkable files in the repository now
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    chunks: int = 0
    embedded: int = 0
    rows_written: int = 0
    papers: list[dict] = field(default_factory=list)      # {paper_id, how, evidence}
    note: str = ""                  # the code note, relative to the vault
    vault_commit: str | None = None
    dropped_repos: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def add_repo(workspace, target: str, *, papers: list[str] | tuple[str, ...] = (), name: str | None = None,
             rebuild: bool = False, lock: bool = True, embedder=None,
             progress: Progress | None = None) -> AddRepoReport:
    """Index a repository's code, link it to papers, write its code note, and commit the vault once.

    Only files whose content hash changed since the last run are chunked and embedded again. With `rebuild`,
    the repository's rows are dropped first (and the whole `code` table, when it was built with another
    embedding model or chunker: the report then names the other repositories to add again).
    """
    workspace.require()
    if lock:
        with workspace.write_lock("add-repo"):
            return add_repo(workspace, target, papers=papers, name=name, rebuild=rebuild, lock=False,
                            embedder=embedder, progress=progress)
    from papervault.index.code import CodeIndex, chunk_from_row

    vault = workspace.vault
    for pid in papers:
        if not vault.has_paper(pid):
            raise NotFoundError(f"no paper {pid!r} in the vault", fix="see `papervault list` for the ids")
    src = open_repo(workspace, target, name=name)
    _check_same_source(vault, src)
    report = AddRepoReport(repo=src.name, source=src.source, commit=src.commit)
    index = CodeIndex(workspace, embedder)
    if rebuild:
        report.dropped_repos = [r for r in index.reset_if_mismatched() if r != src.name]
        index.drop_repo(src.name)

    paths = list_files(src)
    files = read_files(src, paths, report.warnings)
    code_files = [f for f in files if f.language]
    old_hashes = index.file_hashes(src.name)
    current = {f.path: f.sha256 for f in code_files}
    todo = [f for f in code_files if old_hashes.get(f.path) != f.sha256]
    report.added = sorted(f.path for f in todo if f.path not in old_hashes)
    report.changed = sorted(f.path for f in todo if f.path in old_hashes)
    report.removed = sorted(p for p in old_hashes if p not in current)
    report.files, report.unchanged = len(code_files), len(code_files) - len(todo)

    # Unchanged files come back from the table as chunks (no parse); changed ones are chunked again.
    redo = {f.path for f in todo} | set(report.removed)
    chunks: list[CodeChunk] = [chunk_from_row(r) for r in index.rows(src.name)
                               if r["kind"] != "repository" and r["path"] not in redo]
    for i, f in enumerate(todo, 1):
        try:
            chunks.extend(chunk_file(src.name, f.path, f.text, language=f.language, file_hash=f.sha256))
        except Exception as exc:  # noqa: BLE001 - one file that breaks a grammar must not stop the repository
            report.warnings.append(f"{f.path}: not chunked ({exc.__class__.__name__}: {exc})")
            log.warning("chunking %s failed", f.path, exc_info=True)
        if progress:
            progress("chunk", i, len(todo))

    texts = {f.path: f.text for f in files if _is_readme(f.path) or PurePosixPath(f.path).name.lower() in BUILD_FILES
             or PurePosixPath(f.path).name.lower().startswith(("requirements", "dockerfile"))}
    summary = summarize_repo(src.name, paths, chunks, texts)
    chunks.append(repository_chunk(summary, src.commit))
    link_calls(chunks)
    idx = index.write_repo(src.name, chunks, commit=src.commit, changed_paths=redo,
                           progress=(lambda d, t: progress("embed", d, t)) if progress else None)
    report.chunks, report.embedded, report.rows_written = idx.chunks, idx.embedded, idx.written

    links = [{"paper_id": p, "repo": src.name, "how": "explicit", "evidence": f"add-repo --paper {p}"}
             for p in papers]
    explicit = set(papers)
    links += [l for l in find_paper_links(vault, src.remotes, src.name) if l["paper_id"] not in explicit]
    index.add_links(links)
    report.papers = [{k: l[k] for k in ("paper_id", "how", "evidence")} for l in links]

    # Every paper ever linked to this repository (earlier runs included) appears in the note.
    linked = index.links(repo=src.name)
    touched: list[Path] = []
    note_papers = []
    for l in linked:
        pid = l["paper_id"]
        if not vault.has_paper(pid):
            continue
        meta = vault.read_meta(pid)
        note_papers.append({"id": pid, "title": meta.title, "how": l["how"]})
        if src.name not in meta.code:
            vault.update_meta(pid, code=[*meta.code, src.name])
            touched.append(vault.note_path(pid))
    note_meta, body = render_note(workspace, src, summary, chunks, note_papers)
    note = write_note(vault, src.name, note_meta, body)
    report.note = note.relative_to(vault.root).as_posix()
    parts = [f"{len(report.added)} added", f"{len(report.changed)} changed", f"{len(report.removed)} removed"]
    msg = (f"add-repo: {src.name} @ {src.commit[:10] or 'working tree'} ({', '.join(parts)} files, "
           f"{report.chunks} chunks)")
    if note_papers:
        msg += f"; papers: {', '.join(p['id'] for p in note_papers)}"
    report.vault_commit = vault.commit(msg, [note, *touched])
    return report


def _check_same_source(vault, src: RepoSource) -> None:
    """Two different repositories must not share a name (their rows and notes would mix)."""
    path = vault.code_dir / f"{src.name}.md"
    if not path.is_file():
        return
    try:
        meta, _ = frontmatter.split(path.read_text(encoding="utf-8"))
    except ValueError:
        return
    if meta.get("source") and meta["source"] != src.source:
        raise SourceError(f"the vault already has a repository {src.name!r} from {meta['source']}",
                          fix="pass --name to add this one under another name")
