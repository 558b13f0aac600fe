"""A survey's figures, drawn from its correlation: the lineage graph and the timeline of the selected papers, and
a chart of the comparison table's numbers where several papers report the same metric in the same setting.

Both are plain SVG written here (no script, no outside resource, no font file): the lineage graph lays the
papers out by year (one column per year, undated last), colours each by its theme, draws an arrow from a paper
to each selected paper its reference list cites (the correlation's lineages) and links each node, labelled with
its citation key, to the paper's page (`page_link`); the timeline stacks, for each year, the number of papers
of each theme. Every text in them (keys, titles, theme labels) comes from papers and is escaped for XML, in
text and in attributes alike; the only links are the paper pages `page_link` builds.

Each figure also has a caption and a text alternative in `survey.md` (`figures_markdown`): the same facts as a
list, for a screen reader, a text-only agent and the Pandoc export.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape as _xml_escape

from papervault.vault.paper import alt_text, escape_html, page_link

FIGURES_DIR = "figures"
LINEAGE = "lineage.svg"
TIMELINE = "timeline.svg"
COMPARISON = "comparison.svg"
# The charts of the comparison table: the (metric, setting) pairs reported by the most papers, at most this many.
MAX_CHARTS = 4
# Colours of the themes, in order (colour-blind safe, Okabe-Ito); a theme past the last takes grey.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
OTHER = "#999999"
UNDATED = "n.d."


def esc(text: Any) -> str:
    """Text made safe as XML character data and as a double-quoted attribute value."""
    # control characters are not allowed in XML 1.0 at all
    clean = "".join(ch for ch in str(text) if ch in "\t\n" or ord(ch) >= 32)
    return _xml_escape(clean, {'"': "&quot;", "'": "&#x27;"})


def short(text: str, limit: int = 60) -> str:
    t = " ".join(str(text or "").split())
    return t if len(t) <= limit else t[:limit - 1].rstrip() + "…"


@dataclass
class Node:
    id: str
    title: str
    year: int | None
    theme: int | None            # index into the themes, None when no theme holds it


@dataclass
class FieldMap:
    """What the figures show: the selected papers, their themes and who cites whom among them."""

    nodes: list[Node]
    themes: list[str]
    edges: list[tuple[str, str]]          # (citing, cited)
    dir: str = ""                         # the survey's folder in the vault: surveys/<slug>
    with_text: set[str] = field(default_factory=set)     # the papers with a paper.md (the others link their note)
    charts: list["Chart"] = field(default_factory=list)  # the comparison table's shared numbers

    def year_label(self, y: int | None) -> str:
        return str(y) if y is not None else UNDATED

    def years(self) -> list[int | None]:
        ys = sorted({n.year for n in self.nodes if n.year is not None})
        return ys + ([None] if any(n.year is None for n in self.nodes) else [])

    def colour(self, theme: int | None) -> str:
        return PALETTE[theme] if theme is not None and theme < len(PALETTE) else OTHER

    def theme_name(self, theme: int | None) -> str:
        return self.themes[theme] if theme is not None else "no theme"

    def link(self, pid: str, figure: str | None = None, page: int | None = None) -> str:
        """The paper's page (`page_link`, at `page` when given): relative to the figure's file in the vault, or
        to `survey.md` without `figure`; its note (no page) when the paper has no full text."""
        where = f"{self.dir}/{FIGURES_DIR}/{figure}" if figure else f"{self.dir}/survey.md"
        if pid not in self.with_text:
            return page_link(pid, relative_to=where)[:-len("paper.md")] + "note.md"
        return page_link(pid, page, relative_to=where)


@dataclass
class Point:
    paper: str
    number: float          # the value read as a number
    value: str             # as the paper prints it ("93.5%")
    page: int


@dataclass
class Chart:
    """One metric in one setting, as several selected papers report it (the comparison table's evidence)."""

    metric: str
    setting: str
    points: list[Point]


_NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)*(?:[eE][-+]?\d+)?")


def _number(value: str) -> float | None:
    """The first number printed in `value` (`93.5%`, `1,234`, `0.91 ± 0.02`), or None."""
    m = _NUMBER.search(value)
    if not m:
        return None
    text = m.group(0)
    text = text.replace(",", "") if re.fullmatch(r"[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?", text) else text.replace(",", ".")
    try:
        return float(text)
    except ValueError:
        return None


