"""A model's reading of a paper's first page (title, authors, year, venue) weighed against the parse's.

Where the two disagree, each reading is scored on what the first page itself supports: is the string printed
there, is it the whole title (not a piece of it), does it look like a title (not an author line, an
affiliation, an address or a column name), are the authors people's names printed on the page, is the year
printed on the page, and what the parse already knew (its title confidence, its largest type). The
better-supported reading is kept; a tie keeps the parse. Fields a person, a library or a resolved identifier
gave are never touched. The note says which reading it kept (`identity: {source, disagreed, uncertain}`).

A title the page leaves undecided is asked of the model once more, as a question of its own
(`note_analysis.title_task`): the two readings side by side, in an order that does not say whose each is, with
the first pages. The reading it names is kept when the page prints it (`answer_title`), and the note says so
(`asked: [title]`); no answer, or any other, leaves the title uncertain for `status` to list.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any

from papervault.ids import READ_FROM_PDF, fold, last_name, normalize_title
from papervault.models import PaperMeta
from papervault.vault.paper import read as read_paper_md
from papervault.lineshapes import is_address, is_column, is_institution, is_person_name

FIELDS = ("title", "authors", "year", "venue")
NEAR = 0.88             # a reading this close to a run of the page's words, character for character, is printed there
_TWO_SENTENCES = re.compile(r"[a-z]{2}[.?!]\s+[A-Z][a-z]*\s+[a-z]")   # "... 2.4 million tons. Cement was ..."
_AUTHOR_LINE = re.compile(r"^(?:[A-Z][\w.'’-]*\s+){1,3}[A-Z][\w'’-]+(?:\s*[,*∗†‡]\s*|\s+and\s+)"
                          r"(?:[A-Z][\w.'’-]*\s+){0,3}[A-Z][\w'’-]+")


def first_pages(fulltext: str, pages: int = 2, *, title_line: bool = False) -> str:
    """The text of the first `pages` pages of `paper.md` (the title page, and the next one after a cover), from
    the first page's anchor: the `# title` line above it is the parse's own reading, not evidence for it. With
    `title_line`, that line is kept as a line of the page (the parse took it from the page, which no longer
    prints it below the anchor): what a reader of the page is shown."""
    doc = read_paper_md(fulltext)
    start = next((at for page, at in doc.anchors if page == 1), 0)
    end = next((at for page, at in doc.anchors if page > pages), len(fulltext))
    if not title_line or not doc.title or not start:
        return fulltext[start:end]
    return f"{doc.title}\n\n{fulltext[start:end]}"


def _on_page(text: str, page: str) -> bool:
    t = normalize_title(text)
    return bool(t) and f" {t} " in f" {normalize_title(page)} "


def _near_page(text: str, page: str) -> bool:
    """Whether `text` is printed on the page but for a few letters (an OCR or extraction slip the reading
    corrected: "UNIFORM FIELD" where the text layer has "UNIFORM HELD"): a run of the page's words as many
    as its own, give or take one, that matches it character for character to NEAR or more."""
    words = normalize_title(text).split()
    if len(words) < 2:
        return False
    target = " ".join(words)
    page_words = normalize_title(page).split()
    matcher = SequenceMatcher(autojunk=False)
    matcher.set_seq2(target)
    for size in {len(words) - 1, len(words), len(words) + 1}:
        for start in range(0, max(0, len(page_words) - size) + 1):
            matcher.set_seq1(" ".join(page_words[start:start + size]))
            if matcher.real_quick_ratio() >= NEAR and matcher.quick_ratio() >= NEAR and matcher.ratio() >= NEAR:
                return True
    return False


def _same_line(a: str, b: str) -> bool:
    """Two readings of one printed line that differ in a few letters, not in what they take in."""
    x, y = normalize_title(a), normalize_title(b)
    return bool(x and y) and x != y and abs(len(x.split()) - len(y.split())) <= 1 and \
        SequenceMatcher(None, x, y, autojunk=False).ratio() >= NEAR


def _padding(longer: str, shorter: str) -> bool:
    """Whether what `longer` adds to `shorter` (normalised titles) is a column's or an organisation's name."""
    extra = " ".join(f" {longer} ".replace(f" {shorter} ", " ", 1).split())
    return bool(extra) and (is_column(extra) or is_institution(extra))


def _running_text(title: str) -> bool:
    """A line of running text, not a title: it starts with a digit or in lower case, or holds the end of one
    sentence and the start of the next ("... at 2.4 million tons. Production of ..."), or is longer than a title
    (over 30 words)."""
    t = title.strip()
    return bool(t) and (t[0].isdigit() or t[0].islower() or len(t.split()) > 30
                        or bool(_TWO_SENTENCES.search(t)))


def title_support(title: str, page: str, other: str, parse_confidence: str | None = None, *,
                  model: bool = False) -> float:
    """How well the first page supports `title` against the other reading `other`; `model`: `title` is the
    model's reading (which read the whole page, and is right for 160 of the identity set's 161 tune titles,
    where the header reader is right for 158)."""
    t = " ".join(str(title or "").split())
    if not normalize_title(t):
        return -9.0
    printed = _on_page(t, page)
    s = 2.0 if printed else 1.0 if _near_page(t, page) else -2.0
    words = normalize_title(t).split()
    o, n = normalize_title(other), normalize_title(t)
    if o and o != n:
        if f" {o} " in f" {n} " and printed and not _running_text(t):
            # the other is a piece of this one ("Programming" of "Functional Programming"), unless what this one
            # adds is a column's or an organisation's name ("Views & Reviews" over "A Science of Intelligence")
            s += -3.0 if _padding(n, o) else 1.5
        elif f" {n} " in f" {o} " and _on_page(other, page) and not _running_text(other):
            s += 1.5 if _padding(o, n) else -1.5
        elif model and not printed and _same_line(t, other):
            s += 2.0                      # the line the parse took, its slips corrected
    if len(words) == 1:
        s -= 1.0
    if _AUTHOR_LINE.match(t) or (is_person_name(t) and re.search(r"\b[A-Z]\.", t)):
        s -= 3.0
    if is_institution(t) and len(words) <= 8 and not re.search(r"[:?]", t):
        s -= 2.0
    if is_address(t) or is_column(t):
        s -= 3.0
    if _running_text(t):
        s -= 2.0
    if parse_confidence == "high" or model:
        s += 1.0
    return s


def _byline(page: str, title: str | None) -> str:
    """Where a paper's authors are printed: around its title (from a little above it to well below it, past a
    publisher's panel of other papers printed over it), or the head of the page when the title is not found."""
    low = fold(page).lower()
    t = fold(" ".join(str(title or "").split())).lower()
    at = low.find(t) if len(t) >= 8 else -1
    if at < 0:
        return low[:1200]
    return low[max(0, at - 300):at + len(t) + 900]


