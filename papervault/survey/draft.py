"""Stage 6 of a survey: one section of prose per outline section, every claim cited as `[@id, p. N]`.

The extractive draft is made of quoted sentences of the cited papers, each with its citation and a link to
the page it comes from; the only words of its own are headings and the names of the papers it quotes. A model
backend writes prose from the same evidence, and polishing checks what it wrote.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from papervault import doi as DOI
from papervault.survey.attribution import own_claim, remark, remarks_about, who
from papervault.survey.correlate import Correlation
from papervault.agents.cited_work import other_work
from papervault.agents.paperdoc import sentences
from papervault.survey.evidence import Passage, index_passages, paper_sentences, quotable, rank_sentences
from papervault.survey.outline import Section
from papervault.survey.papers import SurveyPaper, cite
from papervault.vault.paper import page_link as paper_link
from papervault.pages import printed_for

PER_PAPER = 2            # quotations per paper in a section
CELL_MAX = 160           # characters of a comparison table's cell
PAPERS_PER_CUSTOM = 4    # papers quoted in a section whose outline names none


@dataclass
class SectionDraft:
    title: str
    markdown: str            # the section body, without its heading
    cites: list[str] = field(default_factory=list)
    backend: str = "extractive"
    quotes: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def page_link(pid: str, page: int | None) -> str:
    """A Markdown link from `surveys/<slug>/survey.md` to the page of the paper's full text: it says the
    printed page and opens the PDF page's anchor."""
    return f"([p. {printed_for(pid, page)}]({paper_link(pid, page, prefix='../../papers/')}))" if page \
        else f"([paper]({paper_link(pid, prefix='../../papers/')}))"


def quote_line(p: SurveyPaper, s: Passage) -> str:
    return f"- **{who(p)}**: “{s.text}” {cite(p.id, s.page)} {page_link(p.id, s.page)}"


def remark_line(about: SurveyPaper, source: SurveyPaper, s: Passage) -> str:
    """A quotation of `source` describing `about`: cited to `about`, with `source` as the remark's source."""
    return "- " + remark(about, source, s, name=f"**{who(about)}**", link=page_link(source.id, s.page))


def pick_sentences(p: SurveyPaper, query: str, *, limit: int = PER_PAPER, used: set[str] | None = None,
                   prefer: tuple[str, ...] = ()) -> list[Passage]:
    """The paper's own quotable sentences most relevant to `query`; sections named in `prefer` first. Sentences
    that describe other work (`papervault.survey.attribution`) are never quoted as the paper's claim."""
    used = used if used is not None else set()
    pool = [s for s in paper_sentences(p.id, p.fulltext) if own_claim(p, s)]
    if prefer:
        preferred = [s for s in pool if any(s.section.lower().lstrip("0123456789. ").startswith(x) for x in prefer)]
        pool = preferred or pool
    ranked = rank_sentences(query, pool, limit=limit + len(used) + 4)
    if not ranked:
        ranked = [s for s in pool if quotable(s.text)]
    out = []
    for s in ranked:
        if s.text in used:
            continue
        out.append(s)
        used.add(s.text)
        if len(out) >= limit:
            break
    return out


def _comparison_table(correlation: Correlation, papers: dict[str, SurveyPaper]) -> list[str]:
    def cell(v) -> str:
        text = "; ".join(v) if isinstance(v, list) else (v or "")
        # a long cell ends at a word, with an ellipsis, never inside one ("method invoc")
        return _cut(text, CELL_MAX).replace("|", "\\|") or "–"

    def results(r) -> str:
        # only numbers whose metric, setting and page are known (correlate.result_evidence), each linked to its page
        out = []
        for e in r.evidence:
            src = f"{cell(e['source'])}, " if e.get("source") else ""
            out.append(f"{cell(e['setting'])}: {cell(e['metric'])} = {cell(e['value'])} "
                       f"({src}[p. {e['page']}]({paper_link(r.paper_id, e['page'], prefix='../../papers/')}))")
        return "; ".join(out) or "–"

    lines = ["| Paper | Method | Datasets | Metrics | Reported results |", "|---|---|---|---|---|"]
    for r in correlation.comparison:
        if r.paper_id not in papers:
            continue
        lines.append(f"| [@{r.paper_id}] | {cell(r.method)} | {cell(r.datasets)} | {cell(r.metrics)} | {results(r)} |")
    return lines