def comparison_charts(corr, known: set[str]) -> list[Chart]:
    """The comparison table's numbers for a metric and setting that two or more selected papers report (the
    first number of each paper's value, with its page), the most reported pairs first."""
    groups: dict[tuple[str, str], dict[str, Point]] = {}
    names: dict[tuple[str, str], tuple[str, str]] = {}
    for row in getattr(corr, "comparison", []) or []:
        if row.paper_id not in known:
            continue
        for e in row.evidence or []:
            metric, setting = " ".join(str(e.get("metric") or "").split()), " ".join(str(e.get("setting") or "").split())
            page, number = e.get("page"), _number(str(e.get("value") or ""))
            if not metric or not setting or not isinstance(page, int) or number is None:
                continue
            key = (metric.lower(), setting.lower())
            names.setdefault(key, (metric, setting))
            groups.setdefault(key, {}).setdefault(row.paper_id, Point(row.paper_id, number, str(e["value"]), page))
    shared = [k for k, pts in groups.items() if len(pts) >= 2]
    shared.sort(key=lambda k: (-len(groups[k]), k))
    return [Chart(*names[k], sorted(groups[k].values(), key=lambda p: (-p.number, p.paper))) for k in shared[:MAX_CHARTS]]


def field_map(corr, papers: list, slug: str) -> FieldMap:
    """The figures' data from a `Correlation` and the selected `SurveyPaper`s."""
    by_id = {p.id: p for p in papers}
    order = [pid for pid in corr.papers if pid in by_id] or [p.id for p in papers]
    themes: list[str] = []
    theme_of: dict[str, int] = {}
    for c in corr.clusters:
        members = [pid for pid in c.paper_ids if pid in by_id and pid not in theme_of]
        if not members:
            continue
        themes.append(" ".join(str(c.label or "").split()) or f"theme {len(themes) + 1}")
        for pid in members:
            theme_of[pid] = len(themes) - 1
    nodes = [Node(pid, by_id[pid].title or pid, by_id[pid].year if isinstance(by_id[pid].year, int) else None,
                  theme_of.get(pid)) for pid in order]
    nodes.sort(key=lambda n: (n.year is None, n.year or 0, n.id))      # the lists read in time order
    known = {n.id for n in nodes}
    edges = list(dict.fromkeys((x.paper_id, x.builds_on) for x in corr.lineages
                               if x.paper_id in known and x.builds_on in known and x.paper_id != x.builds_on))
    return FieldMap(nodes, themes, edges, dir=f"surveys/{slug}",
                    with_text={p.id for p in papers if (p.fulltext or "").strip()},
                    charts=comparison_charts(corr, known))


# --- drawing ---------------------------------------------------------------------------------------

FONT = 'font-family="sans-serif"'
COL_W, ROW_H, NODE_W, NODE_H, MARGIN, TOP = 150, 44, 128, 26, 24, 56


def _legend(fm: FieldMap, x: int, y: int) -> tuple[list[str], int]:
    """The theme legend from (x, y); returns the elements and the height it takes."""
    out = []
    used = sorted({n.theme for n in fm.nodes}, key=lambda t: (t is None, t or 0))
    for k, t in enumerate(used):
        yy = y + k * 20
        out.append(f'<rect x="{x}" y="{yy}" width="14" height="14" fill="{fm.colour(t)}"/>')
        out.append(f'<text x="{x + 20}" y="{yy + 11}" font-size="12" {FONT}>{esc(short(fm.theme_name(t), 90))}</text>')
    return out, len(used) * 20


