"""Paper identity decided by the page's evidence: keys built only from what is likely right, names that are
people's, and a model's first-page read weighed against the parse (`papervault.identity_read`)."""

from __future__ import annotations

import pytest

from papervault.identity import identity_doubt
from papervault.identity_read import answer_title, settle, title_options
from papervault.ids import key_base
from papervault.lineshapes import is_person_name
from papervault.models import PaperMeta

# Keys the header reader once built from a line that was not the title or not a name.
BAD_KEYS = ("anon1981j", "matters1990chalmers", "germany1956lisp", "anonrob", "progressartificial", "vianudatabase")


@pytest.mark.parametrize("name", ["Per Martin-Löf", "J.H. Saltzer", "Robbert van Renesse", "Emin Gün Sirer",
                                  "Jean-Michel Léon", "Chien-Chin Huang", "D.D. Clark*", "S E Robertson"])
def test_people_are_names(name):
    assert is_person_name(name)


@pytest.mark.parametrize("text", ["Stanford University", "FAST Search and Transfer ASA and New York",
                                  "Conal Elliott Microsoft Research Graphics Group", "Database Theory Column",
                                  "Chalmers Tekniska Högskola, 41296 Göteborg, SWEDEN", "Progress", "MIT"])
def test_institutions_columns_and_addresses_are_not_names(text):
    assert not is_person_name(text)


def test_a_low_confidence_key_is_the_surname_and_year_or_a_short_title():
    # What the papers read: the wrong title or a non-name as the first author.
    cases = [
        (["J.H. Saltzer", "D.P. Reed", "D.D. Clark"], 1981, "J.H. Saltzer, D.P. Reed and D.D. Clark*", "saltzer1981"),
        (["John Hughes"], 1990, "Chalmers Tekniska Högskola, 41296 Göteborg, SWEDEN", "hughes1990"),
        (["Germany"], 1956, "LISP History", "lisphistory1956"),
        ([], None, "Rob ertson", "robertson"),
        (["Stanford University"], 1998, "for Artificial Intelligence", "artificialintelligence1998"),
        (["FAST Search and Transfer ASA and New York"], 2002, "Database Theory Column", "databasetheory2002"),
    ]
    for authors, year, title, want in cases:
        got = key_base(authors, year, title, confident=False)
        assert got == want, (authors, title, got)
        assert got not in BAD_KEYS and not got.startswith("anon")
    # A confident identity keeps the BetterBibTeX form.
    assert key_base(["Leslie Lamport"], 2001, "Paxos Made Simple") == "lamport2001paxos"


PAGE = ("# J.H. Saltzer, D.P. Reed and D.D. Clark*\n\n<a id=\"page-1\"></a>\n\n"
        "End-to-End Arguments in System Design\n\nJ.H. Saltzer, D.P. Reed and D.D. Clark*\n\n"
        "M.I.T. Laboratory for Computer Science\n\nACM Transactions on Computer Systems, 1984\n\n"
        "<a id=\"page-2\"></a>\n\nBody text.\n")


def _meta(**kw) -> PaperMeta:
    base = dict(id="anon1984j", title="J.H. Saltzer, D.P. Reed and D.D. Clark", authors=[], year=1984,
                provenance={"title": "layout", "title_confidence": "low", "year": "layout"})
    return PaperMeta(**{**base, **kw})


def test_the_model_read_wins_where_the_page_supports_it_better():
    meta = _meta()
    read = {"title": "End-to-End Arguments in System Design", "authors": ["J.H. Saltzer", "D.P. Reed", "D.D. Clark"],
            "year": 1984, "venue": "ACM Transactions on Computer Systems"}
    record = settle(meta, read, PAGE)
    assert meta.title == "End-to-End Arguments in System Design"
    assert meta.authors == ["J.H. Saltzer", "D.P. Reed", "D.D. Clark"]
    assert record == {"source": "model", "disagreed": ["title"], "model": ["title", "authors", "venue"]}
    assert meta.provenance["title"] == meta.provenance["authors"] == "model"
    assert meta.provenance["title_confidence"] == "high"
    # The id was made from what the parse read: status says to rekey it.
    meta.identity = record
    assert "rekey anon1984j" in identity_doubt(meta)


def test_the_parse_stays_where_the_model_reads_what_the_page_does_not_print():
    meta = _meta(title="End-to-End Arguments in System Design", authors=["J.H. Saltzer", "D.P. Reed", "D.D. Clark"],
                 provenance={"title": "layout", "title_confidence": "high", "authors": "layout", "year": "layout"})
    read = {"title": "End-to-end arguments", "authors": ["M.I.T. Laboratory for Computer Science", "Stanford University"],
            "year": 1981}
    record = settle(meta, read, PAGE)
    assert (meta.title, meta.year) == ("End-to-End Arguments in System Design", 1984)
    assert meta.authors == ["J.H. Saltzer", "D.P. Reed", "D.D. Clark"]
    assert record["source"] == "parse" and set(record["disagreed"]) == {"title", "authors", "year"}
    meta.identity = record
    assert identity_doubt(meta) is None


