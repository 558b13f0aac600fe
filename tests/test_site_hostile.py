"""A site built from hostile inputs runs none of their script (issue 16, finding 1) and loads nothing from
outside (issue 36, items 1-4).

PDFs, BibTeX and CSL exports, Zotero records and a shared vault are written by strangers. Every payload below
calls `window.__pwned=1`, `alert()` or sets `document.title`; the site is built through `papervault add` and
`papervault site build`, every page is opened in headless Chromium, and the test asserts that no payload ran,
that no `javascript:`/`data:`/`vbscript:` link or event-handler attribute exists, and that the hostile text is
still shown as text (escaped, without a stray backslash).

The second half plants payloads aimed at a loopback beacon (an HTTP server that records every hit): attr_list
ids (`**x**{: #__config}`) that would replace the theme's configuration, external images in a PDF's text, a
CSL title, a BibTeX abstract, a Zotero note and a vault page, `.html` and `.svg` files in the shared vault, and
MathJax's `\\href{javascript:...}`/`\\style{...url(...)}`. Chromium opens every page from disk and over HTTP
and fails on any request that leaves the site, any script file the site did not ship, any violation of the
page policy, and any hit on the beacon.
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
from papervault.site.policy import CSP_META
from papervault.site.sanitize import clean_html, doi_url, safe_url
from papervault.sources.dedup import normalize_doi
from support_site import ARTIFACTS, StaticServer, chromium, engine_of, engines, search
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


def beacon_lines(beacon: str) -> list[str]:
    """PDF text aimed at the beacon and at the theme's configuration."""
    return [
        "Bold **clobber**{: #__config} and <b id=\"__config\">raw id</b> and <i class=\"md-dialog\">class</i>.",
        f"An image ![pdf beacon]({beacon}pdf-image.png) and <img src=\"{beacon}pdf-raw.png\"> in the text.",
    ]


def hostile_pdf(path: Path, extra: list[str] = ()) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    y = 90
    for n, line in enumerate([*PDF_LINES, *extra]):
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


def hostile_zotero(data_dir: Path, beacon: str) -> Path:
    z = ZoteroBuilder(data_dir)
    item, _ = z.item("journalArticle", authors=[("<img src=x onerror=alert(1)>", "Zed")],
                     title=f"Zotero <svg onload={PWN}> record", date="2017-01-01",
                     url=f"javascript:{PWN}", tags=[f"<img src=x onerror={PWN}>"])
    z.note(item, f"<p>note <script>{PWN}</script><img src=x onerror={PWN}></p>")
    z.note(item, f'<p>seen <img src="{beacon}zotero-raw.png"> and ![z]({beacon}zotero-md.png) '
                 "and **z**{: #__config}</p>")
    return z.close()


class Beacon:
    """A loopback HTTP server that records every request: any hit means a page reached outside the site."""

    def __init__(self):
        import http.server
        import threading

        hits = self.hits = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):   # noqa: N802 (http.server's name)
                hits.append(self.path)
                self.send_response(204)
                self.end_headers()

            do_POST = do_GET

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def beacon():
    b = Beacon()
    yield b
    b.close()


def beacon_csl(beacon: str) -> list[dict]:
    return [{"id": "csl-clobber", "type": "article-journal",
             "title": f"Clobbering title\n**x**{{: #__config}}\n![csl beacon]({beacon}csl-title.png)\nrest",
             "author": [{"family": "Mallory", "given": "Eve"}], "issued": {"date-parts": [[2016]]},
             "abstract": f"Abstract ![csl abstract]({beacon}csl-abstract.png) and *y*{{: #__config .md-dialog}}."}]


def beacon_bib(beacon: str) -> str:
    return f"""
@article{{mallory2015beacon,
  author = {{Mallory, Eve}},
  title = {{Beacons in abstracts}},
  journal = {{Journal of Leaks}},
  year = {{2015}},
  abstract = {{Seen ![bib]({beacon}bib-abstract.png) here. **b**{{: #__config}}}},
}}
"""


SHARED_HTML = """<!doctype html><html><body><script>new Image().src = "{beacon}shared-html";</script>
<img src="{beacon}shared-html-img.png"></body></html>"""
SHARED_SVG = """<svg xmlns="http://www.w3.org/2000/svg" onload="fetch('{beacon}svg-onload')">
<script>fetch("{beacon}svg-script")</script><image href="{beacon}svg-image.png" width="9" height="9"/></svg>"""


