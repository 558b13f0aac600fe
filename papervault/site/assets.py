"""Static assets the site serves itself (no CDN): MathJax from the `django-static-mathjax` wheel, our CSS/JS."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from papervault.errors import SiteError

# The parts of MathJax's es5 build that a page typesetting TeX into SVG loads: the combined component,
# the TeX extensions it autoloads (\boldsymbol, \require ...) and the menu. SVG draws glyphs as paths, so no web
# fonts load (CommonHTML output left glyphs blank in headless Chromium here: its per-glyph CSS never applied).
MATHJAX_PARTS = ("tex-svg.js", "input/tex/extensions", "ui", "a11y/assistive-mml.js")


def mathjax_root() -> Path:
    """The es5 folder of the MathJax 3 files shipped in the `django-static-mathjax` wheel (no Django needed)."""
    spec = importlib.util.find_spec("mathjax")
    if spec is None or not spec.submodule_search_locations:
        raise SiteError("MathJax files not found", fix="pip install django-static-mathjax (a papervault dependency)")
    root = Path(list(spec.submodule_search_locations)[0]) / "static" / "mathjax" / "es5"
    if not (root / "tex-svg.js").is_file():
        raise SiteError(f"MathJax files incomplete at {root}", fix="pip install --force-reinstall django-static-mathjax")
    return root


def mathjax_assets(prefix: str = "assets/mathjax") -> dict[str, Path]:
    root = mathjax_root()
    out: dict[str, Path] = {}
    for part in MATHJAX_PARTS:
        p = root / part
        files = [p] if p.is_file() else sorted(f for f in p.rglob("*") if f.is_file())
        for f in files:
            out[f"{prefix}/{f.relative_to(root).as_posix()}"] = f
    return out


def theme_assets(template_dirs: list[Path], prefix: str = "assets/papervault") -> dict[str, Path]:
    """`templates/site/assets/*` (CSS, JS), a workspace's own copy winning over the project's."""
    out: dict[str, Path] = {}
    for d in reversed(template_dirs):     # later (higher priority) directories overwrite earlier ones
        a = d / "assets"
        if a.is_dir():
            for f in sorted(a.rglob("*")):
                if f.is_file():
                    out[f"{prefix}/{f.relative_to(a).as_posix()}"] = f
    return out
