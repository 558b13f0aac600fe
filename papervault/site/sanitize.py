"""What keeps text from papers, bibliographies and shared vaults from running script in the site.

Two layers. When the site is staged, every value papervault itself writes into a page (frontmatter, titles,
authors, links) is escaped for its syntax and for HTML, every URL or DOI is checked before it becomes a link,
and HTML tags outside the allow-list in the vault's Markdown are written as text. When mkdocs renders a page, `SanitizeExtension` passes the finished HTML of the page body through an
allow-list sanitiser (nh3): the tags and attributes papervault's pages and the configured Markdown extensions
produce are kept, everything else (`<script>`, `on*=` handlers, `<iframe>`, `javascript:`/`data:` links,
attributes set with `{ ... }` attr_list syntax) is dropped. The table of contents is cleaned the same way,
because the theme prints its entries unescaped. `agent_markdown` (vault/markdown.py) is the MCP server's counterpart: paper text
with every tag but papervault's own anchors and tables shown as text.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any
from urllib.parse import quote, urlsplit

import nh3
from markdown import Extension
from markdown.postprocessors import Postprocessor
from markdown.preprocessors import Preprocessor

# agent_markdown lives in vault/markdown.py (the MCP server uses it too); its name is kept here as well.
from papervault import doi as DOI
from papervault.vault.markdown import agent_markdown, split_code  # noqa: F401

# Tags the pages papervault writes and the Markdown extensions of the default mkdocs.yml produce (headings,
# tables with colspan, figures, footnotes, admonitions, details, code highlighting, task lists, arithmatex).
ALLOWED_TAGS = frozenset("""
    a abbr b bdi bdo blockquote br caption cite code col colgroup dd del details dfn div dl dt em figcaption
    figure h1 h2 h3 h4 h5 h6 hr i img input ins kbd label li mark ol p pre q rp rt ruby s samp small span strong
    sub summary sup table tbody td tfoot th thead time tr u ul var wbr
