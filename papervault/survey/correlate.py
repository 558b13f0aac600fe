"""Stage 4 of a survey: how the selected papers relate. Themes, lineages, a comparison table, consensus, conflict, gaps.

The lineages and the comparison table are facts read from the vault (reference lists, the notes' structured
fields) whatever the backend. The themes come from embedding clustering, and consensus, conflict and gaps
from quoted sentences of the papers (extractive), or from a model given the same material; either way every
statement cites the papers it rests on as `[@id]`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

import numpy as np

from papervault.survey.evidence import Passage, paper_sentences, quotable, rank_sentences, tokens
from papervault.survey.select import SurveyPaper

Embed = Callable[[list[str]], np.ndarray]


@dataclass
class Cluster:
    label: str
    paper_ids: list[str]
    terms: list[str] = field(default_factory=list)
    summary: str = ""


@dataclass
class Lineage:
    """`paper_id` builds on `builds_on`: its reference list cites that vault paper."""

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

_REF_HEAD = re.compile(r"^#{1,6}\s*(?:\d+\.?\s*)?(references|bibliography|works cited)\s*$", re.I | re.M)
_ARXIV_NEW = re.compile(r"\d{4}\.\d{4,5}")


def references_text(fulltext: str) -> str:
    """The raw text of a paper's reference list (after its last `References` heading), or ""."""
    heads = list(_REF_HEAD.finditer(fulltext))
    if heads:
        return fulltext[heads[-1].end():]
    # parsers that do not mark headings: the last line that is only "References"
    m = list(re.finditer(r"^\s*(?:\*\*)?(references|bibliography)(?:\*\*)?\s*$", fulltext, re.I | re.M))
    return fulltext[m[-1].end():] if m else ""


def find_lineages(papers: list[SurveyPaper]) -> list[Lineage]:
    """Which selected papers cite which, matching reference lists by DOI, arXiv id, then normalised title."""
    from papervault.ids import normalize_title

    out: list[Lineage] = []
    refs = {p.id: references_text(p.fulltext) for p in papers}
    norm_refs = {pid: " " + normalize_title(text) + " " for pid, text in refs.items()}
    for citing in papers:
        raw = refs[citing.id]
        if not raw.strip():
            continue
        low = raw.lower()
        for cited in papers:
            if cited.id == citing.id:
                continue
            via = None
            if cited.doi and cited.doi.lower() in low:
                via = "doi"
            elif cited.arxiv and _ARXIV_NEW.fullmatch(cited.arxiv.split("v")[0]) and cited.arxiv.split("v")[0] in low:
                via = "arxiv"
            else:
                title = normalize_title(cited.title)
                # a title of one or two words ("Paxos") matches too much to mean a citation
                if len(title.split()) >= 3 and f" {title} " in norm_refs[citing.id]:
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


# Words that say nothing about a theme (frequent in any paper's prose).
GENERIC = frozenset("""
allow allows also approach based case cases different even example first given however large made make makes
many much need needs new number often order part present presents problem provide provides second several show
since small still system systems takes time using well work works would year years describe describes paper
result results important design simple general set sets approach approaches
""".split())


def cluster_papers(papers: list[SurveyPaper], embed: Embed | None, *, max_k: int = 6) -> list[Cluster]:
    """Themes: papers grouped by the similarity of their profiles, k chosen by silhouette, named by their terms."""
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
    # Title words count three times: they name what a paper is about better than its prose does.
    toks = [tokens(f"{p.title} {p.title} {p.title}") + tokens(t) for p, t in zip(papers, texts)]
    df = Counter()
    for t in toks:
        df.update(set(t))
    clusters: list[Cluster] = []
    for c in sorted(set(labels), key=lambda c: labels.index(c)):
        members = [i for i, lab in enumerate(labels) if lab == c]
        tf = Counter()
        for i in members:
            tf.update({w: n for w, n in Counter(toks[i]).items()})
        inside = Counter()
        for i in members:
            inside.update(set(toks[i]))
        # distinctive terms: frequent in the cluster, shared by its members, rare outside it
        score = {w: n * (inside[w] / len(members)) * math.log(1 + len(papers) / df[w])
                 for w, n in tf.items() if not w.isdigit() and len(w) > 3 and w not in GENERIC}
        terms = [w for w, _ in sorted(score.items(), key=lambda kv: (-kv[1], kv[0]))[:4]]
        label = ", ".join(terms[:3]) if terms else papers[members[0]].title
        clusters.append(Cluster(label=label, paper_ids=[papers[i].id for i in members], terms=terms))
    return clusters


# --- comparison ------------------------------------------------------------------------------------