def lineage_svg(fm: FieldMap) -> str:
    """The lineage graph: one column per year, a node per paper (its key, linked to its page, coloured by
    theme), an arrow from each paper to each selected paper it cites."""
    years = fm.years()
    col = {y: i for i, y in enumerate(years)}
    rows: dict[int | None, int] = {}
    pos: dict[str, tuple[int, int]] = {}
    for n in fm.nodes:
        r = rows.get(n.year, 0)
        rows[n.year] = r + 1
        pos[n.id] = (MARGIN + col[n.year] * COL_W, TOP + r * ROW_H)
    height_nodes = TOP + max(rows.values(), default=0) * ROW_H
    legend, legend_h = _legend(fm, MARGIN, height_nodes + 16)
    width = max(MARGIN * 2 + len(years) * COL_W, 420)
    height = height_nodes + 16 + legend_h + MARGIN
    title = f"Lineage of the {len(fm.nodes)} selected papers"
    desc = (f"{len(fm.nodes)} papers laid out by year, coloured by theme; {len(fm.edges)} citations among them "
            "(an arrow from the citing paper to the paper it cites).")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="lineage-title lineage-desc">',
           f'<title id="lineage-title">{esc(title)}</title>',
           f'<desc id="lineage-desc">{esc(desc)}</desc>',
           '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555555"/></marker></defs>',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>']
    for y in years:
        x = MARGIN + col[y] * COL_W
        out.append(f'<text x="{x + NODE_W // 2}" y="{TOP - 20}" font-size="13" font-weight="bold" '
                   f'text-anchor="middle" {FONT}>{esc(fm.year_label(y))}</text>')
    out.append('<g class="edges">')
    for a, b in fm.edges:
        (xa, ya), (xb, yb) = pos[a], pos[b]
        if xa > xb:                      # the usual case: a later paper cites an earlier one
            x1, x2 = xa, xb + NODE_W
        elif xa < xb:                    # cites a paper dated later (a preprint, a wrong year)
            x1, x2 = xa + NODE_W, xb
        else:                            # same year: from the side, around the column
            x1, x2 = xa + NODE_W, xb + NODE_W
        y1, y2 = ya + NODE_H // 2, yb + NODE_H // 2
        if xa == xb:
            bend = x1 + 30 + abs(ya - yb) // 4
            d = f"M {x1} {y1} C {bend} {y1} {bend} {y2} {x2 + 2} {y2}"
        else:
            d = f"M {x1} {y1} C {(x1 + x2) // 2} {y1} {(x1 + x2) // 2} {y2} {x2} {y2}"
        out.append(f'<path d="{d}" fill="none" stroke="#555555" stroke-width="1.2" marker-end="url(#arrow)">'
                   f'<title>{esc(a)} cites {esc(b)}</title></path>')
    out.append('</g>')
    out.append('<g class="nodes">')
    for n in fm.nodes:
        x, y = pos[n.id]
        colour = fm.colour(n.theme)
        ink = "#000000" if colour in ("#F0E442", "#E69F00", "#56B4E9", OTHER) else "#ffffff"
        tip = f"{n.id}: {short(n.title, 200)} ({fm.year_label(n.year)}; {short(fm.theme_name(n.theme), 90)})"
        out.append(f'<a href="{esc(fm.link(n.id, LINEAGE))}"><title>{esc(tip)}</title>'
                   f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="5" fill="{colour}" '
                   f'stroke="#333333" stroke-width="0.8"/>'
                   f'<text x="{x + NODE_W // 2}" y="{y + 17}" font-size="11" text-anchor="middle" fill="{ink}" '
                   f'{FONT}>{esc(short(n.id, 22))}</text></a>')
    out.append('</g>')
    out += legend
    out.append('</svg>')
    return "\n".join(out) + "\n"


def timeline_counts(fm: FieldMap) -> list[tuple[int | None, list[tuple[int | None, list[str]]]]]:
    """[(year, [(theme, [paper ids])])], years in order, themes in order, only non-empty ones."""
    out = []
    for y in fm.years():
        per = []
        for t in sorted({n.theme for n in fm.nodes}, key=lambda t: (t is None, t or 0)):
            ids = [n.id for n in fm.nodes if n.year == y and n.theme == t]
            if ids:
                per.append((t, ids))
        out.append((y, per))
    return out


