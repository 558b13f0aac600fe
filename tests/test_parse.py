"""The PDF parser on real papers from the shared corpus, and on broken files made here with PyMuPDF."""

from __future__ import annotations

import re
import time

import pymupdf
import pytest

from papervault.config import ParseSettings
from papervault.errors import ParseError
from papervault.models import ParsedPaper, page_anchor
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
FILES = [SCANNED, MEGASTORE, PAXOS, TIERED]


@pytest.fixture(scope="module")
def parsed(corpus_dir, tmp_path_factory) -> dict[str, ParsedPaper]:
    """Each corpus paper used here, parsed once for the module (in parallel, through the cache)."""
    cache = tmp_path_factory.mktemp("parse-cache")
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
    # A file that overruns the timeout is abandoned; the others in the batch still finish.
    t = time.monotonic()
    out = parse_many([bad_files["long"], bad_files["owner_only"]], ParseSettings(timeout=0.3), workers=1)
    assert time.monotonic() - t < 60
    err = out[str(bad_files["long"])]
    assert isinstance(err, ParseError) and "longer than 0.3 s" in str(err)
    assert isinstance(out[str(bad_files["owner_only"])], (ParsedPaper, ParseError))
