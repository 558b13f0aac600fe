"""The citation rules that bring a paper below the cut-off into a topic's selection (the module's steps 4, 6, 7
and 8), each a function of the candidates table, the vault's citations and the selection so far: a link to a
selected paper, a wide link by the topic's rarer words, the topic's own survey vouching for its references, a
citing sentence near the topic, and a sentence that cites a paper alongside papers chosen by their score.

Each returns the papers it brings in, each with its reason appended to its `links`. `cand(i)` makes the candidate
of row `i` (a near miss keeps its own), `allowed(pid)` says whether a paper may be chosen at all."""

from __future__ import annotations

from typing import Callable

import numpy as np

from papervault.survey.selection import Reason
from papervault.survey.topic.citing import Citing
from papervault.survey.topic.params import TopicParams
from papervault.survey.topic.scoring import rare_forms
from papervault.survey.topic.table import Candidate, PaperTable
from papervault.survey.topic.text import words

MakeCandidate = Callable[[int], Candidate]
Allowed = Callable[[str], bool]


def vouched(table: PaperTable, citing: Citing, params: TopicParams, core: list[Candidate],
            selected: list[Candidate], score: np.ndarray, median: float, spread: float, cand: MakeCandidate,
            allowed: Allowed, excluded: set[str], near: list[Candidate], q: np.ndarray | None = None
            ) -> list[Candidate]:
    """The papers a topic's own survey vouches for. A core paper whose reference list names at least
    vouch_refs vault papers and vouch_cover of the other selected papers is the topic's survey (SoK: Eternal
    War in Memory for "memory corruption attacks and defenses"); a core paper of the field around the topic
    (Megastore for "consensus") cites about half of the selection and vouches for nothing. Each vault paper it
    cites is chosen when no paper outside the selection cites it (a paper the rest of the vault cites is the
    field's or everyone's, not the topic's) and its score stands above the vault's median (vouch_z robust
    deviations): "Smashing the Stack for Fun and Profit", whose title names none of the topic's words."""
    g = citing.graph()
    pos = table.pos
    sel = {c.id for c in selected}
    near_by_id = {c.id: c for c in near}
    out: list[Candidate] = []
    taken = sel | excluded
    for v in core:
        cites = g.cites.get(v.id, set())
        others = sel - {v.id}
        if len(cites) < params.vouch_refs or len(others) < 3:
            continue
        covered = len(cites & others)
        if covered < params.vouch_cover * len(others):
            continue
        # Which of its references are the topic's: those it cites in sentences nearer the topic than its
        # median citing sentence (a survey's references mix the topic with its surroundings).
        said = {pid: sc for pid, (sc, _) in citing.by(q, v.id).items()} if q is not None else {}
        bar = float(np.quantile(list(said.values()), params.vouch_quantile)) if said else -np.inf
        for pid in sorted(cites - taken, key=lambda p: -score[pos[p]] if p in pos else 0.0):
            i = pos.get(pid)
            if i is None or not allowed(pid) or not np.isfinite(score[i]):
                continue
            if score[i] < median + params.vouch_z * spread:
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


def said(table: PaperTable, citing: Citing, params: TopicParams, core: list[Candidate], selected: list[Candidate],
         score: np.ndarray, floor: float, q: np.ndarray, cand: MakeCandidate, allowed: Allowed, excluded: set[str],
         near: list[Candidate]) -> list[Candidate]:
    """Papers a core paper cites in a sentence about the topic: a sentence as near the topic as those in which
    it cites the papers already selected (said_quantile of them, said_min at least), the paper's own score
    down to `floor`. A core paper's reference list mixes the topic with its surroundings; the sentence that
    cites a reference says which it is ("Smashing the Stack for Fun and Profit", which SoK: Eternal War in
    Memory cites for "the stack smashing attack")."""
    sel = {c.id for c in selected}
    near_by_id = {c.id: c for c in near}
    out: list[Candidate] = []
    taken = sel | excluded
    for v in core:
        by = citing.by(q, v.id)
        known = [sc for pid, (sc, _) in by.items() if pid in sel]
        if len(known) < params.said_min:
            continue
        bar = float(np.quantile(known, params.said_quantile))
        for pid, (sc, ctx) in sorted(by.items(), key=lambda kv: -kv[1][0]):
            i = table.pos.get(pid)
            if pid in taken or i is None or not allowed(pid) or sc < bar or score[i] < floor:
                continue
            c = near_by_id.get(pid) or cand(i)
            c.links.append(Reason("said", f"“{ctx.text}”", ctx.page, other=v.id))
            out.append(c)
            taken.add(pid)
    return out


