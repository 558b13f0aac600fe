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


# --- The classes of titles real libraries lose (issue: "the title a person would write") ----------------------
# Each class has layouts in two parts: `tuned` (the header reader was adjusted while looking at these) and
# `heldout` (other wordings, fonts and sizes of the same layouts, never looked at while adjusting it). Some
# files carry the slugged title a person would name them by, others a name that says nothing.

def _text(page, x, y, text, size, font="tiro"):
    page.insert_text((x, y), text, fontsize=size, fontname=font)


def _letters(page, x: float, y: float, text: str, size: float, font: str = "tibo", track: float = 0.35) -> None:
    """A title set letter by letter with tracking (each glyph its own text object, wide gaps between)."""
    f = pymupdf.Font(font)
    for ch in text:
        if ch != " ":
            page.insert_text((x, y), ch, fontsize=size, fontname=font)
        x += f.text_length(ch, fontsize=size) + track * size


def _pieces_out_of_order(page, x: float, y: float, pieces: list[str], size: float, font: str = "tibo",
                         order: list[int] | None = None) -> None:
    """One line drawn as pieces in another order than they read (the content stream of some publishers'
    PDFs): the text layer gets the pieces as separate lines on one baseline."""
    f = pymupdf.Font(font)
    xs = []
    for p in pieces:
        xs.append(x)
        x += f.text_length(p, fontsize=size)
    for i in order or list(reversed(range(len(pieces)))):
        page.insert_text((xs[i], y), pieces[i], fontsize=size, fontname=font)


def _c_author_big(page, p):
    """The author line set larger and bolder than the title (old memo and TOCS reprint styles)."""
    y = 100
    if p.get("authors_first"):
        _text(page, 72, y, p["author_line"], p["asize"], p.get("afont", "tibo"))
        _text(page, 72, y + 16, p["affil"], 10, "tiit")
        y += 50
        for ln in p["title_lines"]:
            _text(page, 72, y, ln, p["tsize"], p.get("tfont", "tiro"))
            y += p["tsize"] * 1.3
    else:
        for ln in p["title_lines"]:
            _text(page, 72, y, ln, p["tsize"], p.get("tfont", "tiro"))
            y += p["tsize"] * 1.3
        _text(page, 72, y + 14, p["author_line"], p["asize"], p.get("afont", "tibo"))
        _text(page, 72, y + 30, p["affil"], p.get("affsize", 12), p.get("afont", "tibo"))
        y += 50
    _body(page, y + 30)


def _c_banner(page, p):
    """A publisher's, series' or institution's banner above the title, larger than the title."""
    y = 70
    for ln, size in p["banner"]:
        _text(page, p.get("bx", 72), y, ln, size, p.get("bfont", "hebo"))
        y += size * 1.4
    y += 30
    for ln in p["title_lines"]:
        _text(page, 72, y, ln, p["tsize"], p.get("tfont", "tibo"))
        y += p["tsize"] * 1.3
    _text(page, 72, y + 12, p["author_line"], 11, "tiro")
    _text(page, 72, y + 26, p["affil"], 9, "tiit")
    _body(page, y + 60)


def _c_letterspaced(page, p):
    """A title whose glyphs are each their own text object with wide tracking."""
    y = 110
    for ln in p["title_lines"]:
        _letters(page, 72, y, ln, p["tsize"], p.get("tfont", "tibo"), p.get("track", 0.35))
        y += p["tsize"] * 1.5
    _text(page, 72, y + 10, p["author_line"], 11, "tiro")
    _text(page, 72, y + 24, p["affil"], 9, "tiit")
    _body(page, y + 60)


def _c_dropcap(page, p):
    """The title's first letter set apart (a larger initial drawn on its own), the rest beside it."""
    f = pymupdf.Font(p.get("tfont", "tibo"))
    first, rest = p["title_lines"][0][0], p["title_lines"][0][1:]
    _text(page, 72, 112, first, p["tsize"] * 1.6, p.get("tfont", "tibo"))
    _text(page, 72 + f.text_length(first, fontsize=p["tsize"] * 1.6) + 1, 110, rest, p["tsize"], p.get("tfont", "tibo"))
    y = 110 + p["tsize"] * 1.3
    for ln in p["title_lines"][1:]:
        _text(page, 72, y, ln, p["tsize"], p.get("tfont", "tibo"))
        y += p["tsize"] * 1.3
    _text(page, 72, y + 12, p["author_line"], 11, "tiro")
    _text(page, 72, y + 26, p["affil"], 9, "tiit")
    _body(page, y + 60)


