"""Build or serve the vault as a static site: stage the pages in `.papervault/site-src/`, then run mkdocs.

Why a staging folder rather than mkdocs hooks: hooks are an MkDocs-only mechanism that Zensical does not run,
while a folder of plain Markdown is what every builder of `mkdocs.yml` reads (see docs/site.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable

import yaml

from papervault.errors import SiteError
from papervault.registry import SITE_ENGINES
from papervault.hashing import file_sha256
from papervault.site import zensical
from papervault.site.assets import mathjax_assets, theme_assets
from papervault.site.policy import PagePolicy
from papervault.site.sanitize import SanitizeExtension
from papervault.site.stage import (NEIGHBOURHOOD_SVG, RENDER_CACHE_VERSION, RenderCache, plan_site, read_vault,
                                   write_stage)
from papervault.templating import search_path
from papervault.workspace import MKDOCS_TEMPLATE, Workspace

CONFIG_NAME = "mkdocs.site.yml"


def stage_dir(ws: Workspace) -> Path:
    return ws.state_dir / "site-src"


def template_dirs(ws: Workspace) -> list[Path]:
    """The workspace's `templates/site` (if any) before the project's own."""
    return search_path("site", ws.root)




@dataclass(frozen=True)
class SiteEngine:
    """What turns the staged site into `site/`: `build(ws, strict=, whats_new=)` returns what `build_site`
    reports. Engines are found in the registry (`papervault.registry.SITE_ENGINES`, the entry-point group
    `papervault.site_engines`); the built-ins below are its entry points in pyproject.toml."""

    name: str
    build: Callable[..., dict[str, Any]]
    description: str = ""


def engine_names() -> tuple[str, ...]:
    """Every registered site engine, the built-ins first."""
    return SITE_ENGINES.names()


def stage(ws: Workspace, whats_new: dict | None = None, engine: str = "mkdocs") -> dict[str, Any]:
    """Write the site's sources and the configuration of `engine` (mkdocs or zensical); returns what was staged.
    `whats_new` (what `papervault changes --since 7d` answers) adds the "What's new" page."""
    ws.require()
    settings = ws.settings.site
    dirs = template_dirs(ws)
    snap = read_vault(ws.vault_dir, include_pdfs=settings.include_pdfs, pdf_store=ws.pdf_dir)
    cache_file, render_file = ws.cache_dir / GRAPH_CACHE, ws.cache_dir / RENDER_CACHE
    plan = plan_site(snap, site_name=settings.name, template_dirs=dirs, whats_new=whats_new,
                     graph_cache=_read_json(cache_file), render_cache=_render_cache(ws, _read_json(render_file)))
    _write_json(cache_file, plan.graph_cache)
    _write_json(render_file, _saved_render_cache(plan.render_cache))
    assets = {**mathjax_assets(), **theme_assets(dirs)}
    changes = write_stage(plan, stage_dir(ws), assets)
    config_path = write_config(ws, plan.nav, plan.not_in_nav)
    if engine == "zensical":
        config_path = write_zensical_config(ws, plan.nav, plan.not_in_nav)
    return {"config": config_path, "pages": len(plan.pages), "papers": len(snap.papers),
            "surveys": len(snap.surveys), "warnings": plan.warnings, "timings": plan.timings,
            "graph_reused": plan.graph_reused, "render_reused": plan.render_cache.hits, **changes}


# The citation graph's edges per paper, keyed by the content hash of its full text (site/citemap.py): derived
# state, rebuilt when missing or unreadable.
GRAPH_CACHE = "site-graph.json"


# What staging derives from content alone (stage.RenderCache): each full text's page anchors, and for each
# neighbourhood drawing the key of what was sanitised and the hash of the staged file that holds the result.
RENDER_CACHE = "site-pages.json"


def _render_cache(ws: Workspace, data: dict | None) -> RenderCache:
    """The previous build's `RenderCache`: a drawing counts only while its staged file still holds exactly what
    was written (its SHA-256), and only at a path a neighbourhood drawing has."""
    cache = RenderCache()
    if not isinstance(data, dict) or data.get("version") != RENDER_CACHE_VERSION:
        return cache
    if isinstance(data.get("anchors"), dict):
        cache.old_anchors = data["anchors"]
    src = stage_dir(ws)
    for target, entry in (data.get("svg") or {}).items() if isinstance(data.get("svg"), dict) else ():
        if not (isinstance(target, str) and NEIGHBOURHOOD_SVG.fullmatch(target) and isinstance(entry, list)
                and len(entry) == 2 and all(isinstance(x, str) for x in entry)):
            continue
        path = src / target
        try:
            if path.is_symlink() or not path.is_file():
                continue
            text = path.read_bytes()
        except OSError:
            continue
        if hashlib.sha256(text).hexdigest() == entry[1]:
            cache.old_svg[entry[0]] = text.decode("utf-8")
    return cache


def _saved_render_cache(cache: RenderCache) -> dict:
    return {"version": RENDER_CACHE_VERSION, "anchors": cache.anchors,
            "svg": {target: [key, hashlib.sha256(clean.encode("utf-8")).hexdigest()]
                    for target, (key, clean) in cache.svg.items()}}


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict) -> None:
    """Written whole beside, then renamed: a build stopped halfway leaves the previous file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    os.replace(tmp, path)


