"""The vault's citation map on the site, and each paper's citation neighbourhood.

`vault_graph` matches every paper's reference list against the whole vault once per site build (the survey's
`Matcher`: DOI, arXiv id, or a title of three words or more), keeping each edge's evidence: the reference line
and the PDF page it is printed on (`papervault.survey.citations.cited_with_evidence`, as `papervault graph`
gives it). A reference list that names no vault paper at all is dismissed by one pass of the matcher over the
list, before the lines are split and paged, so the cost at 2,000 papers is one read of each reference list.

The drawings are static SVG laid out here, in Python: no script runs on the site (the page policy), and a
static SVG's `<a>` links need none. They are written with `.md` links to the paper pages and then rebuilt by
`site.svg.sanitise_svg`, like a survey's figures, so the same allow-list guards them; the pages show them with
`<img>` and an "Open the map" link to the file, where the nodes' links work. Every text in them (titles,
citation labels, tags, reference lines) comes from papers and is escaped, in text and in attributes.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

from xml.sax.saxutils import escape as _xml_escape

from papervault.pages import printed
from papervault.site.sanitize import HTML_END, HTML_START, html_text, yaml_str
from papervault.survey.citations import Matcher, cited_with_evidence, reference_list
from papervault.survey.figures import PALETTE, OTHER, short

# The most-cited papers a map draws: past this a map of a big vault stays readable and small (under 2 MB).
MAP_NODES = 250
FILTER_NODES = 120
MAX_TAG_MAPS = 60
NEIGHBOURS_DRAWN = 25
FONT = 'font-family="sans-serif"'


@dataclass
class Edge:
    citing: str
    cited: str
    reference: str            # the reference line of `citing` that names `cited` ("" when not found alone)
    page: int | None          # the PDF page of `citing` it is printed on


@dataclass
class SiteGraph:
    """Who cites whom among the vault's papers, each edge with its evidence."""

    edges: dict[tuple[str, str], Edge] = field(default_factory=dict)
    cites: dict[str, list[str]] = field(default_factory=dict)
    cited_by: dict[str, list[str]] = field(default_factory=dict)
    with_refs: set[str] = field(default_factory=set)
    seconds: float = 0.0
    cache: dict = field(default_factory=dict)      # the edges per paper for the next build (vault_graph)
    reused: int = 0                                # papers whose edges came from the previous build's cache

    def degree_in(self, pid: str) -> int:
        return len(self.cited_by.get(pid, ()))


GRAPH_CACHE_VERSION = 2


def matcher_key(papers: dict) -> str:
    """What the matching of every reference list depends on besides the list itself: each paper's id, title,
    DOI, arXiv id, first author and year (a short title matches with them). Another paper, or a changed title, changes it (and every list is matched again)."""
    h = hashlib.sha256(f"v{GRAPH_CACHE_VERSION}".encode())
    for pid in sorted(papers):
        m = papers[pid].meta
        first = (m.authors or [""])[0] or ""
        h.update("\x1f".join((pid, m.title or "", (m.doi or "").lower(), m.arxiv or "", first, str(m.year or "")))
                 .encode("utf-8") + b"\x1e")
    return h.hexdigest()


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def vault_graph(papers: dict, cache: dict | None = None) -> SiteGraph:
    """The citation graph of the snapshot's papers (`{id: PaperEntry}`), read once from their full texts.

    `cache` (what `graph.cache` held after an earlier build, kept by the caller) gives each paper's edges again
    without matching its reference list, when the paper's full text (its content hash) and the vault's papers
    (`matcher_key`) are the same as then. `graph.cache` is the cache for the next build; `graph.reused` counts
    the papers whose edges came from it."""
    t0 = time.perf_counter()
    ids = list(papers)
    key = matcher_key(papers)
    old = cache.get("papers", {}) if isinstance(cache, dict) and cache.get("matcher") == key else {}
    g = SiteGraph()
    g.cache = {"matcher": key, "papers": {}}
    matcher = None
    for pid in ids:
        text = papers[pid].fulltext
        if not text:
            continue
        h = text_key(text)
        hit = old.get(pid)
        if isinstance(hit, dict) and hit.get("text") == h:
            g.reused += 1
            found = [(str(c), str(r), p if isinstance(p, int) else None) for c, r, p in hit.get("edges", [])]
            has_refs = bool(hit.get("refs"))
        else:
            if matcher is None:
                metas = [papers[i].meta for i in ids]
                matcher = Matcher(ids, [m.title or "" for m in metas], [(m.doi or "").lower() for m in metas],
                                  [m.arxiv or "" for m in metas], [list(m.authors or []) for m in metas],
                                  [m.year for m in metas])
            has_refs, found = _match(matcher, pid, text, reference_list, cited_with_evidence)
        g.cache["papers"][pid] = {"text": h, "refs": has_refs, "edges": [list(e) for e in found]}
        if has_refs:
            g.with_refs.add(pid)
        for cited, ref, page in found:
            if cited == pid or cited not in papers:
                continue
            g.edges[(pid, cited)] = Edge(pid, cited, ref, page)
            g.cites.setdefault(pid, []).append(cited)
            g.cited_by.setdefault(cited, []).append(pid)

    def when(p: str) -> tuple:
        y = papers[p].meta.year
        return (y is None, y or 0, p)

    for d in (g.cites, g.cited_by):
        for k in d:
            d[k].sort(key=when)
    g.seconds = time.perf_counter() - t0
    return g


