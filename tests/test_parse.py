"""The PDF parser on real papers from the shared corpus, and on broken files made here with PyMuPDF."""

from __future__ import annotations

import re
import time

import pymupdf
import pytest

from papervault.config import ParseSettings
from papervault.errors import ParseError
from papervault.models import ParsedPaper
from papervault.vault.paper import page_anchor
from papervault.parse import PARSER, parse_many, parse_pdf
from papervault.parse.batch import cache_path
from papervault.parse.captions import caption_of
from papervault.parse.layout import Block, Line, Span
from papervault.parse.references import parse_reference
from papervault.parse.text import garbage_score, join_lines

MEGASTORE = "datastores_megastore-providing-scalable-highly-available-storage-for-interactive-services.pdf"
PAXOS = "distributed_systems_paxos-made-moderately-complex.pdf"
TIERED = "distributed_systems_tiered-replication-a-cost-effective-alternative-to-full-cluster-geo-replication.pdf"
SCANNED = "garbage_collection_the_lisp_ii_garbage_collector.pdf"
SOK = "security_sok-eternal-war-in-memory.pdf"
SZ = ("data_compression_Significantly_Improving_Lossy_Compression_for_Scientific_Data_Sets_Based_on_"
      "Multidimensional_Prediction_and_Error-Controlled_Quantization.pdf")
SPARTAN = "datastores_spartan-a-distributed-array-framework-with-smart-tiling.pdf"
UNIX = "operating_systems_unix-time-sharing-system.pdf"
CLOJURE = "languages_clojure_a-practical-optional-type-system-for-clojure.pdf"
SJLT = "machine_learning_dimensionality_reduction_a-sparse-johnson-lindenstrauss-transform.pdf"
LIQUID = "languages-theory_liquid_types.pdf"
SPORTS = "sports_analytics_2014-ssac-pointwise-predicting-points-and-valuing-decisions-in-real-time.pdf"
FILES = [SCANNED, MEGASTORE, PAXOS, TIERED, SOK, SZ, SPARTAN, UNIX, CLOJURE, SJLT, LIQUID, SPORTS]


@pytest.fixture(scope="module")
def parsed(corpus_dir, shared_parse_cache) -> dict[str, ParsedPaper]:
    """Each corpus paper used here, parsed once (in parallel, through the session's parse cache, which other
    modules may have filled already with the same settings)."""
    cache = shared_parse_cache
    out = parse_many([corpus_dir / f for f in FILES], ParseSettings(), cache_dir=cache, workers=2)
    papers = {k.rsplit("/", 1)[-1]: v for k, v in out.items()}
    for name, value in papers.items():
        assert isinstance(value, ParsedPaper), f"{name}: {value}"
    papers["_cache"] = cache
    return papers


def _pos(md: str, text: str) -> int:
    i = md.find(text)
    assert i >= 0, f"{text!r} not in the Markdown"
    return i


# --- real papers -----------------------------------------------------------------------------------

def test_two_column_reading_order_and_clean_text(parsed):
    p = parsed[MEGASTORE]
    md = p.markdown
    assert md.startswith("# Megastore: Providing Scalable, Highly Available Storage for Interactive Services\n")
    # Page 1: left column (introduction) is read before the right column, which continues its sentence.
    assert _pos(md, "Interactive online services are forcing") < _pos(md, "can be built rapidly using MySQL")
    assert _pos(md, "can be built rapidly using MySQL") < _pos(md, "These requirements are in conflict")
    # De-hyphenation across line breaks; ligatures and LaTeX accents folded.
    assert "meet the requirements of today" in md and "re- quirements" not in md
    assert "conflict" in md and "\ufb02" not in md
    assert "Jean-Michel Léon" in md
    # The page number in the footer is gone.
    assert not re.search(r"^223$", md, re.M)


