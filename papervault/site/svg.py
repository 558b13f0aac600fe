"""The survey figures the site publishes, rebuilt from an allow-list: no script can come through them.

A browser runs the script of an SVG file opened from the site, so the site publishes no SVG of the vault as it
is (stage.py). The exception is a survey's figures, `surveys/<slug>/figures/<name>.svg`, which papervault
draws (papervault.survey.figures); but the vault is the user's git repository and may be shared, so the file
on disk is not trusted either: it is parsed (a document with a DOCTYPE or entities is refused) and written
anew from the elements and attributes such a figure uses. Everything else is dropped with its content:
`<script>`, `<style>`, `<foreignObject>`, `<image>`, `<use>`, event handlers, `style`, any `url(...)` but a
reference to an element of the figure itself. A link survives only when it is a paper page (`page_link`'s
`../../../papers/<id>/paper.md`) of a paper on the site; it becomes that page's `.html`. The survey page shows
the figure with `<img>` (which never runs script nor follows links); the figure opened on its own is where
its links work.
"""

from __future__ import annotations

import posixpath
import re
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

from papervault.vault.paper import read_page_link

SVG_NS = "http://www.w3.org/2000/svg"
XLINK = "{http://www.w3.org/1999/xlink}href"
FIGURE_PATH = re.compile(r"surveys/[A-Za-z0-9][A-Za-z0-9_.-]*/figures/[A-Za-z0-9][A-Za-z0-9_.-]*\.svg")

ELEMENTS = frozenset({"svg", "g", "title", "desc", "defs", "marker", "a", "rect", "line", "path", "polyline",
                      "polygon", "circle", "ellipse", "text", "tspan"})
ATTRIBUTES = frozenset({
    "id", "class", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "dx", "dy", "width", "height",
    "d", "points", "viewBox", "preserveAspectRatio", "transform", "fill", "fill-opacity", "stroke",
    "stroke-width", "stroke-opacity", "stroke-dasharray", "opacity", "font-size", "font-family", "font-weight",
    "font-style", "text-anchor", "dominant-baseline", "marker-end", "marker-start", "markerWidth",
    "markerHeight", "refX", "refY", "orient", "role", "aria-label", "aria-labelledby", "version",
})
# values: plain words, numbers, colours and path data; `url(#id)` only as a whole value
_VALUE = re.compile(r"[\w\s#.,%+\-:/()]*")
_URL_SELF = re.compile(r"url\(#[A-Za-z][\w-]*\)")


def _value_ok(value: str) -> bool:
    low = value.lower()
    if "url(" in low:
        return bool(_URL_SELF.fullmatch(value.strip()))
    return bool(_VALUE.fullmatch(value)) and "javascript" not in low and "expression" not in low


def site_link(href: str, figure: str, papers: set[str], with_text: set[str]) -> str | None:
    """The site's link for a figure's `href` (a paper page as `page_link` writes it, relative to the figure
    at `figure`), or None: anything else is not a link on the site."""
    link = read_page_link(href)
    if link is None:
        return None
    pid, kind, frag = link
    target = posixpath.normpath(posixpath.join(posixpath.dirname(figure), href.strip().split("#")[0]))
    if target != f"papers/{pid}/{kind}.md" or pid not in papers:
        return None
    page = "paper.html" if kind == "paper" and pid in with_text else "note.html"
    return posixpath.relpath(f"papers/{pid}/{page}", posixpath.dirname(figure)) + (frag if page == "paper.html" else "")


def sanitise_svg(text: str, figure: str, papers: set[str], with_text: set[str]) -> str | None:
    """The figure at site path `figure` rebuilt from the allow-list, or None when it is no SVG document."""
    if re.search(r"<!(?:DOCTYPE|ENTITY)", text, re.I):
        return None
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return None
    if root.tag != f"{{{SVG_NS}}}svg":
        return None

    def tag(e: ET.Element) -> str | None:
        if not isinstance(e.tag, str) or not e.tag.startswith(f"{{{SVG_NS}}}"):
            return None
        name = e.tag[len(SVG_NS) + 2:]
        return name if name in ELEMENTS else None

    def write(e: ET.Element, name: str, out: list[str]) -> None:
        attrs = []
        for k, v in e.attrib.items():
            if name == "a" and k in ("href", XLINK):
                link = site_link(v, figure, papers, with_text)
                if link:
                    attrs.append(f'href="{escape(link, {chr(34): "&quot;"})}"')
            elif k in ATTRIBUTES and _value_ok(v):
                attrs.append(f'{k}="{escape(v, {chr(34): "&quot;"})}"')
        if name == "svg" and e is root:
            attrs.insert(0, f'xmlns="{SVG_NS}"')
        out.append(f"<{name}{' ' if attrs else ''}{' '.join(attrs)}>")
        if e.text:
            out.append(escape(e.text))
        for child in e:
            child_name = tag(child)
            if child_name:
                write(child, child_name, out)
            if child.tail:
                out.append(escape(child.tail))
        out.append(f"</{name}>")

    out: list[str] = []
    write(root, "svg", out)
    return "".join(out) + "\n"