def _match(matcher, pid: str, text: str, reference_list, cited_with_evidence) -> tuple[bool, list[tuple]]:
    """(whether the paper has a reference list, [(cited id, reference line, page)]) for one full text."""
    try:
        refs = reference_list(text)
    except (ValueError, IndexError):
        return False, []
    if not refs.strip():
        return False, []
    if not (matcher.named(refs) - {pid}):
        return True, []          # the common case: no vault paper named; the lines need not be paged
    return True, [(cited, ref.text, ref.page) for cited, ref in sorted(cited_with_evidence(matcher, text).items())
                  if cited != pid]


# --- helpers ---------------------------------------------------------------------------------------

# The control characters XML 1.0 does not allow (all below U+0020 but tab and line feed).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")


def esc(text: Any) -> str:
    """Text made safe as XML character data and as a double-quoted attribute value: `survey.figures.esc`
    with one regular expression instead of a test per character (the drawings escape ~50 texts per paper)."""
    return _xml_escape(_CONTROL.sub("", str(text)), {'"': "&quot;", "'": "&#x27;"})


def slug(text: str) -> str:
    """A file name for a tag's map: ASCII words plus a short hash, so two tags never share one."""
    base = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")[:40] or "tag"
    return f"{base}-{hashlib.sha1(str(text).encode()).hexdigest()[:6]}"


def decade(year: Any) -> str | None:
    return f"{int(year) // 10 * 10}s" if isinstance(year, int) else None


def tag_colours(papers: dict, ids: list[str]) -> dict[str, str]:
    """The most frequent tags of `ids` get the palette's colours, in order."""
    counts: dict[str, int] = {}
    for pid in ids:
        for t in papers[pid].meta.tags:
            counts[str(t)] = counts.get(str(t), 0) + 1
    top = sorted(counts, key=lambda t: (-counts[t], t))[:len(PALETTE)]
    return {t: PALETTE[i] for i, t in enumerate(top)}


def main_tag(meta, colours: dict[str, str]) -> str | None:
    return next((str(t) for t in meta.tags if str(t) in colours), None)


def ranked(g: SiteGraph, papers: dict, among: list[str]) -> list[str]:
    """`among` by how often the vault cites them, then how many they cite, then id."""
    return sorted(among, key=lambda p: (-g.degree_in(p), -len(g.cites.get(p, ())), p))


# --- the map ---------------------------------------------------------------------------------------

COL_W, ROW_H, LEFT, TOP = 150, 40, 24, 60


def radius(cited: int) -> float:
    return min(4.0 + 3.0 * math.sqrt(cited), 18.0)


