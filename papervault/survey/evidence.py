"""Evidence for the survey: the sentences of a paper, passages retrieved for a claim, and how well they support it.

Drafting quotes these sentences and polishing checks cited sentences against them. Passages come from the
index (`papervault.index.search.search` filtered to the paper) when it is built; the paper's own sentences
(read from `paper.md`) are always searched as well, so a stale or missing index weakens nothing but recall.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from papervault.agents.paperdoc import read_paper, section_sentences, sentences
from papervault.vault.paper import is_references
from papervault.agents.cited_work import other_work

WORD = re.compile(r"[A-Za-z][A-Za-z0-9'-]+|\d+(?:\.\d+)?%?")
STOP = frozenset("""
a about above after again against all also am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her here
hers him his how i if in into is it its itself just me more most my now of off on once only or other
our ours out over own same she should so some such than that the their theirs them then there these they this
those through to too under until up very was we were what when where which while who whom why will with would
you your paper papers section sections figure table we our us use used using show shows shown et al may can
one two however thus also which while within without via e g i
""".split())

# Sentences shorter than this (in content words) are headings, captions or debris, not quotable claims.
MIN_WORDS = 6
MAX_CHARS = 420


@dataclass
class Passage:
    """A sentence (or short passage) of a paper, where it is, and how well it matched what was asked."""

    paper_id: str
    text: str
    page: int | None = None
    section: str = ""
    score: float = 0.0
    source: str = "fulltext"          # "fulltext" | "index"
    other: str = ""                   # why it describes other work (papervault.survey.attribution); "" = its own


def tokens(text: str) -> list[str]:
    """Content words of `text`, lowercased, stop words and one-letter tokens removed, plurals folded."""
    # a sentence's words are kept: polish asks for the words of the same sentences once per claim
    return list(_sentence_tokens(text) if len(text) <= 2000 else _tokenize(text))


@lru_cache(maxsize=65536)
def _sentence_tokens(text: str) -> tuple[str, ...]:
    return _tokenize(text)


def _tokenize(text: str) -> tuple[str, ...]:
    out = []
    for w in WORD.findall(text.lower()):
        w = w.strip("'-")
        if len(w) < 2 or w in STOP:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return tuple(out)


def support_score(claim: str, passage: str) -> float:
    """How much of `claim` the passage states: recall of its content words and word pairs, in [0, 1].

    A verbatim quotation scores 1; a paraphrase 0.4-0.8; a claim about something else shares only topic
    words and scores low. Bigrams keep a claim that reuses the paper's words in another order or sense
    ("X is not safe" against "X is safe" scores below 1 through the pair "not safe").
    """
    c = tokens(claim)
    if not c:
        return 0.0
    p = tokens(passage)
    if not p:
        return 0.0
    pc = Counter(p)
    uni = sum(min(n, pc[w]) for w, n in Counter(c).items()) / len(c)
    cb = list(zip(c, c[1:]))
    if not cb:
        return uni
    pb = Counter(zip(p, p[1:]))
    bi = sum(min(n, pb[b]) for b, n in Counter(cb).items()) / len(cb)
    return 0.5 * uni + 0.5 * bi


@lru_cache(maxsize=256)
def _paper_sentences(paper_id: str, fulltext: str) -> tuple[Passage, ...]:
    doc = read_paper(fulltext)
    out: list[Passage] = []
    seen: set[str] = set()
    if doc.abstract:
        for s in sentences(doc.abstract):
            out.append(Passage(paper_id, s, doc.abstract_page, "Abstract"))
    for sec in doc.sections:
        if is_references(sec.title) or sec.title.lower().startswith("acknowledg"):
            continue
        for s in section_sentences(sec):
            out.append(Passage(paper_id, s.text, s.page, s.section))
    keep = []
    for p in out:
        key = p.text.lower()
        if key in seen:
            continue
        seen.add(key)
        p.other = other_work(p.text, p.section, fulltext, title=doc.title)
        keep.append(p)
    return tuple(keep)


def paper_sentences(paper_id: str, fulltext: str) -> list[Passage]:
    """Every sentence of a paper's body with its page and section (abstract first, references left out)."""
    return list(_paper_sentences(paper_id, fulltext))


