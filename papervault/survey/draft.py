"""Stage 6 of a survey: one section of prose per outline section, every claim cited as `[@id, p. N]`.

The extractive draft is made of quoted sentences of the cited papers, each with its citation and a link to
the page it comes from; the only words of its own are headings and the names of the papers it quotes. A model
backend writes prose from the same evidence, and polishing checks what it wrote.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from papervault.survey.attribution import own_claim, remark, remarks_about, who
from papervault.survey.correlate import Correlation
from papervault.survey.evidence import Passage, paper_sentences, quotable, rank_sentences
from papervault.survey.outline import Section
from papervault.survey.papers import SurveyPaper, cite
from papervault.vault.paper import page_link as paper_link
from papervault.pages import printed_for

PER_PAPER = 2            # quotations per paper in a section
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
        return (text.replace("|", "\\|").replace("\n", " ")[:160]) or "–"

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


def evidence_for(section: Section, topic: str, papers: dict[str, SurveyPaper], *, per_paper: int = 4) -> list[dict[str, Any]]:
    """The passages a model may draw on for a section: the best sentences of each cited paper, with pages."""
    out = []
    query = f"{topic} {section.title} {section.purpose}"
    for c in section.cites:
        p = papers.get(c)
        if p is None:
            continue
        for s in pick_sentences(p, query, limit=per_paper, used=set()):
            out.append({"paper": p.id, "title": p.title, "page": s.page, "text": s.text, "about": None, "remark": None})
        # another paper's description of this one: the model must say whose remark it is
        for src, s in remarks_about(p, list(papers.values()), query, limit=1):
            out.append({"paper": src.id, "title": src.title, "page": s.page, "text": s.text, "about": p.id,
                        "remark": f"{who(src)} describing {who(p)}"})
    return out