def test_title_authors_abstract_and_headings(parsed):
    p = parsed[MEGASTORE]
    assert p.title.startswith("Megastore")
    assert p.authors[:3] == ["Jason Baker", "Chris Bond", "James C. Corbett"]
    assert "Vadim Yushprakh" in p.authors and not any("Google" in a for a in p.authors)
    assert p.abstract.startswith("Megastore is a storage system")
    assert p.year == 2011
    heads = {(h.number, h.title): h for h in p.headings}
    assert heads[("1", "INTRODUCTION")].level == 1
    assert heads[("2.1", "Replication")].level == 2
    assert heads[("2.1.1", "Strategies")].level == 3
    assert "## 1 INTRODUCTION" in p.markdown and "### 2.1 Replication" in p.markdown
    assert "#### 2.1.1 Strategies" in p.markdown
    # Unnumbered headings of a one-column paper, and author lines that are not headings.
    q = parsed[PAXOS]
    titles = [h.title for h in q.headings]
    assert "Abstract" in titles and "Introduction" in titles and "References" in titles
    assert "Robbert van Renesse" not in titles and q.authors == ["Robbert van Renesse"]


def test_page_anchors_open_every_page_in_order(parsed):
    for name in (MEGASTORE, PAXOS, SCANNED):
        p = parsed[name]
        positions = [_pos(p.markdown, page_anchor(n)) for n in range(1, p.pages + 1)]
        assert positions == sorted(positions)
        assert p.markdown.count('<a id="page-') == p.pages
        for n in range(1, p.pages + 1):
            assert f"\n\n{page_anchor(n)}\n" in p.markdown
    p = parsed[MEGASTORE]
    # A passage can be cited by page: the right-column text of page 2 sits between anchors 2 and 3.
    i = _pos(p.markdown, "Scalable Replication")
    assert _pos(p.markdown, page_anchor(3)) < i < _pos(p.markdown, page_anchor(4))


def test_figures_with_captions_are_cropped_and_embedded(parsed):
    p = parsed[MEGASTORE]
    figs = {f.number: f for f in p.figures if f.number}
    assert set(figs) >= {"1", "2", "4", "5", "6", "7", "8", "9", "10"}
    f1 = figs["1"]
    assert f1.page == 3 and f1.caption == "Scalable Replication" and f1.kind == "vector"
    assert f1.png.startswith(b"\x89PNG\r\n\x1a\n")
    w, h = pymupdf.Pixmap(f1.png).width, pymupdf.Pixmap(f1.png).height
    assert 100 < w < 1300 and 50 < h < 1000  # a crop, not the whole page
    assert f"![Figure 1: Scalable Replication](figures/{f1.filename})" in p.markdown
    # The embed sits on the figure's page.
    i = _pos(p.markdown, f"figures/{f1.filename}")
    assert _pos(p.markdown, page_anchor(3)) < i < _pos(p.markdown, page_anchor(4))
    # File names are unique, and in-text mentions ("Figure 1 shows") created no figure of their own.
    names = [f.filename for f in p.figures]
    assert len(names) == len(set(names))
    assert len([f for f in p.figures if f.number == "1"]) == 1


def test_caption_is_not_an_in_text_mention():
    def block(text, bold=False):
        span = Span(text, 9.0, "Times-Bold" if bold else "Times-Roman", 16 if bold else 0, (0, 0, 100, 10))
        b = Block(lines=[Line(spans=[span], bbox=(0, 0, 100, 10))], page=1)
        b.text = text
        return b

    assert caption_of(block("Figure 3: The architecture of the system.")) == ("figure", "3", "The architecture of the system.")
    assert caption_of(block("Fig. 12. Latency under load"))[:2] == ("figure", "12")
    assert caption_of(block("TABLE II: Results")) == ("table", "II", "Results")
    assert caption_of(block("Figure 3 shows that the latency grows.")) is None
    assert caption_of(block("As we see in Figure 3: nothing")) is None
    assert caption_of(block("Table 2 and Table 3 compare ...")) is None
    # IEEE: the label alone on its line is a caption (its title follows on the next lines); a sentence that
    # starts with the label is not.
    assert caption_of(block("TABLE IV")) == ("table", "IV", "")
    assert caption_of(block("Table I shows the results")) is None
    two = Block(lines=[Line(spans=[Span("Table II", 8.0, "Times-Roman", 0, (0, 0, 30, 8))], bbox=(0, 0, 30, 8)),
                       Line(spans=[Span("shows the results of", 8.0, "Times-Roman", 0, (0, 9, 90, 17))],
                            bbox=(0, 9, 90, 17))], page=1, text="Table II shows the results of")
    assert caption_of(two) is None
    two.lines[1] = Line(spans=[Span("HITTING RATES", 8.0, "Times-Roman", 0, (0, 9, 90, 17))], bbox=(0, 9, 90, 17))
    two.text = "Table II HITTING RATES"
    assert caption_of(two) == ("table", "II", "HITTING RATES")


