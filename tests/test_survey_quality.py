"""Survey quality on real papers: themes named by key phrases, faithful attribution, honest comparison tables.

The corpus papers are read from their PDFs (`support_survey.read_pdf`); two more papers are planted as real PDFs
made with PyMuPDF: a HyperDex paper (which the Tiered Replication paper describes in its own words) and a paper
whose related-work section restates claims of Megastore and Tiered Replication. No survey line may present such a
description as the citing paper's own claim; where it is the evidence about another vault paper, it is cited to
that paper with the citing paper as the source of the remark.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from papervault.survey import correlate as C
from papervault.survey import draft as D
from papervault.survey import outline as O
from papervault.survey import polish as P
from papervault.survey.attribution import other_work, own_claim, remarks_about, reported, who
from papervault.survey.evidence import best_support, paper_sentences
from papervault.survey.keyphrases import label as phrase_label
from papervault.survey.select import SurveyPaper

from support_survey import RELATED, TITLES, read_pdf

TOPIC = "replication and consistency"

HYPERDEX = ("HyperDex: A Distributed, Searchable Key-Value Store", ["Robert Escriva", "Bernard Wong", "Emin Gun Sirer"], 2012, [
    "HyperDex: A Distributed, Searchable Key-Value Store",
    "Robert Escriva, Bernard Wong, Emin Gun Sirer",
    "Abstract",
    "We present HyperDex, a key-value store that supports efficient search on secondary attributes of objects. "
    "We introduce hyperspace hashing, which maps each object to a coordinate in a multi-dimensional space so that a "
    "search contacts only the servers whose regions intersect the query. We describe value-dependent chaining, a "
    "replication protocol that keeps every replica of an object consistent while objects move between servers.",
    "1 Introduction",
    "Our evaluation shows that hyperspace hashing answers searches on secondary attributes with a small number of "
    "servers. We show that value-dependent chaining provides linearizable operations and tolerates server failures.",
    "2 Evaluation",
    "We measured the throughput of HyperDex with the Yahoo Cloud Serving Benchmark on a cluster of fourteen servers. "
    "Our search operations complete in a few milliseconds while the cluster serves writes.",
    "References",
    "[1] R. van Renesse and F. B. Schneider. Chain replication for supporting high throughput and availability. OSDI 2004.",
])

PLANTED = ("Geo-Replicated Storage Under Partial Failures: A Measurement Study", ["Ada Planted", "Ben Tester"], 2024, [
    "Geo-Replicated Storage Under Partial Failures: A Measurement Study",
    "Ada Planted, Ben Tester",
    "Abstract",
    "We measure how geo-replicated storage services behave when a datacenter is partly unreachable. We find that "
    "write latency grows with the distance between the replicas that must acknowledge a write. Our measurements "
    "show that reads served by a nearby replica stay fast during partial failures.",
    "1 Introduction",
    "We ran our measurement study for three months across five datacenters on two continents. We report the "
    "latency of reads and writes before, during and after each partial failure we observed.",
    "2 Related Work",
    "Megastore [1] blends the scalability of a NoSQL datastore with the convenience of a traditional RDBMS.",
    "Baker et al. replicate a write-ahead log with Paxos across datacenters for every entity group.",
    "Tiered Replication places the third replica of every object in a backup tier in a separate location "
    "(Cidon et al., 2015).",
    "Three-way random replication falls short of protecting storage systems from correlated node failures [2].",
    "3 Evaluation",
    "Our measurements show that reads served by a nearby replica take less than ten milliseconds during partial "
    "failures, while writes wait for the farthest replica in the quorum.",
    "References",
    "[1] J. Baker, C. Bond, J. C. Corbett. Megastore: Providing Scalable, Highly Available Storage for Interactive "
    "Services. CIDR 2011.",
    "[2] A. Cidon, R. Escriva, S. Katti. Tiered Replication: A Cost-effective Alternative to Full Cluster "
    "Geo-replication. USENIX ATC 2015.",
])


def make_pdf(path: Path, paragraphs: list[str]) -> Path:
    """A real PDF: each paragraph its own text block, top to bottom, pages added as needed."""
    import math

    import pymupdf as fitz

    doc = fitz.open()
    page, y = doc.new_page(), 60.0
    for text in paragraphs:
        height = (math.ceil(len(text) * 5.2 / 480) + 1) * 13
        if y + height > 780:
            page, y = doc.new_page(), 60.0
        page.insert_textbox(fitz.Rect(60, y, 540, y + height), text, fontsize=10, fontname="helv")
        y += height + 14
    doc.save(path)
    doc.close()
    return path


def planted(tmp: Path, pid: str, spec) -> SurveyPaper:
    title, authors, year, paragraphs = spec
    md, _ = read_pdf(make_pdf(tmp / f"{pid}.pdf", paragraphs))
    return SurveyPaper(id=pid, title=title, authors=authors, year=year, fulltext=md)


@pytest.fixture(scope="module")
def corpus_papers(corpus_dir) -> dict[str, SurveyPaper]:
    out = {}
    for name in RELATED:
        title, authors, year = TITLES[name]
        md, _ = read_pdf(corpus_dir / RELATED[name])
        out[name] = SurveyPaper(id=name, title=title, authors=authors, year=year, fulltext=md)
    return out


@pytest.fixture(scope="module")
def with_planted(corpus_papers, tmp_path_factory) -> dict[str, SurveyPaper]:
    tmp = tmp_path_factory.mktemp("planted")
    out = {k: corpus_papers[k] for k in ("megastore", "paxos", "tiered", "harvest")}
    out["escriva2012hyperdex"] = planted(tmp, "escriva2012hyperdex", HYPERDEX)
    out["planted2024geo"] = planted(tmp, "planted2024geo", PLANTED)
    return out


def survey(papers: dict[str, SurveyPaper], embed=None) -> tuple[C.Correlation, P.PolishResult]:
    """Correlate, outline, draft every section and polish, as the flow does."""
    corr = C.correlate(TOPIC, list(papers.values()), embed=embed)
    outline = O.make_outline(TOPIC, corr, list(papers.values()))
    used: set[str] = set()
    body = []
    for sec in outline.sections:
        body += [f"## {sec.title}", "", D.draft_section(sec, TOPIC, papers, corr, used=used).markdown]
    support = lambda claim, pid: best_support(claim, pid, papers[pid].fulltext) if pid in papers else None  # noqa: E731
    res = P.polish("\n".join(body), known=set(papers), selected=list(papers), support=support,
                   figure_exists=lambda src: True)
    return corr, res


QUOTE_CITED = re.compile(r"“(?P<q>[^”]+)”\s*\[@(?P<key>[A-Za-z0-9_.:-]+)(?:, p\. \d+)?\]")


def misattributed(markdown: str, papers: dict[str, SurveyPaper]) -> list[str]:
    """Lines quoting a paper's description of other work as that paper's own claim."""
    bad = []
    for line in markdown.splitlines():
        for m in QUOTE_CITED.finditer(line):
            p = papers[m.group("key")]
            hits = [s for s in paper_sentences(p.id, p.fulltext) if s.text == m.group("q")]
            assert hits, f"quotation not in {p.id}: {m.group('q')[:80]}"
            if not own_claim(p, hits[0]) and not reported(line[:m.start()]):
                bad.append(line)
    return bad


# --- attribution -----------------------------------------------------------------------------------

def test_descriptions_of_other_work_are_recognised(with_planted):
    tiered, plant = with_planted["tiered"], with_planted["planted2024geo"]
    by_text = {s.text: s for s in paper_sentences(tiered.id, tiered.fulltext)}
    hyper = next(t for t in by_text if t.startswith("HyperDex is a distributed"))
    chain = next(t for t in by_text if t.startswith("Chain Replication: Chain replication can provide"))
    assert "hyperdex" in by_text[hyper].other and "chain replication" in by_text[chain].other
    assert not own_claim(tiered, by_text[hyper]) and not own_claim(tiered, by_text[chain])
    # the paper's own statements stay its own, even when they cite: first person, or its own system by name
    own = next(t for t in by_text if t.startswith("We implemented Tiered Replication on HyperDex"))
    assert own_claim(tiered, by_text[own])
    assert other_work("Moreover, Tiered Replication can support any data layout constraint [37].", "", tiered.fulltext,
                      title=tiered.title) == ""
    elle = TITLES["elle"][0]
    assert other_work("Elle can detect every anomaly in Adya et al’s formalism.", "", "", title=elle) == ""
    assert other_work("The anomalies identified by Adya et al. are cycles.", "", "", title=elle).startswith("it names")
    assert other_work("Biswas & Enea provided polynomial-time checkers.", "", "", title=elle).startswith("it names")
    # every sentence of the planted related-work section describes other work, for a stated reason
    related = [s for s in paper_sentences(plant.id, plant.fulltext) if s.section.endswith("Related Work")]
    assert len(related) == 4 and all(s.other for s in related), [(s.text, s.other) for s in related]
    reasons = " ".join(s.other for s in related)
    assert "cites other work" in reasons and "Baker et al." in reasons
    assert all(own_claim(plant, s) for s in paper_sentences(plant.id, plant.fulltext) if s.section.startswith("3"))


def test_remarks_cite_the_described_paper(with_planted):
    papers = list(with_planted.values())
    hyper = with_planted["escriva2012hyperdex"]
    found = remarks_about(hyper, papers, "key-value store replication", limit=3)
    assert found and all(src.id == "tiered" for src, _ in found)
    assert any(s.text.startswith("HyperDex is a distributed") for _, s in found), [s.text for _, s in found]
    # the planted paper's related-work sentences are found as remarks about Megastore and Tiered Replication,
    # through its reference list ([1]), an author name (Baker et al.) and an author-year marker
    mega = remarks_about(with_planted["megastore"], papers, "replication datacenters", limit=5)
    assert {s.text[:20] for src, s in mega if src.id == "planted2024geo"} >= {"Megastore [1] blends", "Baker et al. replica"}
    tiered = remarks_about(with_planted["tiered"], papers, "replication", limit=5)
    assert {src.id for src, _ in tiered} == {"planted2024geo"}
    line = D.remark_line(hyper, with_planted["tiered"], found[0][1])
    assert line.startswith("- **Escriva et al. (2012)** [@escriva2012hyperdex], as described by Cidon et al. (2015): “")
    assert "[@tiered, p. " in line and "../../papers/tiered/paper.md#page-" in line


def test_survey_never_presents_other_work_as_the_citing_papers_claim(with_planted):
    corr, res = survey(with_planted)
    out = res.markdown
    assert not misattributed(out, with_planted)
    assert "**Cidon et al. (2015)**: “HyperDex is a distributed" not in out
    assert "**Planted and Tester (2024)**: “Megastore [1]" not in out
    # the descriptions appear where they are the evidence about the paper they describe, as remarks
    remarks = [ln for ln in out.splitlines() if ", as described by " in ln]
    assert any("[@escriva2012hyperdex]" in ln and "[@tiered, p. " in ln for ln in remarks), remarks
    assert any(("[@megastore]" in ln or "[@tiered]" in ln) and "[@planted2024geo, p. " in ln for ln in remarks), remarks
    assert res.attributed >= 2 and not [f for f in res.flags if f.kind == "support"]
    assert not [c for c in res.changes if c.kind == "attribution"]     # the draft needed no attribution fix
    # nothing the extractive correlation says misattributes either (gaps, consensus and conflict quotations)
    for st in corr.gaps + corr.consensus + corr.conflicts:
        assert not misattributed(st.text, with_planted), st.text


def test_polish_rewrites_a_misattributed_quotation(with_planted):
    tiered, plant = with_planted["tiered"], with_planted["planted2024geo"]
    hyper = next(s for s in paper_sentences(tiered.id, tiered.fulltext) if s.text.startswith("HyperDex is a distributed"))
    mega = next(s for s in paper_sentences(plant.id, plant.fulltext) if s.text.startswith("Megastore [1]"))
    chain = next(s for s in paper_sentences(tiered.id, tiered.fulltext) if s.text.startswith("In HyperDex, a variant"))
    body = "\n".join([
        f"- **Cidon et al. (2015)**: “{hyper.text}” [@tiered, p. {hyper.page}]",
        f"Planted and Tester found that {mega.text[len('Megastore [1] '):]} [@planted2024geo]",
        f"- **Escriva et al. (2012)** [@escriva2012hyperdex], as described by Cidon et al. (2015): “{chain.text}” "
        f"[@tiered, p. {chain.page}]",
    ])
    support = lambda claim, pid: best_support(claim, pid, with_planted[pid].fulltext)  # noqa: E731
    res = P.polish(body, known=set(with_planted), selected=list(with_planted), support=support,
                   figure_exists=lambda s: True)
    lines = res.markdown.splitlines()
    assert lines[0] == f"- **Cidon et al. (2015)**, describing other work: “{hyper.text}” [@tiered, p. {hyper.page}]"
    # prose resting on a description of other work is flagged, never rewritten (a rewrite loses the writer's words)
    assert lines[1] == body.splitlines()[1] + " " + P.FLAG
    assert lines[2] == body.splitlines()[2]                               # a remark, already attributed: kept
    fixes = [c for c in res.changes if c.kind == "attribution"]
    assert [c.line for c in fixes] == [1] and "describes other work" in fixes[0].reason
    assert [(f.kind, f.line) for f in res.flags] == [("attribution", 2)] and "describes other work" in res.flags[0].reason
    assert res.attributed == 2 and res.supported == 2 and res.claims == 3
    assert not misattributed(res.markdown, with_planted)


# --- themes ----------------------------------------------------------------------------------------

def test_theme_titles_are_phrases_of_the_papers(corpus_papers):
    """On the seven related corpus papers, clustered with the real embedding model: every theme is named by
    phrases that occur in its papers' titles or abstracts (never stems), lists its papers in lineage and year
    order, and quotes the passages that define it."""
    from papervault.index.embed import Embedder

    papers = list(corpus_papers.values())
    lineages = C.find_lineages(papers)
    clusters = C.cluster_papers(papers, Embedder().embed, lineages=lineages)
    assert len(clusters) >= 2 and sorted(i for c in clusters for i in c.paper_ids) == sorted(corpus_papers)
    for c in clusters:
        members = [corpus_papers[i] for i in c.paper_ids]
        text = " ".join(f"{p.title} {C.theme_text(p)}" for p in members)
        flat = re.sub(r"(\w)- (\w)", r"\1\2", " ".join(text.split()))
        assert c.terms and c.label == phrase_label(c.terms)
        for term in c.terms:
            assert re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", flat, re.I), (term, c.label)
        assert "," not in c.label                                        # not "paxo, complex, moderately"
        years = [p.year or 9999 for p in members]
        assert years == sorted(years) or lineages                         # no lineage among these: by year
        for d in c.passages:
            assert d["paper"] in c.paper_ids and d["phrase"].lower() in d["text"].lower() and d["page"]
            assert d["text"] in {s.text for s in paper_sentences(d["paper"], corpus_papers[d["paper"]].fulltext)}
        assert {d["paper"] for d in c.passages} == set(c.paper_ids), c


def test_lineage_orders_papers_within_a_theme():
    ps = {i: SurveyPaper(id=i, title=i, year=y) for i, y in (("a", 2015), ("b", 2010), ("c", None), ("d", 2012))}
    # a cites c and d; d cites c (c has no year): c, then b (year), d, a
    lin = [C.Lineage("a", "c", "doi"), C.Lineage("a", "d", "doi"), C.Lineage("d", "c", "title")]
    assert C.lineage_order(["a", "b", "c", "d"], ps, lin) == ["b", "c", "d", "a"]
    assert C.lineage_order(["a", "b", "c", "d"], ps, []) == ["b", "d", "a", "c"]


def test_lineage_from_planted_reference_lists_orders_before_year(with_planted):
    """Tiered Replication's reference list cites HyperDex (its title split by a line-break hyphen); the planted
    paper cites Megastore and Tiered Replication. A cited paper comes first even when its year is later."""
    from dataclasses import replace

    ps = dict(with_planted)
    ps["escriva2012hyperdex"] = replace(ps["escriva2012hyperdex"], year=2016)
    lin = C.find_lineages(list(ps.values()))
    pairs = {(x.paper_id, x.builds_on) for x in lin}
    assert {("tiered", "escriva2012hyperdex"), ("planted2024geo", "megastore"), ("planted2024geo", "tiered")} <= pairs
    order = C.lineage_order(["planted2024geo", "tiered", "escriva2012hyperdex", "megastore"], ps, lin)
    assert order == ["megastore", "escriva2012hyperdex", "tiered", "planted2024geo"]


def test_theme_section_lists_papers_and_defining_passages(with_planted):
    corr, res = survey(with_planted)
    out = res.markdown
    for c in corr.clusters:
        assert f"## Theme: {c.label}" in out
        section = out.split(f"## Theme: {c.label}", 1)[1].split("\n## ", 1)[0]
        entries = section.split("\n\n")[2].rstrip(".").split("; ")
        assert [re.search(r"\[@([\w.:-]+)\]", e).group(1) for e in entries] == c.paper_ids
        earlier = out.split(f"## Theme: {c.label}", 1)[0]
        for d in c.passages:     # quoted here, unless an earlier section quoted it already
            quoted = f"“{d['text']}” [@{d['paper']}, p. {d['page']}] ([p. {d['page']}]("
            assert quoted in section or quoted in earlier
        assert sum(f"“{d['text']}”" in section for d in c.passages) >= 1


# --- comparison table and names --------------------------------------------------------------------

def test_comparison_table_only_shows_results_with_metric_setting_and_page():
    p = SurveyPaper(id="cidon2015tiered", title="Tiered Replication", year=2015, key_results=[
        {"setting": "Random Replication", "metric": "Pr(2 Failures)", "value": "6.51 × 10−7", "page": 5, "source": "Table 1"},
        {"setting": "", "metric": "Pr(2 Failures)", "value": "6.51 × 10−7", "page": 5},          # no setting
        {"setting": "Tiered Replication", "metric": "Measure", "value": "12", "page": 6},        # placeholder metric
        {"setting": "Column 2", "metric": "latency", "value": "3 ms", "page": 6},               # placeholder setting
        {"setting": "HyperDex", "metric": "latency", "value": "fast", "page": 9},               # no number
        {"setting": "HyperDex", "metric": "throughput", "value": "12,000 ops/s", "page": None},  # no page
        {"result": "Tiered replication is cheaper than geo-replication."},                       # free text
    ])
    rows = C.comparison_rows([p])
    assert rows[0].results == ["Random Replication: Pr(2 Failures) = 6.51 × 10−7 (Table 1, p. 5)"]
    corr = C.Correlation(topic="t", papers=[p.id], comparison=rows)
    table = D.draft_section(O.Section("Methods compared", "", [p.id], "comparison"), "t", {p.id: p}, corr).markdown
    assert ("| Random Replication: Pr(2 Failures) = 6.51 × 10−7 (Table 1, "
            "[p. 5](../../papers/cidon2015tiered/paper.md#page-5)) |") in table
    assert "metric:" not in table and "Measure" not in table and "Column 2" not in table and "fast" not in table


def test_paper_without_a_year_is_named_with_nd(corpus_papers):
    h = corpus_papers["harvest"]
    undated = SurveyPaper(id="foxharvest", title=h.title, authors=h.authors, year=None, fulltext=h.fulltext)
    assert who(undated) == "Fox and Brewer (n.d.)"
    s = D.pick_sentences(undated, "harvest yield availability", limit=1)[0]
    assert D.quote_line(undated, s).startswith("- **Fox and Brewer (n.d.)**: “")
    gaps = C.find_gaps([undated], "availability")
    assert gaps and all(g.text.startswith("Fox and Brewer (n.d.) [@foxharvest]: “") for g in gaps)


def test_report_never_cuts_a_citation_in_half():
    """Changes are shown cut short in polish-report.md; a cut must not leave a key that resolves to nothing."""
    from papervault.survey.evidence import Passage

    prefix = "- **van Renesse and Altinbuken (2015)**: "
    quote = ("Replicas agree on the order of commands despite failures of some of them " * 4)[:187 - len(prefix) - 1] + "."
    line = f"{prefix}“{quote}” [@vanrenesse2015paxos, p. 3]"
    assert line.index("[@") == 190                 # a cut at 200 characters would split the key
    res = P.polish(f"{line}\n{line}\n", known={"vanrenesse2015paxos"}, selected=["vanrenesse2015paxos"],
                   support=lambda claim, pid: Passage(pid, claim, 3, "", 1.0), figure_exists=lambda s: True)
    dup = [c for c in res.changes if c.kind == "duplicate"]
    assert dup and len(dup[0].before) <= 202
    for c in res.changes:
        for text in (c.before, c.after):
            assert set(re.findall(r"\[@([\w.:-]+)", text)) <= {"vanrenesse2015paxos"}, text
