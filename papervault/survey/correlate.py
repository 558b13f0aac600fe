"""Stage 4 of a survey: how the selected papers relate. Themes, lineages, a comparison table, consensus, conflict, gaps.

The lineages and the comparison table are facts read from the vault (reference lists, the notes' structured
fields) whatever the backend. The themes come from embedding clustering, and consensus, conflict and gaps
from quoted sentences of the papers (extractive), or from a model given the same material; either way every
statement cites the papers it rests on as `[@id]`.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from papervault.agents.cited_work import references_text
from papervault.survey.citations import Matcher
from papervault.survey.evidence import Passage, paper_sentences, quotable, rank_sentences, tokens
from papervault.survey.papers import SurveyPaper, cite  # noqa: F401 - cite: its name here too
from papervault.ids import normalize_title
from papervault.parse.text import dehyphen
from papervault.survey.attribution import own_claim, remark, system_name, who
from papervault.survey.keyphrases import Vocabulary, label as phrase_label

Embed = Callable[[list[str]], np.ndarray]


@dataclass
class Cluster:
    label: str
    paper_ids: list[str]                 # ordered by lineage (a paper after the vault papers it cites), then year
    terms: list[str] = field(default_factory=list)       # the key phrases, as the papers write them
    summary: str = ""
    passages: list[dict[str, Any]] = field(default_factory=list)   # {"paper", "text", "page", "phrase"}


@dataclass
class Lineage:
    """`paper_id` cites `builds_on`: its reference list names that vault paper (the field keeps its old name)."""

    paper_id: str
    builds_on: str
    via: str                         # "doi" | "arxiv" | "title"


@dataclass
class ComparisonRow:
    paper_id: str
    method: str = ""
    datasets: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    baselines: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)   # {"setting", "metric", "value", "page", "source"}


@dataclass
class Statement:
    """A point of consensus, conflict or an open gap, with the quoted evidence it rests on."""

    text: str                        # Markdown, already citing `[@id]`
    cites: list[str]
    quotes: list[dict[str, Any]] = field(default_factory=list)   # {"paper": id, "text": ..., "page": n}


@dataclass
class Correlation:
    topic: str
    papers: list[str]
    clusters: list[Cluster] = field(default_factory=list)
    lineages: list[Lineage] = field(default_factory=list)
    comparison: list[ComparisonRow] = field(default_factory=list)
    consensus: list[Statement] = field(default_factory=list)
    conflicts: list[Statement] = field(default_factory=list)
    gaps: list[Statement] = field(default_factory=list)
    backend: str = "extractive"
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Correlation":
        return cls(
            topic=d["topic"], papers=list(d.get("papers", [])),
            clusters=[Cluster(**c) for c in d.get("clusters", [])],
            lineages=[Lineage(**x) for x in d.get("lineages", [])],
            comparison=[ComparisonRow(**r) for r in d.get("comparison", [])],
            consensus=[Statement(**s) for s in d.get("consensus", [])],
            conflicts=[Statement(**s) for s in d.get("conflicts", [])],
            gaps=[Statement(**s) for s in d.get("gaps", [])],
            backend=d.get("backend", "extractive"), notes=list(d.get("notes", [])),
        )


# --- lineages --------------------------------------------------------------------------------------

_ARXIV_NEW = re.compile(r"\d{4}\.\d{4,5}")


# A paper cites the work of later years only as a preprint, report or "to appear": a reference to a vault paper
# more than this many years younger than the citing one is an earlier version of it (FLP, 1985, cites the
# 1984 conference version of the 1988 journal paper), not a citation of that paper.
YEAR_TOLERANCE = 1


def find_lineages(papers: list[SurveyPaper]) -> list[Lineage]:
    """Which selected papers cite which, matching reference lists by DOI, arXiv id, then normalised title; a
    paper never cites one published more than `YEAR_TOLERANCE` years after it."""
    out: list[Lineage] = []
    # line-break hyphenation ("dis- tributed") would hide a title from the match
    refs = {p.id: dehyphen(references_text(p.fulltext)) for p in papers}
    norm_refs = {pid: " " + normalize_title(text) + " " for pid, text in refs.items()}
    for citing in papers:
        raw = refs[citing.id]
        if not raw.strip():
            continue
        low = raw.lower()
        for cited in papers:
            if cited.id == citing.id:
                continue
            if citing.year and cited.year and cited.year > citing.year + YEAR_TOLERANCE:
                continue
            via = None
            if cited.doi and cited.doi.lower() in low:
                via = "doi"
            elif cited.arxiv and _ARXIV_NEW.fullmatch(cited.arxiv.split("v")[0]) and cited.arxiv.split("v")[0] in low:
                via = "arxiv"
            else:
                title = normalize_title(cited.title)
                # a title of one or two words ("Soft typing") matches too much to mean a citation on its own: it
                # counts with its first author and year in the same entry (papervault.survey.citations.Matcher)
                if len(title.split()) >= 3 and f" {title} " in norm_refs[citing.id]:
                    via = "title"
                elif title and len(title.split()) < 3 and Matcher(
                        [cited.id], [cited.title], [""], [""], [cited.authors], [cited.year]).short_named(raw):
                    via = "title"
            if via:
                out.append(Lineage(citing.id, cited.id, via))
    return out


# --- themes ----------------------------------------------------------------------------------------

def paper_profile(p: SurveyPaper) -> str:
    """The text that stands for a paper when papers are compared: title, abstract and method."""
    parts = [p.title, p.abstract, p.method]
    if not p.abstract:
        parts.append(" ".join(s.text for s in paper_sentences(p.id, p.fulltext)[:8]))
    return "\n".join(x for x in parts if x)


def _average_linkage(sim: np.ndarray, k: int) -> list[int]:
    """Agglomerative clustering (average linkage on cosine similarity) down to `k` clusters."""
    groups = [[i] for i in range(len(sim))]
    while len(groups) > k:
        best, pair = -math.inf, (0, 1)
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                s = float(np.mean(sim[np.ix_(groups[a], groups[b])]))
                if s > best:
                    best, pair = s, (a, b)
        a, b = pair
        groups[a] = groups[a] + groups[b]
        del groups[b]
    labels = [0] * len(sim)
    for gi, g in enumerate(groups):
        for i in g:
            labels[i] = gi
    return labels


def _silhouette(sim: np.ndarray, labels: list[int]) -> float:
    dist = 1.0 - sim
    n = len(labels)
    scores = []
    for i in range(n):
        same = [j for j in range(n) if labels[j] == labels[i] and j != i]
        if not same:
            scores.append(0.0)
            continue
        a = float(np.mean(dist[i, same]))
        b = min(float(np.mean(dist[i, [j for j in range(n) if labels[j] == c]]))
                for c in set(labels) if c != labels[i])
        scores.append((b - a) / max(a, b, 1e-9))
    return float(np.mean(scores))


def theme_text(p: SurveyPaper) -> str:
    """The abstract a theme's key phrases are drawn from: the note's abstract, else the paper's opening sentences."""
    if p.abstract:
        return p.abstract
    return " ".join(s.text for s in paper_sentences(p.id, p.fulltext)[:10])[:2500]