def test_mentions_at_line_start_in_real_papers_are_not_captions(corpus_dir):
    """Lines of real papers that start with a table label inside a paragraph: mentions, not captions."""
    from papervault.parse.layout import extract_lines

    for name, pno, start in ((SOK, 6, "Table I lists some recent exploits"), (SPORTS, 6, "Table 2 in the appendix.")):
        with pymupdf.open(corpus_dir / name) as doc:
            lines, _ = extract_lines(doc[pno - 1])
        line = next(ln for ln in lines if ln.text.startswith(start))
        assert caption_of(Block(lines=[line], page=pno, text=line.text)) is None


def test_table_as_markdown_with_caption(parsed):
    p = parsed[TIERED]
    t = {t.number: t for t in p.tables}["1"]
    assert t.page == 4 and t.caption.startswith("Probability of simultaneous node failures")
    lines = t.markdown.splitlines()
    assert lines[0] == "| Number of Nodes | Pr(2 Failures) | Pr(3 Failures) | Pr(4 Failures) |"
    assert lines[1] == "|---|---|---|---|"
    assert lines[2].startswith("| 1,000 | 6.51 × 10")
    assert len(lines) == 7
    # In the Markdown the caption comes first, then the table; the cell text is not repeated as prose.
    cap = _pos(p.markdown, "Table 1: Probability of simultaneous node failures")
    assert cap < _pos(p.markdown, lines[0])
    assert p.markdown.count("6.51 × 10") == 1


def test_ieee_table_captions_in_two_lines(parsed):
    """IEEE: "Table VII" on a line of its own, the title in small capitals below, the ruled table under it."""
    p = parsed[SZ]
    assert [(t.number, t.page) for t in p.tables] == [("I", 4), ("II", 5), ("III", 7), ("IV", 8), ("V", 8), ("VI", 9),
                                                      ("VII", 10), ("VIII", 10)]
    t = {t.number: t for t in p.tables}
    assert t["VII"].caption == ("STRONG SCALABILITY OF PARALLEL COMPRESSION USING SZ-1.4 WITH DIFFERENT NUMBER OF "
                                "PROCESSES ON BLUES")
    lines = t["VII"].markdown.splitlines()
    assert lines[0] == "| Number of Processes | Number of Nodes | Comp Speed (GB/s) | Speedup | Parallel Efficiency |"
    assert lines[-1] == "| 1024 | 64 | 81.3 | 930.7 | 90.9% |" and len(lines) == 13
    # Two tables stacked in one column: each caption gets its own table (the second is as near to the first).
    assert "| 1024 | 64 | 187.0 | 932.7 | 91.1% |" in t["VIII"].markdown and "Decomp Speed (GB/s)" in t["VIII"].markdown
    assert "| 2-Layer | 37.5% | 6.5% |" in t["II"].markdown
    # Merged header cells: HTML with colspan/rowspan.
    assert t["VI"].markdown.startswith('<table>\n<tr><th rowspan="3">User-set ebrel</th><th colspan="4">ATM</th>')
    md = p.markdown
    assert "Table VII: STRONG SCALABILITY OF PARALLEL COMPRESSION USING SZ-1.4 WITH DIFFERENT NUMBER" in md
    assert _pos(md, "Table VII: STRONG") < _pos(md, lines[0]) < _pos(md, "Table VIII: STRONG")
    assert "\n\nWITH DIFFERENT NUMBER OF PROCESSES ON BLUES\n\n" not in md  # the title is not left as a paragraph
    assert not [w for w in p.warnings if "Table" in w]