def _theme_lines(cluster, papers: dict[str, SurveyPaper], correlation: Correlation, used: set[str]) -> list[str]:
    """A theme's papers in lineage order (and which vault papers each builds on) and its defining passages
    (those not quoted earlier in the survey)."""
    members = [pid for pid in cluster.paper_ids if pid in papers]
    if not members:
        return []
    parts = []
    for pid in members:
        builds = [x.builds_on for x in correlation.lineages if x.paper_id == pid and x.builds_on in members]
        after = f", which cites {', '.join(f'[@{b}]' for b in builds)}" if builds else ""
        parts.append(f"{who(papers[pid])} [@{pid}]{after}")
    lines = ["Papers of this theme, each after the vault papers it cites, then by year:", "", "; ".join(parts) + ".", ""]
    fresh = [d for d in cluster.passages if d["paper"] in papers and d["text"] not in used]
    if fresh:
        phrases = ", ".join(f"*{t}*" for t in cluster.terms)
        lines += [f"Where the papers name the theme ({phrases}):", ""]
        for d in fresh:
            p = papers[d["paper"]]
            lines.append(quote_line(p, Passage(p.id, d["text"], d["page"])))
            used.add(d["text"])
        lines.append("")
    return lines


def draft_section(section: Section, topic: str, papers: dict[str, SurveyPaper], correlation: Correlation,
                  *, used: set[str] | None = None) -> SectionDraft:
    """The extractive draft of one section: quotations of the papers it cites, chosen for its purpose."""
    used = set() if used is None else used
    cited = [papers[c] for c in section.cites if c in papers]
    query = f"{topic} {section.title} {section.purpose}"
    lines: list[str] = []
    quotes: list[dict[str, Any]] = []

    def add_quotes(p: SurveyPaper, q: str, limit: int = PER_PAPER, prefer: tuple[str, ...] = ()) -> None:
        for s in pick_sentences(p, q, limit=limit, used=used, prefer=prefer):
            lines.append(quote_line(p, s))
            quotes.append({"paper": p.id, "text": s.text, "page": s.page})

    def add_remarks(about: list[SurveyPaper], q: str) -> None:
        # what the other selected papers say about these papers: their words, cited to the paper they describe
        for p in about:
            for src, s in remarks_about(p, list(papers.values()), q, limit=1):
                if s.text in used:
                    continue
                used.add(s.text)
                lines.append(remark_line(p, src, s))
                quotes.append({"paper": src.id, "text": s.text, "page": s.page, "about": p.id})

    kind = section.kind
    if kind == "intro":
        for p in cited:
            add_quotes(p, f"{topic} {p.title} we present propose", 1, prefer=("abstract", "introduction"))
    elif kind == "theme":
        terms = ""
        if section.theme is not None and 0 <= section.theme < len(correlation.clusters):
            cluster = correlation.clusters[section.theme]
            terms = " ".join(cluster.terms)
            before = set(used)
            lines += _theme_lines(cluster, papers, correlation, used)
            quotes += [{"paper": d["paper"], "text": d["text"], "page": d["page"]}
                       for d in cluster.passages if d["text"] in used and d["text"] not in before]
            order = {pid: i for i, pid in enumerate(cluster.paper_ids)}
            cited.sort(key=lambda p: order.get(p.id, len(order)))
        for p in cited:
            add_quotes(p, f"{query} {terms}")
        add_remarks(cited, f"{query} {terms}")
    elif kind == "comparison":
        lines += _comparison_table(correlation, papers)
        lineages = [x for x in correlation.lineages if x.paper_id in papers and x.builds_on in papers]
        if lineages:
            lines += ["", "Lineage (from the papers' reference lists):", ""]
            for x in lineages:
                lines.append(f"- [@{x.paper_id}] cites [@{x.builds_on}] (matched by {x.via}).")
    elif kind == "consensus":
        if correlation.consensus:
            lines += ["**Consensus**", ""] + [f"- {s.text}" for s in correlation.consensus]
        if correlation.conflicts:
            lines += ["", "**Conflict**", ""] + [f"- {s.text}" for s in correlation.conflicts]
        for s in correlation.consensus + correlation.conflicts:
            quotes += s.quotes
    elif kind == "gaps":
        lines += [f"- {s.text}" for s in correlation.gaps]
        for s in correlation.gaps:
            quotes += s.quotes
    elif kind == "conclusion":
        for p in cited:
            add_quotes(p, f"{topic} conclude conclusion we have shown", 1, prefer=("conclusion", "summary", "discussion"))
    else:
        if not cited:
            ranked = sorted(papers.values(), key=lambda p: -sum(s.score for s in rank_sentences(query, paper_sentences(p.id, p.fulltext), limit=3)))
            cited = ranked[:PAPERS_PER_CUSTOM]
        for p in cited:
            add_quotes(p, query)
        add_remarks(cited, query)
    if not lines:
        lines = ["*Nothing in the cited papers matched this section's purpose.*"]
    cites = list(dict.fromkeys([q["paper"] for q in quotes] + [p.id for p in cited]))
    return SectionDraft(title=section.title, markdown="\n".join(lines).strip() + "\n", cites=cites, quotes=quotes)


