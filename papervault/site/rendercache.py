"""What staging derives from content alone and keeps between builds (`RenderCache`): page anchors of each full
text and each neighbourhood drawing after the SVG allow-list, by content hash."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from papervault.vault import paper as paper_md

RENDER_CACHE_VERSION = 2
NEIGHBOURHOOD_SVG = re.compile(r"papers/[A-Za-z0-9][A-Za-z0-9_.-]*/neighbourhood\.svg")


def content_key(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    return h.hexdigest()[:32]


@dataclass
class RenderCache:
    """What staging derives from content alone, kept between builds so that an unchanged paper costs no work:

    - `anchors`: the page anchors of each full text (`[[page, offset], ...]`) by the text's content hash;
      finding them parses the whole Markdown, and the paper's full-text page needs them (`mark_pages`);
    - `svg`: each neighbourhood drawing after the SVG allow-list, by the hash of its site path and of the drawing
      before it (the drawing is still made each build; rebuilding it through the allow-list is what is saved).

    `plan_site` reads the `old_*` entries and fills the others with what this build used: the next build's
    cache (what no page uses any more is dropped). On disk (site/build.py) the anchors are kept in
    `.papervault/cache/site-pages.json` and a drawing is not copied there: the entry names the staged file
    (`.papervault/site-src/papers/<id>/neighbourhood.svg`) and the hash of its content, and is used only while
    the file still holds exactly that."""

    old_anchors: dict[str, Any] = field(default_factory=dict)
    old_svg: dict[str, str] = field(default_factory=dict)
    anchors: dict[str, list[list[int]]] = field(default_factory=dict)
    svg: dict[str, tuple[str, str]] = field(default_factory=dict)    # site path -> (key, sanitised drawing)
    hits: int = 0

    def page_anchors(self, text: str) -> list[tuple[int, int]]:
        """`paper_md.read(text).anchors`, from the cache when the text is known and the offsets still fit it."""
        key = content_key(text)
        old = self.old_anchors.get(key)
        found = None
        if isinstance(old, list):
            try:
                found = [(int(p), int(at)) for p, at in old]
            except (TypeError, ValueError):
                found = None
            if found is not None and any(text[at:at + len(paper_md.page_anchor(p))] != paper_md.page_anchor(p)
                                         for p, at in found):
                found = None
        if found is None:
            found = list(paper_md.read(text).anchors)
        else:
            self.hits += 1
        self.anchors[key] = [[p, at] for p, at in found]
        return found

    def sanitised(self, target: str, svg: str, sanitise) -> str | None:
        """`sanitise(svg, target)`, from the cache when the same drawing was sanitised for the same path."""
        key = content_key(target, svg)
        clean = self.old_svg.get(key)
        if clean is None:
            clean = sanitise(svg, target)
        else:
            self.hits += 1
        if clean is not None:
            self.svg[target] = (key, clean)
        return clean
