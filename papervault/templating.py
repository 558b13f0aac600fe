"""Where templates come from: the package's own (`papervault.templates`, shipped from the top-level `templates/`
folder as package data) under a workspace's `templates/` overrides. The one place templates are located.

`pyproject.toml` maps the package `papervault.templates` to `templates/`, so an installed wheel carries them
and `importlib.resources` finds them. A source checkout run without installing (PYTHONPATH pointing at it) has
no such package; there the checkout's `templates/` folder beside `papervault/` is the same content.
"""

from __future__ import annotations

import hashlib
import importlib.resources
from pathlib import Path
from typing import Any, Iterable

import jinja2

from papervault.errors import WorkspaceError
from papervault import pages as _pages
from papervault.vault import paper as paper_md

PACKAGE = "papervault.templates"

# Functions every template may call. `page_link(page=N)` is the link to page N of the paper's full text from
# its note (`paper.md#page-N`); templates never write that fragment by hand (tests/test_paper_md.py checks).
# `printed_page(labels, N)` is the printed page of PDF page N (`papervault.pages.printed`): what a reader is shown.
GLOBALS: dict[str, Any] = {"page_link": paper_md.page_link, "printed_page": _pages.printed}


def builtin_dir() -> Path:
    """The folder of the shipped templates (inside site-packages for an install)."""
    try:
        root = importlib.resources.files(PACKAGE)
    except ModuleNotFoundError:
        root = Path(__file__).resolve().parents[1] / "templates"
    if isinstance(root, Path):
        path = root
    else:
        # templates/ has no __init__.py, so the installed package is a namespace package and `files` gives a
        # MultiplexedPath over its one folder: a file inside it leads to that folder
        path = Path(str(root.joinpath("note.md.j2"))).parent
    if not path.is_dir():
        raise WorkspaceError(f"the built-in templates are missing ({path})",
                             fix="reinstall papervault (the wheel ships them as package data)")
    return path


def search_path(sub: str = "", workspace_root: Path | None = None, *, extra: Iterable[Path | None] = ()) -> list[Path]:
    """Folders to look templates up in, first match wins: `extra`, the workspace's `templates/<sub>`, built-in."""
    dirs = [Path(d) for d in extra if d is not None]
    builtin = builtin_dir() / sub if sub else builtin_dir()
    if workspace_root is not None:
        own = Path(workspace_root) / "templates"
        own = own / sub if sub else own
        # the repository root is itself a workspace: its templates/ is the built-in set, not an override
        if own.resolve() != builtin.resolve():
            dirs.append(own)
    dirs.append(builtin)
    seen: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in [s.resolve() for s in seen]:
            seen.append(d)
    return seen


def environment(sub: str = "", workspace_root: Path | None = None, *, extra: Iterable[Path | None] = (),
                sources: dict[str, str] | None = None, **options: Any) -> jinja2.Environment:
    """A Jinja2 environment over `search_path(sub, workspace_root)`, `sources` (template texts by name) before
    them; `options` are Jinja2's. Every template sees the globals of `GLOBALS`."""
    dirs = search_path(sub, workspace_root, extra=extra)
    options.setdefault("autoescape", False)
    options.setdefault("keep_trailing_newline", True)
    loader: jinja2.BaseLoader = jinja2.FileSystemLoader([str(d) for d in dirs])
    if sources is not None:
        loader = jinja2.ChoiceLoader([jinja2.DictLoader(dict(sources)), loader])
    env = jinja2.Environment(loader=loader, **options)
    env.globals.update(GLOBALS)
    return env


def find(rel: str, sub: str = "", workspace_root: Path | None = None, *, extra: Iterable[Path | None] = ()) -> Path | None:
    """The file `rel` that wins (an override before the built-in one), or None."""
    for d in search_path(sub, workspace_root, extra=extra):
        if (d / rel).is_file():
            return d / rel
    return None


def files(sub: str, workspace_root: Path | None = None, *, pattern: str = "*") -> dict[str, Path]:
    """Every template file under `<sub>` by its relative name, each the copy that wins."""
    out: dict[str, Path] = {}
    for d in reversed(search_path(sub, workspace_root)):     # later (higher priority) folders overwrite
        for f in sorted(d.rglob(pattern)):
            if f.is_file():
                out[f.relative_to(d).as_posix()] = f
    return out


def digest(sub: str, workspace_root: Path | None = None, *, pattern: str = "*.j2",
           names: Iterable[str] | None = None) -> str:
    """A hash of the templates under `<sub>` (only `names`, if given) that are actually rendered (a workspace's
    override replaces the built-in file of the same name): a cache keyed on it re-runs when a user edits one."""
    h = hashlib.sha256()
    wanted = set(names) if names is not None else None
    for rel, path in sorted(files(sub, workspace_root, pattern=pattern).items()):
        if wanted is not None and rel not in wanted:
            continue
        h.update(rel.encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]
