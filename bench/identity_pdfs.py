"""PDFs in the hard header styles, made with PyMuPDF at run time for bench/identity.py and tests/test_identity.py.

Each style is a first page (or a cover page and a first page) as real papers set it: journal banners,
download stamps, running heads, volume lines, institutions above the title, multi-line titles, two-column
author blocks, conference notes, arXiv margin stamps, and text layers broken the ways old TeX PDFs and some
publishers' fonts break them (spaces inside words, OT1 dashes and ligatures, ligatures in control codes,
quotes and dashes mapped to letters). `make_all(folder)` writes them and returns their labels.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

BODY = ("Distributed storage systems must balance consistency, availability and cost. In this paper we study "
        "how replication protocols behave when the network partitions and how clients observe the resulting "
        "anomalies. We describe the design of our system, report measurements on a cluster of commodity "
        "machines, and compare the results with the predictions of a simple analytical model. The evaluation "
        "shows that the approach reduces the latency of reads by a factor of three while keeping the cost of "
        "writes within ten percent of the baseline. We conclude with a discussion of the limitations of the "
        "method and of the questions that remain open for future work on the subject.")
INTRO = ("The problem of retrieving relevant documents from a large collection has been studied for decades. "
         "Early systems relied on exact matching of terms, while later work introduced probabilistic weighting "
         "of the terms in a query. This section reviews the models that our experiments build on and explains "
         "the notation used in the rest of the paper, together with the data sets and the measures we report.")


def _wrap(text: str, width: int = 88) -> list[str]:
    out, cur = [], ""
    for w in text.split():
        if len(cur) + len(w) + 1 > width:
            out.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}".strip()
    if cur:
        out.append(cur)
    return out


def _para(page, x: float, y: float, text: str, size: float = 10, width: int = 88, font: str = "tiro") -> float:
    for line in _wrap(text, width):
        page.insert_text((x, y), line, fontsize=size, fontname=font)
        y += size * 1.25
    return y


def _body(page, y: float, heading: str = "Abstract", two_col: bool = False) -> None:
    """An abstract and an introduction under the header, so the page reads as a paper's first page."""
    page.insert_text((72, y), heading, fontsize=11, fontname="tibo")
    y = _para(page, 72, y + 16, BODY)
    page.insert_text((72, y + 10), "1 Introduction", fontsize=11, fontname="tibo")
    _para(page, 72, y + 26, INTRO + " " + INTRO)


def _spaced(page, x: float, y: float, pieces: list[str], size: float, font: str = "tiro") -> None:
    """Text whose layer has spaces inside words: each piece is drawn right after the previous one's
    glyphs, with a space glyph overlapping it ("Rob" + " ertson")."""
    f = pymupdf.Font(font)
    for i, piece in enumerate(pieces):
        text = piece if i == 0 else " " + piece.lstrip(" ")
        shift = 0.0 if i == 0 else f.text_length(" ", fontsize=size)
        real_gap = f.text_length(" ", fontsize=size) if piece.startswith(" ") else 0.0
        page.insert_text((x - shift + real_gap, y), text, fontsize=size, fontname=font)
        x = x - shift + real_gap + f.text_length(text, fontsize=size)


def _retype_fonts(doc: pymupdf.Document, base: str, encoding: str | None = None, to_unicode: str | None = None):
    """Rename the (Times) fonts of the document to a TeX font name, optionally with a custom encoding and a
    ToUnicode map, as a dvips/pdfTeX file would carry them."""
    for x in range(1, doc.xref_length()):
        if doc.xref_get_key(x, "Type")[1] == "/Font" and "Times-Roman" in doc.xref_get_key(x, "BaseFont")[1]:
            doc.xref_set_key(x, "BaseFont", f"/{base}")
            if encoding:
                doc.xref_set_key(x, "Encoding", encoding)
            if to_unicode:
                sx = doc.get_new_xref()
                doc.update_object(sx, "<< >>")
                doc.update_stream(sx, to_unicode.encode())
                doc.xref_set_key(x, "ToUnicode", f"{sx} 0 R")


_CMAP = """/CIDInit /ProcSet findresource begin 12 dict begin begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def /CMapName /Adobe-Identity-UCS def
/CMapType 2 def 1 begincodespacerange <00> <FF> endcodespacerange
2 beginbfchar <11> <0142> <12> <017E> endbfchar
1 beginbfrange <20> <7E> <0020> endbfrange
endcmap CMapName currentdict /CMap defineresource pop end end"""


