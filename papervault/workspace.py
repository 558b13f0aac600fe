"""A workspace: `papervault.toml`, the `vault/` git repository, `site/` and derived state in `.papervault/`."""

from __future__ import annotations

import json
import os
import re
import tomllib
from functools import cached_property
from pathlib import Path

from papervault.config import DEFAULT_TOML, Settings
from papervault.errors import WorkspaceError
from papervault.vault.lock import WriteLock

CONFIG_NAME = "papervault.toml"
ENV_VAR = "PAPERVAULT_WORKSPACE"

# The site's configuration. `papervault site build` generates the pages (home, indexes, paper cards, rendered
# citations) into .papervault/site-src/ and builds with this file, overriding docs_dir and nav only; see
# docs/site.md. Everything here is also understood by Zensical. No CDN: fonts off, MathJax served locally.
MKDOCS_TEMPLATE = """\
site_name: {name}
docs_dir: vault
site_dir: site
use_directory_urls: false
theme:
  name: material
  font: false
  language: en
  features:
    - navigation.indexes
    - navigation.sections
    - navigation.top
    - search.suggest
    - search.highlight
    - content.code.copy
  palette:
    - scheme: default
      primary: indigo
      toggle:
        icon: material/brightness-7
        name: Dark mode
    - scheme: slate
      primary: indigo
      toggle:
        icon: material/brightness-4
        name: Light mode
plugins:
  - search:
      # jieba (installed with papervault) segments Chinese at build time with zero-width spaces (\\u200b).
      separator: '[\\s\\u200b\\u3000\\-_,;:!?()\\[\\]"“”、。，．？！；：「」『』（）《》]+'
markdown_extensions:
  - abbr
  - admonition
  - def_list
  - footnotes
  - md_in_html
  - tables
  - toc:
      permalink: true
  - pymdownx.arithmatex:
      generic: true
  - pymdownx.details
  - pymdownx.highlight
  - pymdownx.superfences
  - pymdownx.tasklist
extra_css:
  - assets/papervault/papervault.css
extra_javascript:
  - assets/papervault/mathjax-config.js
  - assets/mathjax/tex-svg.js
extra:
  generator: false
"""


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value), ensure_ascii=False)   # JSON string escapes are valid TOML basic strings


class Workspace:
    """Paths and settings of one workspace; nothing here touches the network."""

    def __init__(self, root: Path | str):
        self.root = Path(root).expanduser().resolve()
        self.config_path = self.root / CONFIG_NAME
        self.vault_dir = self.root / "vault"
        self.site_dir = self.root / "site"
        self.pdf_dir = self.root / "pdfs"      # the kept PDFs (papervault.pdfstore): not derived, not in git
        self.state_dir = self.root / ".papervault"
        self.index_dir = self.state_dir / "index"
        self.cache_dir = self.state_dir / "cache"
        self.runs_dir = self.state_dir / "runs"
        self.quarantine_dir = self.state_dir / "quarantine"
        self.lock_path = self.state_dir / "write.lock"

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    @classmethod
    def resolve(cls, explicit: str | Path | None = None) -> "Workspace":
        """--workspace, else $PAPERVAULT_WORKSPACE, else the nearest folder upward with papervault.toml, else cwd."""
        if explicit:
            return cls(explicit)
        env = os.environ.get(ENV_VAR)
        if env:
            return cls(env)
        here = Path.cwd().resolve()
        for folder in (here, *here.parents):
            if (folder / CONFIG_NAME).is_file():
                return cls(folder)
        return cls(here)

    @property
    def exists(self) -> bool:
        return (self.vault_dir / ".git").is_dir()

    def require(self) -> "Workspace":
        if not self.exists:
            raise WorkspaceError(f"no papervault workspace at {self.root}",
                                 fix=f"run `papervault init {self.root}` or pass --workspace DIR")
        return self

    @property
    def parse_cache_dir(self) -> Path:
        """Where parses are cached by content hash: per workspace, or shared when `[parse] cache_dir` is set."""
        shared = self.settings.parse.cache_dir
        return Path(shared).expanduser() if shared else self.cache_dir / "parse"

    @cached_property
    def settings(self) -> Settings:
        return Settings.load(self.config_path)

    @cached_property
    def vault(self):
        from papervault.vault.store import Vault  # deferred: GitPython (~40 ms); the CLI loads this module at start-up

        return Vault(self.vault_dir)

    def write_lock(self, command: str, *, wait: float = 0.0):
        """The exclusive writer lock (readers never take it)."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        return WriteLock(self.lock_path, command=command, wait=wait)

    def record_embed(self, **values) -> dict:
        """Write `[embed]` keys that papervault.toml does not set yet (the model, its local path, multilingual),
        so every later command, the MCP server and Prefect workers use the model this workspace was built with,
        whatever their environment. Keys the file already sets are never changed. Returns what was written."""
        from papervault.vault.store import atomic_write  # deferred: as in `vault`

        text = self.config_path.read_text(encoding="utf-8") if self.config_path.exists() else ""
        try:
            have = (tomllib.loads(text).get("embed") or {}) if text else {}
        except tomllib.TOMLDecodeError:
            return {}   # a file the user is mid-way editing is left alone (commands report it on load)
        todo = {k: v for k, v in values.items() if v is not None and k not in have}
        if not todo:
            return {}
        lines = [f"{k} = {_toml_value(v)}" for k, v in todo.items()]
        header = re.search(r"(?m)^[ \t]*\[embed\][ \t]*(#.*)?$", text)
        if header:
            cut = header.end()
            new = text[:cut] + "\n" + "\n".join(lines) + text[cut:]
        else:
            new = text.rstrip("\n") + ("\n\n" if text.strip() else "") + "[embed]\n" + "\n".join(lines) + "\n"
        Settings(tomllib.loads(new), source=str(self.config_path))   # never write a file that would not load
        self.state_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(self.config_path, new)
        self.__dict__.pop("settings", None)
        return todo

    @classmethod
    def init(cls, root: str | Path, *, embed_model: str | None = None,
             embed_model_path: str | None = None) -> tuple["Workspace", list[str]]:
        """Create (or complete) a workspace; never overwrites a file that exists. Returns what it created.
        `embed_model` / `embed_model_path` are recorded in papervault.toml's [embed] section."""
        from papervault.vault.store import Vault  # deferred: as in `vault`

        ws = cls(root)
        created: list[str] = []
        ws.root.mkdir(parents=True, exist_ok=True)
        if not ws.config_path.exists():
            ws.config_path.write_text(DEFAULT_TOML, encoding="utf-8")
            created.append(CONFIG_NAME)
        if embed_model or embed_model_path:
            if embed_model_path and embed_model_path != "packaged":
                embed_model_path = str(Path(embed_model_path).expanduser().resolve())
            ws.record_embed(model=embed_model, model_path=embed_model_path)
        mk = ws.root / "mkdocs.yml"
        if not mk.exists():
            mk.write_text(MKDOCS_TEMPLATE.format(name=ws.settings.site.name), encoding="utf-8")
            created.append("mkdocs.yml")
        for d in (ws.state_dir, ws.index_dir, ws.cache_dir, ws.runs_dir):
            d.mkdir(parents=True, exist_ok=True)
        if not ws.exists:
            Vault.create(ws.vault_dir)
            created.append("vault/")
        gi = ws.root / ".gitignore"
        if not gi.exists() and not (ws.root / ".git").exists():
            gi.write_text("vault/\nsite/\npdfs/\n.papervault/\n", encoding="utf-8")
            created.append(".gitignore")
        return ws, created
