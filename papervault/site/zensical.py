"""Building the staged site with Zensical (`papervault site build --engine zensical`, `[site] engine`).

Zensical, mkdocs-material's successor, reads `mkdocs.yml`, but it wants both `docs_dir` and `site_dir` inside
the folder of its configuration file, and its `INHERIT` does not take the absolute paths papervault's mkdocs
configuration uses. So papervault writes one self-contained `.papervault/zensical.site.yml`: the workspace's
`mkdocs.yml` (its YAML tags kept as written) with the same overrides as the mkdocs configuration, and relative
paths: `docs_dir: site-src` (the same staging folder) and `site_dir: zensical-site`. Zensical builds there, in
its own process; papervault then publishes that folder into `site/`, and on the way:

- adds the page policy's Content-Security-Policy to every HTML page (site/policy.py: the theme's inline
  scripts allowed by hash, none from a page's Markdown body), which mkdocs gets from a plugin Zensical does
  not run;
- segments Chinese in the search index with jieba, as mkdocs-material's search plugin does at build time.

The Markdown of every page goes through papervault's sanitiser (a Markdown extension, which Zensical runs),
and `attr_list` is removed from the extensions, as for mkdocs.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from papervault.errors import SiteError
from papervault.site.policy import with_policy

CONFIG_NAME = "zensical.site.yml"
OUTPUT_DIR = "zensical-site"
SANITISER = "papervault.site.sanitize"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# The theme's page body: the rendered Markdown of the page sits in this element.
_ARTICLE = re.compile(r'<article class="md-content__inner[^"]*">.*</article>', re.S)


def available() -> bool:
    return importlib.util.find_spec("zensical") is not None


def _node(value: Any) -> yaml.Node:
    return yaml.compose(yaml.safe_dump(value, allow_unicode=True, width=1000))


def _key(item: yaml.Node) -> str:
    """The name of a list item of `plugins:` or `markdown_extensions:` (a word, or a one-key mapping)."""
    if isinstance(item, yaml.ScalarNode):
        return str(item.value)
    if isinstance(item, yaml.MappingNode) and item.value:
        return str(item.value[0][0].value)
    return ""


def config_text(base: str, overrides: dict[str, Any], *, keep_nav: bool, untrusted: frozenset[str]) -> str:
    """`base` (the text of a mkdocs.yml) with `overrides` set at the top level, composed as YAML nodes so the
    user's tags (`!ENV`, `!!python/name:`) stay as written for Zensical's loader; `extra` is merged key by key,
    the Markdown extensions lose `untrusted` ones and gain papervault's sanitiser, last."""
    root = yaml.compose(base) if base.strip() else None
    if not isinstance(root, yaml.MappingNode):
        root = yaml.MappingNode("tag:yaml.org,2002:map", [])
    entries = {k.value: i for i, (k, _) in enumerate(root.value) if isinstance(k, yaml.ScalarNode)}

    def put(key: str, node: yaml.Node) -> None:
        if key in entries:
            root.value[entries[key]] = (root.value[entries[key]][0], node)
        else:
            entries[key] = len(root.value)
            root.value.append((yaml.ScalarNode("tag:yaml.org,2002:str", key), node))

    for key, value in overrides.items():
        if key == "nav" and keep_nav and "nav" in entries:
            continue
        if key == "extra" and "extra" in entries and isinstance(root.value[entries["extra"]][1], yaml.MappingNode):
            extra = root.value[entries["extra"]][1]
            have = {k.value: i for i, (k, _) in enumerate(extra.value)}
            for k, v in value.items():
                pair = (yaml.ScalarNode("tag:yaml.org,2002:str", k), _node(v))
                if k in have:
                    extra.value[have[k]] = pair
                else:
                    extra.value.append(pair)
            continue
        put(key, _node(value))
    exts = root.value[entries["markdown_extensions"]][1] if "markdown_extensions" in entries else None
    if not isinstance(exts, yaml.SequenceNode):
        exts = yaml.SequenceNode("tag:yaml.org,2002:seq", [])
        put("markdown_extensions", exts)
    exts.value = [e for e in exts.value if _key(e) not in untrusted and _key(e) != SANITISER]
    exts.value.append(yaml.ScalarNode("tag:yaml.org,2002:str", SANITISER))
    return yaml.serialize(root, allow_unicode=True, width=1000)


