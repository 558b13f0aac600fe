"""The site's sources: the vault read once (site/snapshot.py), turned into Markdown pages (cards, indexes, linked
citations).

`plan_site` is a pure function from a `VaultSnapshot` to `{path: text}` pages plus `{path: file}` assets;
`read_vault` (site/snapshot.py) and `write_stage` are the edges that touch the disk. The staging folder, not the vault, is what
mkdocs builds: the vault stays the user's clean git repository.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml

from papervault.models import PaperMeta
from papervault.parse.firstpass import is_first_pass, pages_words, pending_pages
from papervault.pages import pdf_page
from papervault.site.citations import cited_keys, render_citations
from papervault.site.redirects import redirect_pages
from papervault.site import citemap
from papervault.site.svg import sanitise_svg
from papervault.site.whatsnew import surveys_gained_rows
from papervault.site.sanitize import (arxiv_url, doi_url, escape_foreign_tags, html_text, md_text, path_url,
                                      safe_url, yaml_str)
from papervault.templating import environment
from papervault.vault import frontmatter
from papervault.vault import paper as paper_md
from papervault.vault.reader import parse as parse_reader_notes

from papervault.site.snapshot import (H1, IMAGE_TYPES, NOTE_HEAD, PAPER_LINK, PAPER_SKIP, PUBLISHED_TYPES,  # noqa: F401
                                      SKIP_DIRS, TEXT_TYPES, FigureInfo, PaperEntry, SurveyEntry, VaultSnapshot,
                                      publishable, read_vault, stored_pdf, survey_figure)

from papervault.site.rendercache import NEIGHBOURHOOD_SVG, RENDER_CACHE_VERSION, RenderCache, content_key  # noqa: F401


@dataclass
class SitePlan:
    pages: dict[str, str]              # relative path in the staging folder -> Markdown
    assets: dict[str, Path]            # relative path -> file to link or copy
    nav: list[Any]
    not_in_nav: list[str]
    warnings: list[str]
    files: dict[str, str] = field(default_factory=dict)   # relative path -> text of a staged file (not a page)
    timings: dict[str, float] = field(default_factory=dict)   # seconds: "graph", "neighbourhoods", "map"
    graph_cache: dict = field(default_factory=dict)   # the citation graph's edges per paper, for the next build
    graph_reused: int = 0                              # papers whose edges came from `graph_cache` (not matched)
    render_cache: RenderCache = field(default_factory=RenderCache)   # for the next build


# --- planning --------------------------------------------------------------------------------------

def template_env(extra_dirs: list[Path] | None = None) -> jinja2.Environment:
    """Page templates: the workspace's `templates/site/pages` first (a user's override), then the project's."""
    env = environment("site/pages", extra=[d / "pages" for d in (extra_dirs or [])], autoescape=False,
                      keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                      # `{#id}` is Markdown's attribute syntax for heading ids, so Jinja comments move.
                      comment_start_string="<#--", comment_end_string="--#>")
    env.filters["md"] = md_escape
    env.filters["anchor"] = anchor
    env.filters["yamlstr"] = yaml_str
    env.filters["url"] = path_url
    env.filters["doi_url"] = lambda d: doi_url(d) or ""
    return env


def md_escape(text: Any) -> str:
    """Text that Markdown shows as written (titles with brackets, asterisks, angle brackets or pipes), with
    `&`, `<` and `>` as HTML entities so that no title, author or venue can open a tag."""
    return md_text(text)


def anchor(text: str, kind: str = "x") -> str:
    """A stable HTML id for a tag or venue; keeps Chinese and other letters (toc's slugify would drop them)."""
    slug = re.sub(r"[^\w]+", "-", str(text).lower(), flags=re.U).strip("-")
    if not slug:
        slug = hashlib.sha1(str(text).encode()).hexdigest()[:8]
    return f"{kind}-{slug}"


def short_authors(authors: list[str]) -> str:
    last = [a.split(",")[0].strip() if "," in a else a.split()[-1] for a in authors if a and a.split()]
    if not last:
        return ""
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} et al."


def cite_label(meta: PaperMeta) -> str:
    """`Lamport 2001`: what a rendered citation shows (the year stays the last word)."""
    who = short_authors(meta.authors) or meta.title[:40] or meta.id
    return f"{who} {meta.year}" if meta.year else f"{who} n.d."


