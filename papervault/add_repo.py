"""The `add-repo` operation, and the upkeep of what it made: chunks, the `code` table, links and code notes.

`add_repo` reads a repository (`papervault.sources.repo`), chunks only files whose content hash changed since
the last run, updates the `code` table, links the repository to papers (GitHub/GitLab URLs in a paper's own
text, or `--paper`), records it in those papers' `code` frontmatter, writes `vault/code/<repo>.md`, and commits
the vault once. It also records the repository's normalised remotes and the code note's inputs in the `repos`
table, so that `link_new_papers` (called by `papervault add`) can link a paper added later and rewrite the code
note without the checkout; `rechunk_code` re-chunks every repository when the chunker changes.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath

import jinja2

from papervault.chunking.code import (CodeChunk, RepoSummary, chunk_file, link_calls, repository_chunk,
                                      summarize_repo, BUILD_FILES)
from papervault.errors import NotFoundError, SourceError
from papervault.index.code import CodeIndex, chunk_from_row
from papervault.sources.repo import (Progress, RepoSource, checkout, find_paper_links, fulltext_link, is_readme,
                                     list_files, normalised_remotes, open_repo, paper_code_urls, read_files)
from papervault.templating import environment
from papervault.vault import frontmatter
from papervault.wording import plural

log = logging.getLogger(__name__)

NOTE_TEMPLATE = "code_note.md.j2"



def link_new_papers(workspace, paper_ids: list[str]) -> tuple[list[dict], list[Path]]:
    """Link papers new to the vault to the repositories already indexed whose remotes their text names.

    The other direction of `find_paper_links`: `papervault add` calls it (holding the writer lock) for the
    papers it added or merged. Each new link goes to the `links` table (`how = fulltext`, the URL as
    evidence), the repository joins the paper's `code` frontmatter, and the repository's code note is
    rendered again from its stored inputs so that it lists the paper. Returns the new links and the vault
    files changed, for the caller's commit. Repositories indexed before their remotes were recorded are never
    matched (no remotes known) until `add-repo` runs on them again.
    """
    vault = workspace.vault
    if not paper_ids or not any(vault.code_dir.glob("*.md")):
        return [], []              # no repository was ever added: the index is not even opened
    index = CodeIndex(workspace)
    known = index.known_remotes()
    if not known:
        return [], []
    already = {(l["paper_id"], l["repo"]) for l in index.links()}   # one read, not one per paper
    links = []
    for pid in dict.fromkeys(paper_ids):
        try:
            urls = paper_code_urls(vault, pid)
        except Exception:  # noqa: BLE001 - a broken note must not stop linking the others
            log.warning("cannot read %s to look for code links", pid, exc_info=True)
            continue
        if not urls:
            continue
        for repo in sorted(known):
            link = fulltext_link(pid, repo, urls, known[repo]) if (pid, repo) not in already else None
            if link:
                links.append(link)
    if not links:
        return [], []
    index.add_links(links)
    changed: list[Path] = []
    for repo in sorted({l["repo"] for l in links}):
        record = index.repo_record(repo)
        note, touched, _ = refresh_code_note(workspace, index, repo, record["note"] if record else None)
        changed += ([note] if note else []) + touched
    return links, changed


# --- the code note --------------------------------------------------------------------------------------------


def _template(workspace) -> jinja2.Template:
    env = environment("", workspace.root, autoescape=False, keep_trailing_newline=True,
                      undefined=jinja2.StrictUndefined)
    return env.get_template(NOTE_TEMPLATE)


def note_inputs(src: RepoSource, summary: RepoSummary, chunks: list[CodeChunk]) -> dict:
    """All the code note is rendered from except its papers, as plain data (stored in the `repos` table)."""
    kinds = [c.kind for c in chunks]
    stats = {"chunks": len(chunks), "functions": kinds.count("function"), "classes": kinds.count("class"),
             "tests": kinds.count("test"), "configs": kinds.count("config")}
    return {"name": src.name, "source": src.source, "commit": src.commit, "dirty": src.dirty, "branch": src.branch,
            "summary": asdict(summary), "stats": stats}


def render_note(workspace, inputs: dict, papers: list[dict]) -> tuple[dict, str]:
    """The code note's frontmatter and body (no timestamps: an unchanged repository gives an identical note)."""
    summary = RepoSummary(**inputs["summary"])
    stats = inputs["stats"]
    body = _template(workspace).render(name=inputs["name"], source=inputs["source"], commit=inputs["commit"],
                                       dirty=inputs["dirty"], branch=inputs["branch"], summary=summary,
                                       papers=papers, stats=stats)
    meta = {"repo": inputs["name"], "source": inputs["source"], "commit": inputs["commit"] or None,
            "branch": inputs["branch"], "languages": list(summary.languages), "papers": [p["id"] for p in papers],
            "files": summary.files, "chunks": stats["chunks"], "tags": ["code"],
            "generated_hash": frontmatter.body_hash(body)}
    return {k: v for k, v in meta.items() if v is not None}, body