def quotable(text: str) -> bool:
    """A sentence fit to quote: long enough to say something, short enough to read, and mostly prose."""
    if len(text) > MAX_CHARS or len(tokens(text)) < MIN_WORDS:
        return False
    letters = sum(ch.isalpha() for ch in text)
    if letters < 0.6 * len(text):
        return False
    # equations, reference debris and table rows read badly out of context
    if text.count("$") or text.count("|") > 1 or re.search(r"\[\d+(?:[,–-]\s*\d+)*\]\s*$", text) and len(text) < 60:
        return False
    # a sentence ends like one: author lines, affiliations and venue lines of a title page do not
    if not re.search(r"[.!?][\"”’)\]]*$", text.strip()):
        return False
    # banners and running heads in capitals ("SYNTHETIC DEMO PAPER ...", "PROCEEDINGS OF ...")
    if re.search(r"\b[A-Z]{2,}\s+[A-Z]{2,}\s+[A-Z]{2,}\b", text):
        return False
    return text[0].isupper() or text[0] in "\"“("


def _idf(docs: list[list[str]]) -> dict[str, float]:
    n = len(docs) or 1
    df: Counter = Counter()
    for d in docs:
        df.update(set(d))
    return {w: math.log(1 + n / c) for w, c in df.items()}


def rank_sentences(query: str, candidates: list[Passage], *, limit: int = 5, only_quotable: bool = True) -> list[Passage]:
    """BM25-style lexical ranking of `candidates` for `query`; the best `limit`, scored."""
    q = set(tokens(query))
    if not q:
        return []
    pool = [c for c in candidates if not only_quotable or quotable(c.text)]
    toks = [tokens(c.text) for c in pool]
    idf = _idf(toks)
    avg = sum(len(t) for t in toks) / (len(toks) or 1)
    scored = []
    for c, t in zip(pool, toks):
        tf = Counter(t)
        s = 0.0
        for w in q:
            if w in tf:
                f = tf[w]
                s += idf.get(w, 0.0) * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len(t) / (avg or 1)))
        if s > 0:
            scored.append(Passage(c.paper_id, c.text, c.page, c.section, s, c.source, c.other))
    scored.sort(key=lambda p: (-p.score, p.page or 0))
    return scored[:limit]


def index_passages(ws, paper_id: str, query: str, *, limit: int = 5, level: str | None = None,
                   searcher=None) -> list[Passage]:
    """Passages of one paper retrieved from the index for `query` (of chunk `level` only, e.g. "paragraph",
    when given); [] when the index cannot answer. `searcher` (`index.search.Searcher`) keeps the tables open
    between calls; without one each call opens them."""
    from papervault.index.search import search  # deferred: pyarrow; polish and export need no index
    try:
        if searcher is not None:
            hits = searcher.search(query, limit=limit, level=level, filters={"paper": paper_id})
        else:
            hits = search(ws, query, limit=limit, level=level, filters={"paper": paper_id})
    except Exception:  # an unbuilt or stale index only costs recall: the full text is searched anyway
        return []
    out = []
    for h in hits:
        if h.paper_id != paper_id or not h.text:
            continue
        out.append(Passage(paper_id, h.text, h.page, h.section or "", float(h.score or 0.0), "index"))
    return out


def best_support(claim: str, paper_id: str, fulltext: str, *, ws=None, limit: int = 8,
                 enough: float | None = None) -> Passage | None:
    """The sentence of `paper_id` that best supports `claim`, with its support score (None: no candidate).

    Candidates are the paper's sentences ranked for the claim; when none reaches `enough`, the sentences of
    the passages the index retrieves for the claim are tried too (they reach text the sentence splitter
    missed, e.g. list items and table captions). Asking the index only then keeps polishing fast.
    """
    def scored(pool: list[Passage], best: Passage | None) -> Passage | None:
        for p in pool:
            score = support_score(claim, p.text)
            if best is None or score > best.score:
                best = Passage(p.paper_id, p.text, p.page, p.section, score, p.source, p.other)
        return best

    best = scored(rank_sentences(claim, paper_sentences(paper_id, fulltext), limit=limit, only_quotable=False), None)
    if ws is not None and (enough is None or best is None or best.score < enough):
        title = read_paper(fulltext).title
        pool = []
        for hit in index_passages(ws, paper_id, claim, limit=limit):
            for s in sentences(hit.text) or [hit.text]:
                pool.append(Passage(paper_id, s, hit.page, hit.section, 0.0, "index",
                                    other_work(s, hit.section, fulltext, title=title)))
        best = scored(pool, best)
    return best