def rel_link(target: str, page: str) -> str:
    """A link from the page at `page` to `target`, both paths relative to the site's root."""
    to, at = target.split("/"), page.split("/")
    base = at[:-1]
    if not target or {"", ".", ".."} & set(to + at):
        return Path(os.path.relpath(target, Path(page).parent.as_posix() or ".")).as_posix()
    # plain paths (no `.`, `..`, `//`), as the site's pages are: their common folders, then up and down
    i = 0
    while i < len(base) and i < len(to) and base[i] == to[i]:
        i += 1
    return "/".join([".."] * (len(base) - i) + to[i:]) or "."


def _strip_frontmatter(text: str) -> tuple[dict, str]:
    try:
        return frontmatter.split(text)
    except (ValueError, yaml.YAMLError):
        return {}, text


def plan_site(snap: VaultSnapshot, *, site_name: str = "papervault", template_dirs: list[Path] | None = None,
              recent: int = 15, whats_new: dict | None = None, graph_cache: dict | None = None,
              render_cache: RenderCache | None = None) -> SitePlan:
    """All pages of the site and the assets they link, from a snapshot of the vault (no disk access).
    `graph_cache`: the `SitePlan.graph_cache` of an earlier build (the citation graph's edges of each paper
    whose full text is unchanged are not matched again; citemap.vault_graph). `render_cache`: what an earlier
    build derived from content alone (`RenderCache`); the plan's `render_cache` is the next build's."""
    site = _Planner(snap, template_env(template_dirs), render_cache or RenderCache())
    site.back_links()
    graph = site.citation_graph(graph_cache)
    site.paper_pages(graph)
    site.citation_maps(graph)
    site.redirects()
    survey_rows = site.survey_pages()
    code_rows, user_rows = site.code_pages(), site.user_pages()
    tag_count = site.index_pages(survey_rows, code_rows)
    if whats_new is not None:       # `papervault changes`, given by the caller (the site never reads sync state)
        site.whats_new_page(whats_new)
    site.home_page(site_name, recent, tag_count, survey_rows, code_rows, user_rows)
    nav, not_in_nav = navigation(survey_rows, code_rows, user_rows, whats_new is not None)
    return SitePlan(pages=site.pages, assets=site.assets, nav=nav, not_in_nav=not_in_nav, warnings=site.warnings,
                    files=site.files, timings=site.timings, graph_cache=graph.cache, graph_reused=graph.reused,
                    render_cache=site.cache)