def write_note(vault, name: str, meta: dict, body: str) -> Path:
    """Write `vault/code/<name>.md`; when a person edited it since, write `<name>.new.md` beside it instead."""
    path = vault.guard(vault.code_dir / f"{name}.md")     # never read or written through a link out
    text = frontmatter.join(meta, body)
    if path.exists():
        try:
            old_meta, old_body = frontmatter.split(path.read_text(encoding="utf-8"))
        except ValueError:
            old_meta, old_body = {}, ""
        edited = old_meta.get("generated_hash") and frontmatter.body_hash(old_body) != old_meta["generated_hash"]
        if edited:
            target = path.with_name(f"{name}.new.md")
            vault.write(target, text)
            return target
        if path.read_text(encoding="utf-8") == text:
            return path
    vault.write(path, text)
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
    reused: int = 0                 # chunks that kept a stored vector
    rechunked: str | None = None    # the line saying the repositories were re-chunked first (rechunk_code)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def add_repo(workspace, target: str, *, papers: list[str] | tuple[str, ...] = (), name: str | None = None,
             rebuild: bool = False, lock: bool = True, embedder=None,
             progress: Progress | None = None) -> AddRepoReport:
    """Index a repository's code, link it to papers, write its code note, and commit the vault once.

    Only files whose content hash changed since the last run are chunked and embedded again. With `rebuild`,
    the repository's rows are dropped first (and the whole `code` table, when it was built with another
    embedding model: the report then names the other repositories to add again). When the chunker or
    `[embed] max_tokens` changed since the code was chunked, every repository is re-chunked first
    (`rechunk_code`; the report's `rechunked` says so), this one with all its files.
    """
    workspace.require()
    if lock:
        with workspace.write_lock("add-repo"):
            return add_repo(workspace, target, papers=papers, name=name, rebuild=rebuild, lock=False,
                            embedder=embedder, progress=progress)
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
    rechunk = None
    if index.rechunk_needed():
        # the others first, from their checkouts; this one below, every file chunked again
        rechunk = rechunk_code(workspace, index=index, progress=progress, record=False, exclude=src.name)
        report.rechunked = rechunk.line()
    summary, chunks = _index_files(index, src, report, every_file=rechunk is not None, progress=progress,
                                   vectors_max_tokens=rechunk.vectors_max_tokens if rechunk else None)
    if rechunk is not None and not rechunk.skipped:
        index.record_chunking()

    links = [{"paper_id": p, "repo": src.name, "how": "explicit", "evidence": f"add-repo --paper {p}"}
             for p in papers]
    explicit = set(papers)
    links += [l for l in find_paper_links(vault, src.remotes, src.name) if l["paper_id"] not in explicit]
    index.add_links(links)
    report.papers = [{k: l[k] for k in ("paper_id", "how", "evidence")} for l in links]

    inputs = note_inputs(src, summary, chunks)
    index.put_repo(src.name, source=src.source, remotes=normalised_remotes(src.remotes), note=inputs)
    note, touched, note_papers = refresh_code_note(workspace, index, src.name, inputs)
    report.note = note.relative_to(vault.root).as_posix()
    parts = [f"{len(report.added)} added", f"{len(report.changed)} changed", f"{len(report.removed)} removed"]
    msg = (f"add-repo: {src.name} @ {src.commit[:10] or 'working tree'} ({', '.join(parts)} files, "
           f"{plural(report.chunks, 'chunk')})")
    if note_papers:
        msg += f"; papers: {', '.join(p['id'] for p in note_papers)}"
    changed = [note, *touched] + (rechunk.changed if rechunk else [])
    report.vault_commit = vault.commit(msg, changed)
    return report


def _index_files(index, src: RepoSource, report: AddRepoReport, *, every_file: bool = False,
                 vectors_max_tokens: int | None = None,
                 progress: Progress | None = None) -> tuple[RepoSummary, list[CodeChunk]]:
    """Chunk the repository's changed files (all of them with `every_file`) and bring its rows in line;
    returns its summary and all its chunks. Fills the report's file lists and counts."""
    paths = list_files(src)
    files = read_files(src, paths, report.warnings)
    code_files = [f for f in files if f.language]
    old_hashes = index.file_hashes(src.name)
    current = {f.path: f.sha256 for f in code_files}
    todo = [f for f in code_files if every_file or old_hashes.get(f.path) != f.sha256]
    report.added = sorted(f.path for f in todo if f.path not in old_hashes)
    report.changed = sorted(f.path for f in todo if f.path in old_hashes and old_hashes[f.path] != f.sha256)
    report.removed = sorted(p for p in old_hashes if p not in current)
    report.files = len(code_files)
    report.unchanged = len(code_files) - len(report.added) - len(report.changed)

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

    # One order whichever way the chunks came (stored rows come in table order, which a rewrite changes), so
    # the summary and the repository chunk are the same for the same files.
    chunks.sort(key=lambda c: (c.path, c.start_line, -c.end_line, c.kind, c.symbol))
    texts = {f.path: f.text for f in files if is_readme(f.path) or PurePosixPath(f.path).name.lower() in BUILD_FILES
             or PurePosixPath(f.path).name.lower().startswith(("requirements", "dockerfile"))}
    summary = summarize_repo(src.name, paths, chunks, texts)
    chunks.append(repository_chunk(summary, src.commit))
    link_calls(chunks)
    # a file re-chunked only because the chunker changed keeps the commit its rows were indexed at
    changed_paths = {f.path for f in todo if old_hashes.get(f.path) != f.sha256} | set(report.removed)
    idx = index.write_repo(src.name, chunks, commit=src.commit, changed_paths=changed_paths,
                           vectors_max_tokens=vectors_max_tokens,
                           progress=(lambda d, t: progress("embed", d, t)) if progress else None)
    report.chunks, report.embedded, report.rows_written = idx.chunks, idx.embedded, idx.written
    report.reused = idx.reused
    return summary, chunks


