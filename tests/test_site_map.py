"""The site's citation map and each paper's citation neighbourhood, built with `papervault site build`.

The vault: six papers on replicated logs whose reference lists (on page 2 of their full texts) cite each other
by title, one with a hostile title (markup, quotes, an XML end marker) and one without a full text (it can be
cited, it cannot cite); two tags and three decades; a survey of them with its figures. Built through the Vault
in tmp_path, and the site once per engine (mkdocs, Zensical) for the module.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import unquote

import pytest

from papervault.models import PaperMeta, ParsedPaper
from support_site import engines

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = 'Chain replication <script>alert("x")</script> & "quoted" ]]> for logs'

# id -> (title, year, author, tags, the titles its reference list cites; None: no full text)
PAPERS = {
    "oki1988viewstamped": ("Viewstamped replication for highly available logs", 1988, "Brian Oki",
                           ["consensus"], []),
    "lamport1998parttime": ("The part-time parliament of replicated logs", 1998, "Leslie Lamport",
                            ["consensus"], None),
    "renesse2004chain": (HOSTILE, 2004, "Robbert Renesse", ["storage"],
                         ["The part-time parliament of replicated logs"]),
    "ongaro2014raft": ("In search of an understandable consensus algorithm for logs", 2014, "Diego Ongaro",
                       ["consensus"], ["The part-time parliament of replicated logs",
                                       "Viewstamped replication for highly available logs"]),
    "howard2016flexible": ("Flexible quorums for replicated log consensus", 2016, "Heidi Howard",
                           ["consensus", "storage"], ["In search of an understandable consensus algorithm for logs",
                                                      HOSTILE]),
    "gray1981transaction": ("Notes on the transaction concept for databases", 1981, "Jim Gray", ["storage"], []),
}
EDGES = {("renesse2004chain", "lamport1998parttime"), ("ongaro2014raft", "lamport1998parttime"),
         ("ongaro2014raft", "oki1988viewstamped"), ("howard2016flexible", "ongaro2014raft"),
         ("howard2016flexible", "renesse2004chain")}
LABEL = {pid: f"{a.split()[-1]} {y}" for pid, (_, y, a, _, _) in PAPERS.items()}


def _fulltext(title: str, cites: list[str]) -> str:
    body = (f'<a id="page-1"></a>\n\n# {title}\n\n## Abstract\n\nA protocol for a replicated log.\n\n'
            "## 1 Introduction\n\nReplicas of the log stay consistent when servers fail.\n\n")
    body += '<a id="page-2"></a>\n\n## References\n\n' + "\n\n".join(
        f"[{k}] A. Author and B. Author. {t}. In Proceedings of a Conference, 2001."
        for k, t in enumerate(cites + ["An unrelated book on cooking pasta at home"], 1)) + "\n"
    return body


@pytest.fixture(scope="module", params=engines())
def map_site(request, tmp_path_factory) -> Path:
    """The vault's site, built once per engine for the module (the tests only read it)."""
    from conftest import invoke as cli_run
    from papervault.workspace import Workspace

    ws_path = tmp_path_factory.mktemp(f"map-{request.param}") / "ws"
    cli_run(["init", ws_path, "--workspace", ws_path])
    v = Workspace(ws_path).require().vault
    for pid, (title, year, author, tags, cites) in PAPERS.items():
        v.write_note(PaperMeta(id=pid, title=title, year=year, authors=[author], tags=tags, status="parsed",
                               page_labels=["11", "12"] if pid == "ongaro2014raft" else []), f"# {title}\n")
        if cites is not None:
            v.write_fulltext(pid, ParsedPaper(markdown=_fulltext(title, cites), pages=2))
    # a survey of them with its figures, drawn by the survey's own code from the lineages the reference lists give
    from types import SimpleNamespace

    from papervault.survey.correlate import Cluster, Correlation, Lineage
    from papervault.survey.figures import write_figures

    corr = Correlation(topic="replicated logs", papers=list(PAPERS),
                       clusters=[Cluster(label="consensus", paper_ids=[p for p in PAPERS if "consensus" in PAPERS[p][3]]),
                                 Cluster(label="storage", paper_ids=list(PAPERS))],
                       lineages=[Lineage(a, b, "title") for a, b in sorted(EDGES)])
    selected = [SimpleNamespace(id=pid, title=t, year=y, fulltext="" if c is None else "x")
                for pid, (t, y, _, _, c) in PAPERS.items()]
    figures_md, _ = write_figures(v, "logs", corr, selected)
    (v.survey_dir("logs") / "survey.md").write_text("# Replicated logs\n\nA survey [@ongaro2014raft].\n\n" + figures_md,
                                                    encoding="utf-8")
    v.commit("add: test papers")
    out = json.loads(cli_run(["site", "build", "--json", "--workspace", ws_path, "--engine", request.param]).stdout)
    assert out["papers"] == len(PAPERS) and out["engine"] == request.param
    return ws_path / "site"


