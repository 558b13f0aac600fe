"""`TopicSelector`: the steps of topic selection (the package's docstring) in order, over the candidates table
(papervault.survey.topic.table) with the scoring functions (scoring), the citation rules (links) and citation
evidence (evidence), its parameters one `TopicParams`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from papervault.errors import PapervaultError
from papervault.index.search import Searcher
from papervault.index.tables import sql_list
from papervault.survey.contexts import Context
from papervault.survey.selection import Reason
from papervault.survey.topic import evidence, links, scoring
from papervault.survey.topic.citing import Citing
from papervault.survey.topic.params import DEFAULT, SIGNALS, TopicParams
from papervault.survey.topic.table import Candidate, PaperTable, TopicSelection, capped, dot, joined, unit
from papervault.survey.topic.text import best_sentences, words


@dataclass
class _Pass:
    """One topic's scoring: the expanded topic (vector `q`, full-text `query`, the words it gained), each
    paper's score, its best passage and full-text hit, its title's share of the topic's words with the
    spellings they take, and the citing sentence of each cited paper nearest the topic."""
    topic: str
    q: np.ndarray
    query: str
    terms: list[str]
    score: np.ndarray
    chunk_dense: dict
    lex: dict
    title: np.ndarray
    forms: list[tuple[str, set[str]]]
    contexts: dict[str, tuple[float, Context]] = field(default_factory=dict)
    cuts: scoring.Cutoffs | None = None

    @property
    def wanted(self) -> set[str]:
        """The words of the expanded topic (a passage's sentences sharing most of them are shown)."""
        if self._wanted is None:
            self._wanted = set(words(self.query))
        return self._wanted

    _wanted: set[str] | None = None


class TopicSelector:
    """Scores the vault's papers against a topic with the workspace's index (one instance per run)."""

    def __init__(self, workspace, searcher=None, params: TopicParams = DEFAULT):
        self.ws = workspace
        self.searcher = searcher or Searcher(workspace)
        self.params = params
        self.table = PaperTable(self.searcher, params)
        self.citing = Citing(workspace, self.table, self.searcher.embedder)

    @property
    def ids(self) -> list[str]:
        return self.table.ids

    def authors_of(self, pid: str) -> list[str]:
        i = self.table.pos.get(pid)
        return list(self.table.authors[i] or []) if i is not None else []

    def graph(self):
        """The vault's citation graph (papervault.survey.citations), built on first use."""
        return self.citing.graph()

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
            allowed = np.array([pid in keep for pid in self.table.ids], dtype=bool)
            if not allowed.any():
                return TopicSelection(topic, [], [], 0.0, 0.0, 0.0, [], 0)
            if len(keep) <= 2000:
                where = f"paper_id IN ({sql_list(sorted(keep))})"
        p = self._relevance(topic, where, allowed, without)
        p.cuts = cuts = scoring.cutoffs(self.table, self.params, p.q, p.score)
        p.contexts = self.citing.hits(p.q) if "contexts" not in without else {}
        excluded = set(exclude)
        selected, near, off_topic = self._by_score(p, excluded, without)
        # The core: the selected papers the topic is surest of (up to feedback_docs, each within
        # feedback_fraction of the best papers' margin). A broad selection's tail lends no citation its weight.
        core_cut = cuts.median + self.params.feedback_fraction * (cuts.best - cuts.median)
        core = [c for c in selected if c.score >= core_cut][:self.params.feedback_docs] or selected[:1]
        selected, near = self._linked_in(p, core, selected, near, off_topic, allowed, excluded, without)
        citing = 0
        if "citations" not in without:
            ok = (lambda i: bool(allowed[i])) if allowed is not None else (lambda i: True)
            selected, near, citing = evidence.cited(self.table, self.citing, self.params, selected, near,
                                                    lambda i: self._candidate(p, i),
                                                    lambda pid: ok(self.table.pos[pid]), excluded,
                                                    core={c.id for c in core})
        selected, near, was_capped = capped(selected, near, max_papers)
        if citing:
            evidence.recount(self.citing, selected, near)
        near, more = self._listed(p, selected, near, excluded, pool)
        return TopicSelection(topic, selected, near, cuts.cutoff, cuts.median, cuts.spread, p.terms,
                              int(np.isfinite(p.score).sum()), was_capped, citing, cuts.title, more)

    def _relevance(self, topic: str, where: str | None, allowed: np.ndarray | None, without: frozenset) -> _Pass:
        """Steps 1 and 2: each paper's relevance to the topic, then to the topic expanded by pseudo-relevance
        feedback (its best papers' vectors and shared rare words)."""
        t, prm = self.table, self.params
        q0 = unit(np.asarray(self.searcher.embedder.embed_query(topic), dtype=np.float32))
        title, forms = scoring.title_match(t, topic)
        s0, _, _ = scoring.score(t, self.searcher, self.citing, prm, q0, topic, where, allowed, title, without)
        fin0 = s0[np.isfinite(s0)]
        order = [int(i) for i in np.argsort(-s0)[:prm.feedback_docs] if np.isfinite(s0[i])]
        # Feedback only from papers close to the best: a topic with one or two papers in the vault must not
        # drift towards whatever happens to come next.
        m0 = float(np.median(fin0)) if len(fin0) else 0.0
        top = [i for i in order if s0[i] >= m0 + prm.feedback_fraction * (s0[order[0]] - m0)]
        if "feedback" in without:
            top = []
        terms = scoring.expansion(t, topic, top, prm) if top else []
        q1 = unit(q0 + prm.rocchio * unit(t.mat[top].mean(axis=0))) if top else q0
        query1 = " ".join([topic, *terms])
        score, chunk_dense, lex = scoring.score(t, self.searcher, self.citing, prm, q1, query1, where, allowed,
                                                title, without)
        return _Pass(topic, q1, query1, terms, score, chunk_dense, lex, title, forms)

    def _candidate(self, p: _Pass, i: int) -> Candidate:
        """Row `i` as a scored paper, with its passages (its best passage and full-text hit, in their best
        sentences), the topic's words its title names and its citing sentence nearest the topic."""
        t = self.table
        pid = t.ids[i]
        median, spread = p.cuts.median, p.cuts.spread
        c = Candidate(pid, t.titles[i] or pid, t.years[i], float(dot(t.mat[i:i + 1], p.q)[0]),
                      0.0, float(p.score[i]), float((p.score[i] - median) / spread),
                      has_fulltext=bool(t.fulltext[i]), doi=t.dois[i], arxiv=t.arxivs[i], basis=t.basis[i])
        if p.title[i] > 0:
            title_words, _ = t.title_words()
            c.title_words = [w for w, forms in p.forms if not title_words[i].isdisjoint(forms)]
        wanted = p.wanted
        rows = []
        if pid in p.chunk_dense:
            rows.append(p.chunk_dense[pid][1])
        if pid in p.lex and (not rows or p.lex[pid][1]["id"] != rows[0]["id"]):
            rows.append(p.lex[pid][1])
        for r in rows:
            section = "title and abstract" if r["level"] == "paper" else (
                "the note" if r["level"] == "note" else r.get("section_path") or "")
            text = t.abstract(i, r["text"]) if r["level"] == "paper" else r["text"]
            c.passages.append({"text": best_sentences(text, wanted), "section": section,
                               "page": r.get("page_start") if r["level"] != "paper" else None})
        if not c.passages:
            c.passages.append({"text": best_sentences(t.abstract(i, t.texts[i] or ""), wanted), "page": None,
                               "section": "title and abstract"})
        if pid in p.contexts:
            c.context = p.contexts[pid][1]
        return c

    def _by_score(self, p: _Pass, excluded: set[str], without: frozenset
                  ) -> tuple[list[Candidate], list[Candidate], set[int]]:
        """Step 3: the papers chosen by their score (above their cut-off, naming one of the topic's own words),
        the near misses (below it, or naming none), and the rows of those that name none."""
        t, cuts, score = self.table, p.cuts, p.score
        order, ids = cuts.order, t.ids
        cut = cuts.per_row(t.basis)
        field_rows = [i for i in order if score[i] >= cuts.near]
        names, own = (scoring.specific(t, p.topic, field_rows, p.chunk_dense, p.lex) if "specific" not in without
                      else ({}, []))
        off_topic = {i for i in field_rows if names and not names.get(i)}
        selected = [self._candidate(p, i) for i in order
                    if score[i] >= cut[i] and ids[i] not in excluded and i not in off_topic]
        shown = len(selected) + len(off_topic) + 3 * self.params.near_shown + self.params.link_reads
        near = [self._candidate(p, i) for i in order[:shown]
                if cuts.near <= score[i] and ids[i] not in excluded and (score[i] < cut[i] or i in off_topic)]
        for c in near:
            if t.pos[c.id] in off_topic:
                c.evidence.append(Reason("unspecific", "names none of the topic's own words in its title, "
                                         f"abstract or matched passages ({', '.join(own)})"))
        return selected, near, off_topic

    def _linked_in(self, p: _Pass, core: list[Candidate], selected: list[Candidate], near: list[Candidate],
                   off_topic: set[int], allowed: np.ndarray | None, excluded: set[str], without: frozenset
                   ) -> tuple[list[Candidate], list[Candidate]]:
        """Steps 4 and 6 to 8: the papers the citation rules bring in (papervault.survey.topic.links), in order."""
        t, prm, cit, cuts, score = self.table, self.params, self.citing, p.cuts, p.score

        def cand(i: int) -> Candidate:
            return self._candidate(p, i)

        added = (links.linked(cit, prm, core, near, {t.ids[i] for i in off_topic}) if "links" not in without
                 else [])
        if "links" not in without and "wide" not in without:
            taken = {c.id for c in selected} | {c.id for c in added} | excluded
            added += links.wide(t, cit, p.topic, core, cuts.order, score, cuts.at(prm.wide_fraction), taken,
                                near, cand)
        selected, near = joined(selected, near, added)
        ok_pid = (lambda pid: bool(allowed[t.pos[pid]])) if allowed is not None else (lambda pid: True)
        if "survey" not in without:
            selected, near = joined(selected, near, links.vouched(
                t, cit, prm, core, selected, score, cuts.median, cuts.spread, cand, ok_pid, excluded, near,
                p.q if "contexts" not in without else None))
        if "contexts" not in without and "said" not in without:
            selected, near = joined(selected, near, links.said(
                t, cit, prm, core, selected, score, cuts.at(prm.said_floor), p.q, cand, ok_pid, excluded, near))
        if "contexts" not in without and "alongside" not in without:
            by_score = {c.id for c in selected if not c.links and all(r.kind == "citations" for r in c.evidence)}
            selected, near = joined(selected, near, links.alongside(
                t, cit, prm, by_score, {c.id for c in selected} | excluded, score, cuts.at(prm.cocite_floor),
                cand, ok_pid, near))
        return selected, near

    def _listed(self, p: _Pass, selected: list[Candidate], near: list[Candidate], excluded: set[str], pool: int
                ) -> tuple[list[Candidate], list[Candidate]]:
        """The near misses shown and the review's pool. Two lists of near misses: by score (just below the
        cut-off) and by citations (cited by selected papers, not enough to be chosen), each with its own budget,
        so that a long reference list does not crowd out the papers just below the cut-off, nor the other way
        round. The pool: up to `pool` of the next papers by score, listed nowhere else."""
        cited_near = [c for c in near if any(r.kind in evidence.CITED for r in c.evidence)]
        cited_ids = {c.id for c in cited_near}
        score_near = [c for c in near if c.id not in cited_ids]
        near = score_near[:self.params.near_shown] + cited_near[:self.params.cited_shown]
        listed = {c.id for c in selected} | {c.id for c in near} | excluded
        more = []
        for i in p.cuts.order:
            if len(more) >= pool:
                break
            if self.table.ids[i] not in listed:
                more.append(self._candidate(p, i))
        return near, more

    def finish(self, sel: TopicSelection, max_papers: int | None) -> None:
        """`sel` after its lists changed (a model's review moved papers in or out, papervault.survey.judge): cut
        to `max_papers`, and its citation lines counted again in the final selection (a paper brought in from
        beyond the near misses gets its line too)."""
        sel.selected, sel.near, cut = capped(sel.selected, sel.near, max_papers)
        sel.capped = sel.capped or cut
        if not sel.citing:
            return
        for c in sel.selected + sel.near:
            if not any(r.kind in ("citations", "cocited", "chain") for r in c.evidence):
                c.evidence.append(Reason("citations"))
        evidence.recount(self.citing, sel.selected, sel.near)


def select_topic(workspace, topic: str, **kwargs) -> TopicSelection:
    """The vault papers about `topic` (see the package's docstring)."""
    return TopicSelector(workspace).select(topic, **kwargs)