def _overrides(ws: Workspace, nav: list[Any], not_in_nav: list[str]) -> dict[str, Any]:
    """What papervault sets over the workspace's mkdocs.yml, for either engine."""
    return {
        "docs_dir": str(stage_dir(ws)),
        "site_dir": str(ws.site_dir),
        "not_in_nav": "\n".join(not_in_nav) + "\n",
        # Opened from disk (file://) a folder URL shows a directory listing: every page is `x.html`.
        "use_directory_urls": False,
        # The offline plugin inlines the search index into a script; its Worker shim is the site's own file.
        "extra": {"polyfills": [OFFLINE_SHIM]},
        "nav": nav,
    }


def write_config(ws: Workspace, nav: list[Any], not_in_nav: list[str]) -> Path:
    """`.papervault/mkdocs.site.yml`: the workspace's mkdocs.yml (inherited as-is) with docs_dir pointing at the
    staging folder and the generated navigation, unless the user wrote a `nav:` of their own."""
    user = ws.root / "mkdocs.yml"
    overrides = _overrides(ws, nav, not_in_nav)
    if user.is_file():
        if _has_nav(user):
            del overrides["nav"]
        overrides["plugins"] = offline_plugins(_user_plugins(user))
        text = yaml.safe_dump({"INHERIT": str(user)}, allow_unicode=True)
        text += yaml.safe_dump(overrides, allow_unicode=True, sort_keys=False, width=1000)
    else:
        text = MKDOCS_TEMPLATE.format(name=ws.settings.site.name)
        base = yaml.safe_load(text)
        overrides["plugins"] = offline_plugins(base.get("plugins"))
        overrides["extra"] = {**base.get("extra", {}), **overrides["extra"]}
        base.update(overrides)
        text = yaml.safe_dump(base, allow_unicode=True, sort_keys=False, width=1000)
    path = ws.state_dir / CONFIG_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def write_zensical_config(ws: Workspace, nav: list[Any], not_in_nav: list[str]) -> Path:
    """`.papervault/zensical.site.yml`: one self-contained file (no INHERIT) with relative paths, the same
    overrides as mkdocs.site.yml plus the page policy's Markdown rules (site/zensical.py)."""
    user = ws.root / "mkdocs.yml"
    overrides = _overrides(ws, nav, not_in_nav)
    if user.is_file():
        base = user.read_text(encoding="utf-8")
        overrides["plugins"] = offline_plugins(_user_plugins(user))
    else:
        base = MKDOCS_TEMPLATE.format(name=ws.settings.site.name)
        overrides["plugins"] = offline_plugins(yaml.safe_load(base).get("plugins"))
    return zensical.write_config(ws.state_dir, base, overrides, keep_nav=user.is_file() and _has_nav(user),
                                 untrusted=UNTRUSTED_EXTENSIONS)


OFFLINE_SHIM = "assets/papervault/iframe-worker.js"