def _banner(page):
    page.insert_text((72, 50), "Journal of Cryptology", fontsize=9, fontname="helv")
    page.insert_text((72, 62), "Vol. 31, No. 2, October 1985", fontsize=9, fontname="helv")
    page.insert_text((72, 110), "Secure Multiparty Computation of", fontsize=17, fontname="tibo")
    page.insert_text((72, 131), "Approximations over Finite Fields", fontsize=17, fontname="tibo")
    page.insert_text((72, 160), "Joan Feigenbaum, Yuval Ishai and Tal Malkin", fontsize=11, fontname="tiro")
    page.insert_text((72, 174), "AT&T Labs Research, Florham Park, NJ", fontsize=9, fontname="tiit")
    _body(page, 210)


def _stamp(page):
    page.insert_text((72, 36), "Downloaded from orbit.dtu.dk on: Aug 15, 2016", fontsize=8, fontname="helv")
    page.insert_text((72, 100), "Insertion, Evasion, and Denial of Service:", fontsize=16, fontname="tibo")
    page.insert_text((72, 120), "Eluding Network Intrusion Detection", fontsize=16, fontname="tibo")
    page.insert_text((72, 146), "Thomas H. Ptacek and Timothy N. Newsham", fontsize=11, fontname="tiro")
    page.insert_text((72, 160), "Secure Networks, Inc.", fontsize=9, fontname="tiit")
    page.insert_text((72, 174), "January 1998", fontsize=10, fontname="tiro")
    _body(page, 210)


def _running_head(page):
    page.insert_text((72, 40), "Running Head: Common Ground", fontsize=9, fontname="helv")
    page.insert_text((150, 120), "Grounding in Communication", fontsize=18, fontname="tibo")
    page.insert_text((180, 150), "Herbert H. Clark", fontsize=12, fontname="tiro")
    page.insert_text((180, 164), "Stanford University", fontsize=10, fontname="tiit")
    page.insert_text((72, 190), "Received 12 May 1991; revised 3 February 1992; accepted 1 March 1993",
                     fontsize=8, fontname="tiro")
    _body(page, 220)


def _multiline(page):
    page.insert_text((72, 90), "Efficient String Matching:", fontsize=18, fontname="tibo")
    page.insert_text((72, 112), "An Aid to Bibliographic Search", fontsize=18, fontname="tibo")
    page.insert_text((72, 140), "Alfred V. Aho* and Margaret J. Corasick**", fontsize=11, fontname="tiro")
    page.insert_text((72, 154), "Bell Laboratories, Murray Hill, New Jersey", fontsize=9, fontname="tiit")
    page.insert_text((72, 700), "Communications of the ACM, June 1975, Volume 18, Number 6", fontsize=8,
                     fontname="tiro")
    page.insert_text((72, 712), "Copyright \u00a9 1975, Association for Computing Machinery, Inc.", fontsize=8,
                     fontname="tiro")
    _body(page, 190)


def _two_column(page):
    page.insert_text((90, 90), "The PageRank Citation Ranking:", fontsize=20, fontname="tibo")
    page.insert_text((110, 114), "Bringing Order to the Web", fontsize=20, fontname="tibo")
    page.insert_text((90, 150), "Lawrence Page", fontsize=11, fontname="tiro")
    page.insert_text((90, 163), "Stanford University", fontsize=9, fontname="tiit")
    page.insert_text((90, 175), "page@cs.stanford.edu", fontsize=9, fontname="cour")
    page.insert_text((330, 150), "Sergey Brin", fontsize=11, fontname="tiro")
    page.insert_text((330, 163), "Stanford University", fontsize=9, fontname="tiit")
    page.insert_text((330, 175), "sergey@cs.stanford.edu", fontsize=9, fontname="cour")
    page.insert_text((72, 720), "Technical Report SIDL-WP-1999-0120, January 29, 1998", fontsize=8,
                     fontname="tiro")
    _body(page, 210)


