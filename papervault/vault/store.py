"""The vault on disk: paper folders, notes, full texts, figures, surveys, and one git commit per stage."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

import git

from papervault.errors import NotFoundError, UnsafePathError, WorkspaceError
from papervault.models import PaperMeta, ParsedPaper, now_iso
from papervault.vault import frontmatter
from papervault.vault.files import _umask, atomic_write, blob_id, file_blob, sync_files  # noqa: F401
from papervault.vault.paths import guard, log, safe_vault_path

# `\A...\Z`, not `^...$`: `$` also matches before a final newline, so `re.match("^x$", "x\n")` accepts it and a
# folder named `x\n` would be made. Callers use `fullmatch`; the anchors keep a `.match` caller safe as well.
ID_PATTERN = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,99}\Z")
AUTHOR = ("papervault", "papervault@localhost")

VAULT_README = """\
# Vault

This folder is papervault's vault: one folder per paper under `papers/<id>/` (`note.md`, `paper.md`, `figures/`),
code notes under `code/`, surveys under `surveys/<slug>/`. It is a git repository; every change papervault makes
is one commit that says what and why. Edit notes freely: papervault never overwrites a note you changed, it writes
its new version beside it as `note.new.md`.
"""


def check_id(paper_id: str) -> str:
    if not is_valid_id(paper_id):
        raise NotFoundError(f"invalid paper id {paper_id!r}", fix="ids look like lamport2001paxos")
    return paper_id


def is_valid_id(name) -> bool:
    """True for a valid paper id or survey slug (also what a folder under papers/ or surveys/ must be called):
    a letter or digit, then up to 99 letters, digits, `_`, `.` or `-`, no `..`, and nothing after (no newline)."""
    return isinstance(name, str) and ID_PATTERN.fullmatch(name) is not None and ".." not in name


# What papervault wrote and has not committed yet, per vault: {path relative to the vault: blob id written, or
# None when it removed the file}, kept in `.git/papervault-written` (one line a write, appended before it is
# made) so that a write in one process (a survey stage's task on a Dask worker) and the commit in another (the
# flow) agree. `Vault.commit` stages only these paths, and only while they still hold what was written, so a
# person's edits and files beside them are never swept into a commit. `_ACTIVE` is the journal recording each
# write before it is made (papervault.vault.journal), while one is open.
LEDGER = "papervault-written"
# What `Vault.stage` put in git's index and has not committed yet, kept the same way in `.git/papervault-staged`:
# a command killed between staging and committing leaves it, so that `doctor --fix` unstages papervault's own
# staged entries (those still holding what it staged) and never what a person staged with `git add`.
STAGED_LEDGER = "papervault-staged"
_ACTIVE: dict[str, object] = {}
_STAGED: dict[str, dict[str, str | None]] = {}     # of those, staged by `Vault.stage` for the next commit


_BLOB = re.compile(r"[0-9a-f]{40}")


def _safe_rel(rel: str) -> bool:
    """A path relative to the vault that stays in it and is not in `.git` (checked when read back from state)."""
    parts = rel.split("/")
    return not rel.startswith("/") and ".." not in parts and ".git" not in parts and "\0" not in rel


_COMMIT_ID = re.compile(r"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")


def commit_id(value, where: str = "") -> str | None:
    """`value` when it is a commit id (40 hex characters, or 64 in a SHA-256 repository), else None, with a
    one-line warning naming `where` it was read (a state file): a value read back from state is data, never
    passed to git where it could be read as an option (`--output=FILE`) or a revision expression."""
    if isinstance(value, str) and _COMMIT_ID.fullmatch(value):
        return value
    if value not in (None, ""):
        log.warning("%s: %r is not a commit id: treated as missing", where or "state", str(value)[:80])
    return None


def _files_under(folder: Path) -> list[Path]:
    """Every file and link below `folder`, links to folders not followed."""
    out = []
    for root, dirs, files in os.walk(folder):
        out += [Path(root) / n for n in files]
        out += [Path(root) / d for d in dirs if (Path(root) / d).is_symlink()]
    return out


def _config_env(pairs: dict[str, str]) -> dict[str, str]:
    """Git configuration for one command through GIT_CONFIG_COUNT/KEY/VALUE, after any the user's environment
    already gives that way."""
    try:
        n = int(os.environ.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        n = 0
    out = {}
    for i, (k, v) in enumerate(pairs.items(), start=n):
        out[f"GIT_CONFIG_KEY_{i}"], out[f"GIT_CONFIG_VALUE_{i}"] = k, v
    out["GIT_CONFIG_COUNT"] = str(n + len(pairs))
    return out



def _read_ledger(path: Path | None) -> dict[str, str | None]:
    """A ledger's lines `<blob id or ->\t<vault-relative path>` as {path: blob id or None}; a line cut by a kill,
    or not of this form, is skipped."""
    out: dict[str, str | None] = {}
    try:
        text = path.read_text(encoding="utf-8", errors="replace") if path is not None else ""
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        after, sep, rel = line.partition("\t")
        if sep and rel and (after == "-" or _BLOB.fullmatch(after)) and _safe_rel(rel):
            out[rel] = None if after == "-" else after
    return out


def _append_ledger(path: Path | None, pairs: list[tuple[str, str | None]]) -> None:
    if path is None or not pairs:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("".join(f"{after or '-'}\t{rel}\n" for rel, after in pairs))

class Vault:
    def __init__(self, root: Path | str, *, fsync: bool = True):
        self.root = Path(root)
        self.fsync = fsync      # False: writes are not synced one by one (the caller calls `sync_files`)
        self.papers_dir = self.root / "papers"
        self.surveys_dir = self.root / "surveys"
        self.code_dir = self.root / "code"
        self._real = os.path.realpath(self.root)

    # --- what papervault wrote --------------------------------------------------------------------

    @property
    def ledger(self) -> Path | None:
        """The file listing what papervault wrote and has not committed, in the vault's git folder (None: the
        vault is no git repository yet)."""
        git_dir = self.root / ".git"
        if git_dir.is_dir():
            return git_dir / LEDGER
        try:        # a `.git` file (the vault is a submodule or a worktree): git says where its folder is
            return Path(self.repo.git_dir) / LEDGER
        except WorkspaceError:
            return None

    @property
    def written(self) -> dict[str, str | None]:
        """The paths papervault wrote or removed in the vault and has not committed, with the blob id written
        (None: removed); a line cut by a kill, or not of this form, is skipped."""
        return _read_ledger(self.ledger)

    def _note_written(self, pairs: list[tuple[str, str | None]]) -> None:
        _append_ledger(self.ledger, pairs)

    @property
    def staged_by_papervault(self) -> dict[str, str | None]:
        """The paths `stage` put in git's index and no commit has taken since, with the blob id staged (None:
        a removal); read back from `.git/papervault-staged`, a line not of this form skipped."""
        return _read_ledger(self.ledger.with_name(STAGED_LEDGER) if self.ledger else None)

    def _note_staged(self, pairs: list[tuple[str, str | None]]) -> None:
        _append_ledger(self.ledger.with_name(STAGED_LEDGER) if self.ledger else None, pairs)

    def forget_staged(self) -> None:
        """Nothing papervault staged is left uncommitted (after a commit, or once recovery unstaged it)."""
        path = self.ledger
        if path is not None:
            path.with_name(STAGED_LEDGER).unlink(missing_ok=True)

    def forget(self, rels: Iterable[str] | None = None) -> None:
        """Drop these paths (default: all) from what papervault wrote and has not committed."""
        path = self.ledger
        if path is None or not path.exists():
            return
        if rels is None:
            path.unlink(missing_ok=True)
            return
        drop = set(rels)
        left = {r: a for r, a in self.written.items() if r not in drop}
        if not left:
            path.unlink(missing_ok=True)
            return
        atomic_write(path, "".join(f"{a or '-'}\t{r}\n" for r, a in left.items()), fsync=False)

    def rel(self, path: Path | str) -> str:
        """`path` (absolute or relative to the vault) relative to the vault's real root, its last part not
        followed (a link is named as itself)."""
        p = Path(path)
        if not p.is_absolute():
            p = self.root / p
        p = Path(os.path.normpath(p))
        return Path(os.path.relpath(Path(os.path.realpath(p.parent)) / p.name, self._real)).as_posix()

    def _will_change(self, path: Path, data: bytes | None) -> None:
        """Record, before it is made, that `path` will hold `data` (None: be removed): in the open journal (with
        what the path held before) and in `written`."""
        rel = self.rel(path)
        after = None if data is None else blob_id(data)
        journal = _ACTIVE.get(self._real)
        if journal is not None:
            journal.record(rel, self.root / rel, after)
        self._note_written([(rel, after)])

    # --- creation and git ------------------------------------------------------------------------

    @classmethod
    def create(cls, root: Path) -> "Vault":
        root.mkdir(parents=True, exist_ok=True)
        repo = git.Repo.init(root)
        with repo.config_writer() as cw:
            cw.set_value("user", "name", AUTHOR[0])
            cw.set_value("user", "email", AUTHOR[1])
        v = cls(root)
        for d in (v.papers_dir, v.surveys_dir, v.code_dir):
            d.mkdir(exist_ok=True)
            (d / ".gitkeep").touch()
        readme = root / "README.md"
        if not readme.exists():
            readme.write_text(VAULT_README, encoding="utf-8")
        v.commit("init: empty vault")
        return v

    @property
    def repo(self) -> git.Repo:
        try:
            return git.Repo(self.root)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            raise WorkspaceError(f"{self.root} is not a git repository", fix="run `papervault init`") from None

    def mine(self, paths: Iterable[Path | str] | None = None) -> tuple[list[str], list[str]]:
        """The paths under `paths` (default: all) this process wrote or removed and not committed yet, as
        (those that still hold exactly what papervault wrote, those changed since: a person's edit)."""
        written = self.written
        if paths is None:
            chosen = list(written)
        else:
            tops = {self.rel(p) for p in paths}
            if "." in tops:
                chosen = list(written)
            else:       # a path is chosen when it, or a folder it is in, is one of `paths` (a set: no n x m)
                chosen = [r for r in written if r in tops or any(r[:i] in tops for i, c in enumerate(r) if c == "/")]
        same, changed = [], []
        for r in chosen:
            (same if file_blob(self.root / r) == written[r] else changed).append(r)
        return same, changed

    def stage(self, paths: Iterable[Path | str] | None = None) -> list[str]:
        """Stage what this process wrote under `paths` (its removals too), each path only while it holds exactly
        what papervault wrote; a path changed since (a person's edit) is left as it is, unstaged, and no longer
        counted as papervault's. Nothing else is staged: a person's files and edits beside them stay theirs.
        Returns the paths staged."""
        same, changed = self.mine(paths)
        written, staged = self.written, _STAGED.setdefault(self._real, {})
        for r in changed:
            log.warning("vault/%s changed since papervault wrote it: left as it is, not committed", r)
            staged.pop(r, None)
        if same:
            self._note_staged([(r, written[r]) for r in same])       # before git stages them
            try:
                self._git_stdin(["update-index", "--add", "--remove", "-z", "--stdin"], same)
            except git.GitCommandError as exc:
                said = " ".join(str(exc.stderr or exc).split())[:200]
                fix = ("if no git command is running in vault/, run `papervault doctor --fix`"
                       if ".lock" in said else "run `papervault doctor` and follow its fix")
                raise WorkspaceError(f"git could not stage in the vault ({said})", fix=fix) from None
            for r in same:
                staged[r] = written[r]
        self.forget([*same, *changed])
        return same

    def _git_stdin(self, args: list[str], paths: list[str], env: dict | None = None) -> str:
        """A git command reading NUL-separated `paths` on its standard input (no command line is too long)."""
        with tempfile.TemporaryFile() as fh:
            fh.write(b"".join(os.fsencode(p) + b"\0" for p in paths))
            fh.seek(0)
            repo = self.repo
            with repo.git.custom_environment(**(env or {})):     # through GitPython's git, as every command
                return getattr(repo.git, args[0].replace("-", "_"))(*args[1:], istream=fh)

    def commit(self, message: str, paths: Iterable[Path | str] | None = None) -> str | None:
        # `git commit` ends with `git gc --auto`, which by default detaches: a background gc then holds the
        # vault's ref and pack locks while the next step of a big import commits or recovers ("cannot lock
        # ref"). Run it in the foreground: now and then one commit takes longer, and nothing runs behind it.
        """Commit what this process wrote under `paths` and what it staged before (`stage`): exactly those
        paths (`git commit --only`), each only while it holds what papervault wrote. A person's edits and
        untracked files, and what they staged themselves, stay out of the commit. `paths=None` commits the whole
        working tree (`_commit_all`: a new vault). Returns the SHA, or None when nothing changed."""
        repo = self.repo
        env = {"GIT_AUTHOR_NAME": AUTHOR[0], "GIT_AUTHOR_EMAIL": AUTHOR[1],
               "GIT_COMMITTER_NAME": AUTHOR[0], "GIT_COMMITTER_EMAIL": AUTHOR[1], "GIT_LITERAL_PATHSPECS": "1",
               **_config_env({"gc.autoDetach": "false"})}
        if paths is None:
            return self._commit_all(message, env)
        self.stage(paths)
        staged = _STAGED.setdefault(self._real, {})
        if not staged:
            return None
        try:
            with repo.git.custom_environment(**env):
                if not repo.head.is_valid():
                    repo.git.commit("-m", message, "--no-verify", "--quiet")      # a new vault: nothing else is there
                else:
                    # git itself says which of them differ from HEAD: reading a big index into Python would not scale
                    diff = set(repo.git.execute(["git", "diff-index", "--cached", "--name-only", "-z", "HEAD"])
                               .split("\0"))
                    todo = sorted(r for r in staged if r in diff)
                    if not todo:
                        staged.clear()
                        self.forget_staged()
                        return None
                    self._git_stdin(["commit", "--only", "--pathspec-from-file=-", "--pathspec-file-nul",
                                     "-m", message, "--no-verify", "--quiet"], todo, env)
        except git.GitCommandError as exc:
            said = " ".join(str(exc.stderr or exc).split())[:200]
            fix = ("if no git command is running in vault/, run `papervault doctor --fix`"
                   if ".lock" in said else "run `papervault doctor` and follow its fix")
            raise WorkspaceError(f"git could not commit in the vault ({said})", fix=fix) from None
        staged.clear()
        self.forget_staged()
        return repo.head.commit.hexsha

    def _commit_all(self, message: str, env: dict) -> str | None:
        """Everything in the working tree, as a person's `git add --all && git commit` would: only for a new
        vault (`create`) and a person's own scripts; papervault's commands name the paths they wrote."""
        repo = self.repo
        try:
            with repo.git.custom_environment(**env):
                repo.git.add("--all", "--", ".")
                self.forget()
                _STAGED.pop(self._real, None)
                self.forget_staged()
                # git itself says whether anything is staged: reading a big index into Python would not scale
                if not repo.head.is_valid():
                    if not repo.git.execute(["git", "ls-files", "--cached"]).strip():
                        return None
                elif repo.git.execute(["git", "diff", "--cached", "--quiet", "HEAD"], with_exceptions=False,
                                      with_extended_output=True)[0] == 0:
                    return None
                repo.git.commit("-m", message, "--no-verify", "--quiet")
        except git.GitCommandError as exc:
            said = " ".join(str(exc.stderr or exc).split())[:200]
            fix = ("if no git command is running in vault/, run `papervault doctor --fix`"
                   if ".lock" in said else "run `papervault doctor` and follow its fix")
            raise WorkspaceError(f"git could not commit in the vault ({said})", fix=fix) from None
        return repo.head.commit.hexsha

    def is_clean(self) -> bool:
        return not self.repo.is_dirty(untracked_files=True)

    def history(self, path: Path | str | None = None, limit: int = 20) -> list[dict]:
        rel = None if path is None else str(Path(path).resolve().relative_to(self.root.resolve()))
        commits = self.repo.iter_commits(paths=rel, max_count=limit) if rel else self.repo.iter_commits(max_count=limit)
        return [{"sha": c.hexsha, "message": c.message.strip(), "date": c.committed_datetime.isoformat()}
                for c in commits]

    # --- papers ----------------------------------------------------------------------------------

    def paper_dir(self, paper_id: str) -> Path:
        return self.papers_dir / check_id(paper_id)

    def note_path(self, paper_id: str) -> Path:
        return self.paper_dir(paper_id) / "note.md"

    def fulltext_path(self, paper_id: str) -> Path:
        return self.paper_dir(paper_id) / "paper.md"

    def paper_ids(self) -> list[str]:
        if not self.papers_dir.is_dir():
            return []
        return sorted(p.name for p in self.papers_dir.iterdir()
                      if p.is_dir() and (p / "note.md").is_file() and is_valid_id(p.name))

    def has_paper(self, paper_id: str) -> bool:
        return self.note_path(paper_id).is_file()

    # --- the write guard: every write, delete and rename in the vault goes through these ---------------

    def guard(self, path: Path | str, action: str = "write", *, follow: bool = True) -> Path:
        """`path` checked to stay inside the vault once every link on its way is followed (`vault.paths.guard`);
        UnsafePathError (one line) otherwise."""
        return guard(self.root, path, action, follow=follow)

    def write(self, path: Path | str, data: bytes | str) -> Path:
        """Write a file of the vault atomically, after the guard: never through a link out of the vault."""
        path = self.guard(path)
        raw = data.encode("utf-8") if isinstance(data, str) else data
        self._will_change(path, raw)
        atomic_write(path, raw, fsync=self.fsync)
        return path

    def remove(self, path: Path | str) -> bool:
        """Delete one file of the vault (a link itself, never what it points to); False when it was not there.
        Refused when its folder leads out of the vault."""
        path = self.guard(path, "delete", follow=False)
        if not os.path.lexists(path):
            return False
        self._will_change(path, None)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def remove_tree(self, path: Path | str) -> None:
        """Delete a folder of the vault and everything in it; refused when the folder (or one on its way) is a
        link out of the vault. A link to a folder inside the vault is removed as a link."""
        path = self.guard(path, "delete")
        if path.is_symlink():
            self._will_change(path, None)
            path.unlink()
        else:
            for f in _files_under(path):
                self._will_change(f, None)
            shutil.rmtree(path)

    def move(self, src: Path | str, dst: Path | str) -> None:
        """Rename a file or folder of the vault with `git mv`, both ends checked by the guard."""
        src, dst = self.guard(src, "rename"), self.guard(dst, "rename")
        repo = self.repo
        # what git moves (its tracked files) is papervault's to commit: gone from src, there under dst; a
        # person's untracked file moves with the folder and stays untracked
        before = [self.root / r for r in repo.git.execute(["git", "ls-files", "-z", "--", self.rel(src)]).split("\0")
                  if r]
        repo.git.mv(str(src), str(dst))
        pairs: list[tuple[str, str | None]] = []
        for f in before:
            moved = dst / f.relative_to(src) if f != src else dst
            pairs += [(self.rel(f), None), (self.rel(moved), file_blob(moved))]
        self._note_written(pairs)

    def safe_path(self, path: Path | str) -> Path:
        """`path` (absolute or relative to the vault) resolved; UnsafePathError when it leads out of the vault."""
        return safe_vault_path(self.root, path)

    def read_note(self, paper_id: str) -> tuple[PaperMeta, str]:
        path = self.note_path(paper_id)
        if not path.is_file():
            raise NotFoundError(f"no paper {paper_id!r} in the vault", fix="see `papervault list`")
        path = self.safe_path(path)
        try:
            data, body = frontmatter.split(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise WorkspaceError(f"{path}: broken frontmatter ({exc})", fix="repair the YAML between the --- lines") from None
        data.setdefault("id", paper_id)
        return PaperMeta.model_validate(data), body

    def read_meta(self, paper_id: str) -> PaperMeta:
        return self.read_note(paper_id)[0]

    def iter_meta(self) -> Iterator[PaperMeta]:
        for pid in self.paper_ids():
            try:
                yield self.read_meta(pid)
            except UnsafePathError as exc:
                log.warning("%s", exc)       # one line; the note is never read
            except (WorkspaceError, ValueError):
                continue

    def read_fulltext(self, paper_id: str) -> str:
        path = self.fulltext_path(paper_id)
        return self.safe_path(path).read_text(encoding="utf-8") if path.is_file() else ""

    def is_edited(self, paper_id: str) -> bool:
        """True when a person changed the note body since papervault last wrote it."""
        path = self.note_path(paper_id)
        if not path.is_file():
            return False
        meta, body = self.read_note(paper_id)
        return bool(meta.generated_hash) and frontmatter.body_hash(body) != meta.generated_hash

    def write_note(self, meta: PaperMeta, body: str, *, force: bool = False) -> Path:
        """Write note.md; if a person edited the current one, write note.new.md beside it instead."""
        path = self.note_path(meta.id)
        meta.generated_hash = frontmatter.body_hash(body)
        meta.updated = now_iso()
        if not meta.created:
            meta.created = meta.updated
        data = meta.model_dump(exclude_none=True)
        target = path
        if path.exists() and not force and self.is_edited(meta.id):
            target = path.with_name("note.new.md")
        self.guard(target)
        if self._same_but_updated(target, data, body):
            return target      # nothing but `updated:` would change: the file (and the vault) stays as it is
        self.write(target, frontmatter.join(data, body))
        return target

    @staticmethod
    def _same_but_updated(target: Path, data: dict, body: str) -> bool:
        """True when `target` already holds `data` and `body`, its `updated:` time aside (compared as data: a
        note is not rewritten for its YAML formatting alone)."""
        try:
            old = target.read_text(encoding="utf-8")
        except OSError:
            return False
        return "\nupdated:" in old and frontmatter.same(old, data, body, ignore=("updated",))

    def update_meta(self, paper_id: str, **changes) -> PaperMeta:
        """Change frontmatter fields without touching the body (keeps a person's edits)."""
        meta, body = self.read_note(paper_id)
        for k, v in changes.items():
            setattr(meta, k, v)
        meta.updated = now_iso()
        self.write(self.note_path(paper_id), frontmatter.join(meta.model_dump(exclude_none=True), body))
        return meta

    def write_fulltext(self, paper_id: str, parsed: ParsedPaper) -> Path:
        """Write paper.md and figures/ (figures first, so paper.md never points at a missing file)."""
        pdir = self.paper_dir(paper_id)
        fig_dir = pdir / "figures"
        path = self.fulltext_path(paper_id)
        for p in (pdir, fig_dir, path):     # checked before anything is written: a refusal changes nothing
            self.guard(p)
        keep = set()
        for fig in parsed.figures:
            if fig.png:
                self.write(fig_dir / fig.filename, fig.png)
                keep.add(fig.filename)
        if fig_dir.is_dir():
            for old in fig_dir.iterdir():
                if old.name not in keep and old.suffix == ".png":
                    self.remove(old)
        self.write(path, parsed.markdown)
        return path

    def delete_paper(self, paper_id: str) -> None:
        pdir = self.paper_dir(paper_id)
        if not pdir.is_dir():
            raise NotFoundError(f"no paper {paper_id!r} in the vault", fix="see `papervault list`")
        self.remove_tree(pdir)

    # --- surveys ---------------------------------------------------------------------------------

    def survey_dir(self, slug: str) -> Path:
        if not is_valid_id(slug):
            raise NotFoundError(f"invalid survey name {slug!r}",
                                fix="a survey name is letters, digits, `_`, `.` and `-` on one line, e.g. consensus")
        return self.surveys_dir / slug

    def survey_slugs(self) -> list[str]:
        if not self.surveys_dir.is_dir():
            return []
        return sorted(p.name for p in self.surveys_dir.iterdir()
                      if p.is_dir() and (p / "survey.md").exists() and is_valid_id(p.name))

    def resolve_inside(self, rel: str | Path) -> Path:
        """A path given by a user or an agent, resolved and checked to stay inside the vault."""
        root = self.root.resolve()
        p = (root / rel).resolve()
        if p != root and root not in p.parents:
            raise NotFoundError(f"path {str(rel)!r} is outside the vault")
        return p