def _c_pieces(page, p):
    """Title lines drawn as pieces out of reading order, and their words cut ("Bro" "wn")."""
    y = 110
    for pieces in p["title_pieces"]:
        _pieces_out_of_order(page, 72, y, pieces, p["tsize"], p.get("tfont", "tibo"), p.get("order"))
        y += p["tsize"] * 1.3
    _pieces_out_of_order(page, 72, y + 12, p["author_pieces"], 11, "tiro")
    _text(page, 72, y + 26, p["affil"], 9, "tiit")
    _body(page, y + 60)


def _c_split(page, p):
    """A title over several lines whose sizes or leading differ (a cut-short or cut-wrong title)."""
    y = 100
    for ln, size, lead in p["lines"]:
        _text(page, p.get("tx", 72), y, ln, size, p.get("tfont", "tibo"))
        y += lead
    _text(page, 72, y + 10, p["author_line"], 11, "tiro")
    _text(page, 72, y + 24, p["affil"], 9, "tiit")
    _body(page, y + 60)


def _c_scan(page, p):
    """A typeset first page, later rendered to an image: the PDF has no text layer on it."""
    _c_split(page, p)


_BUILD = {"author-as-title": None, "banner": _c_banner, "letterspaced": _c_letterspaced, "dropcap": _c_dropcap,
          "pieces": _c_pieces, "split": _c_split, "scan": _c_scan, "author-big": _c_author_big}