class _Planner:
    """The parts of `plan_site`, each adding its pages, files and assets to the same plan."""

    def __init__(self, snap: VaultSnapshot, env: jinja2.Environment, cache: RenderCache):
        self.snap, self.env, self.papers, self.cache = snap, env, snap.papers, cache
        self.pages: dict[str, str] = {}
        self.assets: dict[str, Path] = {}
        self.files: dict[str, str] = {}
        self.warnings: list[str] = list(snap.problems)
        self.timings: dict[str, float] = {}
        # Former ids (`papervault rekey`) still resolve to their paper.
        self.alias = {a: pid for pid, e in self.papers.items() for a in e.meta.aliases if a not in self.papers}
        self.cited_by_surveys: dict[str, list[SurveyEntry]] = {}
        self.cited_by_papers: dict[str, list[str]] = {}
        self.survey_cites: dict[str, list[str]] = {}
        self.on_site = set(self.papers)
        self.with_text = {pid for pid, e in self.papers.items() if e.fulltext}

    # --- helpers the parts share ---

    @staticmethod
    def note_path(pid: str) -> str:
        return f"papers/{pid}/note.md"

    def label(self, key: str) -> str | None:
        e = self.papers.get(self.alias.get(key, key))
        return cite_label(e.meta) if e else None

    def linker(self, page: str):
        papers, alias = self.papers, self.alias

        def link(key: str, p: int | None) -> str:
            key = alias.get(key, key)
            # A citation's page is the printed one (`p. 223`); its link opens the PDF page that prints it.
            p = pdf_page(papers[key].meta.page_labels, p) if p else p
            if p and papers[key].fulltext:
                return paper_md.page_link(key, p, relative_to=page)
            return rel_link(self.note_path(key), page)
        return link

    def mark_pages(self, text: str, marker) -> str:
        """`paper_md.mark_pages`, with the anchors of a full text seen before taken from the cache."""
        if '<a id="page-' not in text:
            return text
        out, at = [], 0
        for page, start in self.cache.page_anchors(text):
            out += [text[at:start], marker(page)]
            at = start + len(paper_md.page_anchor(page))
        return "".join(out) + text[at:]

    def sanitise(self, svg: str, target: str) -> str | None:
        return sanitise_svg(svg, target, self.on_site, self.with_text)

    def card(self, pid: str) -> dict[str, Any]:
        m = self.papers[pid].meta
        return {"id": pid, "title": m.title or pid, "year": m.year, "venue": m.venue,
                "authors_short": short_authors(m.authors), "created": m.created or "", "tags": m.tags}

    def listing(self, pids, page: str) -> list[dict[str, Any]]:
        out = []
        for pid in pids:
            c = self.card(pid)
            c["url"] = rel_link(self.note_path(pid), page)
            out.append(c)
        return out

    # --- the parts ---

    def back_links(self) -> None:
        """Who cites whom: surveys and notes ([@id] or a link to another paper's page)."""
        papers, alias = self.papers, self.alias
        for s in self.snap.surveys:
            keys = list(dict.fromkeys(alias.get(k, k) for k in cited_keys(s.text) if alias.get(k, k) in papers))
            self.survey_cites[s.slug] = keys
            for k in keys:
                self.cited_by_surveys.setdefault(k, []).append(s)
        for pid, e in papers.items():
            refs = {alias.get(k, k) for k in cited_keys(e.body)} | set(PAPER_LINK.findall(e.body))
            for k in sorted(refs):
                if k in papers and k != pid:
                    self.cited_by_papers.setdefault(k, []).append(pid)

    def citation_graph(self, graph_cache: dict | None):
        """Who cites whom by reference lists: matched once for the whole vault, for the map and every paper
        page (only the papers whose full text changed since `graph_cache`)."""
        graph = citemap.vault_graph(self.papers, graph_cache)
        self.timings["graph"] = graph.seconds
        self.labels = {pid: cite_label(e.meta) for pid, e in self.papers.items()}
        return graph

    # long: a paper's page, its full-text page and its files in one loop per paper, sharing its label, anchors
    # and neighbourhood drawing
    def paper_pages(self, graph) -> None:
        """A page per paper (its card, note, figures, back-links and citation neighbourhood), its full text,
        and the files beside them."""
        snap, papers, labels, env = self.snap, self.papers, self.labels, self.env
        t_nb = 0.0
        for pid, e in papers.items():
            m = e.meta
            page = self.note_path(pid)
            links = []
            pdfs = [f for f in e.other_files if f.lower().endswith(".pdf")]
            pdf_name = "paper.pdf" if e.pdf else (pdfs[0] if pdfs else None)
            if pdf_name:
                links.append(f"[PDF]({path_url(pdf_name)})")
            if e.fulltext:
                links.append("[Full text](paper.md)")
            # Identifiers and URLs become links only when they have the shape they claim (no `javascript:`, no
            # `)` or `>` that would end the link early); anything else is not linked.
            if doi_url(m.doi):
                links.append(f"[DOI {md_escape(m.doi)}]({doi_url(m.doi)})")
            if arxiv_url(m.arxiv):
                links.append(f"[arXiv {md_escape(m.arxiv)}]({arxiv_url(m.arxiv)})")
            web = safe_url(m.url)
            if web and not (m.doi and "doi.org" in web):
                links.append(f"[Web]({web})")
            for repo in m.code:
                name = Path(str(repo).rstrip("/")).name.removesuffix(".git")
                code_page = f"code/{name}.md"
                links.append(f"[code: {md_escape(name)}]({path_url(rel_link(code_page, page))})"
                             if code_page in snap.code else f"code: {md_escape(name)}")
            # The card above the note shows authors and venue: the note's own lines for them are not repeated.
            note_body = NOTE_HEAD.sub("", H1.sub("", e.body, count=1))
            # reader-notes.md is shown on this page (below the note), not as a page of its own
            note_body = note_body.replace("](reader-notes.md)", "](#your-highlights-and-notes)")
            body, report = render_citations(escape_foreign_tags(note_body), self.label, self.linker(page))
            for k in report.missing:
                self.warnings.append(f"{page}: cites @{k}, which is not in the vault")
            data = {
                "id": pid, "title": m.title or pid, "authors": m.authors, "year": m.year, "venue": m.venue,
                "tags": m.tags, "status": m.status, "pages": m.pages, "parser": m.parser,
                "page_labels": m.page_labels, "links": links or ["none"], "tags_url": rel_link("tags.md", page),
                "unfinished": unfinished_note(m, e.fulltext),
                "fulltext_url": "paper.md",
                "figures": [f for f in e.figures],
                "cited_by_surveys": [{"title": s.title, "url": rel_link(f"surveys/{s.slug}/survey.md", page)}
                                     for s in self.cited_by_surveys.get(pid, [])],
                "cited_by_papers": self.listing(self.cited_by_papers.get(pid, []), page),
                "highlights": [{"kind": h.kind, "text": escape_foreign_tags(h.text),
                                "comment": escape_foreign_tags(h.comment),
                                "page": h.page if e.fulltext else None, "label": h.page_label}
                               for h in parse_reader_notes(e.reader_notes, m.page_labels)] if e.reader_notes else [],
            }
            t1 = time.perf_counter()
            nb = citemap.neighbourhood(graph, papers, pid, label_of=labels.__getitem__, esc=html_text)
            if nb:
                svg_path = f"papers/{pid}/{nb['svg']}"
                # the drawing links only papers of this build, so its sanitised form depends on it alone
                clean = self.cache.sanitised(svg_path, citemap.neighbourhood_svg(
                    graph, papers, pid, labels.__getitem__, lambda k: f"../../{self.note_path(k)}"), self.sanitise)
                if clean is None:
                    nb["svg"] = None
                else:
                    self.files[svg_path] = clean
            data["neighbourhood"] = nb
            t_nb += time.perf_counter() - t1
            self.pages[page] = env.get_template("paper.md.j2").render(p=data, body=body.strip())
            if e.fulltext:
                ft_page = f"papers/{pid}/paper.md"
                _, text = _strip_frontmatter(e.fulltext)
                # a fence a PDF line opened and nothing closes would hide the rest of the text in a code block
                text = paper_md.escape_unclosed_fence(text)
                # Each page marker also opens that page of the PDF (`#page=N`, which browsers' PDF viewers honour).
                pdf_href = path_url(pdf_name) if pdf_name else None
                text = self.mark_pages(text, lambda n: f'<a id="page-{n}" data-page="{n}"></a>' + (
                    f'<a class="pv-pdf-page" href="{pdf_href}#page={n}" title="page {n} of the PDF">'
                    f'PDF p. {n}</a>' if pdf_href else ""))
                text, _ = render_citations(escape_foreign_tags(text), self.label, self.linker(ft_page),
                                           narrative=False)
                self.pages[ft_page] = env.get_template("fulltext.md.j2").render(p=data, body=text)
            for f in e.figure_files:
                self.assets[f"papers/{pid}/figures/{f}"] = snap.root / "papers" / pid / "figures" / f
            for f in e.other_files:
                self.assets[f"papers/{pid}/{f}"] = snap.root / "papers" / pid / f
            if e.pdf:
                self.assets[f"papers/{pid}/paper.pdf"] = e.pdf     # the kept copy wins over a paper.pdf in the folder
        self.timings["neighbourhoods"] = t_nb

    def citation_maps(self, graph) -> None:
        """The citation map: the most-cited papers, and a map per tag and per decade."""
        maps = citemap.map_pages(graph, self.papers, label_of=self.labels.__getitem__, md=md_escape,
                                 sanitise=self.sanitise, rel_link=rel_link)
        self.pages.update(maps.pages)
        self.files.update(maps.files)
        self.warnings += maps.warnings
        self.timings.update(maps.seconds)

    def redirects(self) -> None:
        """Former ids keep their URLs: static pages that redirect to the paper's pages (site/redirects.py)."""
        papers = self.papers
        self.pages.update(redirect_pages(self.alias, {pid: e.meta.title or pid for pid, e in papers.items()},
                                         {pid for pid, e in papers.items() if e.fulltext}))

    def survey_pages(self) -> list[dict[str, Any]]:
        """A page per survey (linked citations, its references), its other pages, files and figures; returns
        the rows of the survey index."""
        snap, papers, env = self.snap, self.papers, self.env
        survey_rows = []
        for s in snap.surveys:
            page = f"surveys/{s.slug}/survey.md"
            body, report = render_citations(escape_foreign_tags(s.text), self.label, self.linker(page))
            for k in report.missing:
                self.warnings.append(f"{page}: cites @{k}, which is not in the vault")
            refs = []
            for k in dict.fromkeys(self.alias.get(k, k) for k in report.cited):
                mm = papers[k].meta
                refs.append({"key": k, "authors": ", ".join(mm.authors), "year": mm.year, "title": mm.title or k,
                             "venue": mm.venue, "doi": mm.doi, "url": rel_link(self.note_path(k), page)})
            bib = next((f for f in s.files if f.endswith(".bib")), None)
            head = f"---\ntitle: {yaml_str(s.title)}\n---\n\n"
            self.pages[page] = head + body.rstrip() + "\n" + env.get_template("references.md.j2").render(
                refs=refs, missing=report.missing, bib=bib)
            extra = []
            for rel, text in s.pages.items():
                sub = f"surveys/{s.slug}/{rel}"
                rendered, _ = render_citations(text, self.label, self.linker(sub))
                self.pages[sub] = vault_page(rendered, Path(rel).stem)
                extra.append({"name": Path(rel).stem.replace("-", " "), "url": f"{s.slug}/{rel}"})
            for rel in s.files:
                self.assets[f"surveys/{s.slug}/{rel}"] = snap.root / "surveys" / s.slug / rel
                extra.append({"name": rel, "url": f"{s.slug}/{rel}"})
            for rel, text in s.figures.items():
                target = f"surveys/{s.slug}/{rel}"
                clean = self.sanitise(text, target)
                if clean is None:
                    self.warnings.append(f"{target}: not published (not an SVG figure papervault can read)")
                    continue
                self.files[target] = clean
            survey_rows.append({"slug": s.slug, "title": s.title, "cited": self.survey_cites.get(s.slug, []),
                                "url": f"surveys/{s.slug}/survey.md", "extra": extra})
        return survey_rows

    def code_pages(self) -> list[dict[str, str]]:
        code_rows = []
        for rel, text in self.snap.code.items():
            rendered, _ = render_citations(text, self.label, self.linker(rel))
            self.pages[rel] = vault_page(rendered, Path(rel).stem)
            code_rows.append({"title": _title_of(text, Path(rel).stem), "path": rel})
        return code_rows

    def user_pages(self) -> list[dict[str, str]]:
        """The user's own Markdown pages and the files beside them."""
        user_rows = []
        for rel, text in self.snap.user_pages.items():
            target = rel
            if rel.lower() == "readme.md":
                target = "about.md"    # the vault's README would collide with the generated home page
            elif rel.lower() == "index.md":
                target = "home.md"     # the user's own front page is kept, beside the generated one
            rendered, _ = render_citations(text, self.label, self.linker(target))
            self.pages[target] = vault_page(rendered, Path(rel).stem)
            user_rows.append({"title": _title_of(text, Path(rel).stem), "path": target})
        for rel in self.snap.user_files:
            self.assets[rel] = self.snap.root / rel
        return user_rows

    def index_pages(self, survey_rows: list[dict], code_rows: list[dict]) -> int:
        """The generated indexes (papers by year, by venue, by tag; surveys; code); returns the number of tags."""
        papers, env, listing = self.papers, self.env, self.listing
        ordered = sorted(papers, key=lambda p: (-(papers[p].meta.year or 0), (papers[p].meta.title or p).lower()))
        by_year: dict[Any, list[str]] = {}
        by_venue: dict[str, list[str]] = {}
        by_tag: dict[str, list[str]] = {}
        for pid in ordered:
            m = papers[pid].meta
            by_year.setdefault(m.year or "Undated", []).append(pid)
            by_venue.setdefault((m.venue or "").strip() or "Unknown venue", []).append(pid)
            for t in m.tags:
                by_tag.setdefault(str(t), []).append(pid)
        self.pages["papers/index.md"] = env.get_template("papers.md.j2").render(
            papers=ordered, by_year=[(y, listing(g, "papers/index.md")) for y, g in by_year.items()])
        self.pages["papers/venues.md"] = env.get_template("venues.md.j2").render(
            by_venue=[(v, listing(g, "papers/venues.md"))
                      for v, g in sorted(by_venue.items(), key=lambda kv: kv[0].lower())])
        self.pages["tags.md"] = env.get_template("tags.md.j2").render(
            by_tag=[(t, listing(g, "tags.md")) for t, g in sorted(by_tag.items(), key=lambda kv: kv[0].lower())])
        self.pages["surveys/index.md"] = env.get_template("surveys.md.j2").render(
            surveys=[dict(r, url=rel_link(r["url"], "surveys/index.md")) for r in survey_rows])
        self.pages["code/index.md"] = env.get_template("code.md.j2").render(
            code=[{"title": c["title"], "url": rel_link(c["path"], "code/index.md")} for c in code_rows])
        return len(by_tag)

    def whats_new_page(self, whats_new: dict) -> None:
        """What `papervault changes --since 7d` answered, as a page."""
        papers = self.papers
        rows = []
        for kind, label in (("added", "added"), ("updated", "updated"), ("versions", "new version"),
                            ("marked", "left its source"), ("inbox", "in the inbox"), ("stale_surveys", "survey")):
            for e in whats_new.get(kind, [])[:200]:
                pid = e.get("paper") if kind == "stale_surveys" else e.get("id")
                v = e.get("version") or {}
                detail = {"updated": ", ".join(e.get("what", [])), "marked": e.get("reason"),
                          "versions": f"v{v.get('from')} -> v{v.get('to')}: " + "; ".join(e.get("summary") or []),
                          "inbox": e.get("reason"), "stale_surveys": e.get("reason")}.get(kind) or ""
                rows.append({"kind": label, "title": (papers[pid].meta.title if pid in papers else
                                                     e.get("title") or e.get("survey") or pid or ""),
                             "url": rel_link(self.note_path(pid), "whatsnew.md") if pid in papers else "",
                             "detail": str(detail)[:400]})
        rows += surveys_gained_rows(whats_new, {s.slug: s.title for s in self.snap.surveys})
        # the day, not the instant: the page of an unchanged vault is the same all day, so its site is not rebuilt
        self.pages["whatsnew.md"] = self.env.get_template("whatsnew.md.j2").render(
            since=str(whats_new.get("since") or "")[:10], rows=rows)

    def home_page(self, site_name: str, recent: int, tag_count: int, survey_rows: list[dict],
                  code_rows: list[dict], user_rows: list[dict]) -> None:
        papers, snap = self.papers, self.snap
        recent_ids = sorted(papers, key=lambda p: (papers[p].meta.created or "", p), reverse=True)[:recent]
        counts = {"papers": len(papers), "surveys": len(snap.surveys), "code": len(snap.code), "tags": tag_count,
                  "figures": sum(len(e.figure_files) for e in papers.values()),
                  "waiting": sum(is_first_pass(e.meta.parser) for e in papers.values())}
        self.pages["index.md"] = self.env.get_template("home.md.j2").render(
            site_name=site_name, counts=counts, recent=self.listing(recent_ids, "index.md"),
            surveys=[dict(r, url=r["url"]) for r in survey_rows],
            code=[{"title": c["title"], "url": c["path"]} for c in code_rows],
            user_pages=[{"title": u["title"], "url": u["path"]} for u in user_rows])