def authors_support(authors: list[str], page: str, other: list[str] | None = None, title: str | None = None
                    ) -> float:
    """People's names printed by the title (`title`; the head of the first page where it is not found) count
    (+1; printed elsewhere, in a footnote, the acknowledgements or a publisher's panel of other papers, +0.25);
    an organisation or a name not on the page counts against the list (-1.5). The average, not the sum: a
    longer list is not better for being longer, unless all it adds is printed by the title (a co-author the
    other reading missed)."""
    if not authors:
        return 0.0
    low, head = fold(page).lower(), _byline(page, title)

    def one(a: str) -> float:
        surname = fold(last_name(a)).lower()
        if not (is_person_name(a) and surname and surname in low):
            return -1.5
        return 1.0 if surname in head else 0.25
    s = sum(one(a) for a in authors) / len(authors)
    mine = {fold(last_name(a)).lower() for a in authors}
    theirs = {fold(last_name(a)).lower() for a in other or []}
    if theirs and theirs < mine and all(one(a) == 1.0 for a in authors if fold(last_name(a)).lower() not in theirs):
        s += 0.5
    return s


def year_support(year: Any, page: str) -> float:
    if not isinstance(year, int) or isinstance(year, bool):
        return -1.0 if year is not None else 0.0
    return 1.0 if re.search(rf"(?<!\d){year}(?!\d)|['’]{year % 100:02d}\b", page) else -1.0


def venue_support(venue: Any, page: str) -> float:
    if not isinstance(venue, str) or not venue.strip():
        return 0.0
    return 1.0 if _on_page(venue, page) else -1.0


def _clean_read(read: Any) -> dict[str, Any]:
    """The model's reading, its types checked and sizes capped (it comes from a paper, through a model)."""
    if not isinstance(read, dict):
        return {}
    out: dict[str, Any] = {}
    if isinstance(read.get("title"), str) and 0 < len(read["title"].strip()) <= 500:
        out["title"] = " ".join(read["title"].split())
    if isinstance(read.get("authors"), list):
        names = [" ".join(a.split()) for a in read["authors"][:100] if isinstance(a, str) and 0 < len(a.strip()) <= 120]
        if names:
            out["authors"] = names
    y = read.get("year")
    if isinstance(y, str) and re.fullmatch(r"\d{4}", y.strip()):
        y = int(y)
    if isinstance(y, int) and not isinstance(y, bool) and 1000 < y < 3000:
        out["year"] = y
    if isinstance(read.get("venue"), str) and 0 < len(read["venue"].strip()) <= 300:
        out["venue"] = " ".join(read["venue"].split())
    return out