def lineage_order(ids: list[str], papers: dict[str, SurveyPaper], lineages: list[Lineage]) -> list[str]:
    """`ids` so that a paper comes after the papers among them it cites; otherwise by year (undated last), id."""
    members = set(ids)
    before = {i: {x.builds_on for x in lineages if x.paper_id == i and x.builds_on in members and x.builds_on != i}
              for i in ids}

    def key(i: str):
        y = papers[i].year if i in papers else None
        return (y is None, y or 0, i)

    out: list[str] = []
    left = sorted(ids, key=key)
    while left:
        ready = [i for i in left if not (before[i] - set(out))] or left[:1]     # a citation cycle: oldest first
        out.append(ready[0])
        left.remove(ready[0])
    return out


def defining_passages(p: SurveyPaper, phrases: list[str]) -> list[dict[str, Any]]:
    """The paper's own sentence in which the most theme phrases occur (the earliest of equals: abstract first),
    with its page and the first phrase it contains."""
    pats = [(ph, re.compile(rf"(?<![\w-]){re.escape(ph)}(?![\w-])", re.I)) for ph in phrases]
    best, best_n = None, 0
    for s in paper_sentences(p.id, p.fulltext):
        hits = [ph for ph, pat in pats if pat.search(s.text)]
        if len(hits) > best_n and quotable(s.text) and own_claim(p, s):
            best, best_n = (s, hits[0]), len(hits)
    if best is None:
        return []
    s, phrase = best
    return [{"paper": p.id, "text": s.text, "page": s.page, "phrase": phrase}]