def _institution(page):
    page.insert_text((180, 60), "UNIVERSITY OF CALIFORNIA,", fontsize=12, fontname="tibo")
    page.insert_text((200, 76), "BERKELEY", fontsize=12, fontname="tibo")
    page.insert_text((72, 130), "Early Experience with a Relational Database", fontsize=16, fontname="tibo")
    page.insert_text((72, 156), "Michael Stonebraker and Eugene Wong", fontsize=11, fontname="tiro")
    page.insert_text((72, 170), "Electronics Research Laboratory", fontsize=9, fontname="tiit")
    page.insert_text((72, 184), "Memorandum No. UCB/ERL M78/12, March 1978", fontsize=9, fontname="tiro")
    _body(page, 220)


def _author_first_line(page):
    page.insert_text((72, 100), "End-to-End Arguments in System Design", fontsize=16, fontname="tibo")
    page.insert_text((72, 124), "J.H. Saltzer, D.P. Reed and D.D. Clark*", fontsize=11, fontname="tiro")
    page.insert_text((72, 138), "M.I.T. Laboratory for Computer Science", fontsize=9, fontname="tiit")
    page.insert_text((72, 700), "* This paper appears in ACM Transactions on Computer Systems, Vol. 2, No. 4, "
                     "November 1984", fontsize=8, fontname="tiro")
    _body(page, 180)


def _conference_note(page):
    page.insert_text((72, 40), "This paper appears in ECOOP 2004, LNCS 3086, Springer", fontsize=8,
                     fontname="tiit")
    page.insert_text((72, 100), "Scrap Your Boilerplate with Class", fontsize=17, fontname="tibo")
    page.insert_text((72, 126), "Ralf L\u00e4mmel", fontsize=11, fontname="tiro")
    page.insert_text((250, 126), "Simon Peyton Jones", fontsize=11, fontname="tiro")
    page.insert_text((72, 140), "Vrije Universiteit, Amsterdam", fontsize=9, fontname="tiit")
    page.insert_text((250, 140), "Microsoft Research, Cambridge", fontsize=9, fontname="tiit")
    _body(page, 180)


def _arxiv(page):
    page.insert_text((30, 600), "arXiv:1902.01234v2  [cs.LG]  3 Feb 2019", fontsize=14, fontname="tiro",
                     rotate=90, color=(0.5, 0.5, 0.5))
    page.insert_text((72, 100), "Learning Sparse Codes for Time Series", fontsize=17, fontname="tibo")
    page.insert_text((72, 126), "Maria Gonzalez, Wei Zhang, and Peter M. Olsen", fontsize=11, fontname="tiro")
    page.insert_text((72, 140), "Department of Computer Science, ETH Zurich", fontsize=9, fontname="tiit")
    _body(page, 180)


def _cover(doc):
    cover = doc.new_page()
    cover.insert_text((72, 90), "This paper is included in the Proceedings of the", fontsize=12, fontname="helv")
    cover.insert_text((72, 106), "13th USENIX Symposium on Operating Systems Design and Implementation",
                      fontsize=12, fontname="helv")
    cover.insert_text((72, 122), "October 8\u201310, 2018 \u2022 Carlsbad, CA, USA", fontsize=10, fontname="helv")
    cover.insert_text((72, 138), "ISBN 978-1-939133-08-3", fontsize=10, fontname="helv")
    cover.insert_text((72, 170), "Open access to the Proceedings of the 13th USENIX Symposium on Operating "
                      "Systems", fontsize=10, fontname="helv")
    cover.insert_text((72, 240), "Sharding the Log for Fast Recovery", fontsize=22, fontname="hebo")
    cover.insert_text((72, 270), "Ana Klimovic and Christos Kozyrakis, Stanford University", fontsize=11,
                      fontname="helv")
    cover.insert_text((72, 290), "https://www.usenix.org/conference/osdi18/presentation/klimovic",
                      fontsize=9, fontname="helv")
    page = doc.new_page()
    page.insert_text((150, 90), "Sharding the Log for Fast Recovery", fontsize=16, fontname="tibo")
    page.insert_text((110, 116), "Ana Klimovic", fontsize=11, fontname="tiro")
    page.insert_text((330, 116), "Christos Kozyrakis", fontsize=11, fontname="tiro")
    page.insert_text((110, 130), "Stanford University", fontsize=9, fontname="tiit")
    page.insert_text((330, 130), "Stanford University", fontsize=9, fontname="tiit")
    _body(page, 170)
    page.insert_text((72, 760), "USENIX Association 13th USENIX Symposium on Operating Systems Design and "
                     "Implementation 1", fontsize=8, fontname="tiro")
    page = doc.new_page()
    _para(page, 72, 80, INTRO * 3)


