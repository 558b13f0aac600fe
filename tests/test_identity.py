"""Paper identity through `papervault add`: titles, authors, years and ids from hard headers, repaired text
layers, printed page numbers in citations, and bibliographic fields that survive BibTeX -> vault -> BibTeX."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import without_multilingual
from papervault import pages
from papervault.app.indexing import update_index_reported
from papervault.doctor import run_checks
from papervault.index.search import search
from papervault.index.store import PaperIndex
from papervault.ingest import add
from papervault.sources.bibtex import parse_bibtex
from papervault.survey import export
from papervault.survey.correlate import cite
from papervault.survey.draft import page_link
from papervault.survey.select import load_papers
from papervault.workspace import Workspace

# the index brought up to date as `papervault rekey` does: the one index update, every vector now
REINDEX = lambda w: update_index_reported(w, wait=True)  # noqa: E731

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from identity_pdfs import make  # noqa: E402

MEGASTORE = "datastores_megastore-providing-scalable-highly-available-storage-for-interactive-services.pdf"
UNIX = "operating_systems_unix-time-sharing-system.pdf"
SOK = "security_sok-eternal-war-in-memory.pdf"
HARVEST = "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"

# style -> (id, title, authors, year): each a failure class of the issue (banner, stamp, running head, ...).
HEADERS = {
    "banner": ("feigenbaum1985secure", "Secure Multiparty Computation of Approximations over Finite Fields",
               ["Joan Feigenbaum", "Yuval Ishai", "Tal Malkin"], 1985),
    "download-stamp": ("ptacek1998insertion", "Insertion, Evasion, and Denial of Service: Eluding Network "
                       "Intrusion Detection", ["Thomas H. Ptacek", "Timothy N. Newsham"], 1998),
    "running-head": ("clark1991grounding", "Grounding in Communication", ["Herbert H. Clark"], 1991),
    "multi-line-title": ("aho1975efficient", "Efficient String Matching: An Aid to Bibliographic Search",
                         ["Alfred V. Aho", "Margaret J. Corasick"], 1975),
    "two-column-header": ("page1998pagerank", "The PageRank Citation Ranking: Bringing Order to the Web",
                          ["Lawrence Page", "Sergey Brin"], 1998),
    "institution-banner": ("stonebraker1978early", "Early Experience with a Relational Database",
                           ["Michael Stonebraker", "Eugene Wong"], 1978),
    "author-line": ("saltzer1984end", "End-to-End Arguments in System Design",
                    ["J.H. Saltzer", "D.P. Reed", "D.D. Clark"], 1984),
    "conference-note": ("lammel2004scrap", "Scrap Your Boilerplate with Class",
                        ["Ralf Lämmel", "Simon Peyton Jones"], 2004),
    "arxiv-stamp": ("gonzalez2019learning", "Learning Sparse Codes for Time Series",
                    ["Maria Gonzalez", "Wei Zhang", "Peter M. Olsen"], 2019),
    "cover-page": ("klimovic2018sharding", "Sharding the Log for Fast Recovery",
                   ["Ana Klimovic", "Christos Kozyrakis"], 2018),
}


@pytest.fixture
def ws(tmp_path):
    """A new workspace. No test here asks in another language: the multilingual vector space is off."""
    root = Workspace.init(tmp_path / "ws")[0].root
    without_multilingual(root)
    return Workspace(root)


def test_hard_headers_give_title_authors_year_and_id(ws, tmp_path):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for style in HEADERS:
        make(style, folder)
    report = add(ws, [str(folder)])
    assert report.problems == []
    assert sorted(report.added) == sorted(v[0] for v in HEADERS.values())
    for style, (pid, title, authors, year) in HEADERS.items():
        meta = ws.vault.read_meta(pid)
        assert (meta.title, meta.authors, meta.year) == (title, authors, year), style
        assert meta.provenance["title"] == "layout" and meta.provenance["year"] == "layout", style
    # The venue line is read too, and the arXiv id from the margin stamp.
    assert ws.vault.read_meta("aho1975efficient").venue == "Communications of the ACM"
    assert ws.vault.read_meta("gonzalez2019learning").arxiv == "1902.01234"
    # A cover page is not the paper: its lines never become headings of the note's full text.
    full = ws.vault.read_fulltext("klimovic2018sharding")
    assert full.startswith("# Sharding the Log for Fast Recovery\n")


def test_corpus_papers_ids_years_and_printed_pages(ws, corpus_dir):
    report = add(ws, [str(corpus_dir / f) for f in (MEGASTORE, UNIX, SOK, HARVEST)])
    assert sorted(report.added) == ["baker2011megastore", "foxharvest", "ritchie1974unix", "szekeressok"]
    unix = ws.vault.read_meta("ritchie1974unix")
    assert unix.title == "The UNIX Time-Sharing System" and unix.authors == ["Dennis M. Ritchie", "Ken Thompson"]
    # The pages print 365..375 in their header: that is what a citation must say.
    assert unix.page_labels == [str(n) for n in range(365, 376)]
    mega = ws.vault.read_meta("baker2011megastore")
    assert mega.year == 2011 and mega.page_labels[0] == "223" and mega.page_labels[-1] == "234"
    # SoK prints no year of its own (only "contests in 2012" in its abstract); Harvest prints none at all.
    assert ws.vault.read_meta("szekeressok").year is None and ws.vault.read_meta("foxharvest").year is None

    papers, problems = load_papers(ws.vault, ["baker2011megastore", "ritchie1974unix"])
    assert problems == []
    assert cite("baker2011megastore", 3) == "[@baker2011megastore, p. 225]"
    assert page_link("baker2011megastore", 3) == "([p. 225](../../papers/baker2011megastore/paper.md#page-3))"
    assert cite("ritchie1974unix", 1) == "[@ritchie1974unix, p. 365]"
    # The site turns the printed page back into the PDF page its link opens.
    assert pages.pdf_page(mega.page_labels, 225) == 3 and pages.pdf_page([], 4) == 4
    checks = {c.name: c for c in run_checks(ws)}
    assert "2 papers without a year" in checks["paper years"].detail


def test_broken_text_layers_are_repaired(ws, tmp_path):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for style in ("spaced-glyphs", "ligatures-ot1", "misencoded-punctuation"):
        make(style, folder)
    report = add(ws, [str(folder)])
    assert sorted(report.added) == ["lehman1986query", "robertson1994okapi", "sanderson2003efficient"]

    okapi = ws.vault.read_meta("robertson1994okapi")
    assert okapi.title == "Okapi at TREC–3" and okapi.authors == ["S E Robertson", "S Walker"]
    assert okapi.repaired_pages == [1]
    text = ws.vault.read_fulltext("robertson1994okapi")
    # Words rebuilt from the glyph gaps: "Distr ibuted sto rage" in the text layer.
    assert "Distributed storage systems must balance consistency" in text
    assert "Distr ibuted" not in text and "Rob ertson" not in text

    lig = ws.vault.read_meta("sanderson2003efficient")
    assert lig.title == "Efficient Pseudo-Relevance Feedback for Retrieval" and lig.repaired_pages == [1]
    text = ws.vault.read_fulltext("sanderson2003efficient")
    assert "an efficient method" in text and "sufficient precision" in text and "\x0e" not in text

    text = ws.vault.read_fulltext("lehman1986query")
    assert "The DSG\u2014the dependency graph\u2014is \u201cworse\u201d than expected" in text
    assert ws.vault.read_meta("lehman1986query").repaired_pages == [1]
    checks = {c.name: c for c in run_checks(ws)}
    assert "3 papers with repaired text layers" in checks["text layers"].detail


BIB = r"""@inproceedings{pedersen2019shard,
  author    = {Pedersen, Anna and M{\"u}ller, Jens},
  title     = {Sharding the Log for Fast Recovery},
  booktitle = {Proceedings of the 13th Symposium on Operating Systems Design},
  year      = {2018},
  pages     = {100--102},
  volume    = {7},
  number    = {3},
  publisher = {USENIX Association},
  editor    = {Smith, John and Doe, Jane},
  edition   = {2},
  series    = {OSDI '18},
  address   = {Carlsbad, CA},
  month     = oct,
  isbn      = {978-1-939133-08-3},
  issn      = {1234-5678},
  url       = {https://example.org/osdi18/klimovic},
  note      = {Best paper award},
  doi       = {10.5555/3291168.3291200},
  file      = {cover-page.pdf}
}
@techreport{stone1978report,
  author      = {Stonebraker, Michael},
  title       = {A Report Without a PDF},
  institution = {University of California, Berkeley},
  number      = {UCB/ERL M78/12},
  type        = {Memorandum},
  year        = {1978}
}
"""


def test_bibtex_round_trip_keeps_every_field_and_user_metadata_wins(ws, tmp_path):
    folder = tmp_path / "lib"
    folder.mkdir()
    make("cover-page", folder)
    (folder / "refs.bib").write_text(BIB, encoding="utf-8")
    report = add(ws, [str(folder / "refs.bib")])
    assert sorted(report.added) == ["pedersen2019shard", "stone1978report"]
    meta = ws.vault.read_meta("pedersen2019shard")
    # The user's BibTeX says who wrote it; the PDF's layout only fills what the entry leaves out.
    assert meta.authors == ["Anna Pedersen", "Jens Müller"] and meta.year == 2018
    assert meta.provenance["authors"] == "bibtex" and meta.provenance["title"] == "bibtex"
    assert meta.bib["pages"] == "100--102" and meta.bib["publisher"] == "USENIX Association"
    # The PDF has 3 pages and prints no page numbers: the entry's first page numbers them.
    assert meta.page_labels == ["100", "101", "102"]

    papers, _ = load_papers(ws.vault, ["pedersen2019shard", "stone1978report"])
    bib = export.bibtex(papers)
    back = {r.key: r for r in parse_bibtex(bib)}
    a = back["pedersen2019shard"]
    assert (a.title, a.authors, a.year, a.doi, a.url) == (meta.title, meta.authors, 2018, meta.doi, meta.url)
    orig = next(r for r in parse_bibtex(BIB) if r.key == "pedersen2019shard")
    for field in ("pages", "volume", "number", "publisher", "editor", "edition", "series", "address", "month",
                  "isbn", "issn", "note", "booktitle", "entrytype"):
        assert a.bib.get(field) == orig.bib.get(field), field
    t = back["stone1978report"]
    orig_t = next(r for r in parse_bibtex(BIB) if r.key == "stone1978report")
    for field in ("institution", "number", "type", "entrytype"):
        assert t.bib.get(field) == orig_t.bib.get(field), field
    csl = {i["id"]: i for i in export.csl_json(papers)}
    item = csl["pedersen2019shard"]
    assert item["type"] == "paper-conference" and item["page"] == "100–102" and item["volume"] == "7"
    assert item["issue"] == "3" and item["publisher"] == "USENIX Association" and item["ISBN"] == "978-1-939133-08-3"
    assert [e["family"] for e in item["editor"]] == ["Smith", "Doe"]
    assert csl["stone1978report"]["type"] == "report"
    json.dumps(csl)   # plain JSON

    # A search hit of the paper names its PDF as the source, not the .bib entry it was imported from.
    PaperIndex(ws).sync()
    hits = search(ws, "sharding the log for fast recovery", limit=3)
    assert hits[0].paper_id == "pedersen2019shard"
    # (the workspace's own copy of that PDF, which outlives the original: papervault/pdfstore.py)
    kept = Path(hits[0].source)
    assert kept.parent == ws.root / "pdfs" and kept.read_bytes() == (folder / "cover-page.pdf").read_bytes()


def test_printed_page_helpers():
    assert pages.from_pages_field("223--234", 12)[:2] == ["223", "224"]
    assert pages.from_pages_field("223--234", 40) == []          # another version of the paper
    assert pages.from_pages_field("1--12", 12) == []              # 1..N needs no labels
    assert pages.from_printed_numbers([set(), {2, 2015}, {3}, {4, 2015}]) == []   # PDF numbers = printed ones
    assert pages.from_printed_numbers([set(), {348}, {349}, {350}]) == ["347", "348", "349", "350"]
    assert pages.printed(["223", "224"], 2) == "224" and pages.printed([], 5) == "5"


def test_a_users_edit_survives_add_reanalysis_and_survey(ws, tmp_path):
    from click.testing import CliRunner

    from papervault.cli import cli

    folder = tmp_path / "pdfs"
    folder.mkdir()
    pdf = make("running-head", folder)
    assert add(ws, [str(pdf)]).added == ["clark1991grounding"]
    res = CliRunner().invoke(cli, ["edit", "clark1991grounding", "--title", "Grounding in Communication",
                                   "--author", "Herbert H. Clark", "--author", "Susan E. Brennan", "--year", "1991",
                                   "--venue", "Perspectives on Socially Shared Cognition", "--pages", "127--128",
                                   "--workspace", str(ws.root)])
    assert res.exit_code == 0, res.output
    meta = ws.vault.read_meta("clark1991grounding")
    assert meta.authors == ["Herbert H. Clark", "Susan E. Brennan"]
    assert meta.provenance["authors"] == "user" and meta.provenance["venue"] == "user"
    assert meta.page_labels == ["127", "128"] and ws.vault.is_clean()
    assert "edit clark1991grounding" in ws.vault.history(limit=1)[0]["message"]

    # The same PDF again, and a re-analysis: the correction stays.
    add(ws, [str(pdf)])
    add(ws, [str(pdf)], reanalyse=True)
    meta = ws.vault.read_meta("clark1991grounding")
    assert meta.authors == ["Herbert H. Clark", "Susan E. Brennan"]
    assert meta.venue == "Perspectives on Socially Shared Cognition"
    papers, _ = load_papers(ws.vault, ["clark1991grounding"])
    assert "Susan E. Brennan" in export.bibtex(papers) and "pages = {127--128}" in export.bibtex(papers)
    assert cite("clark1991grounding", 2) == "[@clark1991grounding, p. 128]"

    bad = CliRunner().invoke(cli, ["edit", "clark1991grounding", "--title", " ", "--workspace", str(ws.root)])
    assert bad.exit_code != 0 and "title cannot be empty" in str(bad.exception)


def test_rekey_renames_everywhere_and_the_old_id_resolves(ws, tmp_path):
    from papervault.identity import rekey
    from papervault.site.stage import plan_site, read_vault

    folder = tmp_path / "pdfs"
    folder.mkdir()
    make("institution-banner", folder)
    make("multi-line-title", folder)
    assert sorted(add(ws, [str(folder)]).added) == ["aho1975efficient", "stonebraker1978early"]
    old, new = "stonebraker1978early", "stonebraker1978experience"
    vault = ws.vault
    meta, body = vault.read_note("aho1975efficient")
    vault.write_note(meta, body + "\nCompare [@stonebraker1978early, p. 1] and "
                                  "[its text](../stonebraker1978early/paper.md#page-1); @stonebraker1978earlyx stays.\n")
    sdir = vault.surveys_dir / "databases"
    sdir.mkdir(parents=True)
    (sdir / "survey.md").write_text("# Databases\n\nRelational systems [@stonebraker1978early; @aho1975efficient] "
                                    "([p. 1](../../papers/stonebraker1978early/paper.md#page-1)).\n")
    papers, _ = load_papers(vault, [old, "aho1975efficient"])
    (sdir / "references.bib").write_text(export.bibtex(papers))
    (sdir / "references.json").write_text(json.dumps(export.csl_json(papers), indent=2))
    vault.commit("survey")
    PaperIndex(ws).sync()

    report = rekey(ws, old, new, reindex=REINDEX)
    assert report["new"] == new and report["index"] == "updated"
    assert not vault.paper_dir(old).exists() and vault.has_paper(new)
    meta = vault.read_meta(new)
    assert meta.id == new and meta.aliases == [old]
    note = vault.read_note("aho1975efficient")[1]
    assert f"[@{new}, p. 1]" in note and f"../{new}/paper.md#page-1" in note and old + "x" in note
    survey = (sdir / "survey.md").read_text()
    assert f"[@{new}; @aho1975efficient]" in survey and f"papers/{new}/paper.md#page-1" in survey
    assert f"@techreport{{{new}," in (sdir / "references.bib").read_text() or f"{{{new}," in (sdir / "references.bib").read_text()
    assert {i["id"] for i in json.loads((sdir / "references.json").read_text())} == {new, "aho1975efficient"}
    assert vault.is_clean() and vault.history(limit=1)[0]["message"] == f"rekey {old} -> {new}"
    hits = search(ws, "early experience with a relational database", limit=3)
    assert hits[0].paper_id == new and all(h.paper_id != old for h in hits)

    # A citation of the old id written later still resolves on the site, to the new paper's pages.
    (sdir / "survey.md").write_text("# Databases\n\nAs before [@stonebraker1978early, p. 1].\n")
    plan = plan_site(read_vault(vault.root))
    page = next(v for k, v in plan.pages.items() if "databases" in k and "survey" in k.lower() or k.endswith("databases.md"))
    assert "pv-cite-missing" not in page and f"papers/{new}/" in page



def test_rekey_leaves_redirects_for_old_site_urls(ws, tmp_path):
    """After `rekey`, the built site (offline, opened from disk) has pages at the old ids' URLs that redirect
    to the new ones, keeping the page anchor; the aliases in the note bring them back on every build."""
    import re
    import shutil

    from papervault.identity import edit_paper, rekey
    from papervault.site.build import build_site, stage_dir
    from papervault.site.redirects import redirect_pages

    folder = tmp_path / "pdfs"
    folder.mkdir()
    make("institution-banner", folder)
    old, mid, new = "stonebraker1978early", "stonebraker1978relational", "stonebraker1978experience"
    assert add(ws, [str(folder)]).added == [old]
    site = Path(ws.site_dir)
    build_site(ws)
    assert (site / "papers" / old / "paper.html").is_file()

    rekey(ws, old, mid, reindex=REINDEX)
    rekey(ws, mid, new, reindex=REINDEX)
    assert ws.vault.read_meta(new).aliases == [old, mid]
    hostile = 'Early Experience <script>alert(1)</script> & "Relational" </script>'
    edit_paper(ws, new, title=hostile)

    def check_redirects() -> None:
        assert (site / "papers" / new / "note.html").is_file() and (site / "papers" / new / "paper.html").is_file()
        for former in (old, mid):
            for name in ("note", "paper"):
                page = (site / "papers" / former / f"{name}.html").read_text(encoding="utf-8")
                assert f'<meta http-equiv="refresh" content="0; url=../{new}/{name}.html">' in page
                assert f'<a href="../{new}/{name}.html">' in page
                assert f'location.replace("../{new}/{name}.html" + location.hash)' in page
                assert "alert(1)</script>" not in page and page.count("<script>") == 1
                assert "Early Experience &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Relational&quot;" in page

    build_site(ws)
    check_redirects()
    # Recorded in the vault (the note's aliases): a build from nothing writes them again.
    shutil.rmtree(site)
    shutil.rmtree(stage_dir(ws))
    report = build_site(ws)
    check_redirects()
    assert not [w for w in report["warnings"] if old in w or mid in w]

    # A paper without full text has no paper.html: its old one leads to the note. An alias that is no id
    # (written by hand into a note) never becomes a path of the site.
    plain = redirect_pages({"smith2001old": "smith2001new", "../../escape": "smith2001new"}, {}, set())
    assert sorted(plain) == ["papers/smith2001old/note.html", "papers/smith2001old/paper.html"]
    assert 'url=../smith2001new/note.html"' in plain["papers/smith2001old/paper.html"]

    # In a browser, from disk: the old URL with a page anchor lands on the new page at that anchor; without
    # scripts the meta refresh still gets there.
    chromium = Path("/usr/bin/chromium")
    if not chromium.exists():
        pytest.skip("headless Chromium not found at /usr/bin/chromium (scripts/install-browser.sh)")
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(chromium), headless=True,
                                     args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        try:
            page = browser.new_page()
            page.goto((site / "papers" / old / "paper.html").as_uri() + "#page-2")
            page.wait_for_url(re.compile(rf"/papers/{new}/paper\.html#page-2$"), timeout=20000)
            assert page.locator("#page-2").count() == 1
            noscript = browser.new_context(java_script_enabled=False).new_page()
            noscript.goto((site / "papers" / mid / "note.html").as_uri())
            noscript.wait_for_url(re.compile(rf"/papers/{new}/note\.html$"), timeout=20000)
            assert "Early Experience" in noscript.title()
        finally:
            browser.close()


def test_glyph_maps():
    from papervault.parse.repair import fix_replacement_chars, is_ot1_font, map_ot1, map_punctuation

    assert fix_replacement_chars("University of She\ufffdeld") == "University of Sheffield"
    assert fix_replacement_chars("an e\ufffdcient \ufffdle", {"efficient", "file"}) == "an efficient file"
    assert fix_replacement_chars("x \ufffd y") == "x \ufffd y"               # a lone symbol is not a ligature
    assert is_ot1_font("ABCDEF+CMR10") and not is_ot1_font("CMMI10") and not is_ot1_font("Times-Roman")
    assert map_ot1("Okapi at TREC{3 and {x}") == "Okapi at TREC\u20133 and {x}"
    assert map_punctuation("a łquotež and DSGÐthe") == "a \u201cquote\u201d and DSG\u2014the"
    assert map_punctuation("Michał Łukasz") == "Michał Łukasz"


def test_lines_that_are_never_titles():
    from papervault.parse.header import not_title

    for line in ("Journal of Cryptology", "Downloaded from orbit.dtu.dk on: Aug 15, 2016", "Running Head: Common Ground",
                 "Vol. 31, No. 2, October 1985", "UNIVERSITY OF CALIFORNIA,", "This paper appears in ECOOP 2004",
                 "Copyright © 1974, Association for Computing Machinery", "Abstract", "Abstract—Memory corruption",
                 "DOI: 10.1145/1.2"):
        assert not_title(line), line
    for title in ("Abstract Interpretation: A Unified Lattice Model", "Doing More with Less", "Letters from the Front",
                  "Journaling the Linux ext2fs Filesystem", "Drafting Behind Akamai", "Liquid Types"):
        assert not not_title(title), title


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    """`papervault ARGS` as the console script runs it: (exit code, stdout, stderr)."""
    from papervault.cli import main

    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def _rekeyed_twice(ws, tmp_path) -> tuple[str, str, str]:
    """Two papers added and indexed; one renamed twice through the CLI. Returns (first, second, current) id."""
    folder = tmp_path / "pdfs"
    folder.mkdir()
    make("institution-banner", folder)
    make("multi-line-title", folder)
    assert sorted(add(ws, [str(folder)]).added) == ["aho1975efficient", "stonebraker1978early"]
    PaperIndex(ws).sync()
    return "stonebraker1978early", "stonebraker1978relational", "stonebraker1978experience"


def test_old_ids_resolve_in_every_command_after_rekey(ws, tmp_path, capsys):
    """After `rekey OLD NEW`, every command that takes a paper id takes OLD too, works on NEW and says once
    (on stderr) that OLD is now NEW; an alias never shadows a paper's own id, and a shared one is an error."""
    old, mid, new = _rekeyed_twice(ws, tmp_path)
    w = ["--workspace", ws.root]
    code, out, err = _cli(["rekey", old, mid, *w], capsys)
    assert code == 0 and out.startswith(f"{old} -> {mid}:") and err == ""
    # rekey itself takes the old id: the paper (now `mid`) is renamed again
    code, out, err = _cli(["rekey", old, new, *w], capsys)
    assert code == 0 and out.startswith(f"{mid} -> {new}:"), (out, err)
    assert err == f"note: {old} is now {mid} (renamed by `papervault rekey`)\n"
    assert ws.vault.paper_ids() == ["aho1975efficient", new] and ws.vault.read_meta(new).aliases == [old, mid]

    for former in (old, mid):
        code, out, err = _cli(["show", former, *w], capsys)
        assert code == 0 and "Early Experience with a Relational Database" in out
        assert err.count("\n") == 1 and f"{former} is now {new}" in err
        assert f"papervault open {new} --page N" in out
    code, out, err = _cli(["show", old, "--json", *w], capsys)
    assert json.loads(out)["meta"]["id"] == new and f"{old} is now {new}" in err
    code, out, _ = _cli(["show", old, "--full", *w], capsys)
    assert code == 0 and 'id="page-1"' in out and "Relational Database" in out

    code, out, _ = _cli(["open", mid, "--page", "1", "--print", "--json", *w], capsys)
    opened = json.loads(out)
    assert code == 0 and opened["id"] == new and opened["url"].endswith("#page=1")

    code, out, err = _cli(["edit", old, "--venue", "ACM TODS", "--json", *w], capsys)
    assert code == 0 and json.loads(out)["id"] == new and ws.vault.read_meta(new).venue == "ACM TODS"
    assert ws.vault.history(limit=1)[0]["message"] == f"edit {new}: venue"

    code, out, err = _cli(["search", "relational database experience", "--paper", old, "--json", *w], capsys)
    hits = json.loads(out)
    assert code == 0 and hits and {h["paper_id"] for h in hits} == {new}, err
    quote = " ".join(ws.vault.read_fulltext(new).split("Relational Database", 1)[0].split()[-6:] + ["Relational", "Database"])
    code, out, err = _cli(["locate", quote, "--paper", mid, "--json", *w], capsys)
    assert code == 0 and [f["paper_id"] for f in json.loads(out)] == [new], (quote, out, err)

    # `enrich` resolves its ids before it asks for the network (offline here: that is the error it reaches)
    code, _, err = _cli(["enrich", old, *w], capsys)
    assert code == 1 and f"note: {old} is now {new}" in err and "online" in err and "no paper" not in err
    code, _, err = _cli(["enrich", "nobody1900none", *w], capsys)
    assert code == 1 and err == ("error: no paper 'nobody1900none' in the vault. "
                                 "find ids with `papervault list` (MCP: `list_papers`)\n")

    # A survey that still cites the old id (written after the rename) exports the renamed paper.
    sdir = ws.vault.surveys_dir / "databases"
    sdir.mkdir(parents=True)
    (sdir / "survey.md").write_text(f"# Databases\n\nRelational systems [@{old}, p. 1; @aho1975efficient].\n")
    code, out, _ = _cli(["export", "--survey", "databases", "--json", *w], capsys)
    assert code == 0 and json.loads(out)["papers"] == ["aho1975efficient", new]

    # A survey's selection.md where a person ticked the paper by its old id: stage 1 selects the renamed paper
    # (the survey flow runs this same function as its first task).
    from papervault.app.survey import Selection, SurveyContext, retrieve

    (ws.vault.survey_dir("rel") / "selection.md").parent.mkdir(parents=True)
    (ws.vault.survey_dir("rel") / "selection.md").write_text(f"## Selected\n\n- [x] @{mid}\n")
    got = retrieve(SurveyContext(ws, "", "rel", "extractive"), Selection(["query:string matching"]))
    assert new in got["ids"] and got["edits"]["added"] == [new] and not got["problems"], got
    assert f"@{mid}" not in (ws.vault.survey_dir("rel") / "selection.md").read_text()

    # An alias never shadows a paper's own id: a note that lists another paper's id among its aliases
    # changes nothing for that id. Two notes claiming the same former id: a one-line error naming both.
    ws.vault.update_meta("aho1975efficient", aliases=[new, old])
    code, out, err = _cli(["show", new, "--json", *w], capsys)
    assert code == 0 and json.loads(out)["meta"]["id"] == new and err == ""
    code, out, err = _cli(["show", old, *w], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"error: '{old}' is a former id of 2 papers (aho1975efficient, {new})")
    code, _, err = _cli(["delete", old, *w], capsys)
    assert code == 1 and "former id of 2 papers" in err and ws.vault.has_paper(new)
    ws.vault.update_meta("aho1975efficient", aliases=[])
    ws.vault.commit("test: aliases back")

    # delete through a former id removes the renamed paper, its index rows too
    code, out, err = _cli(["delete", mid, "--json", *w], capsys)
    gone = json.loads(out)
    assert code == 0 and gone["deleted"] == [new] and gone["renamed"] == {mid: new}
    assert f"{mid} is now {new}" in err
    assert gone["index"]["chunks_removed"] > 0 and ws.vault.paper_ids() == ["aho1975efficient"]
    code, _, err = _cli(["show", old, *w], capsys)
    assert code == 1 and f"no paper '{old}' in the vault" in err


def test_old_ids_resolve_in_the_mcp_tools_after_rekey(ws, tmp_path, model_dir):
    """Over real MCP stdio: every tool and resource that takes a paper id takes a former one, answers with
    the current id and says, once per answer, that the old id is now the new one."""
    import anyio
    from mcp import Client, StdioServerParameters

    from papervault.identity import rekey
    from support_mcp import papervault_cmd, server_env

    old, mid, new = _rekeyed_twice(ws, tmp_path)
    rekey(ws, old, mid, reindex=REINDEX)
    rekey(ws, mid, new, reindex=REINDEX)
    rekey(ws, new, old, reindex=REINDEX)         # renamed back: an id is never an alias of its own paper
    assert ws.vault.read_meta(old).aliases == [mid, new]
    rekey(ws, old, new, reindex=REINDEX)
    assert ws.vault.read_meta(new).aliases == [mid, old]
    notice = f"{old} is now {new} (renamed by `papervault rekey`); cite it as [@{new}]"
    cmd = papervault_cmd()
    params = StdioServerParameters(command=cmd[0], args=[*cmd[1:], "mcp", "--workspace", str(ws.root), "--allow-write"],
                                   env=server_env())

    def data(result) -> dict:
        assert not result.is_error, result.content
        return result.structured_content

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            paper = data(await c.call_tool("get_paper", {"paper_id": old}))
            assert paper["id"] == new and paper["cite"] == f"[@{new}]" and paper["notice"] == notice
            assert paper["meta"]["title"] == "Early Experience with a Relational Database"
            same = data(await c.call_tool("get_paper", {"paper_id": new}))
            assert same["id"] == new and "notice" not in same

            page = data(await c.call_tool("read", {"paper_id": mid, "pages": "1"}))
            assert page["paper_id"] == new and page["anchor"] == f"papers/{new}/paper.md#page-1"
            assert "Michael Stonebraker and Eugene Wong" in page["text"] and page["notice"].startswith(f"{mid} is now {new}")

            found = data(await c.call_tool("search", {"query": "relational database experience", "paper": old}))
            assert found["hits"] and {h["paper_id"] for h in found["hits"]} == {new}
            assert notice in found["notice"]
            located = data(await c.call_tool("locate", {"quote": "Michael Stonebraker and Eugene Wong",
                                                        "paper": old}))
            assert [f["paper_id"] for f in located["found"]] == [new] and located["notice"] == notice

            note = (await c.read_resource(f"papervault://paper/{old}")).contents[0].text
            assert f"id: {new}" in note and "Early Experience" in note
            full = (await c.read_resource(f"papervault://paper/{mid}/fulltext")).contents[0].text
            assert 'id="page-1"' in full

            missing = await c.call_tool("get_paper", {"paper_id": "nobody1900none"})
            assert missing.is_error and "no paper 'nobody1900none'" in missing.content[0].text

            gone = data(await c.call_tool("delete_paper", {"paper_id": old}))
            assert gone["deleted"] == new and gone["notice"] == notice
            again = await c.call_tool("get_paper", {"paper_id": old})
            assert again.is_error and f"no paper '{old}'" in again.content[0].text

    anyio.run(main)
    assert ws.vault.paper_ids() == ["aho1975efficient"] and ws.vault.is_clean()


def test_a_publisher_s_cover_with_a_panel_of_other_papers_is_a_cover(tmp_path):
    """An article's cover page (how to cite it, where to read it online, a panel of other papers "you may also
    like" with their authors) is a cover: the identity is read from the article's own first page, and the
    panel's authors are never the paper's."""
    import pymupdf

    from papervault.parse.pdf import read_front

    doc = pymupdf.open()
    cover = doc.new_page()
    for y, text, size in ((80, "Journal of Physics: Conference Series", 12), (110, "PAPER - OPEN ACCESS", 9),
                          (140, "The stock market learned as Ising model", 16),
                          (170, "To cite this article: Longfeng Zhao et al 2018 J. Phys.: Conf. Ser. 1113 012009", 9),
                          (190, "View the article online for updates and enhancements.", 9),
                          (230, "You may also like", 11),
                          (250, "Physics and financial economics (1776-2014): puzzles, Ising and agent-based", 9),
                          (262, "models", 9), (276, "Didier Sornette", 9),
                          (300, "Immediate causality network of stock markets", 9), (314, "Li Zhou, Lu Qiu et al.", 9)):
        cover.insert_text((60, y), text, fontsize=size)
    article = doc.new_page()
    for y, text, size in ((90, "The stock market learned as Ising model", 18),
                          (120, "Longfeng Zhao, Weiqi Bao and Wei Li", 11),
                          (140, "Central China Normal University, Wuhan 430079, China", 9),
                          (170, "Abstract. The collective behaviors of the financial systems resemble the physics", 9),
                          (182, "theory of critical phenomena. We treat the stock market as an Ising model.", 9)):
        article.insert_text((60, y), text, fontsize=size)
    for _ in range(2):
        doc.new_page().insert_text((60, 90), "The stock price are formed through the exchanges of many traders.",
                                   fontsize=9)
    doc.save(tmp_path / "iop.pdf")
    h = read_front(tmp_path / "iop.pdf")
    assert h.title == "The stock market learned as Ising model"
    assert [a.split()[-1] for a in h.authors] == ["Zhao", "Bao", "Li"], h.authors