def unfinished_note(meta: PaperMeta, fulltext: str | None) -> str:
    """What a page of a paper still read by its first pass says of it (plain text; "" for a complete paper):
    what follows when its full parse is done, and which scanned pages wait for OCR."""
    if not is_first_pass(meta.parser):
        return ""
    scans = pending_pages(fulltext or "")
    return ("Read by its text layer only: headings, figures, tables"
            + (f" and the scanned {pages_words(scans)} (waiting for OCR)" if scans else " and any scanned pages")
            + " follow when its full parse is done; not analysed yet.")


def navigation(survey_rows: list[dict], code_rows: list[dict], user_rows: list[dict],
               whats_new: bool) -> tuple[list[Any], list[str]]:
    """The navigation and the pages left out of it: generated, never hand-edited. A paper's pages are reached
    from the indexes, because a navigation entry per paper would be rendered into every page (quadratic in the
    number of papers)."""
    nav: list[Any] = [{"Home": "index.md"},
                      {"Papers": ["papers/index.md", {"By venue": "papers/venues.md"}, {"Tags": "tags.md"},
                                  {"Citation map": "map.md"}]},
                      {"Surveys": ["surveys/index.md"] + [{html_text(r["title"]): r["url"]} for r in survey_rows]},
                      {"Code": ["code/index.md"] + [{html_text(c["title"]): c["path"]} for c in code_rows][:50]}]
    if whats_new:
        nav.insert(1, {"What's new": "whatsnew.md"})
    if user_rows:
        # the theme prints navigation titles unescaped
        nav.append({"Notes": [{html_text(u["title"]): u["path"]} for u in user_rows]})
    return nav, ["/papers/*/", "/surveys/*/*", "/code/", "/map/"]


