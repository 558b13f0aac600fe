"""A site built from hostile inputs runs none of their script (issue 16, finding 1).

PDFs, BibTeX and CSL exports, Zotero records and a shared vault are written by strangers. Every payload below
calls `window.__pwned=1`, `alert()` or sets `document.title`; the site is built through `papervault add` and
`papervault site build`, every page is opened in headless Chromium, and the test asserts that no payload ran,
that no `javascript:`/`data:`/`vbscript:` link or event-handler attribute exists, and that the hostile text is
still shown as text (escaped, without a stray backslash).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pymupdf
import pytest
from click.testing import CliRunner

from papervault.cli import cli
from papervault.site.sanitize import clean_html, doi_url, safe_url
from papervault.sources.dedup import normalize_doi
from support_site import ARTIFACTS, CHROMIUM, CHROMIUM_FLAGS, StaticServer
from support_zotero import SHARED_ZOTERO, ZoteroBuilder

PWN = "window.__pwned=1"
DOI_PAYLOAD = "10.1234/x)[y](javascript:window.__pwned=1;x"
URL_PAYLOAD = "http://a>) <img src=x onerror=window.__pwned=1> ("
NEWLINE_TITLE = "Harmless title\n---\n<img src=x onerror=window.__pwned=1>\n---\nrest"

BIBTEX = f"""\
@article{{mallory2020script,
  author = {{Mallory, Eve and <img src=x onerror={PWN}>, Trent}},
  title = {{<script>{PWN}</script> Consensus under attack}},
  journal = {{<svg onload={PWN}>}},
  year = {{2020}},
  doi = {{{DOI_PAYLOAD}}},
  url = {{{URL_PAYLOAD}}},
  keywords = {{"><script>{PWN}</script>, security}},
}}
@inproceedings{{mallory2021link,
  author = {{Mallory, Eve}},
  title = {{A javascript link in the url field}},
  booktitle = {{"><img src=x onerror=alert(1)>}},
  year = {{2021}},
  url = {{jAvAsCrIpT:{PWN}}},
}}
@misc{{mallory2022entity,
  author = {{Mallory, Eve}},
  title = {{HTML entities &lt;script&gt;{PWN}&lt;/script&gt; and &#60;img src=x onerror=alert(1)&#62;}},
  year = {{2022}},
  url = {{data:text/html,<script>{PWN}</script>}},
}}
"""

CSL = [
    {"id": "csl-newline", "type": "article-journal", "title": NEWLINE_TITLE,
     "author": [{"family": "Mallory", "given": "<iframe src=\"javascript:window.__pwned=1\"></iframe>"}],
     "issued": {"date-parts": [[2019]]}, "container-title": "<a href=\"jAvAsCrIpT:window.__pwned=1\">venue</a>",
     "URL": "vbscript:msgbox(1)", "DOI": DOI_PAYLOAD,
     "abstract": "<script>document.title='pwned'</script> An abstract with <b onmouseover=alert(1)>bold</b>."},
    {"id": "csl-attr", "type": "paper-conference", "title": "Attributes {: onclick=\"alert(1)\" } and [x](javascript:alert(1))",
     "author": [{"family": "Trudy", "given": "<svg/onload=alert(1)>"}], "issued": {"date-parts": [[2018]]},
     "URL": "https://example.org/paper?a=1&b=<script>alert(1)</script>"},
]

PDF_LINES = [
    "Hostile Paper About Script Injection",
    "Eve Mallory",
    "Abstract. This paper text carries <script>window.__pwned=1</script> inside a sentence.",
    "A Markdown link [click here](javascript:window.__pwned=1) sits in the extracted text.",
    "An image <img src=x onerror=window.__pwned=1> and an <iframe src=javascript:alert(1)></iframe> follow.",
    "A quoted attribute \"><svg onload=alert(1)> and a link <a href=\"jAvAsCrIpT:alert(1)\">here</a> end it.",
]


def hostile_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    y = 90
    for n, line in enumerate(PDF_LINES):
        page.insert_text((50, y), line, fontsize=16 if n == 0 else 9)
        y += 40 if n == 0 else 24
    doc.set_metadata({"title": PDF_LINES[0], "author": "Eve Mallory"})
    doc.save(str(path))
    doc.close()
    return path


SURVEY = f"""\
---
title: "<img src=x onerror={PWN}> survey"
---
# A survey quoting hostile papers

Mallory writes "<script>{PWN}</script>" [@mallory2020script]. See [this](javascript:{PWN}) and
<a href="  JaVaScRiPt:{PWN}">that</a>, ![img](x" onerror="{PWN}) and <details open ontoggle={PWN}>x</details>.

[ref]: javascript:{PWN}

A [reference link][ref] and an attribute list [y](https://example.org){{ onclick="{PWN}" }}.
"""

USER_PAGE = f"""\
---
title: "</title><script>{PWN}</script>"
description: "\\"><script>{PWN}</script>"
template: ../../../../etc/passwd
---
# My page <img src=x onerror={PWN}>

<iframe srcdoc="<script>parent.__pwned=1</script>"></iframe>
<form action="javascript:{PWN}"><button>go</button></form>
<object data="javascript:{PWN}"></object><embed src="javascript:{PWN}">
<math><mtext><table><mglyph><style><img src=x onerror={PWN}></style></mglyph></table></mtext></math>
"""


def hostile_zotero(data_dir: Path) -> Path:
    z = ZoteroBuilder(data_dir)
    item, _ = z.item("journalArticle", authors=[("<img src=x onerror=alert(1)>", "Zed")],
                     title=f"Zotero <svg onload={PWN}> record", date="2017-01-01",
                     url=f"javascript:{PWN}", tags=[f"<img src=x onerror={PWN}>"])
    z.note(item, f"<p>note <script>{PWN}</script><img src=x onerror={PWN}></p>")
    return z.close()


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    ws_root = tmp / "ws"
    runner = CliRunner()
    res = runner.invoke(cli, ["init", str(ws_root)])
    assert res.exit_code == 0, res.output
    bib = tmp / "hostile.bib"
    bib.write_text(BIBTEX, encoding="utf-8")
    csl = tmp / "hostile.json"
    csl.write_text(json.dumps(CSL), encoding="utf-8")
    pdf = hostile_pdf(tmp / "hostile.pdf")
    zotero: list[str] = []
    if (SHARED_ZOTERO / "userdata.sql").is_file():     # Zotero's schema, from ../shared/zotero
        zotero = ["--zotero", str(hostile_zotero(tmp / "Zotero"))]
    res = runner.invoke(cli, ["add", str(bib), str(csl), str(pdf), *zotero, "--quiet", "--workspace", str(ws_root)])
    assert res.exit_code == 0, res.output
    vault = ws_root / "vault"
    survey = vault / "surveys" / "hostile-survey"
    survey.mkdir(parents=True)
    (survey / "survey.md").write_text(SURVEY, encoding="utf-8")
    (survey / "correlation.md").write_text(SURVEY.replace("A survey", "Correlations"), encoding="utf-8")
    (vault / "code").mkdir(exist_ok=True)
    (vault / "code" / "evil-repo.md").write_text(f"# <img src=x onerror={PWN}> repo\n\n<script>{PWN}</script>\n",
                                                  encoding="utf-8")
    (vault / "mine.md").write_text(USER_PAGE, encoding="utf-8")
    res = runner.invoke(cli, ["site", "build", "--workspace", str(ws_root)])
    assert res.exit_code == 0, res.output
    return ws_root


def test_hostile_records_were_imported(hostile_site):
    papers = sorted(p.name for p in (hostile_site / "vault" / "papers").iterdir())
    # three BibTeX entries, two CSL items, the PDF (and the Zotero item when Zotero's schema is at hand)
    assert len(papers) >= (7 if (SHARED_ZOTERO / "userdata.sql").is_file() else 6), papers
    site = hostile_site / "site"
    assert (site / "surveys" / "hostile-survey" / "correlation.html").is_file()


class _Attrs(HTMLParser):
    """Every event-handler attribute and every script-scheme URL attribute of a page, as a browser parses it."""

    def __init__(self):
        super().__init__()
        self.bad: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            v = re.sub(r"[\s\x00-\x1f]", "", value or "").lower()
            if name.startswith("on") or (name in ("href", "src", "action", "data", "formaction", "srcdoc")
                                         and re.match(r"(javascript|data|vbscript):", v)):
                self.bad.append(f"<{tag} {name}={value!r}>")


def test_no_payload_in_the_built_html(hostile_site):
    for page in (hostile_site / "site").rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        rel = page.relative_to(hostile_site / "site")
        assert not re.search(r"<script[^>]*>[^<]*(__pwned|alert|document\.title)", text, re.I), rel
        parser = _Attrs()
        parser.feed(text)
        assert parser.bad == [], (rel, parser.bad)
        assert "\\&lt;" not in text and "\\<" not in text, rel                         # no stray backslash before `<`


def test_every_page_in_chromium_runs_no_injected_script(hostile_site, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("headless Chromium not found at /usr/bin/chromium: run scripts/install-browser.sh")
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    site = hostile_site / "site"
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.name != "404.html")
    assert len(pages) >= 15, pages
    dialogs: list[str] = []
    findings: dict[str, dict] = {}
    check = """() => {
        const bad = [];
        for (const el of document.querySelectorAll('*')) {
            for (const a of el.attributes) {
                const v = a.value.replace(/[\\s\\x00-\\x1f]/g, '').toLowerCase();
                if (a.name.startsWith('on')) bad.push(el.tagName + ' ' + a.name);
                if (/^(javascript|data|vbscript):/.test(v) && ['href', 'src', 'action', 'data', 'formaction',
                        'xlink:href', 'srcdoc'].includes(a.name)) bad.push(el.tagName + ' ' + a.name + '=' + v);
            }
        }
        for (const t of ['iframe', 'object', 'embed', 'form', 'base', 'meta[http-equiv]'])
            if (document.querySelector('article ' + t)) bad.push('element ' + t);
        return {pwned: window.__pwned || null, title: document.title, bad: bad};
    }"""
    with playwright.sync_playwright() as pw, StaticServer(site) as server:
        context = pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900}, service_workers="block")
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(f"{page.url}: {d.message}"), d.dismiss()))
        for rel in pages:
            url = server.url + rel
            page.goto(url, wait_until="load")
            page.wait_for_timeout(150)             # let an onerror of a broken image fire
            got = page.evaluate(check)
            findings[rel] = got
            assert got["pwned"] is None, f"{rel}: injected script ran"
            assert got["title"].strip() != "pwned", f"{rel}: title set by a payload"
            assert got["bad"] == [], f"{rel}: {got['bad']}"
        # the header bar and the heading show the hostile title as text
        note = next(r for r in pages if r.startswith("papers/mallory2020script"))
        page.goto(server.url + note, wait_until="load")
        h1 = page.locator("article h1").first.inner_text()
        assert f"<script>{PWN}</script> Consensus under attack" in h1, h1
        assert "\\" not in h1
        assert "Consensus under attack" in page.locator(".md-header__topic").last.inner_text()
        card = page.locator(".pv-card").first.inner_text()
        assert "Web" not in card and "DOI" not in card      # the payload URL and DOI are not linked
        # search results (rendered by the theme's script from the search index) run nothing either
        for query in ("attack", "Harmless title", "Hostile Paper"):
            page.goto(server.url, wait_until="load")
            page.locator("input.md-search__input").click()
            page.keyboard.type(query)
            page.locator(".md-search-result__item").first.wait_for(timeout=20000)
            page.wait_for_timeout(300)
            got = page.evaluate(check)
            assert got["pwned"] is None and got["bad"] == [], (query, got)
        # the PDF's text reads as written: its tags are shown, not run and not dropped
        full = next(r for r in pages if r.startswith("papers/malloryhostile/paper.html"))
        page.goto(server.url + full, wait_until="load")
        text = page.locator("article").first.inner_text()
        assert f"carries <script>{PWN}</script> inside a sentence" in text, text
        assert "<iframe src=javascript:alert(1)></iframe> follow" in text
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "site-hostile-paper.png"), full_page=True)
        context.close()
    assert dialogs == []


def test_dois_and_urls_are_checked_before_they_become_links():
    assert normalize_doi(DOI_PAYLOAD) is None
    assert normalize_doi("https://doi.org/10.1145/568425.568433.") == "10.1145/568425.568433"
    assert doi_url(DOI_PAYLOAD) is None
    assert safe_url(URL_PAYLOAD) is None and safe_url(f"jAvAsCrIpT:{PWN}") is None
    assert safe_url("data:text/html,x") is None and safe_url("//evil.example/x") is None
    assert safe_url("https://example.org/a(b)") == "https://example.org/a%28b%29"
    # the allow-list keeps what papervault emits (tables with spans, page anchors, figures)
    kept = clean_html('<table><tr><td colspan="2" rowspan="3">x</td></tr></table><a id="page-2" data-page="2"></a>'
                      '<figure class="pv-figure"><img alt="a" src="figures/f.png" loading="lazy"></figure>')
    assert 'colspan="2"' in kept and 'data-page="2"' in kept and 'src="figures/f.png"' in kept


def test_mcp_serves_hostile_text_as_text(hostile_site):
    """`read`, `get_paper` and the full-text resource over stdio: a paper's tags reach the client as text; the
    page anchors papervault writes stay tags."""
    import anyio
    from mcp import Client, StdioServerParameters

    from support_mcp import papervault_cmd, server_env

    cmd = papervault_cmd()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--workspace", str(hostile_site)],
                                   env=server_env())

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            read = await c.call_tool("read", {"paper_id": "malloryhostile"})
            assert not read.is_error, read.content
            paper = await c.call_tool("get_paper", {"paper_id": "csl-newline"})
            assert not paper.is_error, paper.content
            resource = await c.read_resource("papervault://paper/malloryhostile/fulltext")
            return read.structured_content["text"], paper.structured_content["note"], resource.contents[0].text

    read, note, full = anyio.run(main)
    for text in (read, full):
        assert f"carries &lt;script>{PWN}&lt;/script> inside" in text
        assert "&lt;iframe src=javascript:alert(1)>" in text and "&lt;svg onload" in text
        assert '<a id="page-1"></a>' in text
        assert "<script" not in text and "<iframe" not in text and "<img" not in text
    assert "<img" not in note and "<iframe" not in note


def test_site_serve_sanitises_too(hostile_site):
    """`site serve` reloads the mkdocs configuration before each build; the sanitiser is in every one of them."""
    import subprocess
    import sys
    import time
    import urllib.request

    from support_mcp import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "papervault", "site", "serve", "--port", str(port),
                             "-w", str(hostile_site)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, text = time.monotonic() + 120, ""
        while time.monotonic() < deadline and not text:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/mine.html", timeout=5) as r:
                    text = r.read().decode("utf-8")
            except OSError:
                time.sleep(0.5)
        assert "My page" in text
        parser = _Attrs()
        parser.feed(text)
        assert parser.bad == []
        article = text[text.index("<article"):text.index("</article>")]
        assert "<iframe" not in article and "<form" not in article and "<object" not in article
        assert "&lt;iframe" in article                 # shown as text
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