# --- with a model ----------------------------------------------------------------------------------

SECTION_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["markdown"],
    "properties": {"markdown": {"type": "string", "minLength": 1}},
}


# What a model is given for a section: per cited paper its analysed note and passages retrieved for the
# section; the prompt's size is bounded (`BRIEF_BUDGET`, `PAPER_BRIEF_MAX`, `ITEM_MAX`, `PASSAGE_MAX`).
BRIEF_BUDGET = 40_000        # characters of material for all the section's papers together ...
PAPER_BRIEF_MIN = 1_500      # ... but never less than this per paper (its summary and method) ...
PAPER_BRIEF_MAX = 8_000      # ... nor more than this for one paper
ITEM_MAX = 400               # one statement of a note
PASSAGE_MAX = 700            # one retrieved passage
PASSAGES = 4                 # passages per paper
REMARKS = 6                  # other papers' descriptions of the cited ones, in all

# Sentences that say nothing about the work: the paper's plan, front matter, and scan or layout debris.
_BOILERPLATE = re.compile(
    r"\b(?:the\s+)?(?:remainder|rest)\s+of\s+(?:this|the)\s+(?:paper|article|section)\b"
    r"|\b(?:this|the)\s+(?:paper|article)\s+is\s+(?:organi[sz]ed|structured)\b"
    r"|^\s*(?:in\s+)?section\s+\d+(?:\.\d+)*,?\s+(?:we\s+)?(?:describes?|presents?|discuss(?:es)?|introduces?|"
    r"concludes?|reviews?|shows?|gives?|covers?|outlines?)\b"
    r"|\bpermission\s+to\s+make\s+digital\b|\ball\s+rights\s+reserved\b|\bcopyright\b|\u00a9"
    r"|\bproceedings\s+of\s+the\b|\bISBN\b|" + DOI.MENTION + r"|\bhttps?://"
    r"|\bwork\s+(?:was|is)\s+(?:supported|funded)\b|\backnowledg",
    re.I)