def cluster_papers(papers: list[SurveyPaper], embed: Embed | None, *, max_k: int = 6,
                   lineages: list[Lineage] | None = None) -> list[Cluster]:
    """Themes: papers grouped by the similarity of their profiles, k chosen by silhouette, named by key phrases
    of their titles and abstracts (`papervault.survey.keyphrases`), members ordered by lineage and year."""
    if not papers:
        return []
    texts = [paper_profile(p) for p in papers]
    if embed is not None and len(papers) > 2:
        vecs = np.asarray(embed(texts), dtype=np.float32)
        vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-9)
        sim = vecs @ vecs.T
        best_labels, best_score = [0] * len(papers), -1.0
        for k in range(2, min(max_k, len(papers) - 1) + 1):
            labels = _average_linkage(sim, k)
            score = _silhouette(sim, labels)
            if score > best_score + 1e-6:
                best_labels, best_score = labels, score
        labels = best_labels
    else:
        labels = [0] * len(papers)
    vocab = Vocabulary({p.id: (p.title, theme_text(p)) for p in papers})
    by_id = {p.id: p for p in papers}
    all_ids = [p.id for p in papers]
    clusters: list[Cluster] = []
    for c in sorted(set(labels), key=lambda c: labels.index(c)):
        members = [papers[i].id for i, lab in enumerate(labels) if lab == c]
        phrases = [vocab.shown(k) for k in vocab.rank(members, all_ids, limit=3)]
        ordered = lineage_order(members, by_id, lineages or [])
        passages = [d for pid in ordered for d in defining_passages(by_id[pid], phrases)]
        name = phrase_label(phrases) or by_id[members[0]].title
        clusters.append(Cluster(label=name, paper_ids=ordered, terms=phrases, passages=passages))
    return clusters


# --- comparison ------------------------------------------------------------------------------------

# Column headers and row labels that name no metric or setting ("Measure", "Value", a bare number).
PLACEHOLDER = frozenset("""
measure measures measurement value values metric metrics result results score scores number numbers no no. # n/a
na item items name names parameter parameters quantity quantities data setting settings column col row entry
entries field fields variable variables type types - – — total
""".split())


def _known(text: Any) -> str:
    """`text` when it names something (not empty, not a placeholder, not only a number or symbol), else ""."""
    t = " ".join(str(text or "").split()).strip(" :|*")
    if not t or t.lower() in PLACEHOLDER or len(t) < 2 or not re.search(r"[A-Za-z]{2}", t):
        return ""
    if re.fullmatch(r"(?i)(?:col(?:umn)?|row|measure|metric|value)\s*\d*", t):
        return ""
    return t


def result_evidence(r: Any) -> dict[str, Any] | None:
    """A reported number fit for a comparison table: its value, the metric and the setting it belongs to and
    the page it is printed on are all known; None otherwise (a free-text result, a placeholder header, a
    probability without the configuration it is for)."""
    if not isinstance(r, dict):
        return None
    value = " ".join(str(r.get("value") or "").split())
    metric = _known(r.get("metric"))
    setting = _known(r.get("setting") or r.get("dataset"))
    page = r.get("page")
    if not value or not re.search(r"\d", value) or not metric or not setting or not isinstance(page, int) or page < 1:
        return None
    if metric.lower() == setting.lower():
        return None
    return {"setting": setting, "metric": metric, "value": value, "page": page,
            "source": " ".join(str(r.get("source") or "").split())}


def result_text(e: dict[str, Any]) -> str:
    where = f"{e['source']}, p. {e['page']}" if e.get("source") else f"p. {e['page']}"
    return f"{e['setting']}: {e['metric']} = {e['value']} ({where})"