def _result_text(r: dict[str, Any]) -> str:
    if not isinstance(r, dict):
        return str(r)
    for k in ("result", "text", "claim", "value", "summary"):
        if r.get(k):
            base = str(r[k])
            extra = ", ".join(f"{x}: {r[x]}" for x in ("metric", "dataset") if r.get(x) and str(r[x]) not in base)
            return f"{base} ({extra})" if extra else base
    return "; ".join(f"{k}: {v}" for k, v in r.items() if v not in (None, "", []))


def comparison_rows(papers: list[SurveyPaper]) -> list[ComparisonRow]:
    """One row per paper from its note's structured fields (method, datasets, metrics, baselines, results)."""
    return [ComparisonRow(p.id, p.method, list(p.datasets), list(p.metrics), list(p.baselines),
                          [_result_text(r) for r in p.key_results][:3]) for p in papers]


# --- consensus, conflict, gaps (extractive) -------------------------------------------------------

GAP = re.compile(r"\b(future work|future research|remains? (?:an )?open|open (?:problem|question|issue|challenge)s?|"
                 r"(?:left|leave) (?:for|to) future|we (?:do not|don't|did not) (?:address|consider|handle|study)|"
                 r"beyond the scope|limitations?\b|not yet (?:been )?(?:studied|addressed|known|clear)|we plan to)", re.I)
CONTRAST = re.compile(r"\b(unlike|in contrast|contrary to|however|whereas|fails? to|cannot|does not|do not|"
                      r"not (?:\w+ ){0,2}(?:sufficient|enough|scale|possible|safe|correct)|instead of|rather than)\b", re.I)


def _quote(p: Passage) -> dict[str, Any]:
    return {"paper": p.paper_id, "text": p.text, "page": p.page}


def cite(pid: str, page: int | None = None) -> str:
    """A Pandoc citation of a vault paper, with a page locator when the page is known: the page the paper
    prints (`p. 223`), not the PDF's page index."""
    from papervault.pages import printed_for

    return f"[@{pid}, p. {printed_for(pid, page)}]" if page else f"[@{pid}]"


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def find_gaps(papers: list[SurveyPaper], topic: str, *, per_paper: int = 2) -> list[Statement]:
    """Open problems the papers name themselves: their sentences about future work, limitations, open questions."""
    out = []
    for p in papers:
        cands = [s for s in paper_sentences(p.id, p.fulltext) if GAP.search(s.text) and quotable(s.text)]
        ranked = rank_sentences(topic + " " + p.title, cands, limit=per_paper) or cands[:per_paper]
        for s in ranked[:per_paper]:
            out.append(Statement(f"{p.short_author} {cite(p.id)}: “{s.text}” {cite(p.id, s.page)}", [p.id], [_quote(s)]))
    return out


def topic_sentences(p: SurveyPaper, query: str, limit: int = 6) -> list[Passage]:
    """The paper's quotable sentences most about `query` (its abstract sentences when nothing matches)."""
    ranked = rank_sentences(query, paper_sentences(p.id, p.fulltext), limit=limit)
    if ranked:
        return ranked
    return [s for s in paper_sentences(p.id, p.fulltext) if quotable(s.text)][:limit]


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
    # a paper that names another selected paper's system while contrasting with it
    names = {p.id: _system_name(p) for p in papers}
    for p in papers:
        for s in paper_sentences(p.id, p.fulltext):
            if not CONTRAST.search(s.text) or not quotable(s.text):
                continue
            for other, name in names.items():
                if other != p.id and name and re.search(rf"\b{re.escape(name)}\b", s.text):
                    conflicts.append(Statement(
                        f"{p.short_author} {cite(p.id)} on {name} {cite(other)}: “{s.text}” {cite(p.id, s.page)}",
                        [p.id, other], [_quote(s)]))
                    break
            if sum(1 for c in conflicts if c.cites[0] == p.id) >= 2:
                break
    return consensus, conflicts


def _system_name(p: SurveyPaper) -> str:
    """The name a paper gives its system ("Megastore: ..." -> "Megastore"); "" when the title has none."""
    head = p.title.split(":")[0].strip()
    if ":" in p.title and 2 < len(head) <= 24 and len(head.split()) <= 2 and head[0].isupper():
        return head
    return ""


def correlate(topic: str, papers: list[SurveyPaper], *, embed: Embed | None = None) -> Correlation:
    """The extractive correlation of `papers`: every statement is a fact from the vault or a quotation."""
    consensus, conflicts = find_consensus_conflict(papers, topic)
    return Correlation(
        topic=topic, papers=[p.id for p in papers], clusters=cluster_papers(papers, embed),
        lineages=find_lineages(papers), comparison=comparison_rows(papers), consensus=consensus,
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