""".split())
_COMMON = {"id", "class", "title", "lang", "dir", "align"}
ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    "*": _COMMON,
    "a": {"href", "name", "data-page"},     # data-page: the page anchors of a full text
    "img": {"src", "alt", "width", "height", "loading"},
    "td": {"colspan", "rowspan", "style"},
    "th": {"colspan", "rowspan", "style", "scope"},
    "col": {"span"}, "colgroup": {"span"},
    "ol": {"start", "reversed"}, "li": {"value"},
    "input": {"checked", "disabled", "name"},
    "label": {"for"},
    "details": {"open"},
    # the neighbourhood lists of a paper page: left out of the search index (they only name other papers, and a
    # much-cited paper's list is longer than one entry of Zensical's index may be)
    "div": {"data-search-exclude"},
    "time": {"datetime"},
    "abbr": {"title"},
}
ALLOWED_ATTRIBUTE_VALUES = {"input": {"type": {"checkbox", "radio"}}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})

# An id (or `name`, or a label's `for`) in a page body: a letter or digit first, then word characters, `.`,
# `:` or `-`; or the `_N` Python-Markdown's toc gives a heading without letters. The theme's own ids all start
# with `__` (`__config` holds its configuration, which a body element of that id would replace), MathJax's
# with `MJX-`, and the site's scripts read `MathJax` and `IFrameWorker` as globals, which an element id would
# define: none of them can come from a page body.
SAFE_ID = re.compile(r"_\d+|[^\W_][\w.:-]*")
RESERVED_IDS = frozenset({"mathjax", "iframeworker"})
ID_ATTRIBUTES = frozenset({"id", "name", "for"})


def safe_id(value: str) -> bool:
    v = value.strip()
    return bool(SAFE_ID.fullmatch(v)) and v.lower() not in RESERVED_IDS and not v.lower().startswith("mjx-")


def _attribute(tag: str, name: str, value: str) -> str | None:
    if name in ID_ATTRIBUTES:
        return value if safe_id(value) else None
    if name == "class":
        # the theme's classes (`md-*`) style and place its own widgets: a page body does not borrow them
        kept = [c for c in value.split() if not c.lower().startswith(("md-", "mjx-"))]
        return " ".join(kept) or None
    return value


_CLEANER = nh3.Cleaner(
    tags=set(ALLOWED_TAGS), attributes={k: set(v) for k, v in ALLOWED_ATTRIBUTES.items()},
    tag_attribute_values=ALLOWED_ATTRIBUTE_VALUES, url_schemes=set(URL_SCHEMES),
    # no generic `data-*`: the theme's script acts on `data-md-*` attributes
    filter_style_properties={"text-align"}, attribute_filter=_attribute,
    clean_content_tags={"script", "style"}, link_rel=None, strip_comments=True,
)
_TEXT_ONLY = nh3.Cleaner(tags=set(), clean_content_tags={"script", "style"})

# An `<img>` as nh3 writes it (every attribute value double-quoted, `"` inside as `&quot;`).
_IMG = re.compile(r'<img((?:\s+[\w:.-]+(?:="[^"]*")?)*)\s*/?>')
_IMG_ATTR = re.compile(r'([\w:.-]+)="([^"]*)"')
_ABSOLUTE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//|\\\\)", re.I)


def _local_image(m: re.Match) -> str:
    """An image from another host becomes a link to it: viewing a page loads nothing from outside."""
    attrs = dict(_IMG_ATTR.findall(m.group(1)))
    src = attrs.get("src", "")
    if not _ABSOLUTE.match(html.unescape(src)):
        return m.group(0)
    label = attrs.get("alt") or attrs.get("title") or "image"
    return f'<a class="pv-external-image" href="{src}" title="image not loaded: it is on another site">{label}</a>'


def clean_html(fragment: str) -> str:
    """An HTML fragment with only allow-listed tags, attributes and URL schemes (http, https, mailto, relative),
    safe ids only (`safe_id`), no theme classes, and every image from another host turned into a link."""
    return _IMG.sub(_local_image, _CLEANER.clean(fragment))


def clean_text_html(fragment: str) -> str:
    """An HTML fragment reduced to its (escaped) text: for places that print it unescaped, like the toc."""
    return _TEXT_ONLY.clean(fragment)


# --- values papervault writes into pages --------------------------------------------------------

def html_text(value: Any) -> str:
    """One line of text, HTML-escaped (`&`, `<`, `>`, quotes): safe as element text and inside an attribute."""
    return html.escape(" ".join(str(value).split()), quote=True)


def yaml_str(value: Any) -> str:
    """A frontmatter value that YAML reads back as one line of HTML-escaped text; a newline followed by `---`
    can no longer end the frontmatter, and the theme, which prints `title` unescaped, shows the text as written."""
    return json.dumps(html_text(value), ensure_ascii=False)


def md_text(value: Any) -> str:
    """Text that Markdown shows as written: Markdown's own characters backslash-escaped, and `&`, `<`, `>` as
    HTML entities (Python-Markdown cannot backslash-escape `<`, which is how `\\<` ended up in cards)."""
    s = " ".join(str(value).split())
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([\\`*_\[\]|#{}!])", r"\\\1", s)


_URL_BAD = re.compile(r"[\x00-\x20\x7f<>\"'`\\]")


def safe_url(value: Any) -> str | None:
    """An absolute http(s) URL fit for a Markdown link (characters that could end the link percent-encoded),
    or None when `value` is not one (`javascript:`, `data:`, a relative path, a host-less URL, spaces)."""
    if not value:
        return None
    s = str(value).strip()
    if _URL_BAD.search(s):
        return None
    try:
        parts = urlsplit(s)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    return quote(s, safe=":/?#@!$&*+,;=%~-._")


_ARXIV_SAFE = re.compile(r"^(?:\d{4}\.\d{4,5}|[a-z][a-z\-]*/\d{7})(?:v\d+)?$", re.I)


def doi_url(doi: Any) -> str | None:
    """`https://doi.org/<doi>` for a DOI of the shape Crossref recommends, None for anything else."""
    s = str(doi or "").strip()
    return "https://doi.org/" + quote(s, safe="/:;._-") if DOI.SAFE.match(s) else None


def arxiv_url(arxiv: Any) -> str | None:
    s = str(arxiv or "").strip()
    return f"https://arxiv.org/abs/{s}" if _ARXIV_SAFE.match(s) else None


def path_url(path: str) -> str:
    """A relative link to a vault file whose name may hold spaces, brackets or quotes."""
    return quote(path, safe="/#-._~")


# --- Markdown from the vault ---------------------------------------------------------------------

_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)(?=[\s/>])")


def escape_foreign_tags(markdown: str, allowed: frozenset[str] | set[str] = ALLOWED_TAGS) -> str:
    """Markdown whose HTML tags outside `allowed` are shown as text (`&lt;script>`), code left verbatim.

    The sanitiser would drop them, with their content for `<script>`, and an unclosed `<svg>` would take the
    rest of the page with it; a paper about script injection should read as written instead.
    """
    def tag(m: re.Match) -> str:
        return m.group(0) if m.group(2).lower() in allowed else "&lt;" + m.group(1) + m.group(2)

    return "".join(chunk if is_code else _TAG.sub(tag, chunk) for chunk, is_code in split_code(markdown))


# --- the rendering layer --------------------------------------------------------------------------

# A block of HTML a staged page holds between these two lines (papervault writes it: a paper page's citation
# neighbourhood) is set aside as it is, like any raw HTML, but without Python-Markdown's HTML parser going
# through each of its tags (a few hundred on a much-cited paper's page, most of that page's rendering time).
# Like all HTML of a page, it then passes through the sanitiser.
HTML_START, HTML_END = "<!-- papervault:html -->", "<!-- /papervault:html -->"


class _HtmlBlocks(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        if HTML_START not in lines:
            return lines
        out: list[str] = []
        block: list[str] | None = None
        for line in lines:
            if block is None:
                if line == HTML_START:
                    block = []
                else:
                    out.append(line)
            elif line == HTML_END:
                out += ["", self.md.htmlStash.store("\n".join(block)), ""]
                block = None
            else:
                block.append(line)
        if block is not None:       # no end line: the lines stay Markdown
            out += [HTML_START, *block]
        return out


class _Sanitize(Postprocessor):
    def run(self, text: str) -> str:
        for token in _walk(getattr(self.md, "toc_tokens", []) or []):
            token["name"] = clean_text_html(str(token.get("name", "")))
            if "html" in token:
                token["html"] = clean_html(str(token["html"]))
            if token.get("data-toc-label"):
                token["data-toc-label"] = clean_text_html(str(token["data-toc-label"]))
        return clean_html(text)


def _walk(tokens: list[dict]):
    for t in tokens:
        yield t
        yield from _walk(t.get("children") or [])


class SanitizeExtension(Extension):
    """Runs last, on the finished HTML of a page (raw HTML blocks already put back by Python-Markdown)."""

    def extendMarkdown(self, md) -> None:   # noqa: N802 (Python-Markdown's name)
        # after whitespace is normalised (30), before Python-Markdown's HTML blocks (20) and fenced code (25)
        md.preprocessors.register(_HtmlBlocks(md), "papervault-html", 27)
        md.postprocessors.register(_Sanitize(md), "papervault-sanitize", -100)


def makeExtension(**kwargs) -> SanitizeExtension:   # noqa: N802 (Python-Markdown's entry point)
    return SanitizeExtension(**kwargs)