def beacon_page(beacon: str) -> str:
    return f"""# Shared notes

A raw image <img src="{beacon}vault-raw.png" alt="raw beacon"> and ![md beacon]({beacon}vault-md.png).
See [the page](shared.html) and ![the drawing](drawing.svg), **v**{{: #__config}} and <span id="__config">s</span>.

Formulas: $\\href{{javascript:window.__pwned=1}}{{click me}}$, $\\style{{background:url({beacon}mathjax-style)}}{{styled}}$,
$\\href{{{beacon}mathjax-href}}{{link}}$ and $\\cssId{{__config}}{{id}}$.

<!-- papervault:html -->
<p>The lines papervault sets aside as HTML: <img src="{beacon}html-block.png" onerror="window.__pwned=1">
<a href="javascript:window.__pwned=1">a link</a></p>
<!-- /papervault:html -->
"""


@pytest.fixture(scope="module")
def hostile_ws(tmp_path_factory, beacon):
    """The hostile workspace, imported once and its site built with mkdocs (the default engine)."""
    tmp = tmp_path_factory.mktemp("hostile")
    ws_root = tmp / "ws"
    runner = CliRunner()
    res = runner.invoke(cli, ["init", str(ws_root)])
    assert res.exit_code == 0, res.output
    bib = tmp / "hostile.bib"
    bib.write_text(BIBTEX + beacon_bib(beacon.url), encoding="utf-8")
    csl = tmp / "hostile.json"
    csl.write_text(json.dumps(CSL + beacon_csl(beacon.url)), encoding="utf-8")
    pdf = hostile_pdf(tmp / "hostile.pdf", beacon_lines(beacon.url))
    zotero: list[str] = []
    if (SHARED_ZOTERO / "userdata.sql").is_file():     # Zotero's schema, from ../shared/zotero
        zotero = ["--zotero", str(hostile_zotero(tmp / "Zotero", beacon.url))]
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
    # a shared vault: a page with outside images, TeX payloads and ids; .html and .svg files beside it
    (vault / "shared-notes.md").write_text(beacon_page(beacon.url), encoding="utf-8")
    (vault / "shared.html").write_text(SHARED_HTML.format(beacon=beacon.url), encoding="utf-8")
    (vault / "drawing.svg").write_text(SHARED_SVG.format(beacon=beacon.url), encoding="utf-8")
    (vault / "data.bib").write_text(SHARED_HTML.format(beacon=beacon.url), encoding="utf-8")   # markup as .bib
    figures = vault / "papers" / "malloryhostile" / "figures"
    figures.mkdir(exist_ok=True)
    (figures / "evil.svg").write_text(SHARED_SVG.format(beacon=beacon.url), encoding="utf-8")
    (figures / "page.xhtml").write_text(SHARED_HTML.format(beacon=beacon.url), encoding="utf-8")
    (vault / "papers" / "malloryhostile" / "attachment.html").write_text(SHARED_HTML.format(beacon=beacon.url),
                                                                         encoding="utf-8")
    res = runner.invoke(cli, ["site", "build", "--workspace", str(ws_root)])
    assert res.exit_code == 0, res.output
    return ws_root


@pytest.fixture(scope="module", params=engines())
def hostile_site(request, hostile_ws, tmp_path_factory):
    """The hostile workspace's site, per engine: Zensical's is a copy of the workspace with
    `[site] engine = "zensical"` in its papervault.toml, so its rebuilds use Zensical too."""
    if request.param == "mkdocs":
        return hostile_ws
    import shutil

    ws_root = tmp_path_factory.mktemp("hostile-zensical") / "ws"
    shutil.copytree(hostile_ws, ws_root, symlinks=True)
    toml = ws_root / "papervault.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("[site]\n", '[site]\nengine = "zensical"\n', 1),
                    encoding="utf-8")
    res = CliRunner().invoke(cli, ["site", "build", "--workspace", str(ws_root)])
    assert res.exit_code == 0, res.output
    assert engine_of(ws_root / "site") == "zensical"
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
    # a block of HTML set aside as it is (site/sanitize.py) is sanitised like the rest of its page
    shared = (hostile_site / "site" / "shared-notes.html").read_text(encoding="utf-8")
    assert "The lines papervault sets aside as HTML" in shared and "papervault:html" not in shared


# Runs in every frame before the page's own scripts (Playwright's init scripts are not subject to the page's
# policy): records what the page policy blocked.
RECORD_VIOLATIONS = """document.addEventListener('securitypolicyviolation', e => {
    (window.top.__violations = window.top.__violations || []).push(e.violatedDirective + ' ' + e.blockedURI);
});"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium, launched once for the module, recording every page-policy violation."""
    with chromium(tmp_path_factory.mktemp("chromium-profile"), RECORD_VIOLATIONS) as context:
        yield context