def _links(page: Path) -> list[str]:
    return [html.unescape(h) for h in re.findall(r'(?:href|src)="([^"]*)"', page.read_text(encoding="utf-8"))]


def _resolves(page: Path, href: str, site: Path) -> bool:
    target = (page.parent / unquote(href.split("#")[0])).resolve()
    return target.is_file() and site.resolve() in target.parents


def _drawn_edges(page: Path) -> set[tuple[str, str]]:
    """The edges the page's text alternative lists: `- [A](…/a/note.html) cites [B](…/b/note.html)`."""
    text = page.read_text(encoding="utf-8")
    part = text.split('id="citations-drawn"', 1)[1].split('id="papers-drawn"', 1)[0]
    return set(re.findall(r'papers/([\w.-]+)/note\.html">[^<]*</a> cites <a href="[./]*papers/([\w.-]+)/note\.html',
                          part))


def _svg_links(svg: Path) -> list[str]:
    root = ET.fromstring(svg.read_text(encoding="utf-8"))
    return [a.get("href") for a in root.iter(f"{SVG}a")]


def test_map_page_draws_and_lists_every_citation(map_site):
    page = map_site / "map.html"
    assert page.is_file()
    assert _drawn_edges(page) == EDGES
    # the drawing: the same papers as the list, each node a link to an existing paper page
    svg = map_site / "map.svg"
    links = _svg_links(svg)
    ids = {re.search(r"papers/([\w.-]+)/note\.html", h).group(1) for h in links}
    assert ids == {p for e in EDGES for p in e}
    assert all(_resolves(svg, h, map_site) for h in links), links
    # five citations drawn as paths with an arrow
    root = ET.fromstring(svg.read_text(encoding="utf-8"))
    assert len([p for p in root.iter(f"{SVG}path") if p.get("marker-end")]) == len(EDGES)
    # the most-cited paper has the largest circle
    circles = {a.get("href"): float(a.find(f"{SVG}circle").get("r")) for a in root.iter(f"{SVG}a")}
    biggest = max(circles, key=circles.get)
    assert "lamport1998parttime" in biggest
    # the page shows the drawing and links to it; every link of the page resolves inside the site
    assert 'src="map.svg"' in page.read_text(encoding="utf-8")
    for h in _links(page):
        if not h.startswith(("#", "data:")) and h:
            assert _resolves(page, h, map_site), h
    # a paper that cites no vault paper and is not cited is not drawn, and the page says so
    assert "gray1981transaction" not in " ".join(links)
    assert "1 paper neither cites nor is cited" in page.read_text(encoding="utf-8")
    # the map is reached from the navigation
    assert re.search(r'href="(?:\./)?map\.html"', (map_site / "index.html").read_text(encoding="utf-8"))


def test_map_by_tag_and_decade(map_site):
    page = map_site / "map.html"
    text = page.read_text(encoding="utf-8")
    tag_pages = re.findall(r'href="(map/tag-consensus-[0-9a-f]{6}\.html)"', text)
    assert len(set(tag_pages)) == 1, text
    consensus = map_site / tag_pages[0]
    # only the citations among the papers tagged `consensus`
    assert _drawn_edges(consensus) == {("ongaro2014raft", "lamport1998parttime"),
                                       ("ongaro2014raft", "oki1988viewstamped"),
                                       ("howard2016flexible", "ongaro2014raft")}
    svg = consensus.with_suffix(".svg")
    assert all(_resolves(svg, h, map_site) for h in _svg_links(svg))
    assert 'href="map/2010s.html"' in text
    assert _drawn_edges(map_site / "map" / "2010s.html") == {("howard2016flexible", "ongaro2014raft")}
    for h in _links(consensus):
        if h and not h.startswith("#"):
            assert _resolves(consensus, h, map_site), h