def timeline_svg(fm: FieldMap) -> str:
    """Papers per year per theme: a stacked bar per year, a segment per theme, each segment's papers named
    in its tooltip and linked from the key labels beside the bar."""
    counts = timeline_counts(fm)
    unit, bar_w, gap = 22, 44, 30
    peak = max((sum(len(ids) for _, ids in per) for _, per in counts), default=0)
    base = TOP + peak * unit
    width = max(MARGIN * 2 + len(counts) * (bar_w + gap) + 120, 420)
    legend, legend_h = _legend(fm, MARGIN, base + 40)
    height = base + 40 + legend_h + MARGIN
    title = f"Papers per year and theme ({len(fm.nodes)} selected papers)"
    desc = f"A stacked bar per year from {fm.year_label(counts[0][0]) if counts else '-'}; each segment is one theme."
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="timeline-title timeline-desc">',
           f'<title id="timeline-title">{esc(title)}</title>',
           f'<desc id="timeline-desc">{esc(desc)}</desc>',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<line x1="{MARGIN}" y1="{base}" x2="{width - MARGIN}" y2="{base}" stroke="#333333" stroke-width="1"/>']
    for k, (y, per) in enumerate(counts):
        x = MARGIN + k * (bar_w + gap)
        top = base
        for t, ids in per:
            h = len(ids) * unit
            top -= h
            tip = f"{fm.year_label(y)}, {short(fm.theme_name(t), 90)}: {', '.join(ids)}"
            out.append(f'<g><title>{esc(tip)}</title><rect x="{x}" y="{top}" width="{bar_w}" height="{h}" '
                       f'fill="{fm.colour(t)}" stroke="#ffffff" stroke-width="1"/></g>')
            for j, pid in enumerate(ids):
                yy = top + j * unit + unit // 2 + 4
                out.append(f'<a href="{esc(fm.link(pid, TIMELINE))}"><title>{esc(pid)}: '
                           f'{esc(short(next(n.title for n in fm.nodes if n.id == pid), 200))}</title>'
                           f'<text x="{x + bar_w // 2}" y="{yy}" font-size="9" text-anchor="middle" {FONT}>'
                           f'{esc(short(pid, 9))}</text></a>')
        total = sum(len(ids) for _, ids in per)
        out.append(f'<text x="{x + bar_w // 2}" y="{top - 6}" font-size="11" text-anchor="middle" {FONT}>{total}</text>')
        out.append(f'<text x="{x + bar_w // 2}" y="{base + 18}" font-size="12" text-anchor="middle" {FONT}>'
                   f'{esc(fm.year_label(y))}</text>')
    out += legend
    out.append('</svg>')
    return "\n".join(out) + "\n"


def comparison_svg(fm: FieldMap) -> str:
    """The comparison table's shared numbers: a panel per metric and setting, a row per paper with a dot at
    its value on the panel's axis, labelled with the citation key, the value and the page, and linked to that
    page of the paper."""
    label_w, plot_w, row_h, head_h = 230, 320, 24, 46
    width = MARGIN * 2 + label_w + plot_w + 70
    panels, y = [], TOP
    for c in fm.charts:
        h = head_h + len(c.points) * row_h + 26
        panels.append((c, y))
        y += h
    height = y + MARGIN
    n = sum(len(c.points) for c in fm.charts)
    title = f"Reported results: {len(fm.charts)} metric{'s' if len(fm.charts) != 1 else ''} shared by the selected papers"
    desc = (f"{n} values, one panel per metric and setting, one row per paper; each value is labelled with its "
            "paper's citation key and the page it is printed on.")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="comparison-title comparison-desc">',
           f'<title id="comparison-title">{esc(title)}</title>',
           f'<desc id="comparison-desc">{esc(desc)}</desc>',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>']
    x0 = MARGIN + label_w
    for k, (c, top) in enumerate(panels):
        lo, hi = min(0.0, min(p.number for p in c.points)), max(p.number for p in c.points)
        span = (hi - lo) or 1.0
        out.append(f'<text x="{MARGIN}" y="{top + 16}" font-size="13" font-weight="bold" {FONT}>'
                   f'{esc(short(c.metric, 50))} in {esc(short(c.setting, 50))}</text>')
        axis_y = top + head_h + len(c.points) * row_h - 6
        out.append(f'<line x1="{x0}" y1="{axis_y}" x2="{x0 + plot_w}" y2="{axis_y}" stroke="#333333" stroke-width="1"/>')
        for v in (lo, hi):
            vx = x0 + (v - lo) / span * plot_w
            out.append(f'<text x="{vx:.0f}" y="{axis_y + 15}" font-size="10" text-anchor="middle" {FONT}>{esc(f"{v:g}")}</text>')
        colour = PALETTE[k % len(PALETTE)]
        for j, p in enumerate(c.points):
            ry = top + head_h + j * row_h
            px = x0 + (p.number - lo) / span * plot_w
            tip = f"{p.paper}: {c.metric} = {p.value} in {c.setting} (p. {p.page})"
            out.append(f'<a href="{esc(fm.link(p.paper, COMPARISON, p.page))}"><title>{esc(tip)}</title>'
                       f'<text x="{x0 - 8}" y="{ry + 4}" font-size="11" text-anchor="end" {FONT}>'
                       f'{esc(short(p.paper, 24))}, p. {p.page}</text>'
                       f'<line x1="{x0}" y1="{ry}" x2="{px:.0f}" y2="{ry}" stroke="#cccccc" stroke-width="1"/>'
                       f'<circle cx="{px:.0f}" cy="{ry}" r="5" fill="{colour}" stroke="#333333" stroke-width="0.8"/>'
                       f'<text x="{px + 9:.0f}" y="{ry + 4}" font-size="11" {FONT}>{esc(short(p.value, 14))}</text></a>')
    out.append('</svg>')
    return "\n".join(out) + "\n"