def map_svg(g: SiteGraph, papers: dict, nodes: list[str], label_of, title: str, link_of) -> tuple[str, list[Edge]]:
    """A map of `nodes`: one column per year (undated last), each column's papers by how often they are
    cited (a circle's area grows with it), coloured by the paper's most frequent tag, an arrow from a paper
    to each drawn paper it cites. Returns the SVG and the edges drawn (for the text alternative)."""
    shown = set(nodes)
    years = sorted({papers[p].meta.year for p in nodes if isinstance(papers[p].meta.year, int)})
    cols: list[Any] = years + ([None] if any(not isinstance(papers[p].meta.year, int) for p in nodes) else [])
    col = {y: i for i, y in enumerate(cols)}
    colours = tag_colours(papers, nodes)
    per_col: dict[Any, list[str]] = {}
    for p in ranked(g, papers, nodes):
        y = papers[p].meta.year if isinstance(papers[p].meta.year, int) else None
        per_col.setdefault(y, []).append(p)
    pos: dict[str, tuple[float, float]] = {}
    for y, ps in per_col.items():
        for r, p in enumerate(ps):
            pos[p] = (LEFT + 20 + col[y] * COL_W, TOP + 20 + r * ROW_H)
    rows = max((len(v) for v in per_col.values()), default=0)
    legend_y = TOP + 20 + rows * ROW_H + 10
    width = max(LEFT * 2 + len(cols) * COL_W, 480)
    used = [t for t in colours if any(main_tag(papers[p].meta, colours) == t for p in nodes)]
    has_other = any(main_tag(papers[p].meta, colours) is None for p in nodes)
    height = legend_y + 20 * (len(used) + has_other) + 30
    edges = [g.edges[(a, b)] for a in nodes for b in g.cites.get(a, ()) if b in shown]
    desc = (f"{len(nodes)} papers in columns by year, each circle sized by how often the vault cites it and "
            f"coloured by its tag; {len(edges)} citations among them (an arrow from the citing paper).")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="map-title map-desc">',
           f'<title id="map-title">{esc(title)}</title>', f'<desc id="map-desc">{esc(desc)}</desc>',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto"><path d="M 0 0 L 10 5 L 0 10 z" fill="#666666"/></marker></defs>',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>']
    for y in cols:
        out.append(f'<text x="{LEFT + 20 + col[y] * COL_W}" y="{TOP - 16}" font-size="13" font-weight="bold" '
                   f'text-anchor="middle" {FONT}>{esc(y if y is not None else "n.d.")}</text>')
    out.append('<g class="edges" fill="none" stroke="#666666" stroke-width="0.8" stroke-opacity="0.55">')
    for e in edges:
        (x1, y1), (x2, y2) = pos[e.citing], pos[e.cited]
        r2 = radius(g.degree_in(e.cited)) + 2
        # a quadratic curve bent to one side, so that edges between the same columns do not overlap
        mx, my = (x1 + x2) / 2 + (y2 - y1) * 0.2, (y1 + y2) / 2 - (x2 - x1) * 0.2
        if x1 == x2:
            mx = x1 + 40 + abs(y2 - y1) * 0.3
        dx, dy = x2 - mx, y2 - my
        d = math.hypot(dx, dy) or 1.0
        ex, ey = x2 - dx / d * r2, y2 - dy / d * r2
        out.append(f'<path d="M {x1:.0f} {y1:.0f} Q {mx:.0f} {my:.0f} {ex:.0f} {ey:.0f}" marker-end="url(#arrow)"/>')
    out.append('</g>')
    out.append('<g class="nodes">')
    for p in nodes:
        x, y = pos[p]
        m = papers[p].meta
        colour = colours.get(main_tag(m, colours) or "", OTHER)
        n_in = g.degree_in(p)
        tip = f"{label_of(p)}: {short(m.title or p, 160)} (cited by {n_in} vault paper{'s' if n_in != 1 else ''})"
        out.append(f'<a href="{esc(link_of(p))}"><title>{esc(tip)}</title>'
                   f'<circle cx="{x}" cy="{y}" r="{radius(n_in):.1f}" fill="{colour}" stroke="#333333" '
                   f'stroke-width="0.8"/><text x="{x + radius(n_in) + 3:.0f}" y="{y + 4}" font-size="10" '
                   f'{FONT}>{esc(short(label_of(p), 18))}</text></a>')
    out.append('</g>')
    for k, t in enumerate(used + ([None] if has_other else [])):
        yy = legend_y + k * 20
        out.append(f'<rect x="{LEFT}" y="{yy}" width="14" height="14" fill="{colours.get(t or "", OTHER)}"/>')
        out.append(f'<text x="{LEFT + 20}" y="{yy + 11}" font-size="12" {FONT}>'
                   f'{esc(short(t, 60) if t else "other tags or none")}</text>')
    out.append('</svg>')
    return "\n".join(out) + "\n", edges