def write_config(state_dir: Path, base: str, overrides: dict[str, Any], *, keep_nav: bool,
                 untrusted: frozenset[str]) -> Path:
    """`.papervault/zensical.site.yml`, rewritten only when its text changes."""
    text = config_text(base, {**overrides, "docs_dir": "site-src", "site_dir": OUTPUT_DIR},
                       keep_nav=keep_nav, untrusted=untrusted)
    path = state_dir / CONFIG_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def warnings_of(output: str) -> list[str]:
    """Zensical's warnings as one line each: `ideas.md:8:8: page does not exist: papers/nobody/note.md` (the
    location, the message, and the text the warning points at, read from the source line it quotes)."""
    out: list[str] = []
    lines = [_ANSI.sub("", line) for line in output.splitlines()]
    for i, line in enumerate(lines):
        if not line.startswith("Warning:"):
            continue
        what = line[len("Warning:"):].strip()
        where, at = "", ""
        for follow in lines[i + 1:i + 5]:
            m = re.search(r"\[\s*(\S+?):(\d+):(\d+)\s*\]", follow)
            if m and not where:
                where, col = f"{m.group(1)}:{m.group(2)}:{m.group(3)}", int(m.group(3))
                continue
            q = re.match(r"\s*\d+\s*│ ?(.*)$", follow)
            if q and where:
                at = re.split(r"[)\]\s]", q.group(1)[col - 1:], maxsplit=1)[0]
                break
        out.append(": ".join(x for x in (where, what, at) if x))
    return out


def run(config: Path, *, strict: bool) -> list[str]:
    """Zensical's build of `config` in its own process (it prints its progress, which `--json` must not get);
    returns its warnings. A failed build is a SiteError naming the first problem."""
    if not available():
        raise SiteError("Zensical is not installed", fix="pip install zensical (a papervault dependency)")
    cmd = [sys.executable, "-m", "zensical", "build", "-f", str(config)] + (["--strict"] if strict else [])
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.run(cmd, cwd=config.parent, capture_output=True, text=True, env=env, timeout=3600)
    output = proc.stdout + "\n" + proc.stderr
    found = warnings_of(output)
    if proc.returncode != 0:
        if strict and "--strict" in output:
            first = found[0] if found else "see the build output"
            raise SiteError(f"site build failed in strict mode ({len(found)} warnings; first: {first})",
                            fix="fix the pages named, or build without --strict")
        last = next((ln for ln in reversed([_ANSI.sub("", x).strip() for x in output.splitlines()]) if ln),
                    "no output")
        raise SiteError(f"Zensical build failed: {last}", fix=f"check {config} (see docs/site.md)")
    return found


def publish(built: Path, site_dir: Path) -> int:
    """Copy Zensical's output into `site_dir` (emptied first), each HTML page with the page policy and the
    search index with Chinese segmented; returns the number of pages."""
    if site_dir.is_symlink() or site_dir.is_file():
        site_dir.unlink()
    elif site_dir.is_dir():
        shutil.rmtree(site_dir)
    pages = 0
    for dirpath, _dirs, files in os.walk(built):
        rel_dir = Path(dirpath).relative_to(built)
        (site_dir / rel_dir).mkdir(parents=True, exist_ok=True)
        for name in files:
            src, dst = Path(dirpath) / name, site_dir / rel_dir / name
            if name.endswith(".html"):
                html = src.read_text(encoding="utf-8")
                m = _ARTICLE.search(html)
                dst.write_text(with_policy(html, m.group(0) if m else None), encoding="utf-8")
                pages += 1
            else:
                shutil.copy2(src, dst)
    segment_search(site_dir)
    return pages


def segment_search(site_dir: Path) -> None:
    """`search.json` and the offline `search.js` with Chinese runs cut into words by zero-width spaces (the
    search separator splits on them), as mkdocs-material's search plugin writes its index."""
    path = site_dir / "search.json"
    if not path.is_file():
        return
    try:
        import jieba  # deferred and optional: loaded only when a site has a search index to segment
    except ImportError:
        return
    jieba.setLogLevel(logging.WARNING)
    han = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")

    def cut(text: str) -> str:
        return han.sub(lambda m: "\u200b".join(w for w in jieba.cut(m.group(0)) if w), text)

    index = json.loads(path.read_text(encoding="utf-8"))
    for item in index.get("items", []):
        for k in ("title", "text"):
            if isinstance(item.get(k), str) and han.search(item[k]):
                item[k] = cut(item[k])
    data = json.dumps(index, ensure_ascii=False, separators=(",", ":"))
    path.write_text(data, encoding="utf-8")
    js = site_dir / "search.js"
    if js.is_file():
        js.write_text(f"var __index = {data};", encoding="utf-8")


def build(ws_state: Path, site_dir: Path, config: Path, *, strict: bool) -> dict[str, Any]:
    t0 = time.monotonic()
    warnings = run(config, strict=strict)
    pages = publish(ws_state / OUTPUT_DIR, site_dir)
    return {"warnings": warnings, "html_pages": pages, "seconds": time.monotonic() - t0}