def wide(table: PaperTable, citing: Citing, topic: str, core: list[Candidate], order: list[int],
         score: np.ndarray, floor: float, taken: set[str], near: list[Candidate], cand: MakeCandidate
         ) -> list[Candidate]:
    """Papers below the near-miss window that a core paper's reference list names and whose title or abstract
    names one of the topic's rarer words ("Generalized Isolation Level Definitions", which Elle cites, for
    "checking transactional isolation anomalies"): the topic's surest paper vouches for it and its own words
    say which part of that paper's references it is. Down to `floor` (wide_fraction of the cut-off's
    margin)."""
    g = citing.graph()
    readers = [c for c in core if c.id in g.with_refs]
    if not readers:
        return []
    rare = rare_forms(table, topic)
    if not rare:
        return []
    near_by_id = {c.id: c for c in near}
    out: list[Candidate] = []
    for i in order:
        if score[i] < floor:
            break
        pid = table.ids[i]
        if pid in taken:
            continue
        by = [c.id for c in readers if pid in g.cites.get(c.id, ())]
        if not by:
            continue
        if rare.isdisjoint(words(table.text_of(i))):
            continue
        c = near_by_id.get(pid) or cand(i)
        c.links.append(Reason("cited", "its reference list names it; it names the topic's rarer words "
                              + ", ".join(sorted(rare & set(words(table.text_of(i))))),
                              other=by[0]))
        out.append(c)
    return out


def linked(citing: Citing, params: TopicParams, selected: list[Candidate], near: list[Candidate],
           unspecific: set[str] = frozenset()) -> list[Candidate]:
    """Near misses linked by a citation to a selected paper (either direction), with the link as reason.
    A near miss that names none of the topic's words (`unspecific`) is linked only when a selected paper's
    reference list names it: the topic's surest papers cite it, which its words do not say."""
    if not selected or not near:
        return []
    how = citing.graph().how       # (citing, cited) -> the rule of the citation graph that named it
    out: list[Candidate] = []
    for c in near[:params.link_reads]:
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


def alongside(table: PaperTable, citing: Citing, params: TopicParams, by_score: set[str], taken: set[str],
              score: np.ndarray, floor: float, cand: MakeCandidate, allowed: Allowed, near: list[Candidate]
              ) -> list[Candidate]:
    """Papers some vault paper cites in one sentence with at least cocite_min papers chosen by their own score
    ("MapReduce [21], Dryad [29], Piccolo [55], Spark [67] ... and Naiad [47]"), their own score down to
    `floor`: a sentence that enumerates a field's work names the papers whose titles say nothing of it ("The
    Geometry of Innocent Flesh on the Bone", which SoK: Eternal War in Memory cites in "Return-Oriented
    Programming (ROP) [6], [7], [8] ..." with two return-oriented programming papers chosen by score)."""
    rows, ctxs, _ = citing.context_rows()
    groups: dict[tuple[str, str], tuple[set[str], int | None]] = {}
    for r, c in zip(rows.tolist(), ctxs):
        cited, page = groups.setdefault((c.citing, c.text), (set(), c.page))
        cited.add(table.ids[r])
    near_by_id = {c.id: c for c in near}
    out: list[Candidate] = []
    for (by, text), (cited, page) in sorted(groups.items(), key=lambda kv: kv[0]):
        with_sel = sorted(cited & by_score)
        if len(with_sel) < params.cocite_min:
            continue
        for pid in sorted(cited - taken):
            i = table.pos.get(pid)
            if i is None or not allowed(pid) or not np.isfinite(score[i]) or score[i] < floor:
                continue
            c = near_by_id.get(pid) or cand(i)
            c.links.append(Reason("alongside", f"“{text}”", page, section=" ".join(with_sel), other=by))
            out.append(c)
            taken.add(pid)
    return out