def test_every_page_in_chromium_runs_no_injected_script(hostile_site, browser):
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
    with StaticServer(site) as server:
        page = browser.new_page()
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
            search(page, query, engine_of(site))
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
        page.close()
    assert dialogs == []


def _published(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())


def test_shared_vault_files_are_published_from_an_allow_list(hostile_site):
    """`.html`, `.svg` and `.xhtml` files of a shared vault, and a `.bib` that is markup, are not published;
    `site build` names each one in a warning."""
    site = hostile_site / "site"
    files = _published(site)
    for name in ("shared.html", "drawing.svg", "data.bib", "papers/malloryhostile/attachment.html",
                 "papers/malloryhostile/figures/evil.svg", "papers/malloryhostile/figures/page.xhtml"):
        assert name not in files, name
    # the only SVGs are the theme's and the drawings papervault makes itself (the citation map, rebuilt from its
    # allow-list like the survey figures): none of the shared vault's
    generated = ("assets/", "map/", "map.svg")
    assert not [f for f in files if f.endswith((".svg", ".xhtml")) and not f.startswith(generated)]
    assert "shared-notes.html" in files and "papers/malloryhostile/paper.pdf" in files
    res = CliRunner().invoke(cli, ["site", "build", "--json", "--workspace", str(hostile_site)])
    assert res.exit_code == 0, res.output
    warnings = json.loads(res.output[res.output.index("{"):])["warnings"]
    for name in ("shared.html", "drawing.svg", "data.bib", "papers/malloryhostile/attachment.html"):
        assert any(w.startswith(f"{name}: not published") for w in warnings), (name, warnings)


def test_every_page_carries_the_page_policy(hostile_site):
    """The policy is the first thing in every page's head (before any script), and no id, class or
    attribute from the hostile text reaches the HTML: one `__config`, the theme's."""
    site = hostile_site / "site"
    pages = [p for p in site.rglob("*.html")]
    assert len(pages) >= 15
    for page in pages:
        text = page.read_text(encoding="utf-8")
        rel = page.relative_to(site).as_posix()
        head = text[:text.index("</head>")]
        assert f'<meta http-equiv="{CSP_META}"' in head, rel
        meta = head.index(CSP_META)
        assert "<script" not in head[:meta], rel
        policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', head).group(1)
        assert "default-src 'none'" in policy and "connect-src 'self';" in policy, rel
        assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0], rel
        assert "http:" not in policy and "https:" not in policy and "*" not in policy, rel
        assert len(re.findall(r'<[a-z][^<>]*\sid="__config"', text)) <= 1, rel
        assert not re.search(r'<img[^>]*\ssrc="(?:[a-z]+:|//)', text, re.I), rel     # no image from elsewhere
        if "__config" in text:
            assert '<script id="__config" type="application/json">' in text, rel
    # the attr_list lines are shown as text, not turned into attributes
    note = (site / "papers" / "csl-clobber" / "note.html").read_text(encoding="utf-8")
    article = note[note.index("<article"):note.index("</article>")]
    assert "md-dialog" not in article and 'id="__config"' not in article
    assert re.search(r'<a class="pv-external-image" href="http://127\.0\.0\.1:\d+/csl-title\.png"', article)