def _spaced_type3(page):
    """An old dvips PDF: words split by the text layer, and an OT1 en dash at `{`."""
    _spaced(page, 72, 100, ["Ok", "api", " at", " TREC{3"], 17, "tiro")
    _spaced(page, 72, 128, ["S", " E", " Rob", "ertson", " S", " W", "alk", "er"], 11, "tiro")
    page.insert_text((72, 142), "City University, London", fontsize=9, fontname="tiro")
    page.insert_text((72, 156), "Proceedings of the Third Text REtrieval Conference, 1994", fontsize=9,
                     fontname="tiro")
    page.insert_text((72, 190), "Abstract", fontsize=11, fontname="tiro")
    y = 206
    for words in _wrap(BODY + " " + INTRO, 80):
        pieces = []
        for w in words.split():
            cut = len(w) // 2 if len(w) > 5 else 0
            pieces += ([w[:cut], w[cut:]] if cut else [w])
            pieces[-1 if not cut else -2] = " " + pieces[-1 if not cut else -2]
        pieces[0] = pieces[0].lstrip()
        _spaced(page, 72, y, pieces, 10, "tiro")
        y += 12.5


def _ligatures(page):
    """Ligatures without Unicode: a TeX font's ffi (OT1 code 0x0E) in "Sheffield" and "efficient"."""
    page.insert_text((72, 100), "E\x0ecient Pseudo-Relevance Feedback for Retrieval", fontsize=17, fontname="tiro")
    page.insert_text((72, 126), "Mark Sanderson and Paul Clough", fontsize=11, fontname="tiro")
    page.insert_text((72, 140), "University of She\x0eeld, UK", fontsize=9, fontname="tiro")
    page.insert_text((72, 154), "SIGIR 2003, Toronto, Canada", fontsize=9, fontname="tiro")
    y = _para(page, 72, 190, "Abstract We describe an e\x0ecient method that retrieves documents with "
              "su\x0ecient precision. " + BODY)
    _para(page, 72, y + 10, INTRO)


def _acm_punct(page):
    page.insert_text((72, 100), "Query Processing in Main Memory Databases", fontsize=17, fontname="tibo")
    page.insert_text((72, 126), "Tobin J. Lehman and Michael J. Carey", fontsize=11, fontname="tiro")
    page.insert_text((72, 140), "University of Wisconsin", fontsize=9, fontname="tiit")
    page.insert_text((72, 154), "Proceedings of the 1986 ACM SIGMOD International Conference", fontsize=9,
                     fontname="tiro")
    _para(page, 72, 190, "Abstract The DSG\u00d0the dependency graph\u00d0is \x11worse\x12 than expected "
          "when the database\u00d0or its index\u00d0does not fit in memory. " + BODY)



def _next_letter(ch: str) -> str:
    """The next vowel after a vowel, the next consonant after a consonant (case kept)."""
    for alphabet in ("aeiou", "bcdfghjklmnpqrstvwxyz"):
        if ch.lower() in alphabet:
            out = alphabet[(alphabet.index(ch.lower()) + 1) % len(alphabet)]
            return out.upper() if ch.isupper() else out
    return ch


def _shifted_cmap() -> str:
    """A ToUnicode map that sends each letter to `_next_letter`: vowels stay vowels, every glyph has a
    Unicode value and words keep their length, so only a dictionary tells the text layer is not words."""
    pairs = [f"<{c:02X}> <{ord(_next_letter(chr(c))):04X}>" for c in range(0x20, 0x7F) if _next_letter(chr(c)) != chr(c)]
    chunks = "".join(f"{len(pairs[i:i + 90])} beginbfchar\n" + "\n".join(pairs[i:i + 90]) + "\nendbfchar\n"
                     for i in range(0, len(pairs), 90))
    return _CMAP.replace("2 beginbfchar <11> <0142> <12> <017E> endbfchar\n", "").replace(
        "endbfrange\n", "endbfrange\n" + chunks)


def _non_word_font(page):
    """A font whose ToUnicode map is wrong: the page renders fine, its text layer reads "Siqmodevif Tvusehi"."""
    page.insert_text((72, 100), "Replicated Storage under Network Partitions", fontsize=17, fontname="tiro")
    page.insert_text((72, 126), "Laura Bennett and Daniel Frost", fontsize=11, fontname="tiro")
    page.insert_text((72, 140), "Proceedings of the 1992 Workshop on Management of Replicated Data", fontsize=9,
                     fontname="tiro")
    _para(page, 72, 176, "Abstract " + BODY, size=11, width=80)