# --- re-chunking after a chunker or token-limit change ---------------------------------------------------------


@dataclass
class RechunkReport:
    """What re-chunking the indexed repositories did."""

    reason: str                     # why they were re-chunked (rechunk_needed)
    repos: list[str] = field(default_factory=list)             # re-chunked
    skipped: dict[str, str] = field(default_factory=dict)      # repository -> why it could not be, with the fix
    chunks: int = 0
    embedded: int = 0
    reused: int = 0
    vectors_max_tokens: int | None = None      # the token limit the stored vectors were made with
    changed: list[Path] = field(default_factory=list)         # vault files rewritten (code notes)
    warnings: list[str] = field(default_factory=list)

    def line(self) -> str:
        """The one line a command prints."""
        done = (f"code index: re-chunked {plural(len(self.repos), 'repository', 'repositories')} "
                f"({self.reason}): {self.embedded} chunks embedded, {self.reused} reused")
        if self.skipped:
            done += "; not re-chunked: " + "; ".join(f"{r} ({why})" for r, why in sorted(self.skipped.items()))
        return done

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("changed", "vectors_max_tokens")}


def rechunk_code(workspace, *, index=None, embedder=None, progress: Progress | None = None, record: bool = True,
                 exclude: str | None = None) -> RechunkReport | None:
    """Re-chunk every indexed repository when the chunker or `[embed] max_tokens` changed since the code was
    chunked (None when nothing changed): each from its checkout, all files, reusing the vector of every
    text embedded as it would be now; then rewrite the code notes and (with `record`, when none was
    skipped) record the current chunker and limit. The caller holds the write lock and commits `changed`.

    A repository whose checkout is gone keeps its rows as they are and is named in `skipped`; the next run
    tries again."""
    index = index or CodeIndex(workspace, embedder)
    tbl = index.table()                 # another embedding model raises: that one needs `--rebuild`
    why = index.rechunk_needed(tbl)
    if why is None:
        return None
    # a limit the table never recorded keeps no vector (0: every text counts as cut)
    out = RechunkReport(reason=why, vectors_max_tokens=index.recorded_max_tokens(tbl) or 0)
    for repo in index.repos():
        if repo == exclude:
            continue
        record_row = index.repo_record(repo)
        src = checkout(workspace, repo, record_row)
        if isinstance(src, str):
            out.skipped[repo] = src
            continue
        part = AddRepoReport(repo=repo, source=src.source, commit=src.commit)
        summary, chunks = _index_files(index, src, part, every_file=True, progress=progress,
                                       vectors_max_tokens=out.vectors_max_tokens)
        out.repos.append(repo)
        out.chunks, out.embedded, out.reused = out.chunks + part.chunks, out.embedded + part.embedded, \
            out.reused + part.reused
        out.warnings += [f"{repo}: {w}" for w in part.warnings]
        inputs = note_inputs(src, summary, chunks)
        index.put_repo(repo, source=src.source, remotes=normalised_remotes(src.remotes), note=inputs)
        note, touched, _ = refresh_code_note(workspace, index, repo, inputs)
        out.changed += ([note] if note else []) + touched
    if record and not out.skipped:
        index.record_chunking()
    log.info("%s", out.line())
    return out


def refresh_code_note(workspace, index, repo: str,
                      inputs: dict | None) -> tuple[Path | None, list[Path], list[dict]]:
    """Bring the papers linked to `repo` (every run's links) into their `code` frontmatter and its code note.

    The note is rendered from `inputs` (see `note_inputs`); without them (a repository indexed before they were
    stored) only the papers' frontmatter is updated. Returns the note written (None without inputs), the paper
    notes changed and the note's papers (`{id, title, how}`).
    """
    vault = workspace.vault
    touched: list[Path] = []
    note_papers = []
    for l in index.links(repo=repo):
        pid = l["paper_id"]
        if not vault.has_paper(pid):
            continue
        meta = vault.read_meta(pid)
        note_papers.append({"id": pid, "title": meta.title, "how": l["how"]})
        if repo not in meta.code:
            vault.update_meta(pid, code=[*meta.code, repo])
            touched.append(vault.note_path(pid))
    if inputs is None:
        return None, touched, note_papers
    note_meta, body = render_note(workspace, inputs, note_papers)
    return write_note(vault, repo, note_meta, body), touched, note_papers


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
