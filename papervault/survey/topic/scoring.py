"""The scores of topic selection, as functions over the candidates table (papervault.survey.topic.table): the
passages' and full text's best hits per paper, the title's share of the topic's words, the words feedback papers
lend the topic, a paper's score, the cut-offs drawn from the score distribution, and which of the topic's own
words each paper of the field names."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from papervault.survey.topic.citing import Citing
from papervault.survey.topic.params import TITLE_ONLY, TopicParams
from papervault.survey.topic.table import PaperTable, dot
from papervault.survey.topic.text import same_word, words

CHUNK_COLUMNS = ["id", "paper_id", "level", "section_path", "page_start", "text"]


def chunk_hits(searcher, query: str, vec: np.ndarray, where: str | None, n: int) -> tuple[dict, dict]:
    """Per paper: best chunk cosine with its row, and best BM25 score with its row."""
    vec_rows, fts_rows = searcher.passage_rankings(query, vec, where, n, CHUNK_COLUMNS)
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


def expansion(table: PaperTable, topic: str, top: list[int], params: TopicParams) -> list[str]:
    """Words the feedback papers share that are rare in the vault (tf-idf over the feedback set)."""
    own = set(words(topic))
    # authors' names are in the paper row's text; a name is no word of the topic
    own |= {w for i in top for a in (table.authors[i] or []) for w in words(a)}
    docs = [set(words(table.text_of(i))) for i in top]
    counts = Counter(w for d in docs for w in d if w not in own and not w.isdigit())
    need = max(2, math.ceil(len(docs) / 2))
    cands = [w for w, c in counts.items() if c >= need]
    if not cands:
        return []
    df = table.doc_freq(cands)
    n = len(table)
    scored = sorted(cands, key=lambda w: -(counts[w] * math.log((n + 1) / (df[w] + 1))))
    # a word in more than 5% of the vault says little about the topic
    return [w for w in scored if df[w] <= max(5, 0.05 * n)][:params.expansion_terms]


def title_match(table: PaperTable, topic: str) -> tuple[np.ndarray, list[tuple[str, set[str]]]]:
    """Per paper, the share of the topic's own words its title names (each word or a variant of it:
    "private" for "privacy", "splats" for "splatting"), weighted by the word's rarity among the vault's
    titles. A title is the author's own statement of what the paper is about. Also returns each topic word
    with the spellings of it that the vault's titles use."""
    title_words, vocab = table.title_words()
    n = len(table)
    weights, variants = [], []
    for t in dict.fromkeys(words(topic)):
        forms = {w for w in vocab if same_word(t, w)} | {t}
        df = sum(vocab.get(w, 0) for w in forms)
        weights.append(math.log((n + 1) / (df + 1)))
        variants.append((t, forms))
    total = sum(weights)
    out = np.zeros(n, dtype=np.float32)
    if not total:
        return out, variants
    for i, ws in enumerate(title_words):
        if ws:
            got = sum(w for w, (_, forms) in zip(weights, variants) if not ws.isdisjoint(forms))
            if got:
                out[i] = got / total
    return out, variants


def rare_forms(table: PaperTable, topic: str) -> set[str]:
    """The spellings of the topic's rarer words: those whose rarity among the vault's titles is at least the
    median rarity of the topic's words ("isolation", "anomalies" in "checking transactional isolation
    anomalies in databases", not "databases")."""
    _, variants = title_match(table, topic)
    _, vocab = table.title_words()
    n = len(table)
    weighed = [(math.log((n + 1) / (sum(vocab.get(w, 0) for w in forms) + 1)), forms) for _, forms in variants]
    if not weighed:
        return set()
    mid = float(np.median([w for w, _ in weighed]))
    return {f for w, forms in weighed if w >= mid for f in forms}