def neighbourhood_svg(g: SiteGraph, papers: dict, pid: str, label_of, link_of) -> str:
    """A paper in the middle, the vault papers that cite it on the left, those it cites on the right, each
    linked to its page (at most NEIGHBOURS_DRAWN a side; the page lists them all)."""
    left = g.cited_by.get(pid, [])[:NEIGHBOURS_DRAWN]
    right = g.cites.get(pid, [])[:NEIGHBOURS_DRAWN]
    n = max(len(left), len(right), 1)
    row, w, box_w, box_h = 30, 640, 190, 22
    height = 50 + n * row + 10
    cy = 50 + (n * row) / 2 - box_h / 2
    title = (f"Citation neighbourhood of {label_of(pid)}: cited by {len(g.cited_by.get(pid, []))}, "
             f"cites {len(g.cites.get(pid, []))} vault papers")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}" '
           f'role="img" aria-labelledby="nb-title">', f'<title id="nb-title">{esc(title)}</title>',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto"><path d="M 0 0 L 10 5 L 0 10 z" fill="#666666"/></marker></defs>',
           f'<rect x="0" y="0" width="{w}" height="{height}" fill="#ffffff"/>',
           f'<text x="10" y="20" font-size="12" font-weight="bold" {FONT}>Cited by</text>',
           f'<text x="{w - 10}" y="20" font-size="12" font-weight="bold" text-anchor="end" {FONT}>Cites</text>']
    mid_x = (w - box_w) / 2
    out.append('<g fill="none" stroke="#666666" stroke-width="1">')
    for k, _ in enumerate(left):
        y = 50 + k * row + box_h / 2
        out.append(f'<path d="M {10 + box_w} {y:.0f} L {mid_x:.0f} {cy + box_h / 2:.0f}" marker-end="url(#arrow)"/>')
    for k, _ in enumerate(right):
        y = 50 + k * row + box_h / 2
        out.append(f'<path d="M {mid_x + box_w:.0f} {cy + box_h / 2:.0f} L {w - 10 - box_w} {y:.0f}" '
                   'marker-end="url(#arrow)"/>')
    out.append('</g>')

    def box(p: str, x: float, y: float, fill: str, ink: str, linked: bool = True) -> str:
        m = papers[p].meta
        tip = f"{label_of(p)}: {short(m.title or p, 160)}"
        inner = (f'<title>{esc(tip)}</title><rect x="{x:.0f}" y="{y:.0f}" width="{box_w}" height="{box_h}" rx="4" '
                 f'fill="{fill}" stroke="#333333" stroke-width="0.8"/><text x="{x + box_w / 2:.0f}" y="{y + 15:.0f}" '
                 f'font-size="11" text-anchor="middle" fill="{ink}" {FONT}>{esc(short(label_of(p), 30))}</text>')
        return f'<a href="{esc(link_of(p))}">{inner}</a>' if linked else f"<g>{inner}</g>"

    for k, p in enumerate(left):
        out.append(box(p, 10, 50 + k * row, "#E69F00", "#000000"))
    for k, p in enumerate(right):
        out.append(box(p, w - 10 - box_w, 50 + k * row, "#56B4E9", "#000000"))
    out.append(box(pid, mid_x, cy, "#0072B2", "#ffffff", linked=False))
    out.append('</svg>')
    return "\n".join(out) + "\n"