def offline_plugins(plugins: Any) -> list[Any]:
    """The user's plugin list (mkdocs' default `search` when there is none) with mkdocs-material's `offline`
    plugin added: written whole, because an inherited list is replaced, not extended."""
    if isinstance(plugins, dict):
        plugins = [{k: v} if v is not None else k for k, v in plugins.items()]
    out = list(plugins) if isinstance(plugins, list) else ["search"]
    names = {p if isinstance(p, str) else next(iter(p), "") for p in out if isinstance(p, (str, dict))}
    if "offline" not in names and "material/offline" not in names:
        out.append("offline")
    return out


class _TolerantLoader(yaml.SafeLoader):
    """Reads a mkdocs.yml that holds mkdocs' own tags (`!ENV`, `!relative`, `!!python/name:`) as plain values."""


_TolerantLoader.add_multi_constructor("", lambda loader, suffix, node: (
    loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else
    loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode) else loader.construct_mapping(node)))


def _user_plugins(path: Path) -> Any:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_TolerantLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise SiteError(f"cannot read {path}: {exc}", fix="fix the YAML of mkdocs.yml (see docs/site.md)") from None
    return data.get("plugins") if isinstance(data, dict) else None


def _has_nav(path: Path) -> bool:
    # The user's file may hold tags (`!ENV`, `!!python/name:`) that a safe loader refuses; a line test is enough.
    return any(line.startswith("nav:") for line in path.read_text(encoding="utf-8").splitlines())