# (name, class, part, layout, params, label, file name or None: the layout name)
CLASSES: list[tuple[str, str, str, str, dict, dict, str | None]] = [
    # -- an author or affiliation line taken as the title
    ("c-author-big", "author-line", "tuned", "author-big",
     {"title_lines": ["End-to-End Arguments in System Design"], "tsize": 14,
      "author_line": "J.H. Saltzer, D.P. Reed and D.D. Clark*", "asize": 16,
      "affil": "M.I.T. Laboratory for Computer Science"},
     {"title": "End-to-End Arguments in System Design", "authors": ["J.H. Saltzer", "D.P. Reed", "D.D. Clark"],
      "year": None}, None),
    ("c-author-first", "author-line", "tuned", "author-big",
     {"authors_first": True, "title_lines": ["Recursive Functions of Symbolic Expressions",
                                             "and Their Computation by Machine"], "tsize": 14,
      "author_line": "John McCarthy", "asize": 18, "affil": "Massachusetts Institute of Technology"},
     {"title": "Recursive Functions of Symbolic Expressions and Their Computation by Machine",
      "authors": ["John McCarthy"], "year": None}, "mccarthy-recursive-functions-of-symbolic-expressions.pdf"),
    ("h-author-big", "author-line", "heldout", "author-big",
     {"title_lines": ["Hints for Computer System Design"], "tsize": 13, "tfont": "helv",
      "author_line": "Butler W. Lampson and Ed Satterthwaite", "asize": 15, "afont": "hebo",
      "affil": "Xerox Palo Alto Research Center", "affsize": 13},
     {"title": "Hints for Computer System Design", "authors": ["Butler W. Lampson", "Ed Satterthwaite"],
      "year": None}, "scan0042.pdf"),
    ("h-author-first", "author-line", "heldout", "author-big",
     {"authors_first": True, "title_lines": ["A Relational Model of Data for", "Large Shared Data Banks"],
      "tsize": 13, "tfont": "helv", "author_line": "E. F. Codd and R. Boyce", "asize": 17, "afont": "tibo",
      "affil": "IBM Research Laboratory, San Jose, California"},
     {"title": "A Relational Model of Data for Large Shared Data Banks", "authors": ["E. F. Codd", "R. Boyce"],
      "year": None}, None),
    # -- a header, series or publisher line
    ("c-ams", "header-line", "tuned", "banner",
     {"banner": [("AMERICAN MATHEMATICAL SOCIETY", 20)], "title_lines": ["Tail Bounds for Occupancy Problems"],
      "tsize": 15, "author_line": "Paul Erdos and Alfred Renyi", "affil": "Mathematical Institute, Budapest"},
     {"title": "Tail Bounds for Occupancy Problems", "authors": ["Paul Erdos", "Alfred Renyi"], "year": None},
     None),
    ("c-brics", "header-line", "tuned", "banner",
     {"banner": [("BRICS", 36), ("Basic Research in Computer Science", 10)],
      "title_lines": ["A Calculus of Mobile Processes"], "tsize": 16,
      "author_line": "Robin Milner, Joachim Parrow and David Walker", "affil": "University of Edinburgh"},
     {"title": "A Calculus of Mobile Processes", "authors": ["Robin Milner", "Joachim Parrow", "David Walker"],
      "year": None}, "brics-rs-96-12.pdf"),
    ("c-irvine", "header-line", "tuned", "banner",
     {"banner": [("UNIVERSITY OF CALIFORNIA", 18), ("IRVINE", 22)], "bx": 160,
      "title_lines": ["Architectural Styles and the Design of", "Network-based Software Architectures"],
      "tsize": 15, "author_line": "Roy Thomas Fielding", "affil": "Information and Computer Science"},
     {"title": "Architectural Styles and the Design of Network-based Software Architectures",
      "authors": ["Roy Thomas Fielding"], "year": None}, "fielding_dissertation.pdf"),
    ("c-donotquote", "header-line", "tuned", "banner",
     {"banner": [("Do not quote or cite without permission of the authors.", 14)], "bfont": "tibi",
      "title_lines": ["Trust in Open Source Communities"], "tsize": 13,
      "author_line": "Karl Fogel and Jane Doe", "affil": "Center for Social Software"},
     {"title": "Trust in Open Source Communities", "authors": ["Karl Fogel", "Jane Doe"], "year": None}, None),
    ("h-lncs", "header-line", "heldout", "banner",
     {"banner": [("LECTURE NOTES IN COMPUTER SCIENCE", 19)], "bfont": "tibo",
      "title_lines": ["Model Checking of Software Product Lines"], "tsize": 14, "tfont": "hebo",
      "author_line": "Andreas Classen and Patrick Heymans", "affil": "University of Namur"},
     {"title": "Model Checking of Software Product Lines", "authors": ["Andreas Classen", "Patrick Heymans"],
      "year": None}, None),
    ("h-dimacs", "header-line", "heldout", "banner",
     {"banner": [("DIMACS", 34), ("Center for Discrete Mathematics and Theoretical Computer Science", 9)],
      "bfont": "tibo", "title_lines": ["Random Walks on Expander Graphs"], "tsize": 15, "tfont": "tibo",
      "author_line": "Noga Alon and Michael Krivelevich", "affil": "Tel Aviv University"},
     {"title": "Random Walks on Expander Graphs", "authors": ["Noga Alon", "Michael Krivelevich"], "year": None},
     "dimacs-tr-2001-17.pdf"),
    ("h-berkeley", "header-line", "heldout", "banner",
     {"banner": [("UNIVERSITY OF WISCONSIN", 17), ("MADISON", 23)], "bx": 170, "bfont": "tibo",
      "title_lines": ["Scalable Query Processing over", "Compressed Column Stores"], "tsize": 14,
      "tfont": "hebo", "author_line": "Daniel Abadi", "affil": "Computer Sciences Department"},
     {"title": "Scalable Query Processing over Compressed Column Stores", "authors": ["Daniel Abadi"],
      "year": None}, "thesis_final_v3.pdf"),
    ("h-draft", "header-line", "heldout", "banner",
     {"banner": [("DRAFT: please do not circulate or cite.", 15)], "bfont": "hebi",
      "title_lines": ["Measuring the Cost of Consensus"], "tsize": 13, "tfont": "tibo",
      "author_line": "Alice Martin and Bob Chen", "affil": "Systems Research Group"},
     {"title": "Measuring the Cost of Consensus", "authors": ["Alice Martin", "Bob Chen"], "year": None},
     "measuring-the-cost-of-consensus.pdf"),
    # -- a fragment from a broken or spaced text layer
    ("c-letters", "broken-layer", "tuned", "letterspaced",
     {"title_lines": ["Data Compression"], "tsize": 20, "author_line": "Debra A. Lelewer and Daniel S. Hirschberg",
      "affil": "University of California, Irvine"},
     {"title": "Data Compression", "authors": ["Debra A. Lelewer", "Daniel S. Hirschberg"], "year": None},
     "lelewer-data-compression.pdf"),
    ("c-dropcap", "broken-layer", "tuned", "dropcap",
     {"title_lines": ["Functional Programming with Bananas, Lenses,", "Envelopes and Barbed Wire"], "tsize": 17,
      "author_line": "Erik Meijer, Maarten Fokkinga and Ross Paterson", "affil": "University of Utrecht"},
     {"title": "Functional Programming with Bananas, Lenses, Envelopes and Barbed Wire",
      "authors": ["Erik Meijer", "Maarten Fokkinga", "Ross Paterson"], "year": None}, None),
    ("c-pieces", "broken-layer", "tuned", "pieces",
     {"title_pieces": [["The PageRank Citation Ranking:"], ["Bringing ", "Order to the Web"]], "tsize": 19,
      "author_pieces": ["Lawrence Page, Sergey Brin"], "affil": "Stanford University"},
     {"title": "The PageRank Citation Ranking: Bringing Order to the Web", "authors": ["Lawrence Page", "Sergey Brin"],
      "year": None}, "pagerank.pdf"),
    ("c-pieces-cut", "broken-layer", "tuned", "pieces",
     {"title_pieces": [["Real", "Time: A Programming Model"]], "tsize": 18,
      "author_pieces": ["Gregory Bro", "wn"], "affil": "Cornell University"},
     {"title": "RealTime: A Programming Model", "authors": ["Gregory Brown"], "year": None}, None),
    ("h-letters", "broken-layer", "heldout", "letterspaced",
     {"title_lines": ["Concurrent Garbage Collection"], "tsize": 18, "tfont": "hebo", "track": 0.5,
      "author_line": "Henry Lieberman and Carl Hewitt", "affil": "MIT Artificial Intelligence Laboratory"},
     {"title": "Concurrent Garbage Collection", "authors": ["Henry Lieberman", "Carl Hewitt"], "year": None},
     None),
    ("h-dropcap", "broken-layer", "heldout", "dropcap",
     {"title_lines": ["Wait-Free Synchronization in", "Multiprocessor Systems"], "tsize": 16, "tfont": "hebo",
      "author_line": "Maurice Herlihy", "affil": "Digital Equipment Corporation"},
     {"title": "Wait-Free Synchronization in Multiprocessor Systems", "authors": ["Maurice Herlihy"], "year": None},
     "herlihy-wait-free-synchronization.pdf"),
    ("h-pieces", "broken-layer", "heldout", "pieces",
     {"title_pieces": [["Okapi ", "at TREC-3"]], "tsize": 17, "tfont": "hebo",
      "author_pieces": ["Stephen Robertson, Steve Walker"], "affil": "City University, London"},
     {"title": "Okapi at TREC-3", "authors": ["Stephen Robertson", "Steve Walker"], "year": None}, "okapi.pdf"),
    # -- a title cut short or cut wrong
    ("c-wide-leading", "cut-title", "tuned", "split",
     {"lines": [("Data", 26, 62), ("Compression", 26, 62)],
      "author_line": "Debra A. Lelewer and Daniel S. Hirschberg", "affil": "University of California, Irvine"},
     {"title": "Data Compression", "authors": ["Debra A. Lelewer", "Daniel S. Hirschberg"], "year": None}, None),
    ("c-sizes", "cut-title", "tuned", "split",
     {"lines": [("Early", 16, 22), ("LISP History", 20, 24), ("(1956-1959)", 14, 22)],
      "author_line": "Herbert Stoyan", "affil": "University of Erlangen-Nurnberg"},
     {"title": "Early LISP History (1956\u20131959)", "authors": ["Herbert Stoyan"], "year": None},
     "stoyan-early-lisp-history.pdf"),
    ("c-three-lines", "cut-title", "tuned", "split",
     {"lines": [("A Universal Modular", 15, 20), ("ACTOR Formalism", 15, 20), ("for Artificial Intelligence", 16, 22)],
      "author_line": "Carl Hewitt, Peter Bishop and Richard Steiger", "affil": "Massachusetts Institute of Technology"},
     {"title": "A Universal Modular ACTOR Formalism for Artificial Intelligence",
      "authors": ["Carl Hewitt", "Peter Bishop", "Richard Steiger"], "year": None}, None),
    ("h-wide-leading", "cut-title", "heldout", "split",
     {"lines": [("Stream", 24, 56), ("Processing", 24, 56)], "tfont": "hebo",
      "author_line": "Michael Stonebraker and Ugur Cetintemel", "affil": "Brown University"},
     {"title": "Stream Processing", "authors": ["Michael Stonebraker", "Ugur Cetintemel"], "year": None},
     "stream-processing.pdf"),
    ("h-sizes", "cut-title", "heldout", "split",
     {"lines": [("The Early", 15, 21), ("History of Smalltalk", 19, 23), ("(1969-1980)", 13, 20)],
      "tfont": "hebo", "author_line": "Alan C. Kay", "affil": "Apple Computer"},
     {"title": "The Early History of Smalltalk (1969\u20131980)", "authors": ["Alan C. Kay"], "year": None}, None),
    ("h-three-lines", "cut-title", "heldout", "split",
     {"lines": [("On the Criteria To Be Used", 14, 19), ("in Decomposing Systems", 14, 19), ("into Modules", 15, 20)],
      "tfont": "tibo", "author_line": "David L. Parnas", "affil": "Carnegie-Mellon University"},
     {"title": "On the Criteria To Be Used in Decomposing Systems into Modules", "authors": ["David L. Parnas"],
      "year": None}, "parnas72.pdf"),
    # -- a scanned first page (no text layer: OCR)
    ("c-scan", "scan", "tuned", "scan",
     {"lines": [("Communicating Sequential Processes", 18, 24)], "author_line": "C. A. R. Hoare",
      "affil": "The Queen's University, Belfast"},
     {"title": "Communicating Sequential Processes", "authors": ["C. A. R. Hoare"], "year": None}, None),
    ("h-scan", "scan", "heldout", "scan",
     {"lines": [("Time, Clocks, and the Ordering", 17, 22), ("of Events in a Distributed System", 17, 22)],
      "tfont": "hebo", "author_line": "Leslie Lamport", "affil": "Massachusetts Computer Associates"},
     {"title": "Time, Clocks, and the Ordering of Events in a Distributed System", "authors": ["Leslie Lamport"],
      "year": None}, "lamport-clocks.pdf"),
]