def test_tables_without_a_ruling_grid(parsed):
    """Booktabs-style tables (horizontal rules at most) rebuilt from the words beside their caption."""
    p = parsed[LIQUID]
    t = {t.number: t for t in p.tables}["1"]
    assert t.page == 10 and t.caption.startswith("Experimental Results: Size is the amount of program text")
    rows = re.findall(r"<tr>(.*?)</tr>", t.markdown)
    assert rows[0] == ('<th></th><th colspan="2">Size</th><th colspan="2">DML</th><th colspan="2">DSOLVE</th>'
                       '<th></th>')
    assert rows[1] == ("<td>Program</td><td>Line</td><td>Char</td><td>Line</td><td>Char</td><td>Line</td>"
                       "<td>Char</td><td>Time (s)</td>")
    assert rows[2] == ("<td>dotprod</td><td>7</td><td>158</td><td>3 (30%)</td><td>110 (41%)</td><td>0 (0%)</td>"
                       "<td>0 (0%)</td><td>0.31</td>")
    assert rows[-1] == ("<td>bitv</td><td>426</td><td>10757</td><td></td><td></td><td>65 (15%)</td>"
                        "<td>3138 (29%)</td><td>63.11</td>")
    assert len(rows) == 17 and p.markdown.count("3138 (29%)") == 1
    assert not [w for w in p.warnings if "Table 1" in w]
    # Caption under the table, rows between horizontal rules with cells wrapped over two or three lines.
    s = {t.number: t for t in parsed[SOK].tables}
    assert [(t.number, t.page) for t in parsed[SOK].tables] == [("I", 7), ("II", 13)]
    assert s["I"].caption == "EXPLOITS THAT DEFEAT BOTH DEP AND ASLR USING ROP AND INFORMATION LEAKS"
    lines = s["I"].markdown.splitlines()
    assert lines[0] == "| CVE ID | Software | Vulnerability | Address leakage | User scripting |"
    assert ("| CVE-2012-1889 | Microsoft Windows XML Core Services (affecting IE) | Uninitialized pointer "
            "| Read as a RGB color | JavaScript |") in lines and len(lines) == 8
    assert ("| Data Integrity | WIT | 10 / 25 | × | Binary/Modularity | UAF, sub-obj, read corruption |"
            in s["II"].markdown)
    # No rules at all: two tables of player names and numbers, one per caption.
    q = {t.number: t for t in parsed[SPORTS].tables}
    assert [(t.number, t.page) for t in parsed[SPORTS].tables] == [("1", 9), ("2", 9)]
    assert q["1"].markdown.splitlines()[:3] == ["| Player | EPVA | Player | EPVA |", "|---|---|---|---|",
                                                "| Chris Paul | 3.48 | Ricky Rubio | -3.33 |"]
    assert "| Martell Webster | 0.283 | Luc Richard Mbah a Moute | -0.005 |" in q["2"].markdown


def test_references_are_split_with_identifiers(parsed):
    p = parsed[PAXOS]
    assert len(p.references) == 23
    r1 = p.references[0]
    assert r1.raw.startswith("[1] P. Alvaro") and r1.year == 2009
    assert r1.title == "I Do Declare: Consensus in a logic language"
    assert p.references[1].title == "Sharing memory robustly in message passing systems"
    assert "## References" in p.markdown
    assert f"- {r1.raw}" in p.markdown
    m = parsed[MEGASTORE]
    assert len(m.references) == 33 and all(r.raw.startswith(f"[{i}]") for i, r in enumerate(m.references, 1))


def test_references_sit_under_the_anchor_of_their_page(parsed):
    p = parsed[PAXOS]
    assert [r.page for r in p.references] == [14] * 18 + [15] * 5
    md = p.markdown
    r19 = p.references[18]
    assert r19.raw.startswith("[19] B.M. Oki and B.H. Liskov")
    # [18] is the last entry of page 14, [19] the first of page 15: cited as "p. 15", under that anchor.
    assert _pos(md, "## References") < _pos(md, "- [18] D. Mazi") < _pos(md, page_anchor(15)) \
        < _pos(md, "- [19] B.M. Oki")
    assert md.count("- [") == 23
    s = parsed[SOK]
    # "[Online]. Available: ..." at the start of a line continues its entry; it is not one of its own.
    assert len(s.references) == 71 and s.references[-1].raw.startswith("[71] Z. Wang and X. Jiang")
    assert "Available: http://pax.grsecurity.net" in s.references[4].raw
    assert s.references[24].raw.startswith("[25] S. Chen") and s.references[24].page == 15
    assert _pos(s.markdown, page_anchor(15)) < _pos(s.markdown, "- [25] S. Chen")