def _same(name: str, a: Any, b: Any) -> bool:
    if name == "title" or name == "venue":
        return normalize_title(a) == normalize_title(b)
    if name == "authors":
        def key(xs):
            return [normalize_title(last_name(x)) for x in xs or []]
        return key(a) == key(b)
    return a == b


def _support(name: str, value: Any, page: str, other: Any, meta: PaperMeta, model: bool) -> float:
    if name == "title":
        conf = (meta.provenance or {}).get("title_confidence") if not model else None
        return title_support(value, page, other or "", conf, model=model)
    if name == "authors":
        return authors_support(value or [], page, other or [], meta.title)
    if name == "year":
        return year_support(value, page)
    return venue_support(value, page)


def settle(meta: PaperMeta, read: Any, fulltext: str) -> dict[str, Any] | None:
    """Apply the model's first-page reading `read` to `meta` where the page supports it better than the
    parse; returns the note's `identity` record, or None when the model gave no reading."""
    got = _clean_read(read)
    if not got:
        return None
    page = first_pages(fulltext)
    prov = dict(meta.provenance or {})
    disagreed: list[str] = []
    taken: list[str] = []
    uncertain: list[str] = []
    for name in FIELDS:
        if name not in got:
            continue
        mine, theirs = getattr(meta, name), got[name]
        if mine not in (None, "", []) and prov.get(name) not in (None, *READ_FROM_PDF):
            continue                              # a person, a library or an identifier gave it
        if mine not in (None, "", []) and _same(name, mine, theirs):
            continue
        if mine not in (None, "", []):
            disagreed.append(name)
        s_parse = _support(name, mine, page, theirs, meta, False) if mine not in (None, "", []) else -5.0
        s_model = _support(name, theirs, page, mine, meta, True)
        if s_model > s_parse and s_model > 0:
            setattr(meta, name, theirs)
            prov[name] = "model"
            taken.append(name)
            if name == "title":
                prov["title_confidence"] = "high" if s_model - s_parse >= 1.0 else "low"
                prov["title_evidence"] = "model's first-page read, printed on the page"
        if name != "venue" and (abs(s_model - s_parse) < 1.0 or max(s_model, s_parse) <= 0):
            uncertain.append(name)        # a venue both readings find printed is not worth a person's time
    if "title" in disagreed and "title" not in taken and "title" not in uncertain and prov.get("title") in READ_FROM_PDF:
        prov["title_confidence"] = "high"        # the page settled it for the parse's title
    meta.provenance = prov
    record: dict[str, Any] = {"source": "model" if taken else "parse"}
    if disagreed:
        record["disagreed"] = disagreed
    if taken:
        record["model"] = taken
    if uncertain:
        record["uncertain"] = uncertain
    return record


# --- the question the page left open ------------------------------------------------------------------------

TITLE_CHOICES = ("A", "B", "neither")


def read_title(read: Any) -> str | None:
    """The title of the model's first-page reading, as `settle` weighed it."""
    return _clean_read(read).get("title")


def title_options(parse_title: str, model_title: str) -> tuple[str, str]:
    """The two readings as the question shows them, A and B: in an order that says nothing of whose each is."""
    a, b = sorted((parse_title, model_title), key=lambda t: (normalize_title(t), t))
    return a, b


def answer_title(meta: PaperMeta, record: dict[str, Any], choice: Any, *, parse_title: str,
                 parse_provenance: dict[str, Any], model_title: str, fulltext: str) -> dict[str, Any]:
    """Apply the model's answer to the one question `settle` left open for the title (`choice`: "A", "B" or
    "neither" of `title_options`): the reading it names is kept when the first pages print it, and the title
    is no longer uncertain. Any other answer leaves `meta` and `record` as they were."""
    if choice not in ("A", "B"):
        return record
    chosen = title_options(parse_title, model_title)[0 if choice == "A" else 1]
    page = first_pages(fulltext, title_line=True)
    if not (_on_page(chosen, page) or _near_page(chosen, page)):
        return record
    prov = dict(meta.provenance or {})
    taken = [f for f in record.get("model", []) if f != "title"]
    if chosen == model_title:
        meta.title = model_title
        prov.update(title="model", title_confidence="high",
                    title_evidence="the model's answer between the two readings, printed on the page")
        taken = ["title", *taken]
    else:
        meta.title = parse_title
        for name in ("title", "title_confidence", "title_evidence"):
            if name in parse_provenance:
                prov[name] = parse_provenance[name]
            else:
                prov.pop(name, None)
        prov["title_confidence"] = "high"
    meta.provenance = prov
    out = {k: v for k, v in record.items() if k not in ("model", "uncertain")}
    out["source"] = "model" if taken else "parse"
    if taken:
        out["model"] = [f for f in FIELDS if f in taken]
    uncertain = [f for f in record.get("uncertain", []) if f != "title"]
    if uncertain:
        out["uncertain"] = uncertain
    out["asked"] = ["title"]
    return out
