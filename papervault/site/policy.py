"""The page policy: a Content-Security-Policy in every page of the site, as a `<meta http-equiv>` (it works opened
from disk, where no server sends headers).

The policy lets a page run only the site's own script files and the theme's own inline scripts (listed by
their SHA-256, computed from each finished page outside its Markdown body), load styles, fonts and images only
from the site (`data:` images and fonts for the theme's icons), start workers and frames only from the site, and
connect nowhere else. Text from papers, bibliographies and shared vaults is already sanitised before it reaches a
page (sanitize.py); the policy is the second line: what slips past the sanitiser still cannot run script or
reach another host.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from mkdocs.plugins import BasePlugin

_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.S | re.I)
_SRC = re.compile(r"""\ssrc\s*=""", re.I)
_TYPE = re.compile(r"""\stype\s*=\s*["']?([^"'\s>]+)""", re.I)
_JS_TYPES = {"", "text/javascript", "application/javascript", "module", "text/ecmascript"}
_HEAD = re.compile(r"<head\b[^>]*>", re.I)
_CHARSET = re.compile(r"<meta\s+charset=[^>]*>", re.I)
CSP_META = "Content-Security-Policy"

# Styles: MathJax writes its SVG stylesheet into a `<style>` element and the theme and MathJax set `style`
# attributes while the page runs, so inline styles are allowed; CSS can still fetch nothing from elsewhere,
# because images and fonts come only from the site.
DIRECTIVES: dict[str, str] = {
    "default-src": "'none'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "worker-src": "'self'",
    "frame-src": "'self'",
    "manifest-src": "'self'",
    "media-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
}


def script_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


def inline_scripts(html: str) -> list[str]:
    """The text of every inline script element that a browser would run (not `src=`, not JSON data)."""
    out = []
    for m in _SCRIPT.finditer(html):
        attrs, body = m.group(1), m.group(2)
        if _SRC.search(attrs):
            continue
        t = _TYPE.search(attrs)
        if t and t.group(1).lower() not in _JS_TYPES:
            continue
        out.append(body)
    return out


def policy(script_hashes: list[str] | None = None, *, live: bool = False) -> str:
    """The policy's text. `live` (the `site serve` preview, whose live reload is an inline script mkdocs writes
    anew into every response) allows inline scripts instead of listing their hashes."""
    d = dict(DIRECTIVES)
    if live:
        d["script-src"] += " 'unsafe-inline'"
    elif script_hashes:
        d["script-src"] += " " + " ".join(dict.fromkeys(script_hashes))
    return "; ".join(f"{k} {v}" for k, v in d.items())


def with_policy(html: str, content: str | None = None, *, live: bool = False) -> str:
    """`html` (a whole page) with the policy as the first element of its head (after `<meta charset>`).

    The theme's inline scripts are allowed by hash; those inside `content` (the page's rendered Markdown, which
    holds none once sanitised) are not, so a script that slipped into the body would still not run."""
    if CSP_META.lower() in html[:4096].lower():
        return html
    theme_part = html
    if content and content.strip():
        theme_part = html.replace(content, "")
    meta = f'<meta http-equiv="{CSP_META}" content="{policy([script_hash(s) for s in inline_scripts(theme_part)], live=live)}">'
    head = _HEAD.search(html)
    if not head:
        return html
    charset = _CHARSET.search(html, head.end(), head.end() + 1024)
    at = charset.end() if charset else head.end()
    return html[:at] + meta + html[at:]


class PagePolicy(BasePlugin):
    """Adds the policy to every page and template page (404.html) mkdocs renders; added to the loaded
    configuration by `site build` and `site serve` (site/build.py), after every other plugin."""

    def __init__(self, live: bool = False):
        super().__init__()
        self.live = live

    def on_post_page(self, output: str, page: Any, config: Any) -> str:
        return with_policy(output, getattr(page, "content", None), live=self.live)

    def on_post_template(self, output_content: str, template_name: str, config: Any) -> str:
        if not template_name.endswith(".html"):
            return output_content
        return with_policy(output_content, live=self.live)