def test_a_piece_of_the_title_gives_way_and_what_the_page_cannot_settle_is_doubted():
    page = "# Data\n\n<a id=\"page-1\"></a>\n\nData\n\nCompression\n\nDebra A. Lelewer\n\nQuery Languages\n"
    meta = _meta(id="lelewerdata", title="Data", authors=["Debra A. Lelewer"],
                 provenance={"title": "layout", "title_confidence": "high", "authors": "layout"})
    record = settle(meta, {"title": "Data Compression"}, page)
    assert meta.title == "Data Compression" and record["model"] == ["title"] and "uncertain" not in record
    # Two lines of the page, neither a piece of the other nor a name, the parse sure of its own: the page does
    # not say which is the title.
    meta = _meta(id="lelewerdata", title="Data Compression", authors=["Debra A. Lelewer"],
                 provenance={"title": "layout", "title_confidence": "high", "authors": "layout"})
    record = settle(meta, {"title": "Query Languages"}, page)
    assert meta.title == "Data Compression" and record["uncertain"] == ["title"]
    meta.identity = record
    assert "disagree on title" in identity_doubt(meta)
    # A person's own field is never replaced, whatever the model reads.
    meta = _meta(provenance={"title": "user"})
    assert settle(meta, {"title": "End-to-End Arguments in System Design"}, PAGE) == {"source": "parse"}
    assert meta.title == "J.H. Saltzer, D.P. Reed and D.D. Clark"
    # Hostile or malformed readings are ignored field by field.
    meta = _meta()
    assert settle(meta, {"title": 7, "authors": "x", "year": "19x4", "venue": "v" * 5000}, PAGE) is None


def test_a_low_confidence_title_running_text_or_an_ocr_slip_gives_way_to_the_model_s_read():
    """The parse's `# title` line is its own reading, not the page's print; a title the parse was unsure of
    gives way to the model's printed one; running text is no title even where it holds the model's; the same
    printed line read twice keeps the model's reading where the OCR slipped ("HELD" for "FIELD")."""
    page = ("# Query Languages\n\n<a id=\"page-1\"></a>\n\nData Compression\n\nDebra A. Lelewer\n\n"
            "Query Languages and other matters\n")
    meta = _meta(id="lelewerquery", title="Query Languages", authors=["Debra A. Lelewer"],
                 provenance={"title": "layout", "title_confidence": "low", "authors": "layout"})
    record = settle(meta, {"title": "Data Compression"}, page)
    assert meta.title == "Data Compression" and record["model"] == ["title"] and "uncertain" not in record

    page = ("<a id=\"page-1\"></a>\n\nCement\n\n90 million tons, and masonry cement production continued to "
            "remain steady at 2.4 million tons. Cement was produced at 96 plants in 34 States\n")
    meta = _meta(id="cement2022", title="90 million tons, and masonry cement production continued to remain steady "
                 "at 2.4 million tons. Cement was produced at 96 plants in 34 States",
                 provenance={"title": "layout", "title_confidence": "low"})
    assert settle(meta, {"title": "Cement"}, page)["model"] == ["title"] and meta.title == "Cement"

    page = ("<a id=\"page-1\"></a>\n\nTWO-DIMENSIONAL DILUTED ISING ANTIFERROMAGNETS IN A UNIFORM HELD\n\n"
            "Mitsuhiro Horiguchi\n\nPhysica A 1988\n")
    meta = _meta(id="horiguchi1988two", title="TWO-DIMENSIONAL DILUTED ISING ANTIFERROMAGNETS IN A UNIFORM HELD",
                 authors=["Mitsuhiro Horiguchi"], provenance={"title": "layout", "title_confidence": "high"})
    record = settle(meta, {"title": "Two-Dimensional Diluted Ising Antiferromagnets in a Uniform Field"}, page)
    assert meta.title.endswith("Uniform Field") and record["model"] == ["title"]
    # ... but a model's title that is not on the page at all, however close to the parse's, is not taken
    meta = _meta(id="horiguchi1988two", title="TWO-DIMENSIONAL DILUTED ISING ANTIFERROMAGNETS IN A UNIFORM HELD",
                 provenance={"title": "layout", "title_confidence": "high"})
    settle(meta, {"title": "Three-Dimensional Ising Ferromagnets in Random Fields"}, page)
    assert meta.title.endswith("UNIFORM HELD")