# Frontmatter keys of a vault page that reach the staged page; the theme prints some values unescaped
# (`description` into an attribute, `title` into the header), and others select templates, so none else pass.
PAGE_META_KEYS = {"title", "description", "hide", "tags", "search"}
HIDE_VALUES = {"navigation", "toc", "footer", "path", "tags", "feedback"}


def vault_page(text: str, default_title: str) -> str:
    """A Markdown page of the vault (code note, survey page, the user's own page) with frontmatter papervault
    writes itself: its values escaped for YAML and HTML, unknown keys dropped, foreign HTML tags shown as text. A page whose frontmatter does not
    parse keeps it as text behind an empty block, so mkdocs never reads it as metadata."""
    data, body = _strip_frontmatter(text)
    title = data.get("title") or _title_of(text, default_title)
    out = [f"title: {yaml_str(title)}"]
    if data.get("description"):
        out.append(f"description: {yaml_str(data['description'])}")
    hide = data.get("hide")
    if isinstance(hide, list) and any(h in HIDE_VALUES for h in hide):
        out.append("hide: [" + ", ".join(h for h in hide if h in HIDE_VALUES) + "]")
    tags = data.get("tags")
    if isinstance(tags, list) and tags:
        out.append("tags: [" + ", ".join(yaml_str(t) for t in tags if isinstance(t, (str, int))) + "]")
    search = data.get("search")
    if isinstance(search, dict) and search.get("exclude") is True:
        out.append("search:\n  exclude: true")
    return "---\n" + "\n".join(out) + "\n---\n\n" + escape_foreign_tags(body.lstrip("\n"))