def test_ieee_roman_sections_and_lettered_subsections(parsed):
    heads = {(h.number, h.title): h for h in parsed[SOK].headings}
    for key, level in [(("I", "INTRODUCTION"), 1), (("II", "ATTACKS"), 1), (("A", "Memory corruption"), 2),
                       (("E", "Information leak"), 2), (("VI", "MEMORY SAFETY"), 1),
                       (("C", "Temporal safety"), 2), (("X", "CONCLUSION"), 1), (("", "References"), 1)]:
        assert heads[key].level == level, key
    # A small-caps heading set on two lines is one heading.
    assert heads[("III", "CURRENTLY USED PROTECTIONS AND REAL WORLD EXPLOITS")].page == 5
    assert "## II ATTACKS" in parsed[SOK].markdown and "### A Memory corruption" in parsed[SOK].markdown
    z = parsed[SZ]
    assert [(h.level, h.number, h.title) for h in z.headings[:5]] == [
        (1, "I", "INTRODUCTION"), (1, "II", "PROBLEM AND METRICS DESCRIPTION"),
        (1, "III", "PREDICTION MODEL BASED ON MUTIDIMENSIONAL SCIENTIFIC DATA SETS"),
        (2, "A", "Prediction Model for Multidimensional Scientific Data Sets"),
        (2, "B", "In-Depth Analysis of the Best Layer for Multilayer Prediction Model")]
    titles = [h.title for h in z.headings]
    assert "EMPIRICAL PERFORMANCE EVALUATION" in titles and "Rate-Distortion" in titles
    assert titles[-1] == "References" and len(z.references) == 18


def test_usenix_cover_page_is_not_the_paper(parsed):
    for name, title in [(TIERED, "Tiered Replication: A Cost-effective Alternative to Full Cluster Geo-replication"),
                        (SPARTAN, "Spartan: A Distributed Array Framework with Smart Tiling")]:
        p = parsed[name]
        assert p.title == title and p.markdown.startswith(f"# {title}\n")
        assert not [h for h in p.headings if h.page == 1]
        assert p.headings[0].title.lower() == "abstract" and p.headings[0].page == 2
        bad = ("ISBN", "usenix.org", "July 8", "University", "Cidon", "Huang", title[:20])
        assert not [h.title for h in p.headings if any(w in h.title for w in bad)]
        assert not {"with Smart Tiling", "Full Cluster Geo-replication", "Cluster Geo-replication"} & {
            h.title for h in p.headings}
    assert parsed[TIERED].authors == ["Asaf Cidon", "Robert Escriva", "Sachin Katti", "Mendel Rosenblum",
                                      "Emin Gün Sirer"]
    assert parsed[SPARTAN].authors[:2] == ["Chien-Chin Huang", "Qi Chen"] and "Zhen Xiao" in parsed[SPARTAN].authors
    heads = {(h.number, h.title): h for h in parsed[SPARTAN].headings}
    assert heads[("1", "Introduction")].page == 2 and heads[("A.2", "NP Proof")].level == 2


def test_front_matter_toc_and_statements_are_not_headings(parsed):
    u = parsed[UNIX]
    assert u.authors == ["Dennis M. Ritchie", "Ken Thompson"]
    assert [(h.number, h.title) for h in u.headings[:2]] == [("1", "Introduction"),
                                                             ("2", "Hardware and Software Environment")]
    assert not [h for h in u.headings if "Ritchie" in h.title or "CR Categories" in h.title]
    c = parsed[CLOJURE]
    titles = [h.title for h in c.headings]
    assert "Ambrose Bonnaire-Sergeant" not in titles and c.authors == ["Ambrose Bonnaire-Sergeant"]
    # Table-of-contents entries ("Introduction 1", "Abstract ii") are not headings; the chapters are.
    assert not [t for t in titles if re.search(r"\s(\d+|[ivx]+)$", t)]
    assert not [h for h in c.headings if 4 <= h.page <= 6 and h.title != "Contents"]
    heads = {(h.number, h.title): h for h in c.headings}
    assert heads[("1", "Introduction")].page == 7 and heads[("1", "Introduction")].level == 1
    assert heads[("2", "Literature Review")].level == 1
    assert heads[("2.1", "Dynamic Typing in Typed Languages")].level == 2
    assert heads[("B", "Dissertation Proposal")].level == 1
    j = parsed[SJLT]
    assert not [h for h in j.headings if h.title.startswith(("Definition", "Categories"))]
    assert ("4", "PROOF OF THEOREM 3") in [(h.number, h.title) for h in j.headings]