def test_paper_page_lists_its_neighbourhood_with_evidence(map_site):
    page = map_site / "papers" / "ongaro2014raft" / "note.html"
    text = page.read_text(encoding="utf-8")
    part = text.split('id="citations-in-the-vault"', 1)[1]
    cites_part, _, cited_part = part.partition("Cited by")
    # it cites two vault papers, each with the reference line and the printed page (12 is PDF page 2)
    for pid in ("lamport1998parttime", "oki1988viewstamped"):
        assert f"../{pid}/note.html" in cites_part
    assert "Viewstamped replication for highly available logs. In Proceedings" in cites_part
    assert 'href="paper.html#page-2">p. 12</a>' in cites_part
    # one paper cites it: the evidence is on that paper's page 2
    assert "../howard2016flexible/note.html" in cited_part
    assert 'href="../howard2016flexible/paper.html#page-2">p. 2</a>' in cited_part
    assert "renesse2004chain" not in part.split("</article>")[0]
    # the drawing: cited-by on the left, cited on the right, each linked to an existing page
    svg = map_site / "papers" / "ongaro2014raft" / "neighbourhood.svg"
    links = _svg_links(svg)
    assert sorted(re.search(r"\.\./([\w.-]+)/note\.html", h).group(1) for h in links) == \
        ["howard2016flexible", "lamport1998parttime", "oki1988viewstamped"]
    assert all(_resolves(svg, h, map_site) for h in links)
    for h in _links(page):
        if h and not h.startswith(("#", "data:")):
            assert _resolves(page, h, map_site), h
    # a paper without citations in the vault has no such section
    assert 'id="citations-in-the-vault"' not in (map_site / "papers" / "gray1981transaction" / "note.html"
                                                 ).read_text(encoding="utf-8")