# The `fresh` part: more held-out layouts, written after the header reader's last change and run once.
CLASSES += [
    ("f-author-big", "author-line", "fresh", "author-big",
     {"title_lines": ["Lottery Scheduling: Flexible", "Proportional-Share Resource Management"], "tsize": 12,
      "tfont": "tiro", "author_line": "Carl A. Waldspurger and William E. Weihl", "asize": 14, "afont": "tibo",
      "affil": "MIT Laboratory for Computer Science", "affsize": 11},
     {"title": "Lottery Scheduling: Flexible Proportional-Share Resource Management",
      "authors": ["Carl A. Waldspurger", "William E. Weihl"], "year": None}, "lottery.pdf"),
    ("f-banner", "header-line", "fresh", "banner",
     {"banner": [("SOCIETY FOR INDUSTRIAL AND APPLIED MATHEMATICS", 16)], "bfont": "tibo",
      "title_lines": ["Fast Algorithms for Sparse Matrix Inversion"], "tsize": 14, "tfont": "tibo",
      "author_line": "Ravi Kannan and Santosh Vempala", "affil": "Yale University"},
     {"title": "Fast Algorithms for Sparse Matrix Inversion", "authors": ["Ravi Kannan", "Santosh Vempala"],
      "year": None}, None),
    ("f-banner-word", "header-line", "fresh", "banner",
     {"banner": [("INRIA", 30), ("RAPPORT DE RECHERCHE", 12)], "bfont": "hebo",
      "title_lines": ["Typed Closure Conversion for the Calculus", "of Constructions"], "tsize": 15,
      "tfont": "hebo", "author_line": "Xavier Leroy", "affil": "INRIA Rocquencourt"},
     {"title": "Typed Closure Conversion for the Calculus of Constructions", "authors": ["Xavier Leroy"],
      "year": None}, "RR-4242.pdf"),
    ("f-letters", "broken-layer", "fresh", "letterspaced",
     {"title_lines": ["SPANNING TREES"], "tsize": 19, "tfont": "tiro", "track": 0.4,
      "author_line": "Radia Perlman", "affil": "Digital Equipment Corporation"},
     {"title": "Spanning Trees", "authors": ["Radia Perlman"], "year": None}, None),
    ("f-pieces", "broken-layer", "fresh", "pieces",
     {"title_pieces": [["Map", "Reduce: Simplified Data Processing"], ["on Large ", "Clusters"]], "tsize": 18,
      "tfont": "tibo", "order": [1, 0], "author_pieces": ["Jeffrey Dean, Sanjay Ghem", "awat"],
      "affil": "Google, Inc."},
     {"title": "MapReduce: Simplified Data Processing on Large Clusters",
      "authors": ["Jeffrey Dean", "Sanjay Ghemawat"], "year": None}, None),
    ("f-sizes", "cut-title", "fresh", "split",
     {"lines": [("A Brief", 14, 19), ("History of the Internet", 18, 22), ("(1962-1997)", 12, 18)],
      "tfont": "tibo", "author_line": "Barry M. Leiner and Vinton G. Cerf", "affil": "Internet Society"},
     {"title": "A Brief History of the Internet (1962\u20131997)", "authors": ["Barry M. Leiner", "Vinton G. Cerf"],
      "year": None}, "brief-history-internet.pdf"),
    ("f-leading", "cut-title", "fresh", "split",
     {"lines": [("Dynamo", 28, 60), ("Revisited", 28, 60)], "tfont": "tiro",
      "author_line": "Giuseppe DeCandia and Deniz Hastorun", "affil": "Amazon.com"},
     {"title": "Dynamo Revisited", "authors": ["Giuseppe DeCandia", "Deniz Hastorun"], "year": None}, None),
]