# --- the pages -------------------------------------------------------------------------------------

@dataclass
class MapPages:
    pages: dict[str, str] = field(default_factory=dict)     # map.md, map/*.md
    files: dict[str, str] = field(default_factory=dict)     # map/*.svg, papers/<id>/neighbourhood.svg
    warnings: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


# long: the main map and the per-tag and per-decade maps are the same steps (choose, draw, list the edges)
# over one graph, kept together so that every map is written the same way
def map_pages(g: SiteGraph, papers: dict, *, label_of, md, sanitise, rel_link) -> MapPages:
    """`map.md` (the most-cited papers of the vault) and a map per tag and per decade under `map/`, each an
    image of its SVG, a link to open it and the list of its edges. `md` escapes text for Markdown, `sanitise`
    rebuilds an SVG from the allow-list (`(text, site path) -> text | None`), `rel_link(target, page)`."""
    t0 = time.perf_counter()
    out = MapPages()
    linked = sorted(set(g.cites) | set(g.cited_by))
    isolated = len(papers) - len(linked)
    tags: dict[str, list[str]] = {}
    decades: dict[str, list[str]] = {}
    for p in linked:
        m = papers[p].meta
        for t in dict.fromkeys(str(t) for t in m.tags):
            tags.setdefault(t, []).append(p)
        if decade(m.year):
            decades.setdefault(decade(m.year), []).append(p)
    tag_list = sorted(tags, key=lambda t: (-len(tags[t]), t.lower()))[:MAX_TAG_MAPS]
    tag_list.sort(key=str.lower)
    filters = [("tag", t, f"map/tag-{slug(t)}") for t in tag_list] + \
              [("decade", d, f"map/{d}") for d in sorted(decades)]

    def one(page_stem: str, nodes_all: list[str], cap: int, heading: str, intro: str) -> None:
        page = f"{page_stem}.md"
        svg_path = f"{page_stem}.svg"
        nodes = ranked(g, papers, nodes_all)[:cap]
        svg, edges = map_svg(g, papers, nodes, label_of, heading,
                             lambda p: rel_link(f"papers/{p}/note.md", svg_path))
        clean = sanitise(svg, svg_path)
        # Left out of the search index: a map's lists only name papers that have pages of their own, and at a
        # few thousand papers the list of citations drawn is one search entry longer than Zensical accepts
        # (32 kB), which failed its build.
        lines = [f"---\ntitle: {yaml_str(heading)}\nsearch:\n  exclude: true\n---\n", f"# {md(heading)}", "",
                 intro, ""]
        if len(nodes) < len(nodes_all):
            lines += [f"The map draws the **{len(nodes)} most-cited** of the {len(nodes_all)} papers here that "
                      "cite or are cited by another vault paper (a map of them all would not be readable).", ""]
        fname = svg_path.rsplit("/", 1)[-1]
        if clean is None:
            out.warnings.append(f"{svg_path}: the map could not be drawn")
        else:
            out.files[svg_path] = clean
            lines += [f"![{md(heading)}: {len(nodes)} papers, {len(edges)} citations]({fname})", "",
                      f"[Open the map]({fname}) to follow its links: each circle opens the paper's page. "
                      "Columns are years; a circle's size says how often the vault cites the paper; its colour "
                      "is its tag.", ""]
        if page_stem == "map":
            filt = [f"[{md(v)}]({rel_link(s + '.md', page)})" for k, v, s in filters if k == "tag"]
            decs = [f"[{md(v)}]({rel_link(s + '.md', page)})" for k, v, s in filters if k == "decade"]
            if filt:
                lines += ["**By tag:** " + " · ".join(filt) + ("" if len(tags) <= MAX_TAG_MAPS else
                          f" (the {MAX_TAG_MAPS} largest of {len(tags)} tags)"), ""]
            if decs:
                lines += ["**By decade:** " + " · ".join(decs), ""]
        else:
            lines += [f"[The whole vault's map]({rel_link('map.md', page)})", ""]
        # The two lists as HTML, set aside by the sanitiser's extension like a paper page's neighbourhood
        # (site/sanitize.py): every text escaped for HTML, every link to a built page.
        def note(p: str) -> str:
            return rel_link(f"papers/{p}/note.html", page)

        lines += ["## Citations drawn", ""]
        if not edges:
            lines.append("No citations among these papers.")
        else:
            lines += [HTML_START, "<ul>"]
            lines += [f'<li><a href="{note(e.citing)}">{html_text(label_of(e.citing))}</a> cites '
                      f'<a href="{note(e.cited)}">{html_text(label_of(e.cited))}</a></li>' for e in edges]
            lines += ["</ul>", HTML_END]
        lines += ["", "## Papers drawn", "", HTML_START, "<ul>"]
        for p in nodes:
            m = papers[p].meta
            lines.append(f'<li><a href="{note(p)}">{html_text(m.title or p)}</a> '
                         f"({html_text(m.year or 'n.d.')}): cited by {g.degree_in(p)}, "
                         f"cites {len(g.cites.get(p, ()))}</li>")
        lines += ["</ul>", HTML_END]
        out.pages[page] = "\n".join(lines).lstrip("\n") + "\n"

    n_edges = len(g.edges)
    one("map", linked, MAP_NODES, "Citation map",
        f"Who cites whom among the {len(papers)} papers of the vault: {n_edges} citation"
        f"{'s' if n_edges != 1 else ''} found in the reference lists of {len(g.with_refs)} papers with a full "
        f"text. {isolated} paper{'s' if isolated != 1 else ''} neither cite{'s' if isolated == 1 else ''} nor "
        f"{'is' if isolated == 1 else 'are'} cited by another vault paper and {'is' if isolated == 1 else 'are'} "
        "not drawn.")
    for kind, value, stem in filters:
        nodes = tags[value] if kind == "tag" else decades[value]
        one(stem, nodes, FILTER_NODES, f"Citation map: {kind} {value}",
            f"The papers {'tagged ' + md(value) if kind == 'tag' else 'of the ' + md(value)} that cite or are "
            "cited by another vault paper, and the citations among them.")
    out.seconds["map"] = time.perf_counter() - t0
    return out