def informative(text: str) -> bool:
    """A sentence worth giving a model: prose that says something (`evidence.quotable`), not the paper's plan
    of sections, front matter, a funding line, or scan noise such as "(N I 2)" and runs of one-letter tokens."""
    if not quotable(text) or _BOILERPLATE.search(text):
        return False
    words = text.split()
    short = sum(1 for w in words if len(w.strip("()[].,;:")) <= 1)
    return short <= max(2, len(words) // 5)


def _cut(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters of whole words and an ellipsis when it was longer."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    head = text[:limit + 1]
    head = head[:head.rfind(" ")] if " " in head else text[:limit]
    return head.rstrip(" ,;:") + " …"


def _passage_text(text: str, keep=informative) -> str:
    """A retrieved passage with only its sentences that `keep` accepts, at most `PASSAGE_MAX` characters of
    whole sentences ("" when none is left)."""
    kept: list[str] = []
    size = 0
    for sent in sentences(text):
        if not keep(sent):
            continue
        if size + len(sent) > PASSAGE_MAX:
            if not kept:
                kept.append(_cut(sent, PASSAGE_MAX))
            break
        kept.append(sent)
        size += len(sent) + 1
    return " ".join(kept)


def section_passages(p: SurveyPaper, query: str, ws=None, *, limit: int = PASSAGES) -> list[dict[str, Any]]:
    """Passages of paper `p` for a section: the paragraphs the index's hybrid search ranks first for `query`
    within this paper (its own sentences ranked for it when the index cannot answer), each cleared of
    boilerplate and noise, describing the paper's own work (not other work), with its page."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(text: str, page: int | None, section: str) -> None:
        def keep(sent: str) -> bool:
            return informative(sent) and not other_work(sent, section, p.fulltext, title=p.title)

        text = _passage_text(text, keep)
        key = text[:80].lower()
        if text and key not in seen and len(out) < limit:
            seen.add(key)
            out.append({"page": page, "section": section, "text": text})

    if ws is not None:
        for hit in index_passages(ws, p.id, query, limit=limit * 2, level="paragraph"):
            add(hit.text, hit.page, hit.section)
    if len(out) < limit:
        for s in pick_sentences(p, query, limit=limit * 2, used=set()):      # the paper's own claims only
            if informative(s.text):
                add(s.text, s.page, s.section)
    return out


def _printed(pid: str, page: Any) -> str | None:
    """The page as the paper prints it (what a citation's `p. N` means), None without one."""
    return printed_for(pid, page) if isinstance(page, int) and page > 0 else None


_GAPS = re.compile(r"\b(gaps?|limit(s|ations?)|open (problems?|questions?|issues?|challenges?)|challenges?|"
                   r"future|shortcomings?|weakness(es)?|conclusions?)\b", re.I)


def paper_brief(p: SurveyPaper, query: str, ws=None, *, budget: int = PAPER_BRIEF_MAX) -> dict[str, Any]:
    """What a model is told of one cited paper: its analysed note (summary, one-line method, how the method
    works, key results and results, limitations and open questions, each with its page as the paper prints it)
    and the passages retrieved for the section, within `budget` characters: the summary and method first, then
    passages and method details, then results, then what the paper leaves open (first, after the summary, in a
    section on gaps, limits, open problems or the conclusion)."""
    notes = p.analysis
    candidates: list[tuple[str, dict[str, Any]]] = []
    candidates += [("summary", c) for c in notes.get("summary", [])[:3]]
    # what the paper leaves open: first for a section on gaps, limits or future work, else after the results
    open_ = ([("limitations", c) for c in notes.get("limitations", [])[:4]]
             + [("open_questions", c) for c in notes.get("open questions", [])[:3]])
    if _GAPS.search(query):
        candidates += open_
    passages = section_passages(p, query, ws)
    candidates += [("passages", x) for x in passages[:2]]
    candidates += [("method", c) for c in notes.get("method", [])[:6]]
    candidates += [("key_results", r) for r in p.key_results[:6] if isinstance(r, dict) and r.get("value")]
    candidates += [("passages", x) for x in passages[2:]]
    candidates += [("results", c) for c in notes.get("experiments", [])[:4]]
    candidates += [("contributions", c) for c in notes.get("contributions", [])[:3]]
    if not _GAPS.search(query):
        candidates += open_
    brief: dict[str, Any] = {"id": p.id, "title": p.title, "year": p.year, "who": who(p),
                             "method_line": _cut(p.method, ITEM_MAX) if p.method else "",
                             "summary": [], "method": [], "key_results": [], "results": [], "contributions": [],
                             "limitations": [], "open_questions": [], "passages": []}
    size = len(p.title) + len(brief["method_line"]) + 80
    for field_name, item in candidates:
        if field_name == "key_results":
            entry = {k: _cut(item.get(k) or "", 120) for k in ("setting", "metric", "value", "source")}
            entry["page"] = _printed(p.id, item.get("page"))
        elif field_name == "passages":
            entry = {**item, "page": _printed(p.id, item.get("page"))}
        else:
            entry = {"text": _cut(item["text"], ITEM_MAX), "page": _printed(p.id, item.get("page"))}
        cost = sum(len(str(v)) for v in entry.values()) + 16
        if size + cost > budget:
            continue
        size += cost
        brief[field_name].append(entry)
    brief["size"] = size
    return brief


def evidence_for(section: Section, topic: str, papers: dict[str, SurveyPaper], ws=None) -> dict[str, Any]:
    """What a model drafting `section` is given: a brief of each cited paper (`paper_brief`: its analysed note
    and the passages the index retrieves for the section) and the other selected papers' descriptions of them
    (`remarks`, at most `REMARKS`, each with `about` and `remark`: whose remark it is). The briefs share
    `BRIEF_BUDGET` characters (each at least `PAPER_BRIEF_MIN`, at most `PAPER_BRIEF_MAX`)."""
    query = f"{topic} {section.title} {section.purpose}"
    cited = [papers[c] for c in section.cites if c in papers]
    per_paper = min(PAPER_BRIEF_MAX, max(PAPER_BRIEF_MIN, BRIEF_BUDGET // max(1, len(cited))))
    briefs = [paper_brief(p, query, ws, budget=per_paper) for p in cited]
    remarks = []
    for p in cited:
        # another paper's description of this one: the model must say whose remark it is
        for src, s in remarks_about(p, list(papers.values()), query, limit=1)[:max(0, REMARKS - len(remarks))]:
            remarks.append({"paper": src.id, "title": src.title, "page": _printed(src.id, s.page),
                            "text": _cut(s.text, PASSAGE_MAX),
                            "about": p.id, "remark": f"{who(src)} describing {who(p)}"})
    return {"papers": briefs, "remarks": remarks}


def evidence_quotes(evidence: dict[str, Any]) -> list[dict[str, Any]]:
    """The passages of `evidence_for` as the draft's `quotes` (paper, text, page; `about` for a remark)."""
    out = [{"paper": b["id"], "text": x["text"], "page": x["page"], "about": None} for b in evidence["papers"]
           for x in b["passages"]]
    return out + [{"paper": r["paper"], "text": r["text"], "page": r["page"], "about": r["about"]}
                  for r in evidence["remarks"]]