def comparison_rows(papers: list[SurveyPaper], *, per_paper: int = 3) -> list[ComparisonRow]:
    """One row per paper from its note's structured fields (method, datasets, metrics, baselines, results);
    a result is shown only with its metric, its setting and its page (`result_evidence`)."""
    rows = []
    for p in papers:
        ev = [e for e in (result_evidence(r) for r in p.key_results) if e][:per_paper]
        rows.append(ComparisonRow(p.id, p.method, list(p.datasets), list(p.metrics), list(p.baselines),
                                  [result_text(e) for e in ev], ev))
    return rows


# --- consensus, conflict, gaps (extractive) -------------------------------------------------------

GAP = re.compile(r"\b(future work|future research|remains? (?:an )?open|open (?:problem|question|issue|challenge)s?|"
                 r"(?:left|leave) (?:for|to) future|we (?:do not|don't|did not) (?:address|consider|handle|study)|"
                 r"beyond the scope|limitations?\b|not yet (?:been )?(?:studied|addressed|known|clear)|we plan to)", re.I)
CONTRAST = re.compile(r"\b(unlike|in contrast|contrary to|however|whereas|fails? to|cannot|does not|do not|"
                      r"not (?:\w+ ){0,2}(?:sufficient|enough|scale|possible|safe|correct)|instead of|rather than)\b", re.I)


def _quote(p: Passage) -> dict[str, Any]:
    return {"paper": p.paper_id, "text": p.text, "page": p.page}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def find_gaps(papers: list[SurveyPaper], topic: str, *, per_paper: int = 2) -> list[Statement]:
    """Open problems the papers name themselves: their own sentences about future work, limitations, open
    questions (a related-work sentence about another paper's limits is not the citing paper's gap)."""
    out = []
    for p in papers:
        cands = [s for s in paper_sentences(p.id, p.fulltext)
                 if GAP.search(s.text) and quotable(s.text) and own_claim(p, s)]
        ranked = rank_sentences(topic + " " + p.title, cands, limit=per_paper) or cands[:per_paper]
        for s in ranked[:per_paper]:
            out.append(Statement(f"{who(p)} {cite(p.id)}: “{s.text}” {cite(p.id, s.page)}", [p.id], [_quote(s)]))
    return out


def topic_sentences(p: SurveyPaper, query: str, limit: int = 6) -> list[Passage]:
    """The paper's own quotable sentences most about `query` (its first ones when nothing matches); sentences
    describing other work are left out."""
    own = [s for s in paper_sentences(p.id, p.fulltext) if own_claim(p, s)]
    ranked = rank_sentences(query, own, limit=limit)
    if ranked:
        return ranked
    return [s for s in own if quotable(s.text)][:limit]