class _Collect(logging.Handler):
    """Keeps mkdocs' warnings so the caller can report them (mkdocs would otherwise print to stderr)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def site_engine(ws: Workspace, engine: str | None = None) -> str:
    """The engine asked for (`--engine`), else `[site] engine`; a name that is neither is a SiteError."""
    name = (engine or ws.settings.site.engine or "mkdocs").lower()
    names = engine_names()
    if name not in names:
        either = " or ".join(filter(None, [", ".join(names[:-1]), names[-1] if names else ""]))
        raise SiteError(f"unknown site engine {name!r}", fix=f"use {either} (see docs/site.md)")
    return name


def build_site(ws: Workspace, *, strict: bool = False, whats_new: dict | None = None,
               engine: str | None = None) -> dict[str, Any]:
    """Build `site/` from the vault. Returns pages, papers, surveys, seconds, site_dir, warnings, engine.

    With `strict`, any warning of the engine (a broken link, a missing figure) fails the build with SiteError.
    `engine`: "mkdocs" (mkdocs-material, the default) or "zensical"; None reads `[site] engine`.
    """
    engine = site_engine(ws, engine)
    return SITE_ENGINES.get(engine).build(ws, strict=strict, whats_new=whats_new)


def _build_mkdocs(ws: Workspace, *, strict: bool, whats_new: dict | None) -> dict[str, Any]:
    # deferred: mkdocs's build machinery (its plugins and theme loading) is needed only by a build, not by
    # every command that imports the site package
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort, ConfigurationError

    t0 = time.monotonic()
    _quiet_jieba()
    staged = stage(ws, whats_new)
    stamp = _stamp(ws, "mkdocs", staged)
    same = _unchanged(ws, stamp, staged, strict)
    if same is not None:
        return _result(ws, staged, t0, "mkdocs", same, unchanged=True)
    (ws.cache_dir / BUILT_STAMP).unlink(missing_ok=True)
    handler = _Collect()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(handler)
    try:
        cfg = with_sanitiser(load_config(config_file=str(staged["config"]), strict=strict))
        build(cfg)
    except ConfigurationError as exc:
        raise SiteError(f"mkdocs configuration: {exc}", fix=f"fix {ws.root / 'mkdocs.yml'} (see docs/site.md)") from None
    except Abort as exc:
        first = handler.messages[0] if handler.messages else str(exc)
        raise SiteError(f"site build failed in strict mode ({len(handler.messages)} warnings; first: {first})",
                        fix="fix the pages named, or build without --strict") from None
    finally:
        logger.removeHandler(handler)
    _built(ws, stamp, handler.messages)
    return _result(ws, staged, t0, "mkdocs", handler.messages, unchanged=False)


def _build_zensical(ws: Workspace, *, strict: bool, whats_new: dict | None) -> dict[str, Any]:
    t0 = time.monotonic()
    staged = stage(ws, whats_new, engine="zensical")
    stamp = _stamp(ws, "zensical", staged)
    same = _unchanged(ws, stamp, staged, strict)
    if same is not None:
        return _result(ws, staged, t0, "zensical", same, unchanged=True)
    (ws.cache_dir / BUILT_STAMP).unlink(missing_ok=True)
    built = zensical.build(ws.state_dir, ws.site_dir, staged["config"], strict=strict)
    _built(ws, stamp, built["warnings"])
    return _result(ws, staged, t0, "zensical", built["warnings"], unchanged=False)


MKDOCS = SiteEngine("mkdocs", _build_mkdocs, "mkdocs-material (the default)")
ZENSICAL = SiteEngine("zensical", _build_zensical, "Zensical, in a process of its own")


def _result(ws: Workspace, staged: dict[str, Any], t0: float, engine: str, warnings: list[str], *,
            unchanged: bool) -> dict[str, Any]:
    """What a build reports: pages, papers, surveys, seconds, site_dir, warnings (staging's and the engine's),
    engine, and whether site/ was left as the last build made it (`unchanged`)."""
    return {"pages": staged["pages"], "papers": staged["papers"], "surveys": staged["surveys"],
            "seconds": round(time.monotonic() - t0, 2), "site_dir": str(ws.site_dir),
            "warnings": staged["warnings"] + list(warnings), "engine": engine, "unchanged": unchanged}


# The last build's stamp (`.papervault/cache/site-built.json`): what it was built from and what it left in
# site/. A build whose sources are the same (nothing staged changed, the same configuration, templates and
# engine versions) and whose site/ nobody touched since is not run again: an unchanged vault's site is current
# in the time staging takes. The stamp is removed before a build and written after it succeeds, so a failed or
# interrupted build is always run again.
BUILT_STAMP = "site-built.json"
_ENGINE_PACKAGES = {"mkdocs": ("papervault", "mkdocs", "mkdocs-material"), "zensical": ("papervault", "zensical")}


def _stamp(ws: Workspace, engine: str, staged: dict[str, Any]) -> dict[str, Any]:
    def ver(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return ""

    user = ws.root / "mkdocs.yml"
    return {"engine": engine, "versions": {n: ver(n) for n in _ENGINE_PACKAGES[engine]},
            "config": hashlib.sha256(Path(staged["config"]).read_bytes()).hexdigest(),
            "user_config": hashlib.sha256(user.read_bytes()).hexdigest() if user.is_file() else "",
            "templates": [[str(d), *vault_signature(d)] for d in template_dirs(ws) if d.is_dir()]}


def _unchanged(ws: Workspace, stamp: dict[str, Any], staged: dict[str, Any], strict: bool) -> list[str] | None:
    """The last build's engine warnings when `site/` is current for these sources, else None (build)."""
    if staged.get("written") or staged.get("linked") or staged.get("removed"):
        return None
    last = _read_json(ws.cache_dir / BUILT_STAMP)
    if not isinstance(last, dict) or last.get("stamp") != stamp:
        return None
    if not (ws.site_dir / "index.html").is_file() or not _same_files(ws.site_dir, last.get("files")):
        return None
    warnings = [str(w) for w in last.get("warnings") or []]
    if strict and warnings:
        return None                 # strict fails on the warnings: the build runs and says so
    return warnings


def _built(ws: Workspace, stamp: dict[str, Any], warnings: list[str]) -> None:
    files = {rel: [*st, file_sha256(path)] for rel, path, st in _site_files(ws.site_dir)}
    _write_json(ws.cache_dir / BUILT_STAMP, {"stamp": stamp, "files": files, "warnings": list(warnings)})


# What the last build left in site/ is known by content: each file's sha256 with its size, mtime and ctime. A
# file whose stat is as the build left it is taken as it was (its ctime moves with any write, and no program can
# set it back, as `touch` sets an mtime back); any other file is hashed, and only other bytes build again. So a
# page edited and its mtime restored is built again, a site copied or touched is not, and an unchanged site costs
# one stat per file, as before.