def test_hostile_titles_are_text_and_the_page_policy_holds(map_site):
    pages = [map_site / "map.html", map_site / "papers" / "howard2016flexible" / "note.html",
             map_site / "papers" / "renesse2004chain" / "note.html"]
    reference = (map_site / "tags.html").read_text(encoding="utf-8")
    theme_scripts = sorted(re.sub(r'src="[./]*', 'src="', s) for s in re.findall(r"<script[^>]*>", reference))
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "<script>alert" not in text and "alert(&quot;x&quot;)</script>" not in text
        assert "Content-Security-Policy" in text
        # no script beyond the theme's own, no outside URL
        assert sorted(re.sub(r'src="[./]*', 'src="', s) for s in re.findall(r"<script[^>]*>", text)) == theme_scripts
        assert not [h for h in _links(page) if re.match(r"(?i)(https?:)?//|javascript:", h)], page
    # the hostile title is shown as text on the neighbour's page (the evidence is its reference line)
    howard = pages[1].read_text(encoding="utf-8")
    assert "&lt;script&gt;alert" in howard
    # the SVGs parse, hold no script, and carry the title as text
    for svg in [map_site / "map.svg", map_site / "papers" / "renesse2004chain" / "neighbourhood.svg",
                map_site / "papers" / "howard2016flexible" / "neighbourhood.svg"]:
        raw = svg.read_text(encoding="utf-8")
        root = ET.fromstring(raw)
        assert not [e for e in root.iter() if e.tag.split("}")[-1] in ("script", "foreignObject", "style")]
        assert not re.search(r"\son\w+=", raw) and "javascript:" not in raw.lower()
        assert all(not re.match(r"(?i)(https?:)?//", h) for h in _svg_links(svg))
    titles = " ".join(t.text or "" for t in ET.fromstring((map_site / "map.svg").read_text(encoding="utf-8"))
                      .iter(f"{SVG}title"))
    assert "<script>alert" in titles      # the parsed text: it was escaped in the file


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium, launched once for the module."""
    from support_site import chromium

    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


# The links of an SVG opened in the browser (its `<a href>` are SVGAnimatedString), as absolute URLs.
SVG_LINKS = "() => Array.from(document.querySelectorAll('a'), a => new URL(a.href.baseVal, document.baseURI).href)"
# The links of the list that follows a heading or paragraph holding `intro`, in the page's article.
LIST_AFTER = """(intro) => {
    const start = Array.from(document.querySelectorAll('article p, article h2')).find(e => e.textContent.includes(intro));
    let el = start && start.nextElementSibling;
    while (el && el.tagName !== 'UL') el = el.nextElementSibling;
    return el ? Array.from(el.querySelectorAll('a'), a => a.href) : null;
}"""


def _ids(urls) -> set[str]:
    return {m.group(1) for u in urls if (m := re.search(r"/papers/([\w.-]+)/(?:note|paper)\.html", u))}


def test_browser_survey_map_and_neighbourhood_from_disk_and_over_http(map_site, browser):
    """From disk and served: a survey's figures, the map and a paper's neighbourhood decode in the page, name the
    same papers as their text alternatives, and a node's link opens the paper's page; nothing leaves the site."""
    from support_site import ARTIFACTS, StaticServer

    ARTIFACTS.mkdir(exist_ok=True)
    with StaticServer(map_site) as server:
        for how, root in (("file", map_site.resolve().as_uri() + "/"), ("http", server.url)):
            page = browser.new_page()
            requests: list[str] = []
            errors: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.on("pageerror", lambda e: errors.append(str(e)))

            # the survey: each figure decodes, and its list names the papers its drawing links
            page.goto(root + "surveys/logs/survey.html")
            for fig in ("lineage", "timeline"):
                assert page.eval_on_selector(f'img[src="figures/{fig}.svg"]', "i => i.complete && i.naturalWidth > 0")
            listed = _ids(page.evaluate(LIST_AFTER, "Figure 1 as a list"))
            assert listed == set(PAPERS)
            page.goto(root + "surveys/logs/figures/lineage.svg")
            assert _ids(page.evaluate(SVG_LINKS)) == listed
            page.click('a[href="../../../papers/ongaro2014raft/paper.html"] rect')
            page.wait_for_url("**/papers/ongaro2014raft/paper.html")

            # the map: the papers listed are the papers drawn; a node opens its paper's page
            page.goto(root + "map.html")
            assert page.eval_on_selector('img[src="map.svg"]', "i => i.complete && i.naturalWidth > 0")
            listed = _ids(page.eval_on_selector_all('#papers-drawn ~ ul a', "as => as.map(a => a.href)"))
            assert listed == {p for e in EDGES for p in e}
            page.click('a[href="map.svg"]')
            page.wait_for_url("**/map.svg")
            page.screenshot(path=str(ARTIFACTS / f"site-map-{how}.png"))
            assert _ids(page.evaluate(SVG_LINKS)) == listed
            page.click('a[href="papers/ongaro2014raft/note.html"] circle')
            page.wait_for_url("**/papers/ongaro2014raft/note.html")
            assert "understandable consensus" in page.inner_text("article h1")

            # the paper's neighbourhood: drawn and listed alike, and followed from the drawing
            assert page.eval_on_selector('img[src="neighbourhood.svg"]', "i => i.complete && i.naturalWidth > 0")
            # each item links the neighbour's page, then the evidence: a page of the citing paper's full text
            cites = _ids(u for u in page.evaluate(LIST_AFTER, "Cites (from its reference list)") if u.endswith("/note.html"))
            cited_by = _ids(u for u in page.evaluate(LIST_AFTER, "Cited by (their reference lists") if u.endswith("/note.html"))
            assert cites == {b for a, b in EDGES if a == "ongaro2014raft"}
            assert cited_by == {a for a, b in EDGES if b == "ongaro2014raft"}
            page.click('a[href="../howard2016flexible/paper.html#page-2"]')      # the evidence: that page
            page.wait_for_url("**/howard2016flexible/paper.html#page-2")
            page.goto(root + "papers/ongaro2014raft/neighbourhood.svg")
            assert _ids(page.evaluate(SVG_LINKS)) == cites | cited_by
            page.click('a[href="../howard2016flexible/note.html"] rect')
            page.wait_for_url("**/papers/howard2016flexible/note.html")
            assert "Flexible quorums" in page.inner_text("article h1")

            assert not errors, (how, errors)
            outside = [u for u in requests if not u.startswith(root) and not u.startswith(("data:", "about:"))]
            assert outside == [], (how, outside)
            page.close()


def test_an_unchanged_vault_reuses_the_citation_edges(map_site):
    """The edges of each paper are kept with its full text's content hash: a build of an unchanged vault
    matches no reference list again and draws the same pages; a changed full text is matched again, and a
    changed title (which changes what every list can match) matches them all."""
    import dataclasses

    from papervault.site.build import stage
    from papervault.site.stage import plan_site, read_vault
    from papervault.workspace import Workspace

    ws = Workspace(map_site.parent).require()
    with_text = {p for p, v in PAPERS.items() if v[4] is not None}
    assert stage(ws)["graph_reused"] == len(with_text)     # the site build before left its cache
    snap = read_vault(ws.vault_dir)
    first = plan_site(snap)
    again = plan_site(snap, graph_cache=first.graph_cache)
    assert first.graph_reused == 0 and again.graph_reused == len(with_text)
    assert again.pages == first.pages and again.files == first.files
    # howard2016flexible's reference list no longer names Raft: only that paper is matched again
    howard = snap.papers["howard2016flexible"]
    snap.papers["howard2016flexible"] = dataclasses.replace(
        howard, fulltext=howard.fulltext.replace("In search of an understandable consensus algorithm for logs", "x"))
    edited = plan_site(snap, graph_cache=first.graph_cache)
    assert edited.graph_reused == len(with_text) - 1
    assert "howard2016flexible" not in edited.pages["papers/ongaro2014raft/note.md"].split("Cited by")[-1]
    # a title changes what every reference list can match: nothing is reused
    gray = snap.papers["gray1981transaction"]
    snap.papers["gray1981transaction"] = dataclasses.replace(
        gray, meta=gray.meta.model_copy(update={"title": "A new title for the transaction concept"}))
    assert plan_site(snap, graph_cache=edited.graph_cache).graph_reused == 0


def test_an_unchanged_vault_reuses_page_anchors_and_drawings(map_site):
    """What staging derives from content alone is kept between builds: each full text's page anchors and each
    neighbourhood drawing after the SVG allow-list. The next build gives the same pages from them; an entry that
    does not fit (anchors at other offsets, a staged drawing changed on disk) is made again."""
    from papervault.site.build import stage
    from papervault.site.stage import RenderCache, plan_site, read_vault
    from papervault.workspace import Workspace

    ws = Workspace(map_site.parent).require()
    with_text = [p for p, v in PAPERS.items() if v[4] is not None]
    drawn = {p for e in EDGES for p in e}
    assert stage(ws)["render_reused"] == len(with_text) + len(drawn)    # the site build before left its cache
    snap = read_vault(ws.vault_dir)
    first = plan_site(snap)
    assert first.render_cache.hits == 0 and set(first.render_cache.svg) == {
        f"papers/{p}/neighbourhood.svg" for p in drawn}
    again = plan_site(snap, render_cache=RenderCache(
        old_anchors=first.render_cache.anchors, old_svg=dict(first.render_cache.svg.values())))
    assert again.render_cache.hits == len(with_text) + len(drawn)
    assert again.pages == first.pages and again.files == first.files
    # anchors that do not fit the text are found again
    wrong = {k: [[p, at + 1] for p, at in v] for k, v in first.render_cache.anchors.items()}
    assert plan_site(snap, render_cache=RenderCache(old_anchors=wrong)).pages == first.pages
    # a staged drawing changed on disk is not taken for the cached one: it is sanitised and staged again
    staged = ws.state_dir / "site-src" / "papers" / "ongaro2014raft" / "neighbourhood.svg"
    good = staged.read_text(encoding="utf-8")
    staged.write_text(good.replace("</svg>", '<script>alert(1)</script></svg>'), encoding="utf-8")
    assert stage(ws)["render_reused"] == len(with_text) + len(drawn) - 1
    assert staged.read_text(encoding="utf-8") == good