def test_ocr_text_makes_few_headings(parsed):
    # OCR'd font sizes are estimates: only known section names and clean numbered titles are headings.
    p = parsed[SCANNED]
    titles = [h.title for h in p.headings]
    assert "Motivation" in titles
    assert all(t[:1].isupper() and len(t.split()) <= 4 for t in titles), titles
    assert not [t for t in titles if "quantities" in t or "LISP" in t]


def test_reference_identifiers():
    r = parse_reference("[7] A. Author and B. Author. Deep things. arXiv preprint arXiv:1601.04920v2, 2016.")
    assert r.arxiv == "1601.04920" and r.year == 2016 and r.doi is None
    r = parse_reference("K. Kingsbury. Elle. PVLDB 14(3): 268-280, 2020. doi:10.14778/3430915.3430918.")
    assert r.doi == "10.14778/3430915.3430918"
    r = parse_reference("Smith, J. (2019). A title here. https://doi.org/10.1145/3299869.3319895")
    assert r.doi == "10.1145/3299869.3319895" and r.year == 2019


def test_scanned_paper_is_ocrd_and_readable(parsed):
    p = parsed[SCANNED]
    assert p.ocr_pages == [1, 2]
    md = p.markdown
    assert "Garbage Collector" in md
    assert "The present LISP free storage control program" in md
    assert "contiguous" in md
    words = re.findall(r"[A-Za-z]{3,}", md)
    assert len(words) > 300


def test_parser_version_hash_and_cache(parsed, corpus_dir):
    p = parsed[PAXOS]
    assert p.parser == PARSER and re.fullmatch(r"[0-9a-f]{64}", p.sha256)
    assert cache_path(parsed["_cache"], p.sha256).is_file()
    t = time.monotonic()
    again = parse_many([corpus_dir / PAXOS, corpus_dir / SCANNED], cache_dir=parsed["_cache"], workers=2)
    assert time.monotonic() - t < 2.0  # no process started, no OCR: answered from the cache
    assert again[str(corpus_dir / PAXOS)].markdown == p.markdown


# --- text helpers ----------------------------------------------------------------------------------

def test_dehyphenation_keeps_real_hyphens():
    assert join_lines(["the infor-", "mation is"]) == "the information is"
    assert join_lines(["state-of-the-", "art results"], {"state-of-the-art"}) == "state-of-the-art results"
    assert join_lines(["see Non-", "Volatile"]) == "see Non-Volatile"


def test_garbage_text_layers_are_detected():
    good = ["Interactive online services are forcing the storage community to meet new demands"] * 20
    assert garbage_score(good) < 0.2
    spaced = ["T h i s  i s  a  s p a c e d  o u t  l i n e  o f  t e x t"] * 20
    assert garbage_score(spaced) >= 0.5
    one_glyph = list("Interactiveonlineservicesareforcingthestorage")
    assert garbage_score(one_glyph) >= 0.5
    unmapped = ["\ufffd\ufffd\ufffd \ufffd\ufffd \ufffd\ufffd\ufffd\ufffd"] * 10
    assert garbage_score(unmapped) >= 0.5


# --- bad input -------------------------------------------------------------------------------------