def _site_files(root: Path):
    """(relative path, path, [size, mtime_ns, ctime_ns]) of each file under `root`, hidden folders left out."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            yield os.path.relpath(path, root), path, [st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _same_files(root: Path, files: Any) -> bool:
    """Whether `root` holds exactly the files the last build recorded (`files`), with the same bytes."""
    if not isinstance(files, dict):
        return False
    count = 0
    for rel, path, st in _site_files(root):
        count += 1
        was = files.get(rel)
        if not isinstance(was, list) or len(was) != 4:
            return False
        if st != was[:3]:
            try:
                if st[0] != was[0] or file_sha256(path) != was[3]:
                    return False
            except OSError:
                return False
    return count == len(files)


def with_sanitiser(cfg, *, live: bool = False):
    """The loaded mkdocs configuration with papervault's page policy (docs/site.md, "The page policy"):

    - papervault's HTML sanitiser as the last Markdown extension;
    - no `attr_list`: every page holds text from papers, bibliographies or shared vaults, and attr_list would let
      that text set ids, classes and attributes (`**x**{: #__config}` would replace the theme's configuration);
    - the Content-Security-Policy of site/policy.py in every page (`live`: the `site serve` preview).

    Added to the loaded configuration rather than written into the staged mkdocs.site.yml, because that file
    inherits the user's mkdocs.yml, whose `markdown_extensions` list an override would replace, not extend.
    """
    cfg.markdown_extensions[:] = [e for e in cfg.markdown_extensions
                                  if e not in UNTRUSTED_EXTENSIONS and not isinstance(e, SanitizeExtension)]
    for name in UNTRUSTED_EXTENSIONS:
        cfg.mdx_configs.pop(name, None)
    cfg.markdown_extensions.append(SanitizeExtension())
    if "papervault-page-policy" not in cfg.plugins:
        cfg.plugins["papervault-page-policy"] = PagePolicy(live=live)
    return cfg


# Markdown extensions a page of the site never gets: each lets the text it renders set attributes.
UNTRUSTED_EXTENSIONS = frozenset({"attr_list", "markdown.extensions.attr_list"})


def _quiet_jieba() -> None:
    # The search plugin segments Chinese with jieba, which announces loading its dictionary on stderr.
    try:
        import jieba  # deferred and optional: only the search plugin's Chinese segmentation loads it
    except ImportError:
        return
    jieba.setLogLevel(logging.WARNING)


def vault_signature(root: Path) -> tuple[int, int]:
    """A cheap fingerprint of the vault (file count, newest mtime) to notice edits without inotify."""
    count = newest = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        newest = max(newest, os.stat(dirpath).st_mtime_ns)
        for name in filenames:
            count += 1
            try:
                newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime_ns)
            except FileNotFoundError:
                pass
    return count, newest


def serve_site(ws: Workspace, *, host: str = "127.0.0.1", port: int = 8000, interval: float = 1.0,
               open_browser: bool = False) -> None:
    """Live preview: mkdocs serve over the staging folder, re-staged whenever the vault changes."""
    # deferred: mkdocs's live server (and its file watcher) is needed only by `site serve`
    import mkdocs.commands.serve as mkdocs_serve
    from mkdocs.config import load_config

    # mkdocs serve loads the configuration again before every rebuild; each load gets the sanitiser too.
    mkdocs_serve.load_config = lambda *a, **kw: with_sanitiser(load_config(*a, **kw), live=True)
    serve = mkdocs_serve.serve
    _quiet_jieba()
    staged = stage(ws)
    stop = threading.Event()

    def watch() -> None:
        sig = vault_signature(ws.vault_dir)
        while not stop.wait(interval):
            now = vault_signature(ws.vault_dir)
            if now != sig:
                sig = now
                try:
                    stage(ws)   # rewrites only changed pages; mkdocs serve sees them and rebuilds
                except Exception as exc:  # a half-saved note must not kill the preview
                    logging.getLogger("papervault.site").warning("staging failed: %s", exc)

    t = threading.Thread(target=watch, name="papervault-site-watch", daemon=True)
    t.start()
    try:
        serve(config_file=str(staged["config"]), dev_addr=f"{host}:{port}", livereload=True,
              open_in_browser=open_browser)
    finally:
        stop.set()
        mkdocs_serve.load_config = load_config