def test_every_page_from_disk_and_over_http_stays_in_the_site(hostile_site, beacon, browser):
    """Chromium opens every page of the hostile site from disk and over HTTP: no request leaves the site, no
    script but the site's own files runs, the page policy blocks nothing (the sanitiser left it nothing to
    block), Material's configuration is its own, and the beacon is never hit."""
    site = hostile_site / "site"
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    shipped = {p.relative_to(site).as_posix() for p in site.rglob("*.js")}
    outside: list[str] = []
    scripts: list[str] = []
    errors: list[str] = []
    check = """async () => {
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
        await new Promise(r => setTimeout(r, 100));
        const configs = [...document.querySelectorAll('[id="__config"]')].map(e => e.tagName);
        const bad = [];
        for (const el of document.querySelectorAll('*'))
            for (const a of el.attributes) {
                const v = a.value.replace(/[\\s\\x00-\\x1f]/g, '').toLowerCase();
                if (/^(javascript|vbscript):/.test(v)) bad.push(el.tagName + ' ' + a.name + '=' + v);
                if (/url\\(/.test(v) && a.name === 'style') bad.push(el.tagName + ' style=' + v);
            }
        const mj = document.querySelectorAll('mjx-container').length;
        return {pwned: window.__pwned || null, configs, bad, violations: window.__violations || [], mj};
    }"""
    with StaticServer(site) as server:
        roots = {"file": site.as_uri() + "/", "http": server.url}
        for how, root in roots.items():
            page = browser.new_page()

            def on_request(req, root=root):
                url = req.url
                if url.startswith("data:") or url == "about:blank":
                    return
                if not url.startswith(root):
                    outside.append(f"{page.url} -> {url}")
                elif req.resource_type == "script":
                    path = url[len(root):].split("?")[0].split("#")[0]
                    if path not in shipped:
                        scripts.append(f"{page.url} -> {url}")

            page.on("request", on_request)
            page.on("pageerror", lambda e, how=how: errors.append(f"{how} {page.url}: {e}"))
            for rel in pages:
                if how == "file" and rel == "404.html":
                    continue    # a web server's error page: its links start at the server's root
                page.goto(root + rel, wait_until="load")
                got = page.evaluate(check)
                assert got["pwned"] is None, (how, rel)
                assert got["configs"] in ([], ["SCRIPT"]), (how, rel, got["configs"])
                assert got["bad"] == [], (how, rel, got["bad"])
                assert got["violations"] == [], (how, rel, got["violations"])
                if rel == "shared-notes.html":
                    assert got["mj"] >= 3, (how, "MathJax typeset the formulas")
                    link = page.locator("article a.pv-external-image").first
                    assert link.get_attribute("href").startswith(beacon.url)   # shown as a link, not loaded
            # the policy itself holds: an image from elsewhere and a script the site did not ship, put into a
            # page by its own script, are blocked (and reported) rather than loaded or run
            page.goto(root + "shared-notes.html", wait_until="load")
            probe = page.evaluate("""async (beacon) => {
                const img = new Image();
                const done = new Promise(r => { img.onerror = r; img.onload = r; setTimeout(r, 2000); });
                img.src = beacon + 'csp-probe.png';
                document.body.appendChild(img);
                const s = document.createElement('script');
                s.textContent = 'window.__probe = 1';
                document.body.appendChild(s);
                await done;
                return {probe: window.__probe || null, violations: window.__violations || []};
            }""", beacon.url)
            assert probe["probe"] is None, how
            assert any(v.startswith("img-src") and "csp-probe" in v for v in probe["violations"]), (how, probe)
            assert any(v.startswith("script-src") for v in probe["violations"]), (how, probe)
            outside[:] = [o for o in outside if "csp-probe" not in o]
            # search works under the policy (the iframe worker from disk, a web worker over HTTP)
            page.goto(root + "index.html", wait_until="load")
            search(page, "Clobbering", engine_of(site))
            assert page.evaluate("window.__violations || []") == []
            page.close()
    assert outside == [] and scripts == [] and errors == [], (outside, scripts, errors)
    assert beacon.hits == []


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


def test_mcp_serves_hostile_text_as_text(hostile_ws):
    """`read`, `get_paper` and the full-text resource over stdio: a paper's tags reach the client as text; the
    page anchors papervault writes stay tags."""
    import anyio
    from mcp import Client, StdioServerParameters

    from support_mcp import papervault_cmd, server_env

    cmd = papervault_cmd()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--workspace", str(hostile_ws)],
                                   env=server_env())

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            read = await c.call_tool("read", {"paper_id": "malloryhostile"})
            assert not read.is_error, read.content
            paper = await c.call_tool("get_paper", {"paper_id": "csl-newline"})
            assert not paper.is_error, paper.content
            resource = await c.read_resource("papervault://paper/malloryhostile/fulltext")
            return read.structured_content["text"], paper.structured_content["note"], resource.contents[0].text

    # in a thread of its own: the module's Chromium (Playwright's sync API) keeps an event loop running here
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        read, note, full = pool.submit(anyio.run, main).result()
    for text in (read, full):
        assert f"carries &lt;script>{PWN}&lt;/script> inside" in text
        assert "&lt;iframe src=javascript:alert(1)>" in text and "&lt;svg onload" in text
        assert '<a id="page-1"></a>' in text
        assert "<script" not in text and "<iframe" not in text and "<img" not in text
    assert "<img" not in note and "<iframe" not in note


def test_site_serve_sanitises_too(hostile_ws):
    """`site serve` reloads the mkdocs configuration before each build; the sanitiser is in every one of them."""
    import subprocess
    import sys
    import time
    import urllib.request

    from support_mcp import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "papervault", "site", "serve", "--port", str(port),
                             "-w", str(hostile_ws)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
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