def _pdf(path, pages=1, text="Hello world. This is a small test document.", **save):
    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page().insert_text((72, 300), f"{text} Page {i + 1}.")
    doc.save(path, **save)
    return path


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    files = {}
    files["zero"] = d / "zero.pdf"
    files["zero"].write_bytes(b"")
    files["text"] = d / "notes.pdf"
    files["text"].write_text("this is not a pdf\n")
    files["locked"] = _pdf(d / "locked.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret", owner_pw="owner")
    files["owner_only"] = _pdf(d / "owner_only.pdf", encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner")
    good = _pdf(d / "good.pdf", pages=3).read_bytes()
    files["truncated"] = d / "truncated.pdf"
    files["truncated"].write_bytes(good[: len(good) // 2])
    files["garbage_tail"] = d / "chopped.pdf"
    files["garbage_tail"].write_bytes(b"%PDF-1.7\n" + b"\x00\xff" * 500)
    files["long"] = _pdf(d / "long.pdf", pages=500)
    # 3 s to parse here, against a 0.1 s timeout: many times the pool's look at its processes (a file of 0.24 s,
    # as this was with one line a page, could end between two looks and be taken)
    lines = "\n".join(f"Line {k}: replicas answer reads under a lease while the leader orders writes."
                      for k in range(25))
    files["longer"] = _pdf(d / "longer.pdf", pages=1500, text=f"Hello world.\n{lines}")
    # Thousands of tiny images on one page: one image object drawn 2500 times by a hand-written content
    # stream (inserting them one by one through PyMuPDF takes minutes).
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 40), "A page of many tiny images.")
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 4, 4), False)
    pix.clear_with(128)
    page.insert_image(pymupdf.Rect(20, 60, 28, 68), pixmap=pix)
    name = page.get_images()[0][7]
    ops = "".join(f"q 8 0 0 8 {20 + (i % 50) * 11} {page.rect.height - 80 - (i // 50) * 14} cm /{name} Do Q\n"
                  for i in range(2500))
    cx = page.get_contents()[-1]
    doc.update_stream(cx, doc.xref_stream(cx) + b"\n" + ops.encode())
    files["tiny_images"] = d / "tiny.pdf"
    doc.save(files["tiny_images"])
    return files


def test_bad_files_raise_clear_errors(bad_files):
    cases = {"zero": "empty", "text": "not a PDF", "locked": "encrypted with a password", "garbage_tail": "corrupt"}
    for key, words in cases.items():
        with pytest.raises(ParseError) as err:
            parse_pdf(bad_files[key])
        assert words in str(err.value), str(err.value)
        assert err.value.fix  # every error says what to do
    with pytest.raises(ParseError, match="password is wrong"):
        parse_pdf(bad_files["locked"], password="nope")
    with pytest.raises(ParseError, match="not found"):
        parse_pdf(bad_files["zero"].parent / "missing.pdf")


def test_damaged_and_unusual_files_parse(bad_files):
    assert "Page 1." in parse_pdf(bad_files["locked"], password="secret").markdown
    assert "Hello world" in parse_pdf(bad_files["owner_only"]).markdown  # no user password: opens
    p = parse_pdf(bad_files["truncated"])
    assert p.pages >= 1 and "Hello world" in p.markdown and p.warnings
    p = parse_pdf(bad_files["long"])
    assert p.pages == 500 and p.markdown.count('<a id="page-') == 500 and "Page 500." in p.markdown
    t = time.monotonic()
    p = parse_pdf(bad_files["tiny_images"])
    assert "many tiny images" in p.markdown and p.ocr_pages == []
    assert len(p.figures) <= 1 and time.monotonic() - t < 30
    with pytest.raises(ParseError, match="max_pages"):
        parse_pdf(bad_files["long"], ParseSettings(max_pages=100))


def test_batch_survives_bad_files_and_timeouts(bad_files, tmp_path):
    paths = [bad_files[k] for k in ("zero", "text", "locked", "truncated", "owner_only")] + [tmp_path / "nope.pdf"]
    out = parse_many(paths, cache_dir=tmp_path / "cache", workers=2)
    assert list(out) == [str(p) for p in paths]
    kinds = {k.rsplit("/", 1)[-1]: type(v).__name__ for k, v in out.items()}
    assert kinds == {"zero.pdf": "ParseError", "notes.pdf": "ParseError", "locked.pdf": "ParseError",
                     "truncated.pdf": "ParsedPaper", "owner_only.pdf": "ParsedPaper", "nope.pdf": "ParseError"}
    assert "encrypted" in str(out[str(bad_files["locked"])])
    # A file that overruns the timeout is abandoned; the others in the batch still finish. (The workers start
    # with the parser loaded, so the timeout counts parsing alone: the file takes five times as long.)
    t = time.monotonic()
    out = parse_many([bad_files["longer"], bad_files["owner_only"]], ParseSettings(timeout=0.1), workers=1)
    assert time.monotonic() - t < 60
    err = out[str(bad_files["longer"])]
    assert isinstance(err, ParseError) and "longer than 0.1 s" in str(err)
    assert isinstance(out[str(bad_files["owner_only"])], (ParsedPaper, ParseError))