# --- survey.md -------------------------------------------------------------------------------------

def _md(text: str) -> str:
    """A paper's text made safe in a Markdown list item: one line, no HTML, no link or emphasis syntax."""
    t = escape_html(" ".join(str(text or "").split()))
    for ch in "\\`*_[]":
        t = t.replace(ch, "\\" + ch)
    return t


def figures_markdown(fm: FieldMap) -> str:
    """The figures' part of `survey.md`: each figure as an image with its caption, then its text
    alternative (the same papers, years, themes and citations as a list)."""
    if not fm.nodes:
        return ""
    lines = ["## The field at a glance", ""]
    n_edges = len(fm.edges)
    cap1 = (f"Figure 1: Lineage of the {len(fm.nodes)} selected papers, by year (left to right) and coloured by "
            f"theme; an arrow goes from a paper to a selected paper its reference list cites ({n_edges} "
            f"citation{'s' if n_edges != 1 else ''}). Each node links to the paper.")
    lines += [f"![{alt_text(cap1)}]({FIGURES_DIR}/{LINEAGE})", "", f"*{_md(cap1)}* "
              f"[Open the figure]({FIGURES_DIR}/{LINEAGE}) to follow its links.", "",
              "Figure 1 as a list (paper, year, theme; the selected papers it cites):", ""]
    cites: dict[str, list[str]] = {}
    for a, b in fm.edges:
        cites.setdefault(a, []).append(b)
    for n in fm.nodes:
        out = cites.get(n.id, [])
        lines.append(f"- [{n.id}]({fm.link(n.id)}) ({fm.year_label(n.year)}; "
                     f"{_md(short(fm.theme_name(n.theme), 120))}): "
                     + ("cites " + ", ".join(f"{b}" for b in out) if out else "cites no other selected paper"))
    cap2 = f"Figure 2: Papers per year and theme, {len(fm.nodes)} selected papers."
    lines += ["", f"![{alt_text(cap2)}]({FIGURES_DIR}/{TIMELINE})", "", f"*{_md(cap2)}* "
              f"[Open the figure]({FIGURES_DIR}/{TIMELINE}) to follow its links.", "",
              "Figure 2 as a list (year: theme, papers):", ""]
    for y, per in timeline_counts(fm):
        parts = [f"{_md(short(fm.theme_name(t), 120))}: {len(ids)} ({', '.join(ids)})" for t, ids in per]
        lines.append(f"- {fm.year_label(y)}: " + "; ".join(parts))
    if fm.charts:
        cap3 = (f"Figure 3: Results the selected papers report for the same metric and setting "
                f"({len(fm.charts)} chart{'s' if len(fm.charts) != 1 else ''}, from the comparison table); each "
                "point is labelled with its paper and page and links to that page.")
        lines += ["", f"![{alt_text(cap3)}]({FIGURES_DIR}/{COMPARISON})", "", f"*{_md(cap3)}* "
                  f"[Open the figure]({FIGURES_DIR}/{COMPARISON}) to follow its links.", "",
                  "Figure 3 as a list (metric in setting: paper, value, page):", ""]
        for c in fm.charts:
            pts = "; ".join(f"[{p.paper}, p. {p.page}]({fm.link(p.paper, page=p.page)}) {_md(p.value)}"
                            for p in c.points)
            lines.append(f"- {_md(short(c.metric, 120))} in {_md(short(c.setting, 120))}: {pts}")
    return "\n".join(lines) + "\n"


def write_figures(vault, slug: str, corr, papers: list) -> tuple[str, list]:
    """Write the two SVGs into `surveys/<slug>/figures/` (through the vault's write guard); returns the
    Markdown for `survey.md` and the paths written."""
    fm = field_map(corr, papers, slug)
    if not fm.nodes:
        return "", []
    fdir = vault.survey_dir(slug) / FIGURES_DIR
    vault.guard(fdir)
    fdir.mkdir(parents=True, exist_ok=True)
    paths = [fdir / LINEAGE, fdir / TIMELINE]
    vault.write(paths[0], lineage_svg(fm))
    vault.write(paths[1], timeline_svg(fm))
    if fm.charts:
        paths.append(fdir / COMPARISON)
        vault.write(paths[2], comparison_svg(fm))
    elif vault.remove(fdir / COMPARISON):      # a rerun whose table has no shared numbers any more
        paths.append(fdir / COMPARISON)
    return figures_markdown(fm), paths