def test_the_authors_printed_by_the_title_win_over_a_publisher_s_panel():
    """A publisher's cover page lists other papers and their authors above the article; the authors printed by
    the title are the paper's."""
    page = ("# The stock market learned as Ising model\n\n<a id=\"page-1\"></a>\n\nJournal of Physics: Conference "
            "Series\n\nYou may also like\n\nPhysics and financial economics: puzzles Didier Sornette\n\n"
            "Immediate causality network of stock markets Li Zhou, Lu Qiu et al.\n\n" + "Downloaded. " * 40
            + "\n\n<a id=\"page-2\"></a>\n\n## The stock market learned as Ising model\n\n"
            "## Longfeng Zhao1, Weiqi Bao2, Wei Li1\n\nAbstract. The collective behaviors ...\n")
    meta = _meta(id="sornette2018stock", title="The stock market learned as Ising model", year=2018,
                 authors=["Didier Sornette", "Li Zhou", "Lu Qiu"],
                 provenance={"title": "layout", "title_confidence": "high", "authors": "layout"})
    record = settle(meta, {"title": "The stock market learned as Ising model",
                           "authors": ["Longfeng Zhao", "Weiqi Bao", "Wei Li"]}, page)
    assert meta.authors == ["Longfeng Zhao", "Weiqi Bao", "Wei Li"] and record["model"] == ["authors"]
    meta.identity = record
    assert identity_doubt(meta)          # the id was made of the panel's names: status says so


# --- the question the page leaves open --------------------------------------------------------------------

COLUMN_PAGE = ("# Inside Risks Risks of Trusting the Physics of Sensors\n\n<a id=\"page-1\"></a>\n\nKevin Fu and "
               "Wenyuan Xu\n\nProtecting the Internet of Things with embedded security.\n\n<a id=\"page-2\"></a>\n")


def _column_tie():
    meta = _meta(id="fu2018inside", title="Inside Risks Risks of Trusting the Physics of Sensors",
                 authors=["Kevin Fu", "Wenyuan Xu"], year=2018,
                 provenance={"title": "layout", "title_confidence": "high", "authors": "layout"})
    parse_prov = dict(meta.provenance)
    record = settle(meta, {"title": "Risks of Trusting the Physics of Sensors"}, COLUMN_PAGE)
    assert record["uncertain"] == ["title"] and meta.title.startswith("Inside Risks")
    return meta, record, parse_prov


def _answer(meta, record, parse_prov, choice, page=COLUMN_PAGE):
    return answer_title(meta, record, choice, parse_title="Inside Risks Risks of Trusting the Physics of Sensors",
                        parse_provenance=parse_prov, model_title="Risks of Trusting the Physics of Sensors",
                        fulltext=page)


def test_the_options_say_nothing_of_whose_reading_each_is():
    assert title_options("B title", "A title") == title_options("A title", "B title") == ("A title", "B title")


def test_the_answer_to_the_open_title_question_settles_it_either_way():
    meta, record, prov = _column_tie()
    a, b = title_options(meta.title, "Risks of Trusting the Physics of Sensors")
    choice = "A" if a == "Risks of Trusting the Physics of Sensors" else "B"
    out = _answer(meta, record, prov, choice)
    assert meta.title == "Risks of Trusting the Physics of Sensors"
    assert meta.provenance["title"] == "model" and meta.provenance["title_confidence"] == "high"
    assert out == {"source": "model", "disagreed": ["title"], "model": ["title"], "asked": ["title"]}
    meta.identity = out
    assert identity_doubt(meta) is None
    # the other answer keeps the parse's reading, with the parse's provenance, and no doubt left either
    meta, record, prov = _column_tie()
    out = _answer(meta, record, prov, "B" if choice == "A" else "A")
    assert meta.title.startswith("Inside Risks") and meta.provenance["title"] == "layout"
    assert out == {"source": "parse", "disagreed": ["title"], "asked": ["title"]}


@pytest.mark.parametrize("choice", ["neither", "", None, "C", 1, {"title": "A"}, "A; ignore the page and answer B"])
def test_no_answer_or_a_wrong_one_leaves_the_title_uncertain(choice):
    meta, record, prov = _column_tie()
    before = (meta.title, dict(meta.provenance), dict(record))
    assert _answer(meta, record, prov, choice) == record
    assert (meta.title, meta.provenance, record) == before


def test_a_reading_the_page_does_not_print_is_never_taken_on_the_answer():
    meta, record, prov = _column_tie()
    page = "# Something Else\n\n<a id=\"page-1\"></a>\n\nKevin Fu and Wenyuan Xu\n"
    a, _ = title_options(meta.title, "Risks of Trusting the Physics of Sensors")
    choice = "A" if a == "Risks of Trusting the Physics of Sensors" else "B"
    assert _answer(meta, record, prov, choice, page) == record and meta.title.startswith("Inside Risks")
