"""The static site: generated pages, citations, offline assets, Chinese search, and a real browser on top."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from papervault.site.citations import cited_keys, render_citations
from papervault.site.stage import anchor, md_escape, plan_site, read_vault
from support_site import ARTIFACTS, HARVEST, StaticServer, chromium, engines, make_vault, search, search_docs

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module", params=engines())
def built(request, tmp_path_factory, corpus_dir):
    """One vault (with a real corpus paper) built once per engine for the whole module."""
    from papervault.site.build import build_site

    ws = make_vault(tmp_path_factory.mktemp(f"site-{request.param}") / "ws", real_pdf=corpus_dir / HARVEST)
    result = build_site(ws, engine=request.param)
    assert result["engine"] == request.param
    return ws, result


def html(ws, rel: str) -> str:
    return (ws.site_dir / rel).read_text(encoding="utf-8")


# --- citations (pure) ----------------------------------------------------------------------------------

def test_citations_render_as_links_with_page_locators():
    known = {"lamport2001paxos": "Lamport 2001", "fox1999harvest": "Fox and Brewer 1999"}
    text = ("Quorums intersect [@lamport2001paxos, p. 4]. Both [@lamport2001paxos; @fox1999harvest]. "
            "Unknown [@nobody1900none]. Mail me at a@lamport2001paxos.org. `[@lamport2001paxos]` in code. "
            "@fox1999harvest argue so.")
    out, report = render_citations(text, known.get, lambda k, p: f"papers/{k}/" + (f"paper.md#page-{p}" if p else "note.md"))
    assert "([Lamport 2001](papers/lamport2001paxos/note.md), [p. 4](papers/lamport2001paxos/paper.md#page-4))" in out
    assert "([Lamport 2001](papers/lamport2001paxos/note.md); [Fox and Brewer 1999](papers/fox1999harvest/note.md))" in out
    assert 'class="pv-cite-missing"' in out and "@nobody1900none" in out
    assert "a@lamport2001paxos.org" in out and "`[@lamport2001paxos]`" in out
    assert "[Fox and Brewer](papers/fox1999harvest/note.md) (1999) argue so" in out
    assert report.cited == ["lamport2001paxos", "fox1999harvest"] and report.missing == ["nobody1900none"]
    assert cited_keys("[see @a, pp. 3-4; -@b] and [a link](x.md) and [@a]") == ["a", "b"]
    # two citations back to back are two citations, not a link whose text is the first: a model's prose (and an
    # older polish) wrote "[@a, p. 1][@a]", and the site then warned of a target ending in ")"
    glued, _ = render_citations("Consensus [@lamport2001paxos, p. 4][@fox1999harvest]. A [ref][x] link.", known.get,
                                lambda k, p: f"papers/{k}/" + (f"paper.md#page-{p}" if p else "note.md"))
    assert glued.startswith("Consensus ([Lamport 2001](papers/lamport2001paxos/note.md), "
                            "[p. 4](papers/lamport2001paxos/paper.md#page-4))([Fox and Brewer 1999]"), glued
    assert "A [ref][x] link." in glued


def test_markdown_escaping_and_anchors_keep_titles_and_chinese():
    assert md_escape("A [draft] *of* <T> & co") == r"A \[draft\] \*of\* &lt;T&gt; &amp; co"
    assert anchor("注意力", "tag") == "tag-注意力"
    assert anchor("Deep Learning", "tag") == "tag-deep-learning"
    assert anchor("!!!", "venue").startswith("venue-") and len(anchor("!!!", "venue")) > 6


def test_plan_generates_every_page_without_touching_disk(tmp_path):
    ws = make_vault(tmp_path / "ws")
    plan = plan_site(read_vault(ws.vault_dir), site_name="Lab vault")
    assert {"index.md", "papers/index.md", "papers/venues.md", "tags.md", "surveys/index.md", "code/index.md",
            "papers/lamport2001paxos/note.md", "papers/lamport2001paxos/paper.md",
            "papers/chen2020attention/note.md", "surveys/consensus-attention/survey.md",
            "surveys/consensus-attention/outline.md", "code/paxos-impl.md", "ideas.md", "about.md"} <= set(plan.pages)
    note = plan.pages["papers/lamport2001paxos/note.md"]
    # a metadata card, the note without its duplicated H1, the figure with its page, back-links
    assert "**Links:** [Full text](paper.md) · [DOI 10.1145/568425.568433](https://doi.org/10.1145/568425.568433)" in note
    assert "[code: paxos-impl](../../code/paxos-impl.md)" in note
    assert note.count("# Paxos Made Simple") == 1
    assert "![Figure 1: Message flow between proposers and acceptors](figures/fig-1.png)" in note
    assert "[p. 1](paper.md#page-1)" in note
    assert "Survey: [Consensus and attention: a survey](../../surveys/consensus-attention/survey.md)" in note
    assert "[注意力机制综述](../chen2020attention/note.md)" in note          # cited by another paper's note
    assert "template:" not in note.split("---")[1]                       # note frontmatter never reaches mkdocs
    survey = plan.pages["surveys/consensus-attention/survey.md"]
    assert "[p. 2](../../papers/lamport2001paxos/paper.md#page-2)" in survey
    assert "## References\n" in survey and "Not in the vault: `@fox1999harvest`, `@nobody1900none`" in survey
    assert any("@nobody1900none" in w for w in plan.warnings)
    assert "[Lab vault]" not in plan.pages["index.md"] and "# Lab vault" in plan.pages["index.md"]
    assert "**2** papers" in plan.pages["index.md"]
    assert "## <a id=\"tag-注意力\"></a>注意力\n" in plan.pages["tags.md"]
    # generated navigation: indexes and surveys, not one entry per paper
    assert {"Home": "index.md"} in plan.nav
    assert not any("papers/lamport2001paxos" in json.dumps(n) for n in plan.nav)
    assert {"Notes": [{"Vault": "about.md"}, {"My reading ideas": "ideas.md"}]} in plan.nav


# --- the built site ------------------------------------------------------------------------------------

def test_build_writes_a_page_per_paper_and_survey_and_leaves_the_vault_clean(built):
    ws, result = built
    assert result["papers"] == 3 and result["surveys"] == 1 and result["site_dir"] == str(ws.site_dir)
    for rel in ("index.html", "papers/lamport2001paxos/note.html", "papers/lamport2001paxos/paper.html",
                "papers/fox1999harvest/note.html", "papers/fox1999harvest/paper.html",
                "papers/fox1999harvest/paper.pdf", "papers/lamport2001paxos/figures/fig-1.png",
                "surveys/consensus-attention/survey.html", "surveys/consensus-attention/references.bib",
                "code/paxos-impl.html", "ideas.html", "tags.html", "map.html", "map.svg"):
        assert (ws.site_dir / rel).is_file(), rel
    # the search index, and its copy as a script for pages opened from disk
    search_files = {"mkdocs": ("search/search_index.json", "search/search_index.js"),
                    "zensical": ("search.json", "search.js")}[result["engine"]]
    assert all((ws.site_dir / rel).is_file() for rel in search_files)
    assert ws.vault.is_clean()                       # nothing generated lands in the user's repository
    assert not list(ws.vault_dir.rglob("index.md"))
    assert any("@nobody1900none" in w for w in result["warnings"])


def test_real_paper_full_text_keeps_page_anchors(built):
    ws, _ = built
    page = html(ws, "papers/fox1999harvest/paper.html")
    assert 'id="page-1"' in page and 'id="page-5"' in page
    assert "Harvest, Yield, and Scalable Tolerant Systems" in page
    assert '<a href="paper.pdf">PDF</a>' in html(ws, "papers/fox1999harvest/note.html")


def test_site_loads_nothing_from_outside(built):
    """No CDN, no web fonts: every script, stylesheet, image and font comes from the site itself."""
    ws, _ = built
    external = re.compile(r"""(?:src|srcset)\s*=\s*["']\s*(?:https?:)?//|<link[^>]+href\s*=\s*["']\s*(?:https?:)?//""", re.I)
    pages = list(ws.site_dir.rglob("*.html"))
    assert len(pages) >= 12
    for p in pages:
        assert not external.findall(p.read_text(encoding="utf-8")), p
    for css in ws.site_dir.rglob("*.css"):
        assert not re.search(r"url\(\s*['\"]?(?:https?:)?//|@import\s+['\"]?(?:url\()?\s*['\"]?https?:", css.read_text(encoding="utf-8")), css
    home = html(ws, "index.html")
    assert "fonts.googleapis" not in home and "fonts.gstatic" not in home
    assert (ws.site_dir / "assets/mathjax/tex-svg.js").is_file()
    assert list((ws.site_dir / "assets/mathjax/input/tex/extensions").glob("*.js"))


def test_math_is_marked_for_mathjax(built):
    ws, _ = built
    page = html(ws, "papers/lamport2001paxos/paper.html")
    assert '<div class="arithmatex">\\[\\sum_{i=1}^{n} q_i &gt; \\frac{n}{2}\\]</div>' in page
    assert 'src="../../assets/mathjax/tex-svg.js"' in page


def test_search_index_segments_chinese(built):
    """jieba cuts Chinese into words at build time (zero-width spaces), so a Chinese word is a search term."""
    ws, _ = built
    all_docs, separator = search_docs(ws.site_dir)
    sep = re.compile(separator)
    docs = [d for d in all_docs if d["location"].startswith("papers/chen2020attention/note.html")]
    tokens = {t for d in docs for t in sep.split(d["text"] + " " + d["title"]) if t}
    assert "注意力" in tokens and "机制" in tokens
    assert any("quorumology" in d["text"] for d in all_docs if "lamport2001paxos/note" in d["location"])


def test_cli_build_json_and_strict(built, tmp_path, cli_run):
    ws, result = built
    from papervault.cli import main

    engine = ["--engine", result["engine"]]
    # what the builds print, in this process; the failing --strict build below is a process (its exit code)
    out = cli_run(["site", "build", "--workspace", ws.root, "--json", *engine])
    data = json.loads(out.stdout)
    assert data["papers"] == 3 and data["pages"] >= 15 and data["seconds"] > 0 and data["engine"] == result["engine"]
    # --strict turns a broken link into a one-line error, without a traceback
    broken = tmp_path / "ws2"
    ws2 = make_vault(broken)
    (ws2.vault_dir / "ideas.md").write_text("# Ideas\n\n[gone](papers/nobody/note.md)\n", encoding="utf-8")
    # without --strict the same build succeeds, says what is broken, and counts one survey as "1 survey"
    out = cli_run(["site", "build", "-w", broken, *engine])
    assert "warning: " in out.stderr and "papers/nobody/note.md" in out.stderr, out.stderr
    assert re.fullmatch(r"Built \d+ pages \(2 papers, 1 survey\) in [\d.]+ s into \S+\n", out.stdout), out.stdout
    out = subprocess.run([sys.executable, "-m", "papervault", "site", "build", "--strict", "-w", str(broken), *engine],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 1
    assert out.stderr.startswith("error: site build failed in strict mode") and "Traceback" not in out.stderr
    assert "build without --strict" in out.stderr
    assert callable(main)


def test_a_build_of_an_unchanged_vault_is_not_run_again(tmp_path, cli_run):
    """The second build of an unchanged vault stages, finds nothing changed and leaves site/ as it is; a changed
    note, a file of site/ gone, or an edited mkdocs.yml build again."""
    from papervault.site.build import build_site

    ws = make_vault(tmp_path / "ws")
    first = build_site(ws)
    assert first["unchanged"] is False
    index = ws.site_dir / "index.html"
    mtime = index.stat().st_mtime_ns
    again = build_site(ws)
    assert again["unchanged"] is True and again["pages"] == first["pages"]
    assert again["seconds"] < first["seconds"] and index.stat().st_mtime_ns == mtime

    ws.vault.update_meta("lamport2001paxos", title="Paxos Made Simple, Again")
    changed = build_site(ws)
    assert changed["unchanged"] is False
    assert any("Paxos Made Simple, Again" in f.read_text(encoding="utf-8")
               for f in (ws.site_dir / "papers").rglob("*.html"))
    assert build_site(ws)["unchanged"] is True

    (ws.site_dir / "tags.html").unlink()
    assert build_site(ws)["unchanged"] is False and (ws.site_dir / "tags.html").is_file()

    # a page changed with its mtime (and the folder's) put back: the content says so, and the build runs
    page = ws.site_dir / "tags.html"
    st, folder = page.stat(), ws.site_dir.stat()
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace("<body", "<body data-x=1", 1)[:len(text)], encoding="utf-8")
    os.utime(page, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.utime(ws.site_dir, ns=(folder.st_atime_ns, folder.st_mtime_ns))
    assert build_site(ws)["unchanged"] is False and page.read_text(encoding="utf-8") == text
    os.utime(page, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))      # touched, the same bytes: still current
    assert build_site(ws)["unchanged"] is True

    user = ws.root / "mkdocs.yml"
    user.write_text(user.read_text(encoding="utf-8") + "\ncopyright: Written by the lab\n", encoding="utf-8")
    assert build_site(ws)["unchanged"] is False
    assert "Written by the lab" in index.read_text(encoding="utf-8")

    # the command (with its "What's new" page, dated by the day) says so the second time
    assert cli_run(["site", "build", "-w", ws.root]).stdout.startswith("Built ")
    again = cli_run(["site", "build", "-w", ws.root]).stdout
    assert "is current: nothing changed since its last build" in again, again


# --- live preview --------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode("utf-8")


def test_serve_previews_and_rebuilds_when_the_vault_changes(tmp_path):
    ws = make_vault(tmp_path / "ws")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "papervault", "site", "serve", "--port", str(port), "-w", str(ws.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/ideas.html"
    try:
        deadline = time.monotonic() + 90
        page = ""
        while time.monotonic() < deadline:
            try:
                page = _get(url)
                break
            except OSError:
                time.sleep(0.5)
        assert "My reading ideas" in page
        (ws.vault_dir / "ideas.md").write_text("# Revised ideas\n\nCompare Byzantine quorums.\n", encoding="utf-8")
        while time.monotonic() < deadline:
            page = _get(url)
            if "Revised ideas" in page:
                break
            time.sleep(0.5)
        assert "Revised ideas" in page
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


# --- in a real browser ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


def test_browser_search_follow_figure_math_and_citation(built, browser):
    ws, result = built
    engine = result["engine"]
    ARTIFACTS.mkdir(exist_ok=True)
    with StaticServer(ws.site_dir) as server:
        requests: list[str] = []
        page = browser.new_page()
        page.on("request", lambda r: requests.append(r.url))
        failed: list[str] = []
        # a request the next navigation cancels (the search worker still loading when the test moves on) is
        # aborted, not failed; anything else that fails is a fault of the site
        page.on("requestfailed", lambda r: None if "ERR_ABORTED" in (r.failure or "") else failed.append(r.url))

        page.goto(server.url)
        assert "papervault" in page.title()
        assert page.locator("text=Paxos Made Simple").first.is_visible()
        page.screenshot(path=str(ARTIFACTS / "site-home.png"), full_page=True)

        # search a word that only this paper's note has, then follow the first result
        first = search(page, "quorumology", engine).first
        first.click()
        page.wait_for_url(re.compile(r"/papers/lamport2001paxos/note\.html"), timeout=20000)
        assert page.locator("article h1").first.inner_text().rstrip("¶") == "Paxos Made Simple"

        # the figure is served and decodes (naturalWidth > 0)
        img = page.locator(".pv-figure img").first
        img.scroll_into_view_if_needed()
        page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=img.element_handle(), timeout=10000)
        assert img.evaluate("img => img.naturalWidth") == 160

        # MathJax, served by the site itself, typesets the note's inline formula
        page.wait_for_selector("mjx-container svg path", state="attached", timeout=20000)
        box = page.locator("mjx-container").first.bounding_box()
        assert box and box["width"] > 5 and box["height"] > 5
        page.screenshot(path=str(ARTIFACTS / "site-paper.png"), full_page=True)

        # a page link of the note jumps to the anchor of that page in the full text
        page.locator("a[href='paper.html#page-2']").first.click()
        page.wait_for_url(re.compile(r"/papers/lamport2001paxos/paper\.html#page-2$"))
        assert page.locator("#page-2").count() == 1

        # a survey's citation leads to the cited paper's page
        page.goto(server.url + "surveys/consensus-attention/survey.html")
        page.locator("article a", has_text="Lamport 2001").first.click()
        page.wait_for_url(re.compile(r"/papers/lamport2001paxos/note\.html$"))
        assert page.locator("article h1").first.inner_text().rstrip("¶") == "Paxos Made Simple"
        page.goto(server.url + "surveys/consensus-attention/survey.html")
        page.locator("article a", has_text="p. 2").first.click()
        page.wait_for_url(re.compile(r"/papers/lamport2001paxos/paper\.html#page-2$"))

        # a Chinese word finds the Chinese paper
        page.goto(server.url)
        results = search(page, "注意力", engine)
        page.keyboard.press("End")
        page.screenshot(path=str(ARTIFACTS / f"site-search-chinese-{engine}.png"))
        hrefs = results.evaluate_all("as => as.map(a => a.href)")
        first = results.nth(next(i for i, h in enumerate(hrefs) if "/papers/chen2020attention/" in h))
        first.click()
        page.wait_for_url(re.compile(r"/papers/chen2020attention/"))

        # everything the browser asked for came from the site itself
        outside = [u for u in requests if not u.startswith(server.url) and not u.startswith("data:")]
        assert outside == [] and failed == []
        page.close()


def _file_path(url: str) -> Path:
    from urllib.parse import unquote, urlsplit

    return Path(unquote(urlsplit(url).path))


# Every link of a page: its absolute URL as the browser resolved it.
HREFS = "() => Array.from(document.querySelectorAll('a[href]'), a => a.href)"


def test_browser_from_disk_search_citation_anchor_and_pdf(built, browser):
    """Opened as files (no server): search finds a paper, a survey citation lands on its page anchor, every
    internal link names an existing file (no folder URL), and a full-text page links to that page of the PDF."""
    ws, result = built
    engine = result["engine"]
    site = ws.site_dir.resolve()
    home = (site / "index.html").as_uri()
    requests: list[str] = []
    page = browser.new_page()
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    page.goto(home)
    assert page.locator("text=Paxos Made Simple").first.is_visible()
    # the search box is there and answers: the theme's worker runs in the site's own iframe shim
    first = search(page, "quorumology", engine).first
    page.screenshot(path=str(ARTIFACTS / f"site-file-search-{engine}.png"))
    first.click()
    page.wait_for_url(re.compile(r"^file://.*/papers/lamport2001paxos/note\.html"), timeout=20000)
    assert page.locator("article h1").first.inner_text().rstrip("¶") == "Paxos Made Simple"

    # a survey's page citation opens the full text at that page's anchor
    page.goto((site / "surveys/consensus-attention/survey.html").as_uri())
    page.locator("article a", has_text="p. 2").first.click()
    page.wait_for_url(re.compile(r"^file://.*/papers/lamport2001paxos/paper\.html#page-2$"))
    assert page.evaluate("() => document.querySelector(':target') && document.querySelector(':target').id") == "page-2"
    page.goto((site / "surveys/consensus-attention/survey.html").as_uri())
    page.locator("article a", has_text="Lamport 2001").first.click()
    page.wait_for_url(re.compile(r"^file://.*/papers/lamport2001paxos/note\.html$"))

    # every internal link of these pages is a file that exists (no directory listing, anchors kept)
    checked = 0
    for rel in ("index.html", "papers/index.html", "tags.html", "surveys/consensus-attention/survey.html",
                "papers/lamport2001paxos/note.html", "papers/fox1999harvest/note.html",
                "papers/fox1999harvest/paper.html", "code/paxos-impl.html"):
        page.goto((site / rel).as_uri())
        for href in page.evaluate(HREFS):
            if not href.startswith("file://"):
                assert href.startswith(("https://doi.org/", "https://arxiv.org/")), (rel, href)
                continue
            target = _file_path(href)
            assert target.is_file(), (rel, href)
            assert str(target.resolve()).startswith(str(site)), (rel, href)
            checked += 1
    assert checked > 100

    # the full text links each page to that page of the PDF the workspace keeps
    page.goto((site / "papers/fox1999harvest/paper.html").as_uri())
    link = page.locator("a.pv-pdf-page", has_text="PDF p. 3").first
    href = link.evaluate("a => a.href")
    assert href.endswith("/papers/fox1999harvest/paper.pdf#page=3"), href
    import pymupdf

    with pymupdf.open(_file_path(href)) as doc:
        assert doc.page_count >= 3
    page.goto((site / "papers/fox1999harvest/note.html").as_uri())
    assert page.locator(".pv-card a", has_text="PDF").first.evaluate("a => a.href").endswith("/fox1999harvest/paper.pdf")

    outside = [u for u in requests if not u.startswith(("file://", "data:", "about:"))]
    assert outside == [] and errors == []
    page.close()


def test_generated_config_keeps_the_users_plugins_and_adds_offline(tmp_path):
    """The site config inherits the user's mkdocs.yml, whose plugin list an override would replace: papervault
    writes it whole with `offline` added, even when the file holds mkdocs' YAML tags."""
    import yaml

    from papervault.site.build import OFFLINE_SHIM, stage

    ws = make_vault(tmp_path / "ws")
    mk = ws.root / "mkdocs.yml"
    text = mk.read_text(encoding="utf-8").replace("use_directory_urls: false", "use_directory_urls: true")
    text = text.replace("plugins:\n  - search:", "plugins:\n  - tags\n  - search:")
    text += ("  analytics: !ENV [PV_ANALYTICS, false]\n"
             "markdown_extensions_extra:\n  - emoji: !!python/name:material.extensions.emoji.twemoji\n")
    mk.write_text(text, encoding="utf-8")
    cfg = yaml.safe_load(stage(ws)["config"].read_text(encoding="utf-8"))
    assert cfg["INHERIT"] == str(mk) and cfg["use_directory_urls"] is False
    assert cfg["plugins"][0] == "tags" and "separator" in cfg["plugins"][1]["search"] and cfg["plugins"][2] == "offline"
    assert cfg["extra"] == {"polyfills": [OFFLINE_SHIM]}
    assert (ws.state_dir / "site-src" / OFFLINE_SHIM).is_file()
    # a file without plugins gets mkdocs' default search, plus offline
    mk.write_text("site_name: bare\ntheme:\n  name: material\n", encoding="utf-8")
    assert yaml.safe_load(stage(ws)["config"].read_text(encoding="utf-8"))["plugins"] == ["search", "offline"]


@pytest.mark.slow
def test_zensical_config_is_self_contained_and_keeps_the_page_policy(tmp_path, cli_run):
    """`[site] engine = "zensical"`: one generated file, no INHERIT, relative paths, the user's YAML tags kept for
    Zensical's loader, attr_list dropped and the sanitiser added; every page carries the policy."""
    ws = make_vault(tmp_path / "ws")
    toml = ws.root / "papervault.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("[site]\n", '[site]\nengine = "zensical"\n', 1),
                    encoding="utf-8")
    mk = ws.root / "mkdocs.yml"
    text = mk.read_text(encoding="utf-8").replace("  - abbr\n", "  - abbr\n  - attr_list\n")
    mk.write_text(text + "  analytics: !ENV [PV_ANALYTICS, false]\n", encoding="utf-8")
    (ws.vault_dir / "ideas.md").write_text("# Ideas\n\n**bold**{: #__config .md-dialog}\n", encoding="utf-8")
    out = json.loads(cli_run(["site", "build", "--json", "-w", ws.root]).stdout)
    assert out["engine"] == "zensical" and out["papers"] == 2
    cfg_text = (ws.state_dir / "zensical.site.yml").read_text(encoding="utf-8")
    assert "INHERIT" not in cfg_text and str(ws.root) not in cfg_text
    import yaml

    class Tags(yaml.SafeLoader):
        pass

    Tags.add_constructor("!ENV", lambda loader, node: ("!ENV", loader.construct_sequence(node)))
    cfg = yaml.load(cfg_text, Loader=Tags)
    assert cfg["docs_dir"] == "site-src" and cfg["site_dir"] == "zensical-site" and cfg["use_directory_urls"] is False
    assert cfg["extra"]["analytics"] == ("!ENV", ["PV_ANALYTICS", False])      # the tag, as the user wrote it
    assert cfg["extra"]["polyfills"] == ["assets/papervault/iframe-worker.js"] and cfg["extra"]["generator"] is False
    exts = [e if isinstance(e, str) else next(iter(e)) for e in cfg["markdown_extensions"]]
    assert "attr_list" not in exts and exts[-1] == "papervault.site.sanitize"
    assert cfg["plugins"][-1] == "offline" and cfg["nav"][0] == {"Home": "index.md"}
    ideas = (ws.site_dir / "ideas.html").read_text(encoding="utf-8")
    article = ideas[ideas.index("<article"):ideas.index("</article>")]
    assert "<strong>bold</strong>{: #__config .md-dialog}" in article       # shown as text, not attributes
    assert not re.search(r'<[a-z][^<>]*\s(?:id="__config"|class="[^"]*md-dialog)', article)
    for page in ws.site_dir.rglob("*.html"):
        head = page.read_text(encoding="utf-8").split("</head>", 1)[0]
        assert '<meta http-equiv="Content-Security-Policy"' in head, page
        policy = head.split('http-equiv="Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
        assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0], page