def find_consensus_conflict(papers: list[SurveyPaper], topic: str, *, shared_min: int = 2,
                            sim_threshold: float = 0.18) -> tuple[list[Statement], list[Statement]]:
    """Consensus: what several papers share (datasets, metrics, baselines) and pairs of their sentences that say
    alike; conflict: such pairs where one side contrasts or negates, and sentences that set a paper against
    another vault paper it names."""
    consensus: list[Statement] = []
    conflicts: list[Statement] = []
    for field_name, what in (("datasets", "evaluate on"), ("metrics", "measure"), ("baselines", "compare against")):
        holders: dict[str, list[str]] = {}
        shown: dict[str, str] = {}
        for p in papers:
            for v in getattr(p, field_name):
                key = " ".join(tokens(v)) or v.lower()
                holders.setdefault(key, [])
                if p.id not in holders[key]:
                    holders[key].append(p.id)
                shown.setdefault(key, v)
        for key, ids in sorted(holders.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if len(ids) >= shared_min:
                cites = "; ".join(f"@{i}" for i in ids)
                consensus.append(Statement(f"{len(ids)} papers {what} {shown[key]} [{cites}].", list(ids)))
    top = {p.id: topic_sentences(p, topic + " " + p.title, limit=8) for p in papers}
    toks = {pid: [set(tokens(s.text)) for s in ss] for pid, ss in top.items()}
    pairs = []
    ids = [p.id for p in papers]
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            best = (0.0, None, None)
            for sa, ta in zip(top[a], toks[a]):
                for sb, tb in zip(top[b], toks[b]):
                    j = _jaccard(ta, tb)
                    if j > best[0]:
                        best = (j, sa, sb)
            if best[0] >= sim_threshold:
                pairs.append(best)
    pairs.sort(key=lambda x: -x[0])
    for _, sa, sb in pairs[:6]:
        ca, cb = bool(CONTRAST.search(sa.text)), bool(CONTRAST.search(sb.text))
        text = (f"“{sa.text}” {cite(sa.paper_id, sa.page)} — “{sb.text}” {cite(sb.paper_id, sb.page)}")
        st = Statement(text, [sa.paper_id, sb.paper_id], [_quote(sa), _quote(sb)])
        (conflicts if ca != cb else consensus).append(st)
    # a paper that names another selected paper's system while contrasting with it: a remark about that
    # paper, cited to it, with the remarking paper as its source

    names = {p.id: system_name(p.title) for p in papers}
    by_id = {p.id: p for p in papers}
    for p in papers:
        for s in paper_sentences(p.id, p.fulltext):
            if not CONTRAST.search(s.text) or not quotable(s.text):
                continue
            for other, name in names.items():
                if other != p.id and name and re.search(rf"\b{re.escape(name)}\b", s.text):
                    conflicts.append(Statement(remark(by_id[other], p, s, name=name), [other, p.id], [_quote(s)]))
                    break
            if sum(1 for c in conflicts if len(c.cites) == 2 and c.cites[1] == p.id and not c.quotes[1:]) >= 2:
                break
    return consensus, conflicts


def correlate(topic: str, papers: list[SurveyPaper], *, embed: Embed | None = None) -> Correlation:
    """The extractive correlation of `papers`: every statement is a fact from the vault or a quotation."""
    consensus, conflicts = find_consensus_conflict(papers, topic)
    lineages = find_lineages(papers)
    return Correlation(
        topic=topic, papers=[p.id for p in papers], clusters=cluster_papers(papers, embed, lineages=lineages),
        lineages=lineages, comparison=comparison_rows(papers), consensus=consensus,
        conflicts=conflicts, gaps=find_gaps(papers, topic), backend="extractive",
    )


# --- with a model ----------------------------------------------------------------------------------

CORRELATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["clusters", "consensus", "conflicts", "gaps"],
    "properties": {
        "clusters": {"type": "array", "items": {
            "type": "object", "required": ["label", "paper_ids"],
            "properties": {"label": {"type": "string"}, "paper_ids": {"type": "array", "items": {"type": "string"}},
                           "summary": {"type": "string"}}}},
        "consensus": {"type": "array", "items": {"$ref": "#/$defs/statement"}},
        "conflicts": {"type": "array", "items": {"$ref": "#/$defs/statement"}},
        "gaps": {"type": "array", "items": {"$ref": "#/$defs/statement"}},
    },
    "$defs": {"statement": {"type": "object", "required": ["text", "cites"],
                            "properties": {"text": {"type": "string"},
                                           "cites": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}},
}


def merge_model_answer(base: Correlation, answer: dict[str, Any], backend: str) -> Correlation:
    """A model's themes and statements over the extractive facts; cites of papers not selected are dropped."""
    known = set(base.papers)

    def statements(items) -> list[Statement]:
        out = []
        for it in items or []:
            cites = [c.lstrip("@") for c in it.get("cites", []) if c.lstrip("@") in known]
            if not cites:
                continue
            text = it["text"].strip()
            if "[@" not in text:
                text += " [" + "; ".join(f"@{c}" for c in cites) + "]"
            out.append(Statement(text, cites))
        return out

    clusters = []
    for c in answer.get("clusters", []):
        ids = [i.lstrip("@") for i in c.get("paper_ids", []) if i.lstrip("@") in known]
        if ids:
            clusters.append(Cluster(label=c["label"], paper_ids=ids, summary=c.get("summary", "")))
    base.clusters = clusters or base.clusters
    base.consensus = statements(answer.get("consensus")) or base.consensus
    base.conflicts = statements(answer.get("conflicts")) or base.conflicts
    base.gaps = statements(answer.get("gaps")) or base.gaps
    base.backend = backend
    return base