def score(table: PaperTable, searcher, citing: Citing, params: TopicParams, q: np.ndarray, query: str,
          where: str | None, allowed: np.ndarray | None, title: np.ndarray | None = None,
          without: frozenset = frozenset()) -> tuple[np.ndarray, dict, dict]:
    """Each paper's score for the topic vector `q` and the full-text `query`: its title/abstract cosine, lifted
    towards its best passage (`chunk_weight`), plus its full-text score (`lexical_weight`) and its title's share
    of the topic's words (`title_weight`, at most `title_share` of its margin); -inf outside `allowed`. Also
    returns the best passage and full-text hit per paper (`chunk_hits`)."""
    dense_p = dot(table.mat, q)
    chunk_dense, lex = chunk_hits(searcher, query, q, where, params.candidates)
    if "passages" in without:
        chunk_dense = {}
    if "fulltext" in without:
        lex = {}
    out = dense_p.copy()
    best_passage = {pid: s for pid, (s, _) in chunk_dense.items()}
    if "contexts" not in without:
        # A paper known by its title alone has, for text, what the papers citing it say about it: its
        # citing sentence nearest the topic is one more passage of it. (Letting a far citing sentence pull
        # the score down as well was tried: it lowered the tune topics' recall.)
        for pid, (s, _) in citing.hits(q).items():
            if table.basis[table.pos[pid]] in params.context_bases and s > best_passage.get(pid, -1.0):
                best_passage[pid] = s
    for pid, s in best_passage.items():
        i = table.pos.get(pid)
        if i is not None and s > dense_p[i]:
            out[i] = dense_p[i] + params.chunk_weight * (s - dense_p[i])
    if lex:
        ref = sorted((s for s, _ in lex.values()), reverse=True)
        norm = ref[min(4, len(ref) - 1)] or 1.0     # the fifth best: one freak hit does not squash the rest
        for pid, (s, _) in lex.items():
            i = table.pos.get(pid)
            if i is not None:
                out[i] += params.lexical_weight * min(1.0, s / norm)
    if title is not None and "title" not in without:
        # In proportion: a title adds at most title_share of what the paper's text earns over the median.
        median = min(float(np.median(dense_p)), params.background_cap)
        out = out + np.minimum(params.title_weight * title, params.title_share * np.maximum(0.0, out - median))
    if allowed is not None:
        out = np.where(allowed, out, -np.inf)
    return out, chunk_dense, lex


@dataclass
class Cutoffs:
    """Where the score distribution is cut: the vault's median and robust spread, the best papers' mean score,
    the cut-off, the near-miss cut and the cut-off of a record known by its title alone; `order` is the scored
    rows, best first."""
    median: float
    spread: float
    best: float
    cutoff: float
    near: float
    title: float
    order: list[int]

    def at(self, fraction: float) -> float:
        """The score `fraction` of the cut-off's margin over the median."""
        return self.median + fraction * (self.cutoff - self.median)

    def per_row(self, basis: list[str]) -> np.ndarray:
        """Each row's own cut-off: the title-only cut-off for a record known by its title alone."""
        return np.where(np.array([b == TITLE_ONLY for b in basis]), self.title, self.cutoff)


def cutoffs(table: PaperTable, params: TopicParams, q: np.ndarray, scores: np.ndarray) -> Cutoffs:
    """The cut-offs from the score distribution (the module's step 3)."""
    # The background is the whole vault's title/abstract similarity, not the candidates': a tag: or
    # collection: whose papers are mostly about the topic must not raise the bar it is measured against.
    background = dot(table.mat, q)
    median = float(np.median(background))
    spread = float(1.4826 * np.median(np.abs(background - median))) or 1e-6
    # A vault of papers all about the topic has no background to stand out from: its median is capped at
    # what unrelated texts score with this model (vault medians of 0.13-0.22 on the benchmark's vaults).
    median = min(median, params.background_cap)
    order = [int(i) for i in np.argsort(-scores) if np.isfinite(scores[i])]
    best = float(np.mean(scores[order[:3]])) if order else median
    # A deviation measured over a handful of papers is noise (three papers on the topic set their own MAD):
    # a small vault is cut by closeness to its best papers alone.
    z_cut = median + params.z_min * spread if len(background) >= params.small_vault else -np.inf
    cutoff = max(z_cut, median + params.top_fraction * (best - median))
    near_cut = median + params.near_fraction * (cutoff - median)
    # A record known by its title alone rests on a dozen words: it is chosen by its score only when it stands
    # closer to the best papers (title_only_fraction); below that it is a near miss that citations can bring in.
    title_cut = max(cutoff, median + params.title_only_fraction * (best - median))
    return Cutoffs(median, spread, best, cutoff, near_cut, title_cut, order)


def specific(table: PaperTable, topic: str, rows: list[int], chunk_dense: dict, lex: dict
             ) -> tuple[dict[int, set[str]], list[str]]:
    """Which of the topic's own words (any spelling) each paper of the field names in its title, abstract or
    matched passages, and the topic's own words. The field is the papers above the near cut: in a vault far from
    the topic's field, every paper of the field stands out from the vault by score, "transactions" as much as
    "consensus"; a paper chosen by its score must name at least one of the topic's words. Citation evidence is
    not bound by it (a field's canonical papers are named by a method or a metaphor). Returns ({row: the words
    it names}, the topic's words), ({}, []) when the field is too small to judge."""
    own = list(dict.fromkeys(words(topic)))
    if not own or len(rows) < 4:
        return {}, []
    named: dict[int, set[str]] = {}
    for i in rows:
        pid = table.ids[i]
        text = " ".join([table.titles[i] or "", table.texts[i] or "",
                         *(hit[1]["text"] for hit in (chunk_dense.get(pid), lex.get(pid)) if hit)])
        toks = set(words(text))
        named[i] = {t for t in own if any(same_word(t, w) for w in toks)}
    return named, own