STYLES = [
    ("banner", _banner, {"title": "Secure Multiparty Computation of Approximations over Finite Fields",
                         "authors": ["Joan Feigenbaum", "Yuval Ishai", "Tal Malkin"], "year": 1985}),
    ("download-stamp", _stamp, {"title": "Insertion, Evasion, and Denial of Service: Eluding Network Intrusion "
                                         "Detection",
                                "authors": ["Thomas H. Ptacek", "Timothy N. Newsham"], "year": 1998}),
    ("running-head", _running_head, {"title": "Grounding in Communication", "authors": ["Herbert H. Clark"],
                                     "year": 1991}),
    ("multi-line-title", _multiline, {"title": "Efficient String Matching: An Aid to Bibliographic Search",
                                      "authors": ["Alfred V. Aho", "Margaret J. Corasick"], "year": 1975}),
    ("two-column-header", _two_column, {"title": "The PageRank Citation Ranking: Bringing Order to the Web",
                                        "authors": ["Lawrence Page", "Sergey Brin"], "year": 1998}),
    ("institution-banner", _institution, {"title": "Early Experience with a Relational Database",
                                          "authors": ["Michael Stonebraker", "Eugene Wong"], "year": 1978}),
    ("author-line", _author_first_line, {"title": "End-to-End Arguments in System Design",
                                         "authors": ["J.H. Saltzer", "D.P. Reed", "D.D. Clark"], "year": 1984}),
    ("conference-note", _conference_note, {"title": "Scrap Your Boilerplate with Class",
                                           "authors": ["Ralf Lämmel", "Simon Peyton Jones"], "year": 2004}),
    ("arxiv-stamp", _arxiv, {"title": "Learning Sparse Codes for Time Series",
                             "authors": ["Maria Gonzalez", "Wei Zhang", "Peter M. Olsen"], "year": 2019}),
    ("cover-page", None, {"title": "Sharding the Log for Fast Recovery",
                          "authors": ["Ana Klimovic", "Christos Kozyrakis"], "year": 2018}),
    ("spaced-glyphs", _spaced_type3, {"title": "Okapi at TREC\u20133", "authors": ["S E Robertson", "S Walker"],
                                      "year": 1994, "repair": True}),
    ("ligatures-ot1", _ligatures, {"title": "Efficient Pseudo-Relevance Feedback for Retrieval",
                                    "authors": ["Mark Sanderson", "Paul Clough"], "year": 2003, "repair": True}),
    ("misencoded-punctuation", _acm_punct, {"title": "Query Processing in Main Memory Databases",
                                            "authors": ["Tobin J. Lehman", "Michael J. Carey"], "year": 1986,
                                            "repair": True}),
    ("non-word-font", _non_word_font, {"title": "Replicated Storage under Network Partitions",
                                       "authors": ["Laura Bennett", "Daniel Frost"], "year": 1992, "repair": True}),
]


def make(name: str, folder: Path) -> Path:
    """Write the PDF of style `name` into `folder`; returns its path."""
    style = {s[0]: s for s in STYLES}[name]
    doc = pymupdf.open()
    if name == "cover-page":
        _cover(doc)
    else:
        page = doc.new_page()
        style[1](page)
        page2 = doc.new_page()
        _para(page2, 72, 80, INTRO * 3)
    doc.set_metadata({"title": "", "author": "", "creationDate": "D:20260101000000Z"})
    if name == "spaced-glyphs":
        _retype_fonts(doc, "PXSTRQ+CMR10")
    elif name == "ligatures-ot1":
        _retype_fonts(doc, "GHWKLM+CMR10")
    elif name == "misencoded-punctuation":
        _retype_fonts(doc, "Times-Roman", to_unicode=_CMAP)
    elif name == "non-word-font":
        _retype_fonts(doc, "Times-Roman", to_unicode=_shifted_cmap())
    path = Path(folder) / f"{name}.pdf"
    doc.save(path, garbage=3, deflate=True)
    doc.close()
    return path


def make_all(folder: Path) -> dict[str, dict]:
    """Every style's PDF in `folder`: {path: label}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, _, label in STYLES:
        label = dict(label)
        out[str(make(name, folder))] = label
    return out
