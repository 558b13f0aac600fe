"""Stage 1 of a survey without `--papers`: the vault papers about a topic, each with the reason it was chosen.

1. **Relevance per paper** from the hybrid index: the topic's vector against every paper's title/abstract
   vector (in memory, one product over the papers table), the nearest chunks (sections, paragraphs, notes,
   annotations) and the full-text (BM25) hits of the chunks, grouped by paper; and the topic's own words in
   the paper's title (a word or its variant, weighted by its rarity among the vault's titles): a title is the
   authors' statement of what the paper is about, and it separates "Gaussian splatting" papers from general
   3D reconstruction where the embedding does not.
2. **Pseudo-relevance feedback**: the best-matching papers lend the topic their vocabulary: the query vector
   moves towards their vectors (Rocchio) and the full-text query gains the words they share that are rare in the
   vault; relevance is computed again with the expanded topic.
3. **Cut-off from the score distribution**: a paper is selected when its score stands out from the vault's
   (robust z-score over every candidate: median and MAD) and is close enough to the best papers' scores; there is
   no fixed count; a record known by its title alone must stand closer to the best (`TITLE_ONLY_FRACTION`),
   as its score rests on a dozen words. `max_papers` caps the selection. A paper chosen by its score must also name one of the topic's
   own words (any spelling) in its title, abstract or matched passages: in a vault far from the topic's field,
   every paper of the field stands out by score, whatever its subject; those that name none are near misses.
   Every listed paper says what its score rests on (title only, title and abstract, full text). A rule that a
   title alone does not choose a paper was tried and dropped: chosen on the tune topics, it lowered the held-out
   topics from 0.916 / 0.637 to 0.750 / 0.609 (docs/survey.md).
4. **Citation links**: a paper near the cut-off that a core paper (the selected papers the topic is surest of)
   cites, or that cites one
   (reference lists matched by DOI, arXiv id or title, as `correlate.find_lineages` does), is selected too,
   with the link as its reason. A near miss that names none of the topic's words (step 3) is linked only when
   a core paper cites it ("Bigtable: A Distributed Storage System ..." for "data stores": the words differ,
   the core's reference list says it belongs).
   Further down (to `WIDE_FRACTION` of the cut-off's margin), a paper a core paper cites is linked in when its
   title or abstract names one of the topic's rarer words (rarity among the vault's titles): "Generalized
   Isolation Level Definitions", which Elle cites, for "checking transactional isolation anomalies".
5. **Citation evidence**: a field's canonical papers are often named by a method, a system or a metaphor
   ("Paxos", "The Part-Time Parliament"), not by the topic, and score low on their own; everyone on the topic
   cites them. A vault paper that several of the selected papers cite (`CITE_SEVERAL`), or at least two and half
   of those with a reference list (`CITE_SHARE`) among the core or among all selected, is selected whatever its
   own score, with "cited by 2 of the 3
   selected papers" as its reason, provided the selected papers cite it `CITE_LIFT` times as often as the rest
   of the vault does: a textbook or a statistics method cited everywhere does not enter every survey. Papers
   cited by one selected paper, and those cited by the papers that citation evidence brought in (one step
   further), are near misses with that evidence.
6. **The topic's own survey** (run before step 5): a core paper whose reference list names at least `VOUCH_REFS`
   vault papers and `VOUCH_COVER` of the other selected papers vouches for the vault papers it cites that no
   paper outside the selection cites and that stand `VOUCH_Z` robust deviations above the vault's median:
   "Smashing the Stack for Fun and Profit", which only "SoK: Eternal War in Memory" cites. A core paper of the
   field around the topic (Megastore for "consensus") cites about half of the selection and vouches for nothing.
   It vouches only for the references it cites in a sentence near the topic (`VOUCH_QUANTILE`, step 7).
7. **Citation contexts** (papervault.survey.contexts): the sentences of the vault's papers that cite a paper. A
   record known by its title only takes its citing sentence nearest the topic as one more passage (step 1); a
   core paper links in a paper it cites in a sentence as near the topic as those citing the selected papers
   (`SAID_*`), down to `SAID_FLOOR` of the cut-off's margin: "Smashing the Stack for Fun and Profit", cited by
   the SoK for "the stack smashing attack".

8. **Cited alongside** (papervault.survey.contexts): a vault paper cited in one sentence of any vault paper with
   at least `COCITE_MIN` papers chosen by their own score is chosen too, its score down to `COCITE_FLOOR` of
   the cut-off's margin: an enumerating sentence ("Return-Oriented Programming (ROP) [6], [7], [8] ...") names a
   field's papers whose titles do not ("The Geometry of Innocent Flesh on the Bone").

The title lift is held in proportion: it adds at most `TITLE_SHARE` of the paper's own margin (passages, full
text, abstract) over the vault's median, so a title that repeats the topic cannot outrank a paper whose abstract
and body are about it.

Everything read here is the index and the reference lists of the vault's papers with full text (the citation
graph, papervault.survey.citations, built once per selector). docs/survey.md records the measurements, with each
signal's contribution (bench/survey_selection.py).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from papervault.errors import PapervaultError
from papervault.index.embed import resolved_model_path
from papervault.index.search import Searcher, _fts, _vector
from papervault.index.tables import sql_list as _sql_list
from papervault.index.vector_cache import VectorCache
from papervault.survey.citations import build_graph
from papervault.survey.contexts import Context, build_contexts
from papervault.survey.selection import Entry, Reason

# Constants of the cut-off and the feedback. They were set on the benchmark's topics (bench/survey_selection.py,
# docs/survey.md) and hold on vaults of 200 and 20,000 papers.
CANDIDATES = 400        # chunks taken from each of the vector and full-text rankings (each pass)
PAPER_POOL = 400        # papers taken from the title/abstract vector ranking
FEEDBACK_DOCS = 8       # papers whose vectors and words expand the topic
FEEDBACK_FRACTION = 0.8  # ... each within this fraction of the best paper's margin over the vault's median
ROCCHIO = 0.7           # weight of the feedback papers' mean vector against the topic's own
EXPANSION_TERMS = 6     # words added to the full-text query
LEXICAL_WEIGHT = 0.12   # weight of the full-text score (normalised to about 0..1) against the cosine
CHUNK_WEIGHT = 0.5      # how much a paper's best passage may lift its title/abstract similarity
TITLE_WEIGHT = 0.12     # lift of a paper whose title names the topic's own words (times their rarity-weighted share)
TITLE_SHARE = 0.5       # ... at most this share of the paper's own margin over the vault's median
Z_MIN = 2.5             # a selected paper stands at least this many robust deviations above the vault's median
TOP_FRACTION = 0.6      # ... and its margin over the median is at least this fraction of the best papers' margin
TITLE_ONLY_FRACTION = 0.7  # ... this fraction for a record known by its title alone (TITLE_ONLY)
BACKGROUND_CAP = 0.25  # the highest median taken as the vault's background similarity
SMALL_VAULT = 30        # below this many papers the vault's spread says nothing: only TOP_FRACTION cuts
NEAR_FRACTION = 0.9     # papers within this fraction of the cut-off are near misses (shown, linkable)
NEAR_SHOWN = 15         # near misses listed in selection.md
CITED_SHOWN = 40        # ... and near misses by citation evidence (cited by a selected paper, not chosen)
PASSAGES = 2            # passages given as a selected paper's reason
LINK_READS = 60         # at most this many near misses are looked at for citation links
WIDE_FRACTION = 0.5     # a paper a core paper cites, naming one of the topic's rarer words, may stand this far
                        # down (fraction of the cut-off's margin over the median) and still be linked in
# Citation evidence. Set before the held-out topics were added (bench/survey_selection_gold.yaml) and not changed
# after measuring them.
CITE_MIN = 2            # a paper enters by citations when at least this many selected papers cite it ...
CITE_SEVERAL = 3        # ... and either this many do,
CITE_SHARE = 0.5        # ... or this share of the selected papers with a reference list do;
CITE_LIFT = 3.0         # and the selected papers cite it this many times as often as the rest of the vault
# The topic's own survey (stage 6). Decided on the tune topics only (bench/survey_selection_gold.yaml).
VOUCH_REFS = 10         # a core paper vouches for its references when it cites at least this many vault papers ...
VOUCH_COVER = 0.9       # ... and at least this share of the other selected papers (it is the topic's survey)
VOUCH_Z = 0.5           # a paper it vouches for stands this many robust deviations above the vault's median
# What a paper's score rests on: its title only (a record with no abstract and no full text, e.g. one taken from a
# reference list), its title and abstract, or its full text. A record's paper row is its title, its authors, then
# its abstract: this many words after the title and author lines make an abstract.
ABSTRACT_WORDS = 12
TITLE_ONLY, ABSTRACT, FULL_TEXT = "title only", "title and abstract", "full text"
# Citation contexts (papervault.survey.contexts): the sentences of the vault's papers that cite a paper. Decided
# on the tune topics only (bench/survey_selection_gold.yaml, docs/survey.md).
CONTEXT_BASES = ("title only",)   # a citing sentence is one more passage of a paper whose score rests on this
VOUCH_QUANTILE = 0.2    # the topic's survey vouches for a reference it cites in a sentence at least as near the
                        # topic as this quantile of its citing sentences (its surroundings are cited further off)
SAID_MIN = 3            # a core paper that cites at least this many selected papers in sentences of its text ...
SAID_QUANTILE = 0.25    # ... links in a paper it cites in a sentence as near the topic as this quantile of those,
SAID_FLOOR = 0.5        # ... down to this fraction of the cut-off's margin over the median
# A paper cited in one sentence with papers chosen by their own score (stage 8). Decided on the tune topics only,
# after the four tune topics of that shape were added (bench/survey_selection_gold.yaml, docs/survey.md).
COCITE_MIN = 2          # ... at least this many of them in the sentence
COCITE_FLOOR = 0.5      # ... its own score down to this fraction of the cut-off's margin over the median
SIGNALS = ("passages", "fulltext", "title", "feedback", "links", "citations", "specific", "wide", "survey",
           "contexts", "said", "alongside")   # `without` switches off

_WORD = re.compile(r"[a-z][a-z0-9\-]{2,}")
_STOP = set("""
a about above across after again against all almost also although always among an and another any are around as at
based be because been before being below between both but by can could data did do does doing done due during each
either et al etc even ever every few for from further given had has have having here how however if in into is it its
itself just large less like made make many may more most much must new no nor not novel now of often on once one only
or other our out over paper per present propose proposed provide results same several should show shows since so
some such than that the their them then there these they this those through thus to too two under up upon us use
used using very via was we well were what when where whether which while who whom why will with within without would
yet approach method methods problem problems work works study task tasks model models existing state art first
second three different various able achieve achieves better improve improved high low performance experiments
experimental demonstrate significantly effective efficient framework set both however recent recently learning
""".split())


@dataclass
class Candidate:
    id: str
    title: str = ""
    year: int | None = None
    dense: float = 0.0          # cosine of the expanded topic with the paper (title/abstract, best passage)
    lexical: float = 0.0        # full-text score, normalised
    score: float = 0.0
    z: float = 0.0
    passages: list[dict[str, Any]] = field(default_factory=list)
    links: list[Reason] = field(default_factory=list)
    has_fulltext: bool = False
    doi: str = ""
    arxiv: str = ""
    title_words: list[str] = field(default_factory=list)   # the topic's words its title names
    context: Context | None = None   # the sentence citing it that is nearest the topic (papervault.survey.contexts)
    evidence: list[Reason] = field(default_factory=list)    # citation evidence (kinds "cocited", "chain", "citations")
    basis: str = ""             # what its score rests on: TITLE_ONLY, ABSTRACT or FULL_TEXT

    def entry(self) -> Entry:
        named = [Reason("title", ", ".join(self.title_words))] if self.title_words else []
        reasons = named + [Reason("passage", p["text"], p.get("page"), p.get("section", "")) for p in self.passages[:PASSAGES]]
        said = {r.other for r in self.links if r.kind == "said"}
        if self.context is not None and self.context.citing not in said:
            reasons.append(Reason("context", self.context.text, self.context.page, other=self.context.citing))
        return Entry(self.id, self.title, self.year, round(self.score, 4), self.evidence + self.links + reasons,
                     basis=self.basis)


@dataclass
class TopicSelection:
    topic: str
    selected: list[Candidate]
    near: list[Candidate]
    cutoff: float
    median: float
    spread: float
    expansion: list[str]
    candidates: int
    capped: bool = False
    citing: int = 0             # papers of the vault with a reference list (0: no citation evidence at all)
    title_cutoff: float = 0.0   # the cut-off for a record known by its title alone (TITLE_ONLY_FRACTION)
    pool: list[Candidate] = field(default_factory=list)    # the next papers by score, for a model's review

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.selected]

    def method(self) -> dict[str, Any]:
        return {"cut-off score": f"{self.cutoff:.3f}",
                "cut-off score of a record known by its title only": f"{max(self.title_cutoff, self.cutoff):.3f}",
                "vault median": f"{self.median:.3f}",
                "topic expanded with": ", ".join(self.expansion),
                "papers scored": self.candidates, "capped by max papers": "yes" if self.capped else "",
                "papers with a reference list": self.citing}


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n else v


def _dot(mat: np.ndarray, q: np.ndarray) -> np.ndarray:
    # Element-wise product and sum rather than `mat @ q`: a BLAS call wakes OpenBLAS's spinning threads
    # (see index/search.py).
    return np.multiply(mat, q).sum(axis=1)


def _words(text: str) -> list[str]:
    return [w.strip("-") for w in _WORD.findall(text.lower()) if w.strip("-") not in _STOP]


class TopicSelector:
    """Scores the vault's papers against a topic with the workspace's index (one instance per run)."""

    def __init__(self, workspace, searcher=None):

        self.ws = workspace
        self.searcher = searcher or Searcher(workspace)
        papers, chunks = self.searcher._tables()
        if chunks is None or not papers.count_rows():
            raise PapervaultError("a survey without --papers selects papers from the index, which is empty",
                                  fix="run `papervault index` first (or choose papers with --papers)")
        self.papers, self.chunks = papers, chunks
        t = papers.search().select(["paper_id", "title", "authors", "year", "doi", "arxiv", "tags", "has_fulltext",
                                    "text", "vector"]).limit(None).to_arrow()
        self.ids: list[str] = t.column("paper_id").to_pylist()
        self.pos = {pid: i for i, pid in enumerate(self.ids)}
        self.titles = t.column("title").to_pylist()
        self.years = t.column("year").to_pylist()
        self.dois = [(d or "").lower() for d in t.column("doi").to_pylist()]
        self.arxivs = [a or "" for a in t.column("arxiv").to_pylist()]
        self.tags = t.column("tags").to_pylist()
        self.fulltext = t.column("has_fulltext").to_pylist()
        self.texts = t.column("text").to_pylist()
        self.authors = t.column("authors").to_pylist()
        vec = t.column("vector").combine_chunks().flatten().to_numpy().reshape(len(self.ids), -1).astype(np.float32)
        norms = np.linalg.norm(vec, axis=1, keepdims=True)
        self.mat = vec / np.where(norms == 0, 1, norms)
        self.basis = [FULL_TEXT if f else _basis(text or "", title or "", authors or [])
                      for f, text, title, authors in zip(self.fulltext, self.texts, self.titles, self.authors)]
        self._df: dict[str, int] = {}
        self._lower: list[str] | None = None
        self._title_words: list[frozenset[str]] | None = None
        self._title_vocab: Counter = Counter()
        self._graph = None
        self._contexts: tuple[np.ndarray, list[Context], np.ndarray] | None = None

    def authors_of(self, pid: str) -> list[str]:
        i = self.pos.get(pid)
        return list(self.authors[i] or []) if i is not None else []

    # --- evidence ------------------------------------------------------------------------------------

    def _chunk_hits(self, query: str, vec: np.ndarray, where: str | None) -> tuple[dict, dict]:
        """Per paper: best chunk cosine with its row, and best BM25 score with its row."""

        cols = ["id", "paper_id", "level", "section_path", "page_start", "text"]
        pool = self.searcher._pool()
        f_fts = pool.submit(_fts, self.chunks, query, where, CANDIDATES, cols)
        vec_rows = _vector(self.chunks, vec, where, CANDIDATES, cols)
        fts_rows = f_fts.result()
        dense: dict[str, tuple[float, dict]] = {}
        for r in vec_rows:
            s = 1.0 - float(r["_distance"])
            if r["paper_id"] not in dense or s > dense[r["paper_id"]][0]:
                dense[r["paper_id"]] = (s, r)
        lex: dict[str, tuple[float, dict]] = {}
        for r in fts_rows:
            s = float(r["_score"])
            if r["paper_id"] not in lex or s > lex[r["paper_id"]][0]:
                lex[r["paper_id"]] = (s, r)
        return dense, lex

    def _doc_freq(self, words: Iterable[str]) -> dict[str, int]:
        if self._lower is None:
            self._lower = [(t or "").lower() for t in self.texts]
        out = {}
        for w in words:
            if w not in self._df:
                self._df[w] = sum(1 for t in self._lower if w in t)
            out[w] = self._df[w]
        return out

    def _expansion(self, topic: str, top: list[int]) -> list[str]:
        """Words the feedback papers share that are rare in the vault (tf-idf over the feedback set)."""
        own = set(_words(topic))
        # authors' names are in the paper row's text; a name is no word of the topic
        own |= {w for i in top for a in (self.authors[i] or []) for w in _words(a)}
        docs = [set(_words(f"{self.titles[i] or ''} {self.texts[i] or ''}")) for i in top]
        counts = Counter(w for d in docs for w in d if w not in own and not w.isdigit())
        need = max(2, math.ceil(len(docs) / 2))
        cands = [w for w, c in counts.items() if c >= need]
        if not cands:
            return []
        df = self._doc_freq(cands)
        n = len(self.ids)
        scored = sorted(cands, key=lambda w: -(counts[w] * math.log((n + 1) / (df[w] + 1))))
        # a word in more than 5% of the vault says little about the topic
        return [w for w in scored if df[w] <= max(5, 0.05 * n)][:EXPANSION_TERMS]

    def _title_match(self, topic: str) -> tuple[np.ndarray, list[tuple[str, set[str]]]]:
        """Per paper, the share of the topic's own words its title names (each word or a variant of it:
        "private" for "privacy", "splats" for "splatting"), weighted by the word's rarity among the vault's
        titles. A title is the author's own statement of what the paper is about. Also returns each topic word
        with the spellings of it that the vault's titles use."""
        if self._title_words is None:
            self._title_words = [frozenset(_words(t or "")) for t in self.titles]
            self._title_vocab = Counter(w for ws in self._title_words for w in ws)
        vocab = self._title_vocab
        n = len(self.ids)
        weights, variants = [], []
        for t in dict.fromkeys(_words(topic)):
            forms = {w for w in vocab if _same_word(t, w)} | {t}
            df = sum(vocab.get(w, 0) for w in forms)
            weights.append(math.log((n + 1) / (df + 1)))
            variants.append((t, forms))
        total = sum(weights)
        out = np.zeros(n, dtype=np.float32)
        if not total:
            return out, variants
        for i, ws in enumerate(self._title_words):
            if ws:
                got = sum(w for w, (_, forms) in zip(weights, variants) if not ws.isdisjoint(forms))
                if got:
                    out[i] = got / total
        return out, variants

    def _score(self, q: np.ndarray, query: str, where: str | None, allowed: np.ndarray | None,
               title: np.ndarray | None = None, without: frozenset = frozenset()) -> tuple[np.ndarray, dict, dict]:
        dense_p = _dot(self.mat, q)
        chunk_dense, lex = self._chunk_hits(query, q, where)
        if "passages" in without:
            chunk_dense = {}
        if "fulltext" in without:
            lex = {}
        score = dense_p.copy()
        best_passage = {pid: s for pid, (s, _) in chunk_dense.items()}
        if "contexts" not in without:
            # A paper known by its title alone has, for text, what the papers citing it say about it: its
            # citing sentence nearest the topic is one more passage of it. (Letting a far citing sentence pull
            # the score down as well was tried: it lowered the tune topics' recall.)
            for pid, (s, _) in self._context_hits(q).items():
                if self.basis[self.pos[pid]] in CONTEXT_BASES and s > best_passage.get(pid, -1.0):
                    best_passage[pid] = s
        for pid, s in best_passage.items():
            i = self.pos.get(pid)
            if i is not None and s > dense_p[i]:
                score[i] = dense_p[i] + CHUNK_WEIGHT * (s - dense_p[i])
        if lex:
            ref = sorted((s for s, _ in lex.values()), reverse=True)
            norm = ref[min(4, len(ref) - 1)] or 1.0     # the fifth best: one freak hit does not squash the rest
            for pid, (s, _) in lex.items():
                i = self.pos.get(pid)
                if i is not None:
                    score[i] += LEXICAL_WEIGHT * min(1.0, s / norm)
        if title is not None and "title" not in without:
            # In proportion: a title adds at most TITLE_SHARE of what the paper's text earns over the median.
            median = min(float(np.median(dense_p)), BACKGROUND_CAP)
            score = score + np.minimum(TITLE_WEIGHT * title, TITLE_SHARE * np.maximum(0.0, score - median))
        if allowed is not None:
            score = np.where(allowed, score, -np.inf)
        return score, chunk_dense, lex

    def _abstract(self, i: int, text: str) -> str:
        """A paper row's text without the title and author names it starts with (the chunk repeats them)."""
        rest = (text or "").lstrip()
        title = (self.titles[i] or "").strip()
        if title and rest.startswith(title):
            rest = rest[len(title):].lstrip(" .:\n")
        names = ", ".join(self.authors[i] or [])
        if names and rest.startswith(names):
            rest = rest[len(names):].lstrip(" .;\n")
        return rest or text or title

    # --- selection -----------------------------------------------------------------------------------

    def select(self, topic: str, *, restrict: Iterable[str] | None = None, max_papers: int | None = None,
               exclude: Iterable[str] = (), without: Iterable[str] = (), pool: int = 0) -> TopicSelection:
        """The papers about `topic`. `without` switches signals off (names of SIGNALS), for the benchmark's
        ablation. `pool`: also return up to this many of the next papers by score, neither selected nor near
        misses (`TopicSelection.pool`), for a model's review (papervault.survey.judge)."""
        without = frozenset(without)
        unknown = without - set(SIGNALS)
        if unknown:
            raise PapervaultError(f"unknown selection signal {', '.join(sorted(unknown))}",
                                  fix=f"use {', '.join(SIGNALS)}")
        topic = (topic or "").strip()
        if not topic:
            raise PapervaultError("a survey needs a topic", fix='give one: papervault survey "TOPIC"')
        allowed = None
        where = None
        if restrict is not None:
            keep = set(restrict)
            allowed = np.array([pid in keep for pid in self.ids], dtype=bool)
            if not allowed.any():
                return TopicSelection(topic, [], [], 0.0, 0.0, 0.0, [], 0)
            if len(keep) <= 2000:

                where = f"paper_id IN ({_sql_list(sorted(keep))})"
        q0 = _unit(np.asarray(self.searcher.embedder.embed_query(topic), dtype=np.float32))
        title, topic_forms = self._title_match(topic)
        s0, _, _ = self._score(q0, topic, where, allowed, title, without)
        fin0 = s0[np.isfinite(s0)]
        order = [int(i) for i in np.argsort(-s0)[:FEEDBACK_DOCS] if np.isfinite(s0[i])]
        # Feedback only from papers close to the best: a topic with one or two papers in the vault must not
        # drift towards whatever happens to come next.
        m0 = float(np.median(fin0)) if len(fin0) else 0.0
        top = [i for i in order if s0[i] >= m0 + FEEDBACK_FRACTION * (s0[order[0]] - m0)]
        if "feedback" in without:
            top = []
        terms = self._expansion(topic, top) if top else []
        q1 = _unit(q0 + ROCCHIO * _unit(self.mat[top].mean(axis=0))) if top else q0
        query1 = " ".join([topic, *terms])
        score, chunk_dense, lex = self._score(q1, query1, where, allowed, title, without)

        finite = score[np.isfinite(score)]
        # The background is the whole vault's title/abstract similarity, not the candidates': a tag: or
        # collection: whose papers are mostly about the topic must not raise the bar it is measured against.
        background = _dot(self.mat, q1)
        median = float(np.median(background))
        spread = float(1.4826 * np.median(np.abs(background - median))) or 1e-6
        # A vault of papers all about the topic has no background to stand out from: its median is capped at
        # what unrelated texts score with this model (vault medians of 0.13-0.22 on the benchmark's vaults).
        median = min(median, BACKGROUND_CAP)
        order = [int(i) for i in np.argsort(-score) if np.isfinite(score[i])]
        best = float(np.mean(score[order[:3]])) if order else median
        # A deviation measured over a handful of papers is noise (three papers on the topic set their own MAD):
        # a small vault is cut by closeness to its best papers alone.
        z_cut = median + Z_MIN * spread if len(background) >= SMALL_VAULT else -np.inf
        cutoff = max(z_cut, median + TOP_FRACTION * (best - median))
        near_cut = median + NEAR_FRACTION * (cutoff - median)
        # A record known by its title alone rests on a dozen words: it is chosen by its score only when it stands
        # closer to the best papers (TITLE_ONLY_FRACTION); below that it is a near miss that citations can bring in.
        title_cut = max(cutoff, median + TITLE_ONLY_FRACTION * (best - median))
        cut = np.where(np.array([b == TITLE_ONLY for b in self.basis]), title_cut, cutoff)

        words = set(_words(query1))
        contexts = self._context_hits(q1) if "contexts" not in without else {}

        def cand(i: int) -> Candidate:
            pid = self.ids[i]
            c = Candidate(pid, self.titles[i] or pid, self.years[i], float(_dot(self.mat[i:i + 1], q1)[0]),
                          0.0, float(score[i]), float((score[i] - median) / spread), has_fulltext=bool(self.fulltext[i]),
                          doi=self.dois[i], arxiv=self.arxivs[i], basis=self.basis[i])
            if title[i] > 0:
                c.title_words = [t for t, forms in topic_forms if not self._title_words[i].isdisjoint(forms)]
            rows = []
            if pid in chunk_dense:
                rows.append(chunk_dense[pid][1])
            if pid in lex and (not rows or lex[pid][1]["id"] != rows[0]["id"]):
                rows.append(lex[pid][1])
            for r in rows:
                section = "title and abstract" if r["level"] == "paper" else (
                    "the note" if r["level"] == "note" else r.get("section_path") or "")
                text = self._abstract(i, r["text"]) if r["level"] == "paper" else r["text"]
                c.passages.append({"text": best_sentences(text, words), "section": section,
                                   "page": r.get("page_start") if r["level"] != "paper" else None})
            if not c.passages:
                c.passages.append({"text": best_sentences(self._abstract(i, self.texts[i] or ""), words), "page": None,
                                   "section": "title and abstract"})
            if pid in contexts:
                c.context = contexts[pid][1]
            return c

        excluded = set(exclude)
        field_rows = [i for i in order if score[i] >= near_cut]
        self._specific_words = []
        names = self._specific(topic, field_rows, chunk_dense, lex) if "specific" not in without else {}
        off_topic = {i for i in field_rows if names and not names.get(i)}
        selected = [cand(i) for i in order if score[i] >= cut[i] and self.ids[i] not in excluded and i not in off_topic]
        near = [cand(i) for i in order[:len(selected) + len(off_topic) + 3 * NEAR_SHOWN + LINK_READS]
                if near_cut <= score[i] and self.ids[i] not in excluded and (score[i] < cut[i] or i in off_topic)]
        for c in near:
            if self.pos[c.id] in off_topic:
                c.evidence.append(Reason("unspecific", "names none of the topic's own words in its title, "
                                         f"abstract or matched passages ({', '.join(self._specific_words)})"))
        # The core: the selected papers the topic is surest of (up to FEEDBACK_DOCS, each within FEEDBACK_FRACTION
        # of the best papers' margin). A broad selection's tail lends no citation its weight.
        core_cut = median + FEEDBACK_FRACTION * (best - median)
        core = [c for c in selected if c.score >= core_cut][:FEEDBACK_DOCS] or selected[:1]
        added = self._links(core, near, {self.ids[i] for i in off_topic}) if "links" not in without else []
        if "links" not in without and "wide" not in without:
            taken = {c.id for c in selected} | {c.id for c in added} | excluded
            added += self._wide(topic, core, order, score, median + WIDE_FRACTION * (cutoff - median), taken,
                                near, cand)
        selected, near = _joined(selected, near, added)
        ok_pid = (lambda pid: bool(allowed[self.pos[pid]])) if allowed is not None else (lambda pid: True)
        if "survey" not in without:
            selected, near = _joined(selected, near, self._vouched(
                core, selected, score, median, spread, cand, ok_pid, excluded, near,
                q1 if "contexts" not in without else None))
        if "contexts" not in without and "said" not in without:
            selected, near = _joined(selected, near, self._said(
                core, selected, score, median + SAID_FLOOR * (cutoff - median), q1, cand, ok_pid, excluded, near))
        if "contexts" not in without and "alongside" not in without:
            by_score = {c.id for c in selected if not c.links and all(r.kind == "citations" for r in c.evidence)}
            selected, near = _joined(selected, near, self._alongside(
                by_score, {c.id for c in selected} | excluded, score, median + COCITE_FLOOR * (cutoff - median),
                cand, ok_pid, near))
        citing = 0
        if "citations" not in without:
            ok = (lambda i: bool(allowed[i])) if allowed is not None else (lambda i: True)
            selected, near, citing = self._cited(selected, near, cand, lambda pid: ok(self.pos[pid]), excluded,
                                                 core={c.id for c in core})
        selected, near, capped = _capped(selected, near, max_papers)
        if citing:
            self._recount(selected, near)
        # Two lists of near misses: by score (just below the cut-off) and by citations (cited by selected papers,
        # not enough to be chosen), each with its own budget, so that a long reference list does not crowd out
        # the papers just below the cut-off, nor the other way round.
        cited_near = [c for c in near if any(r.kind in ("cocited", "chain") for r in c.evidence)]
        cited_ids = {c.id for c in cited_near}
        score_near = [c for c in near if c.id not in cited_ids]
        near = score_near[:NEAR_SHOWN] + cited_near[:CITED_SHOWN]
        listed = {c.id for c in selected} | {c.id for c in near} | excluded
        more = []
        for i in order:
            if len(more) >= pool:
                break
            if self.ids[i] not in listed:
                more.append(cand(i))
        return TopicSelection(topic, selected, near, cutoff, median, spread, terms, len(finite), capped,
                              citing, title_cut, more)

    # --- the topic's own words against its field --------------------------------------------------

    _specific_words: list[str] = []

    def _specific(self, topic: str, rows: list[int], chunk_dense: dict, lex: dict) -> dict[int, set[str]]:
        """Which of the topic's own words (any spelling) each paper of the field names in its title, abstract or
        matched passages. The field is the papers above the near cut: in a vault far from the topic's field, every
        paper of the field stands out from the vault by score, "transactions" as much as "consensus"; a paper
        chosen by its score must name at least one of the topic's words. Citation evidence is not bound by it (a
        field's canonical papers are named by a method or a metaphor). Returns {row: the words it names}
        ({} when the field is too small to judge)."""
        self._specific_words = []
        own = list(dict.fromkeys(_words(topic)))
        if not own or len(rows) < 4:
            return {}
        named: dict[int, set[str]] = {}
        for i in rows:
            pid = self.ids[i]
            text = " ".join([self.titles[i] or "", self.texts[i] or "",
                             *(hit[1]["text"] for hit in (chunk_dense.get(pid), lex.get(pid)) if hit)])
            toks = set(_words(text))
            named[i] = {t for t in own if any(_same_word(t, w) for w in toks)}
        self._specific_words = own
        return named

    # --- citation evidence ---------------------------------------------------------------------------

    def graph(self):
        """The vault's citation graph (papervault.survey.citations), built on first use."""
        if self._graph is None:

            self._graph = build_graph(self.ws.vault, self.ids, self.titles, self.dois, self.arxivs,
                                      [pid for pid, f in zip(self.ids, self.fulltext) if f], self.authors, self.years)
        return self._graph

    def _context_rows(self) -> tuple[np.ndarray, list[Context], np.ndarray]:
        """The vault's citation contexts (papervault.survey.contexts) as (row of the cited paper, context,
        unit vector), on first use: extraction is cached by full-text hash, the sentences' vectors by sentence
        (`_context_vectors`; about 3 ms a sentence to embed, 583 sentences 1.9 s, 0.07 s from the cache)."""
        if self._contexts is None:
            g = self.graph()
            found = build_contexts(self.ws.vault, g.matcher,
                                   sorted(g.with_refs), cache_dir=self.ws.cache_dir / "contexts")
            rows = [(self.pos[pid], c) for pid, cs in sorted(found.items()) if pid in self.pos for c in cs]
            vecs = (self._context_vectors([c.text for _, c in rows])
                    if rows else np.zeros((0, self.mat.shape[1]), dtype=np.float32))
            self._contexts = (np.array([r for r, _ in rows], dtype=np.int64), [c for _, c in rows], vecs)
        return self._contexts

    def _context_vectors(self, texts: list[str]) -> np.ndarray:
        """The citing sentences' vectors, kept in the workspace's derived state (`cache/contexts/vectors.sqlite`,
        keyed by the embedding model's settings and the sentence): a survey or a benchmark selecting again
        embeds only the sentences of papers added since (a library of a thousand PDFs holds tens of
        thousands)."""
        embedder = self.searcher.embedder
        cache = VectorCache(self.ws.cache_dir / "contexts", {"use": "citation contexts",
                                                             **embedder.settings.vector_key(),
                                                             "model_path": resolved_model_path(embedder.settings)})
        return np.asarray(cache.embed(texts, lambda t: np.asarray(embedder.embed(t), dtype=np.float32)),
                          dtype=np.float32)

    def _alongside(self, by_score: set[str], taken: set[str], score: np.ndarray, floor: float, cand, allowed,
                   near: list[Candidate]) -> list[Candidate]:
        """Papers some vault paper cites in one sentence with at least COCITE_MIN papers chosen by their own score
        ("MapReduce [21], Dryad [29], Piccolo [55], Spark [67] ... and Naiad [47]"), their own score down to
        `floor`: a sentence that enumerates a field's work names the papers whose titles say nothing of it ("The
        Geometry of Innocent Flesh on the Bone", which SoK: Eternal War in Memory cites in "Return-Oriented
        Programming (ROP) [6], [7], [8] ..." with two return-oriented programming papers chosen by score)."""
        rows, ctxs, _ = self._context_rows()
        groups: dict[tuple[str, str], tuple[set[str], int | None]] = {}
        for r, c in zip(rows.tolist(), ctxs):
            cited, page = groups.setdefault((c.citing, c.text), (set(), c.page))
            cited.add(self.ids[r])
        near_by_id = {c.id: c for c in near}
        out: list[Candidate] = []
        for (citing, text), (cited, page) in sorted(groups.items(), key=lambda kv: kv[0]):
            with_sel = sorted(cited & by_score)
            if len(with_sel) < COCITE_MIN:
                continue
            for pid in sorted(cited - taken):
                i = self.pos.get(pid)
                if i is None or not allowed(pid) or not np.isfinite(score[i]) or score[i] < floor:
                    continue
                c = near_by_id.get(pid) or cand(i)
                c.links.append(Reason("alongside", f"“{text}”", page, section=" ".join(with_sel), other=citing))
                out.append(c)
                taken.add(pid)
        return out

    def _context_by(self, q: np.ndarray, citing: str) -> dict[str, tuple[float, Context]]:
        """Per paper that `citing` cites in a sentence of its text: the cosine of the such sentence nearest `q`,
        and the sentence."""
        rows, ctxs, vecs = self._context_rows()
        keep = [k for k, c in enumerate(ctxs) if c.citing == citing]
        if not keep:
            return {}
        sims = _dot(vecs[keep], q)
        out: dict[str, tuple[float, Context]] = {}
        for k, s in zip(keep, sims.tolist()):
            pid = self.ids[int(rows[k])]
            if pid not in out or s > out[pid][0]:
                out[pid] = (s, ctxs[k])
        return out

    def _context_hits(self, q: np.ndarray) -> dict[str, tuple[float, Context]]:
        """Per cited paper: the cosine of its citing sentence nearest `q`, and that sentence."""
        rows, ctxs, vecs = self._context_rows()
        if not len(rows):
            return {}
        sims = _dot(vecs, q)
        out: dict[str, tuple[float, Context]] = {}
        for r, c, s in zip(rows.tolist(), ctxs, sims.tolist()):
            pid = self.ids[r]
            if pid not in out or s > out[pid][0]:
                out[pid] = (s, c)
        return out

    def _cited(self, selected: list[Candidate], near: list[Candidate], cand, allowed, excluded: set[str],
               core: set[str] | None = None) -> tuple[list[Candidate], list[Candidate], int]:
        """Papers the selected papers cite, weighed against the rest of the vault: chosen (`CITE_*`), near misses
        (cited by one selected paper, or by a paper citation evidence chose), and the evidence line of every
        paper listed. Returns (selected, near, papers of the vault with a reference list)."""
        g = self.graph()
        if not g.with_refs:
            return selected, near, 0
        sel_ids = [c.id for c in selected]
        sel_set = set(sel_ids)
        n = len(sel_ids)
        readers = [pid for pid in sel_ids if pid in g.with_refs]       # the selected papers that can cite
        rest = max(1, len(g.with_refs) - len(readers))
        core_readers = {pid for pid in readers if core is None or pid in core}
        counts: dict[str, set[str]] = {}
        for pid in readers:
            for c in g.cites.get(pid, ()):
                if c not in sel_set and c not in excluded and c in self.pos and allowed(c):
                    counts.setdefault(c, set()).add(pid)

        def lifted(pid: str, k: int) -> bool:
            share = k / len(readers)
            elsewhere = len(g.cited_by.get(pid, ())) - k
            return share >= CITE_LIFT * (elsewhere / rest)

        def cited_text(k: int) -> str:
            s = f"cited by {k} of the {n} selected papers"
            return s + (f" ({len(readers)} of them with a reference list)" if len(readers) < n else "")

        chosen: list[Candidate] = []
        singles: list[tuple[str, set[str]]] = []
        generic: list[tuple[str, set[str]]] = []
        for pid, by in sorted(counts.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            k = len(by)
            # the share is counted among the core's papers with a reference list: a broad selection's tail
            # (papers from the field around the topic) does not dilute what the topic's surest papers cite
            k_core = len(by & core_readers)
            strong = k >= CITE_MIN and (k >= CITE_SEVERAL or (core_readers and k_core >= CITE_SHARE * len(core_readers))
                                        or k >= CITE_SHARE * len(readers))
            if strong and lifted(pid, k):
                c = cand(self.pos[pid])
                c.evidence.append(Reason("cocited", cited_text(k), other=",".join(sorted(by))))
                chosen.append(c)
            elif strong:
                generic.append((pid, by))
            else:
                singles.append((pid, by))
        chosen_ids = {c.id for c in chosen}
        near = [c for c in near if c.id not in chosen_ids]
        near_ids = {c.id for c in near}
        extra: list[Candidate] = []
        for pid, by in generic + singles:        # near misses: cited, but too rarely or by everyone
            c = next((x for x in near if x.id == pid), None) or cand(self.pos[pid])
            why = cited_text(len(by))
            if (pid, by) in generic:
                why += f", but also by {len(g.cited_by.get(pid, ())) - len(by)} other papers of the vault"
            c.evidence.append(Reason("cocited", why, other=",".join(sorted(by))))
            if pid not in near_ids:
                extra.append(c)
                near_ids.add(pid)
        for src in chosen:                        # one step further: cited by what citation evidence chose
            for pid in sorted(g.cites.get(src.id, ())):
                if pid in sel_set or pid in chosen_ids or pid in excluded or pid not in self.pos or not allowed(pid):
                    continue
                c = next((x for x in near + extra if x.id == pid), None)
                if c is None:
                    c = cand(self.pos[pid])
                    extra.append(c)
                    near_ids.add(pid)
                c.evidence.append(Reason("chain", src.evidence[0].text, other=src.id))
        # citation-evidence near misses first, strongest evidence first: cited by more selected papers, then by
        # selected papers nearer the topic (the sum of their scores), then by their own score. A paper that only
        # the topic's central paper cites ("Paxos Made Simple", cited by "Paxos Made Moderately Complex") comes
        # before one that a paper of the field around the topic cites.
        score_of = {c.id: c.score for c in selected + chosen}

        def strength(c: Candidate) -> tuple:
            by = {x for r in c.evidence if r.kind in ("cocited", "chain") for x in r.other.split(",") if x}
            direct = any(r.kind == "cocited" for r in c.evidence)
            return (not direct, -len(by), -sum(score_of.get(x, 0.0) for x in by), -c.score)

        near = sorted(extra, key=strength) + near
        final = selected + chosen
        for c in final + near:
            if not any(r.kind in ("cocited", "chain") for r in c.evidence):
                c.evidence.append(Reason("citations"))      # its text: _recount, against the final selection
        return final, near, len(g.with_refs)

    def finish(self, sel: TopicSelection, max_papers: int | None) -> None:
        """`sel` after its lists changed (a model's review moved papers in or out, papervault.survey.judge): cut
        to `max_papers`, and its citation lines counted again in the final selection (a paper brought in from
        beyond the near misses gets its line too)."""
        sel.selected, sel.near, cut = _capped(sel.selected, sel.near, max_papers)
        sel.capped = sel.capped or cut
        if not sel.citing:
            return
        for c in sel.selected + sel.near:
            if not any(r.kind in ("citations", "cocited", "chain") for r in c.evidence):
                c.evidence.append(Reason("citations"))
        self._recount(sel.selected, sel.near)

    def _recount(self, selected: list[Candidate], near: list[Candidate]) -> None:
        """The citation lines of every listed paper ("cited by 2 of the 9 selected papers: @a, @b"), counted in
        the final selection (citation evidence's papers included, `max_papers` applied), so that its numbers are
        those of selection.md's own count."""
        g = self.graph()
        final = [c.id for c in selected]
        fset = set(final)
        n = len(final)
        readers = sum(1 for pid in final if pid in g.with_refs)

        def cited_text(k: int) -> str:
            s = f"cited by {k} of the {n} selected papers"
            return s + (f" ({readers} of them with a reference list)" if readers < n else "")

        own: dict[str, str] = {}
        listed = selected + near
        for c in listed:
            by = sorted(g.citers(c.id, final))
            for r in c.evidence:
                if r.kind == "cocited":
                    elsewhere = len(g.cited_by.get(c.id, ())) - len(by)
                    generic = "other papers of the vault" in r.text
                    r.text = cited_text(len(by)) + (f", but also by {elsewhere} other papers of the vault"
                                                    if generic else "")
                    r.other = ",".join(by)
                    own[c.id] = r.text
                elif r.kind == "citations":
                    r.text = cited_text(len(by)).split(" (")[0]
                    if c.id in g.with_refs:
                        # the selected papers this one cites (`section`); `other` holds those that cite it
                        cites = sorted(g.cites.get(c.id, set()) & fset)
                        r.text += f"; cites {len(cites)} of them"
                        r.section = ",".join(cites)
                    r.other = ",".join(by)
        for c in listed:
            for r in c.evidence:
                if r.kind == "chain" and r.other in own:
                    r.text = own[r.other]

    # --- citation links ------------------------------------------------------------------------------

    def _vouched(self, core: list[Candidate], selected: list[Candidate], score: np.ndarray, median: float,
                 spread: float, cand, allowed, excluded: set[str], near: list[Candidate],
                 q: np.ndarray | None = None) -> list[Candidate]:
        """The papers a topic's own survey vouches for. A core paper whose reference list names at least
        VOUCH_REFS vault papers and VOUCH_COVER of the other selected papers is the topic's survey (SoK: Eternal
        War in Memory for "memory corruption attacks and defenses"); a core paper of the field around the topic
        (Megastore for "consensus") cites about half of the selection and vouches for nothing. Each vault paper it
        cites is chosen when no paper outside the selection cites it (a paper the rest of the vault cites is the
        field's or everyone's, not the topic's) and its score stands above the vault's median (VOUCH_Z robust
        deviations): "Smashing the Stack for Fun and Profit", whose title names none of the topic's words."""
        g = self.graph()
        sel = {c.id for c in selected}
        near_by_id = {c.id: c for c in near}
        out: list[Candidate] = []
        taken = sel | excluded
        for v in core:
            cites = g.cites.get(v.id, set())
            others = sel - {v.id}
            if len(cites) < VOUCH_REFS or len(others) < 3:
                continue
            covered = len(cites & others)
            if covered < VOUCH_COVER * len(others):
                continue
            # Which of its references are the topic's: those it cites in sentences nearer the topic than its
            # median citing sentence (a survey's references mix the topic with its surroundings).
            said = {pid: sc for pid, (sc, _) in self._context_by(q, v.id).items()} if q is not None else {}
            bar = float(np.quantile(list(said.values()), VOUCH_QUANTILE)) if said else -np.inf
            for pid in sorted(cites - taken, key=lambda p: -score[self.pos[p]] if p in self.pos else 0.0):
                i = self.pos.get(pid)
                if i is None or not allowed(pid) or not np.isfinite(score[i]):
                    continue
                if score[i] < median + VOUCH_Z * spread:
                    continue
                if not g.cited_by.get(pid, set()) <= sel | {v.id}:
                    continue
                if said and said.get(pid, -np.inf) < bar:
                    continue
                c = near_by_id.get(pid) or cand(i)
                c.links.append(Reason("survey", f"it cites {covered} of the {len(others)} other selected papers",
                                      other=v.id))
                out.append(c)
                taken.add(pid)
        return out

    def _said(self, core: list[Candidate], selected: list[Candidate], score: np.ndarray, floor: float,
              q: np.ndarray, cand, allowed, excluded: set[str], near: list[Candidate]) -> list[Candidate]:
        """Papers a core paper cites in a sentence about the topic: a sentence as near the topic as those in which
        it cites the papers already selected (SAID_QUANTILE of them, SAID_MIN at least), the paper's own score
        down to `floor`. A core paper's reference list mixes the topic with its surroundings; the sentence that
        cites a reference says which it is ("Smashing the Stack for Fun and Profit", which SoK: Eternal War in
        Memory cites for "the stack smashing attack")."""
        sel = {c.id for c in selected}
        near_by_id = {c.id: c for c in near}
        out: list[Candidate] = []
        taken = sel | excluded
        for v in core:
            said = self._context_by(q, v.id)
            known = [sc for pid, (sc, _) in said.items() if pid in sel]
            if len(known) < SAID_MIN:
                continue
            bar = float(np.quantile(known, SAID_QUANTILE))
            for pid, (sc, ctx) in sorted(said.items(), key=lambda kv: -kv[1][0]):
                i = self.pos.get(pid)
                if pid in taken or i is None or not allowed(pid) or sc < bar or score[i] < floor:
                    continue
                c = near_by_id.get(pid) or cand(i)
                c.links.append(Reason("said", f"“{ctx.text}”", ctx.page, other=v.id))
                out.append(c)
                taken.add(pid)
        return out

    def _rare_forms(self, topic: str) -> set[str]:
        """The spellings of the topic's rarer words: those whose rarity among the vault's titles is at least the
        median rarity of the topic's words ("isolation", "anomalies" in "checking transactional isolation
        anomalies in databases", not "databases")."""
        _, variants = self._title_match(topic)
        vocab, n = self._title_vocab, len(self.ids)
        weighed = [(math.log((n + 1) / (sum(vocab.get(w, 0) for w in forms) + 1)), forms) for _, forms in variants]
        if not weighed:
            return set()
        mid = float(np.median([w for w, _ in weighed]))
        return {f for w, forms in weighed if w >= mid for f in forms}

    def _wide(self, topic: str, core: list[Candidate], order: list[int], score: np.ndarray, floor: float,
              taken: set[str], near: list[Candidate], cand) -> list[Candidate]:
        """Papers below the near-miss window that a core paper's reference list names and whose title or abstract
        names one of the topic's rarer words ("Generalized Isolation Level Definitions", which Elle cites, for
        "checking transactional isolation anomalies"): the topic's surest paper vouches for it and its own words
        say which part of that paper's references it is. Down to `floor` (WIDE_FRACTION of the cut-off's
        margin)."""
        g = self.graph()
        readers = [c for c in core if c.id in g.with_refs]
        if not readers:
            return []
        rare = self._rare_forms(topic)
        if not rare:
            return []
        near_by_id = {c.id: c for c in near}
        out: list[Candidate] = []
        for i in order:
            if score[i] < floor:
                break
            pid = self.ids[i]
            if pid in taken:
                continue
            by = [c.id for c in readers if pid in g.cites.get(c.id, ())]
            if not by:
                continue
            if rare.isdisjoint(_words(f"{self.titles[i] or ''} {self.texts[i] or ''}")):
                continue
            c = near_by_id.get(pid) or cand(i)
            c.links.append(Reason("cited", "its reference list names it; it names the topic's rarer words "
                                  + ", ".join(sorted(rare & set(_words(f"{self.titles[i] or ''} {self.texts[i] or ''}")))),
                                  other=by[0]))
            out.append(c)
        return out


    def _links(self, selected: list[Candidate], near: list[Candidate], unspecific: set[str] = frozenset()
               ) -> list[Candidate]:
        """Near misses linked by a citation to a selected paper (either direction), with the link as reason.
        A near miss that names none of the topic's words (`unspecific`) is linked only when a selected paper's
        reference list names it: the topic's surest papers cite it, which its words do not say."""

        if not selected or not near:
            return []
        how = self.graph().how       # (citing, cited) -> the rule of the citation graph that named it

        out: list[Candidate] = []
        for c in near[:LINK_READS]:
            for s in selected:
                via = how.get((s.id, c.id)) if s.has_fulltext else None
                if via:
                    c.links.append(Reason("cited", f"its reference list names it by {via}", other=s.id))
                    break
                via = how.get((c.id, s.id)) if c.has_fulltext and c.id not in unspecific else None
                if via:
                    c.links.append(Reason("citing", f"names it by {via} in its references", other=s.id))
                    break
            if c.links:
                out.append(c)
        return out


def _capped(selected: list[Candidate], near: list[Candidate], max_papers: int | None
            ) -> tuple[list[Candidate], list[Candidate], bool]:
    """The first `max_papers` of the selection, the rest first among the near misses, and whether it cut."""
    if max_papers is None or len(selected) <= max_papers:
        return selected, near, False
    return selected[:max_papers], selected[max_papers:] + near, True


def _joined(selected: list[Candidate], near: list[Candidate], added: list[Candidate]
            ) -> tuple[list[Candidate], list[Candidate]]:
    """The selection with `added` (papers a citation rule brought in), best score first, and the near misses
    without them."""
    if not added:
        return selected, near
    got = {c.id for c in added}
    return sorted(selected + added, key=lambda c: -c.score), [c for c in near if c.id not in got]


def _basis(text: str, title: str, authors: list[str]) -> str:
    """What the paper row of a paper without full text says beyond its title: ABSTRACT when the lines after the
    title and the author line hold at least ABSTRACT_WORDS words, else TITLE_ONLY."""
    lines = text.split("\n")
    if lines and lines[0].strip() == title.strip():
        lines = lines[1:]
    if lines and authors and lines[0].strip() == ", ".join(authors[:8]).strip():
        lines = lines[1:]
    return ABSTRACT if len(" ".join(lines).split()) >= ABSTRACT_WORDS else TITLE_ONLY


def _same_word(a: str, b: str) -> bool:
    """Two spellings of one word: equal, or sharing all but a short ending ("privacy"/"private",
    "federated"/"federation", "splatting"/"splats"); words under five letters only take a plural "s"."""
    if a == b:
        return True
    if min(len(a), len(b)) < 5:
        return a + "s" == b or b + "s" == a
    k = 0
    for x, y in zip(a, b):
        if x != y:
            break
        k += 1
    return k >= max(5, min(len(a), len(b)) - 3)


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"“(])")


def best_sentences(text: str, words: set[str], limit: int = 2) -> str:
    """The sentence(s) of a passage that share the most words with the (expanded) topic, in their order."""
    sents = [x.strip() for x in _SENTENCE.split(re.sub(r"\s+", " ", text or "")) if x.strip()]
    if len(sents) <= limit:
        return " ".join(sents)
    scored = sorted(range(len(sents)), key=lambda k: -len(words & set(_words(sents[k]))))[:limit]
    return " … ".join(sents[k] for k in sorted(scored))


def select_topic(workspace, topic: str, **kwargs) -> TopicSelection:
    """The vault papers about `topic` (see the module's docstring)."""
    return TopicSelector(workspace).select(topic, **kwargs)