def _title_of(text: str, default: str) -> str:
    data, body = _strip_frontmatter(text)
    if data.get("title"):
        return str(data["title"])
    m = re.search(r"^#\s+(.+)$", body, re.M)
    return m.group(1).strip() if m else default


# --- writing ---------------------------------------------------------------------------------------

def write_stage(plan: SitePlan, stage_dir: Path, extra_assets: dict[str, Path] | None = None) -> dict[str, int]:
    """Make `stage_dir` hold exactly the planned pages and assets; unchanged files are not touched, so a
    live preview rebuilds only after a real change. Assets are symlinked (copied where links fail)."""
    stage_dir.mkdir(parents=True, exist_ok=True)
    wanted: set[str] = set()
    written = linked = 0
    for rel, text in {**plan.files, **plan.pages}.items():
        wanted.add(rel)
        path = stage_dir / rel
        data = text.encode("utf-8")
        try:
            if path.is_file() and not path.is_symlink() and path.read_bytes() == data:
                continue
        except OSError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_bytes(data)
        written += 1
    for rel, src in {**plan.assets, **(extra_assets or {})}.items():
        if rel in wanted:
            continue
        wanted.add(rel)
        path = stage_dir / rel
        if path.is_symlink() and os.readlink(path) == str(src):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.exists():
            path.unlink()
        try:
            path.symlink_to(src)
        except OSError:
            shutil.copy2(src, path)
        linked += 1
    removed = 0
    for dirpath, dirnames, filenames in os.walk(stage_dir, topdown=False):
        for name in filenames:
            p = Path(dirpath) / name
            if p.relative_to(stage_dir).as_posix() not in wanted:
                p.unlink()
                removed += 1
        for name in dirnames:
            d = Path(dirpath) / name
            if not d.is_symlink() and not any(d.iterdir()):
                d.rmdir()
    return {"written": written, "linked": linked, "removed": removed}