def neighbourhood(g: SiteGraph, papers: dict, pid: str, *, label_of, esc) -> dict[str, Any] | None:
    """The paper page's neighbourhood: `{"svg", "cites", "cited_by", "map_url"}` with each neighbour's link and
    evidence (the reference line and the printed page, linked to the citing paper's page anchor); None when
    the paper has no citation in the vault.

    The page writes the lists as HTML, which the Markdown renderer passes through untouched (parsing a few
    dozen linked list items inline cost more than all the rest of a paper page): every text here is escaped
    for HTML by `esc` and every link is to the built page (`note.html`, `paper.html#page-N`, `map.html`; the
    site has `use_directory_urls: false`). The sanitiser still sees the finished page, as for any page."""
    if pid not in g.cites and pid not in g.cited_by:
        return None

    def row(other: str, citing: str, cited: str) -> dict[str, Any]:
        e = g.edges[(citing, cited)]
        m = papers[other].meta
        ev = None
        if e.page:
            # the evidence is a page of the citing paper's full text (this paper's own, or a neighbour's)
            ev = {"label": esc(printed(papers[citing].meta.page_labels, e.page)),
                  "url": ("" if citing == pid else f"../{citing}/") + f"paper.html#page-{int(e.page)}"}
        return {"title": esc(m.title or other), "label": esc(label_of(other)),
                "year": esc(m.year) if m.year else "", "url": f"../{other}/note.html",
                "reference": esc(short(e.reference, 300)) if e.reference else "", "page": ev}

    return {"cites": [row(c, pid, c) for c in g.cites.get(pid, [])],
            "cited_by": [row(c, c, pid) for c in g.cited_by.get(pid, [])],
            "svg": "neighbourhood.svg", "map_url": "../../map.html"}