def make_class(name: str, folder: Path) -> Path:
    """Write the PDF of class layout `name` (see CLASSES) into `folder`; returns its path."""
    entry = {c[0]: c for c in CLASSES}[name]
    _, _, _, layout, params, _, filename = entry
    doc = pymupdf.open()
    page = doc.new_page()
    _BUILD[layout](page, params)
    page2 = doc.new_page()
    _para(page2, 72, 80, INTRO * 3)
    if layout == "scan":
        pix = doc[0].get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
        scan = pymupdf.open()
        sp = scan.new_page(width=doc[0].rect.width, height=doc[0].rect.height)
        sp.insert_image(sp.rect, pixmap=pix)
        scan.insert_pdf(doc, from_page=1, to_page=1)
        doc.close()
        doc = scan
    doc.set_metadata({"title": "", "author": "", "creationDate": "D:20260101000000Z"})
    path = Path(folder) / (filename or f"{name}.pdf")
    doc.save(path, garbage=3, deflate=True)
    doc.close()
    return path


def make_classes(folder: Path, part: str | None = None) -> dict[str, dict]:
    """The class layouts' PDFs (of one part, `tuned` or `heldout`, or both) in `folder`: {path: label}."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return {str(make_class(name, folder)): {**label, "class": cls, "part": p}
            for name, cls, p, _, _, label, _ in CLASSES if part in (None, p)}
