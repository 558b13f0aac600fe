"""BibTeX, CSL-JSON, Better BibTeX JSON and folders of PDFs: readers that report bad input and go on."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from papervault.models import SourceRecord
from papervault.sources.bibtex import latex_to_text, parse_bibtex, read_bibtex, split_names
from papervault.sources.csl import read_csl
from papervault.sources.files import is_supplement, order_main_first, records_from_paths
from papervault.sources.problems import SourceProblem
from support_arxiv import make_pdf

BIB = r"""% exported by hand
@string{sigact = "ACM SIGACT News"}

@article{lamport2001paxos,
  author    = {Lamport, Leslie},
  title     = {{Paxos} Made Simple},
  journal   = sigact # " 32(4)",
  year      = 2001,
  month     = dec,
  doi       = {https://doi.org/10.1145/568425.568433},
  keywords  = {consensus; distributed systems},
  file      = {Full Text:pdfs/paxos.pdf:application/pdf;Supplement:pdfs/paxos_SI.pdf:application/pdf},
}

@inproceedings{broken2020,
  title  = {An {unbalanced title,
  author = {Nobody, Anne},
  year   = {2020}
}

@online{godel1931,
  author       = {G{\"o}del, Kurt and {The Vienna Circle} and others},
  title        = "{\"U}ber formal unentscheidbare S{\"a}tze --- Teil {I}",
  date         = {1931-03},
  journaltitle = {Monatshefte f\"ur Mathematik},
  eprint       = {2101.00001v2},
  eprinttype   = {arxiv},
}

@misc{nocomma
  title = {Missing comma after the key}
}

@book(knuth1968art, title={The Art of Computer Programming}, author={Donald E. Knuth and van der Berg, Jan},
      year={1968}, publisher={Addison-Wesley})
"""


def test_bibtex_entries_macros_accents_and_broken_entries(tmp_path):
    (tmp_path / "pdfs").mkdir()
    (tmp_path / "pdfs" / "paxos.pdf").write_bytes(make_pdf("Paxos Made Simple"))
    (tmp_path / "pdfs" / "paxos_SI.pdf").write_bytes(make_pdf("Supplement", pages=4))
    bib = tmp_path / "refs.bib"
    bib.write_text(BIB, encoding="utf-8")
    items = list(read_bibtex(bib))
    recs = {r.key: r for r in items if isinstance(r, SourceRecord)}
    probs = [p for p in items if isinstance(p, SourceProblem)]
    assert set(recs) == {"lamport2001paxos", "godel1931", "knuth1968art"}
    p = recs["lamport2001paxos"]
    assert (p.title, p.authors, p.year, p.venue, p.doi) == ("Paxos Made Simple", ["Leslie Lamport"], 2001,
                                                           "ACM SIGACT News 32(4)", "10.1145/568425.568433")
    assert p.tags == ["consensus", "distributed systems"] and p.source == f"{bib}#lamport2001paxos"
    assert [Path(x).name for x in p.pdfs] == ["paxos.pdf", "paxos_SI.pdf"]
    g = recs["godel1931"]
    assert g.title == "Über formal unentscheidbare Sätze — Teil I"
    assert g.authors == ["Kurt Gödel", "The Vienna Circle"] and g.year == 1931 and g.arxiv == "2101.00001"
    assert g.venue == "Monatshefte für Mathematik"
    assert recs["knuth1968art"].authors == ["Donald E. Knuth", "Jan van der Berg"]
    # broken entries are reported with their line, and the rest is imported
    assert [p.line for p in probs] == [15, 30]
    assert "unbalanced braces" in probs[0].message and str(probs[0]).startswith(f"{bib}:15: @inproceedings")
    assert "no citation key" in probs[1].message or "comma" in probs[1].message


def test_bibtex_latin1_and_missing_file(tmp_path):
    bib = tmp_path / "old.bib"
    bib.write_bytes("@article{a1, title={Caf\xe9 theory}, author={M\xfcller, Hans}, file={gone.pdf}}".encode("latin-1"))
    (r,) = list(read_bibtex(bib))
    assert r.title == "Café theory" and r.authors == ["Hans Müller"]
    assert r.pdfs == [] and "missing" in r.warnings[0]
    (p,) = list(read_bibtex(tmp_path / "none.bib"))
    assert isinstance(p, SourceProblem) and "cannot read" in p.message


_field_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="{}\\\"@"), max_size=40)


@given(st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True), _field_text,
                          st.lists(_field_text.filter(lambda s: s.strip() and " and " not in s and "," not in s), max_size=3),
                          st.one_of(st.none(), st.integers(1500, 2100))), max_size=6))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_bibtex_roundtrip_property(entries):
    text = ""
    for key, title, authors, year in entries:
        text += f"@article{{{key},\n  title = {{{title}}},\n  author = {{{' and '.join(authors)}}},\n"
        text += f"  year = {{{year}}},\n}}\n\n" if year else "}\n\n"
    out = list(parse_bibtex(text, "prop.bib"))
    assert len(out) == len(entries)
    for (key, title, authors, year), rec in zip(entries, out):
        assert isinstance(rec, SourceRecord), rec
        assert rec.key == key and rec.year == year
        assert (rec.title or "") == latex_to_text(title)
        assert len(rec.authors) == len([a for a in authors if latex_to_text(a) and a.strip().lower() != "others"])


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_bibtex_never_raises_on_garbage(text):
    for item in parse_bibtex(text, "junk.bib"):
        assert isinstance(item, (SourceRecord, SourceProblem))
        if isinstance(item, SourceProblem):
            assert item.line and item.line >= 1 and "\n" not in str(item)


def test_split_names_forms():
    assert split_names("Lamport, Leslie and Barbara Liskov and {IEEE} and others") == \
        ["Leslie Lamport", "Barbara Liskov", "IEEE"]
    assert split_names("Steele, Jr., Guy L.") == ["Guy L. Steele, Jr."]
    assert split_names("{Anderson and Sons Ltd}") == ["Anderson and Sons Ltd"]


CSL = [
    {"id": "lamport2001paxos", "type": "article-journal", "title": "Paxos Made Simple",
     "author": [{"family": "Lamport", "given": "Leslie"}], "issued": {"date-parts": [[2001, 12]]},
     "container-title": "ACM SIGACT News", "DOI": "10.1145/568425.568433", "keyword": "consensus, classic"},
    {"id": "http://zotero.org/users/1/items/ABCD1234", "type": "paper-conference", "title": 12345,
     "author": "not a list", "issued": {"raw": "circa 1999"}, "note": "arXiv: 1901.00002v3"},
    {"id": "x", "type": "book", "title": {"nested": "object"}, "author": [{"literal": "World Health Organization"}],
     "issued": "2010"},
    "not an object",
    {"id": "vdberg", "citation-key": "berg2020graphs", "title": "Graphs", "author": [
        {"family": "Berg", "given": "Jan", "non-dropping-particle": "van der"}], "issued": {"date-parts": [["2020"]]}},
]


def test_csl_json_with_wrong_typed_fields(tmp_path):
    path = tmp_path / "export.json"
    path.write_text(json.dumps(CSL), encoding="utf-8")
    items = list(read_csl(path))
    recs = [i for i in items if isinstance(i, SourceRecord)]
    probs = [i for i in items if isinstance(i, SourceProblem)]
    assert len(recs) == 4 and len(probs) == 1 and "item 4 is a str" in probs[0].message
    a, b, c, d = recs
    assert (a.key, a.title, a.authors, a.year, a.doi, a.tags) == ("lamport2001paxos", "Paxos Made Simple",
                                                                  ["Leslie Lamport"], 2001, "10.1145/568425.568433",
                                                                  ["consensus", "classic"])
    assert b.key is None and b.title == "12345" and b.authors == [] and b.year == 1999 and b.arxiv == "1901.00002"
    assert "expected a list" in b.warnings[0]
    assert c.title is None and "expected text" in c.warnings[0] and c.authors == ["World Health Organization"]
    assert c.year == 2010
    assert d.key == "berg2020graphs" and d.authors == ["Jan van der Berg"] and d.year == 2020


def test_csl_invalid_json_keeps_what_came_before(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text(json.dumps(CSL[:1])[:-1] + ', {"id": "b", "title": "Cut', encoding="utf-8")
    items = list(read_csl(path))
    assert isinstance(items[0], SourceRecord) and isinstance(items[-1], SourceProblem)
    assert "invalid JSON after item 1" in items[-1].message and "\n" not in items[-1].message


def test_better_bibtex_json_export(tmp_path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "main.pdf").write_bytes(make_pdf("Main"))
    export = {"config": {"id": "36a3b0b5"}, "collections": {}, "items": [
        {"itemType": "conferencePaper", "citationKey": "ongaro2014raft", "title": "In Search of an Understandable Consensus Algorithm",
         "creators": [{"creatorType": "author", "firstName": "Diego", "lastName": "Ongaro"},
                      {"creatorType": "editor", "firstName": "Ed", "lastName": "Itor"}],
         "date": "2014-06-19", "proceedingsTitle": "USENIX ATC", "extra": "DOI: 10.5555/2643634.2643666",
         "tags": [{"tag": "raft"}], "key": "RAFTKEY1",
         "attachments": [{"path": str(tmp_path / "files" / "main.pdf")}, {"path": "files/missing.pdf"}],
         "notes": [{"note": "<p>Great <i>paper</i></p>"}]}]}
    path = tmp_path / "library.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    (r,) = list(read_csl(path))
    assert (r.key, r.authors, r.year, r.venue, r.doi, r.zotero_key) == (
        "ongaro2014raft", ["Diego Ongaro"], 2014, "USENIX ATC", "10.5555/2643634.2643666", "RAFTKEY1")
    assert r.pdfs == [str(tmp_path / "files" / "main.pdf")] and "missing.pdf" in r.warnings[0]
    assert r.reader_notes == ["Great *paper*"] and r.tags == ["raft"]


def test_large_csl_streams_in_bounded_memory(tmp_path):
    path = tmp_path / "big.json"
    n = 3000
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[")
        for i in range(n):
            fh.write(("," if i else "") + json.dumps({"id": f"k{i}", "type": "article", "title": f"Title {i} " + "x" * 200,
                                                      "author": [{"family": f"F{i}", "given": "G"}],
                                                      "issued": {"date-parts": [[2000 + i % 20]]}, "abstract": "a" * 6000}))
        fh.write("]")
    seen = []
    tracemalloc.start()
    count = 0
    for r in read_csl(path, progress=lambda k, frac: seen.append((k, frac)), every=1000):
        count += 1
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert count == n
    assert path.stat().st_size > 15 * 2**20 and peak < 5 * 2**20     # far less than the file
    assert [k for k, _ in seen] == [1000, 2000, 3000, 3000] and seen[-1][1] == 1.0


def test_folders_group_supplements_and_ignore_other_files(tmp_path):
    root = tmp_path / "lib"
    (root / "a" / "deep").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "a" / "paper.pdf").write_bytes(make_pdf("Paper", pages=2))
    (root / "a" / "paper_supplement.pdf").write_bytes(make_pdf("Supp", pages=9))
    (root / "a" / "deep" / "Other.PDF").write_bytes(make_pdf("Other"))
    (root / ".hidden" / "x.pdf").write_bytes(make_pdf("Hidden"))
    for i in range(300):
        (root / "a" / f"data{i}.csv").write_text("1,2\n")
    items = list(records_from_paths([root, tmp_path / "missing.pdf", root / "a" / "data1.csv"]))
    recs = [r for r in items if isinstance(r, SourceRecord)]
    probs = [p for p in items if isinstance(p, SourceProblem)]
    assert [[Path(p).name for p in r.pdfs] for r in recs] == [["paper.pdf", "paper_supplement.pdf"], ["Other.PDF"]]
    assert [p.message for p in probs] == ["no such file or folder",
                                          "not a PDF, .bib or CSL-JSON file; pass papers as PDFs"]


def test_main_text_choice(tmp_path):
    for name, pages in (("SI.pdf", 20), ("zz_article.pdf", 8), ("Appendix A.pdf", 30), ("aa_short.pdf", 2)):
        (tmp_path / name).write_bytes(make_pdf(name, pages=pages))
    paths = [str(tmp_path / n) for n in ("SI.pdf", "Appendix A.pdf", "aa_short.pdf", "zz_article.pdf")]
    assert Path(order_main_first(paths)[0]).name == "zz_article.pdf"
    assert is_supplement("mmc1.pdf") and is_supplement("Supporting Information.pdf") and not is_supplement("simple.pdf")


_json = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=20), lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(st.text(max_size=8), kids, max_size=3), max_leaves=8)
_csl_item = st.fixed_dictionaries({}, optional={k: _json for k in (
    "id", "title", "author", "issued", "DOI", "URL", "container-title", "abstract", "keyword", "note",
    "citation-key", "editor", "number")})


@given(st.lists(st.one_of(_csl_item, _json), max_size=6))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_csl_reader_survives_any_item_shapes(tmp_path, items):
    path = tmp_path / "any.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    out = list(read_csl(path))
    assert len(out) == len(items)
    for item, got in zip(items, out):
        if isinstance(item, dict):
            assert isinstance(got, SourceRecord), got
            assert got.title is None or isinstance(got.title, str)
            assert all(isinstance(a, str) and a for a in got.authors)
        else:
            assert isinstance(got, SourceProblem) and "not an object" in got.message
