"""Survey stages as plain functions on real papers: selection, correlation, outline, draft, polish, exports."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from papervault.errors import NotFoundError
from papervault.models import PaperMeta
from papervault.survey import correlate as C
from papervault.survey import draft as D
from papervault.survey import export as E
from papervault.survey import outline as O
from papervault.survey import polish as P
from papervault.survey.evidence import best_support, paper_sentences, quotable, support_score
from papervault.survey.select import SurveyPaper, parse_spec, select_ids

from support_survey import RELATED, TITLES, read_pdf

NAMES = ["megastore", "paxos", "harvest", "tiered"]


@pytest.fixture(scope="module")
def papers(corpus_dir) -> dict[str, SurveyPaper]:
    """Four related shared-corpus papers as the survey stages see them (full text read from the PDFs)."""
    out = {}
    for name in NAMES:
        title, authors, year = TITLES[name]
        md, _ = read_pdf(corpus_dir / RELATED[name])
        out[name] = SurveyPaper(id=name, title=title, authors=authors, year=year, fulltext=md,
                                datasets=["YCSB"] if name in ("megastore", "tiered") else [],
                                metrics=["latency", "availability"] if name != "paxos" else ["latency"])
    return out


@pytest.fixture(scope="module")
def correlation(papers) -> C.Correlation:
    return C.correlate("replication and consistency", list(papers.values()))


# --- selection -------------------------------------------------------------------------------------

def test_selection_specs():
    metas = [PaperMeta(id="a", tags=["Storage"], collections=["Thesis/Chapter 2"]),
             PaperMeta(id="b", tags=["os"], collections=["Thesis"]),
             PaperMeta(id="c")]
    assert select_ids(metas, parse_spec("all")) == ["a", "b", "c"]
    assert select_ids(metas, parse_spec("tag:storage")) == ["a"]
    assert select_ids(metas, parse_spec("collection:Thesis")) == ["a", "b"]      # sub-collections included
    assert select_ids(metas, parse_spec("collection:Thesis/Chapter 2")) == ["a"]
    # a query selection keeps the search's order and drops hits that are not vault papers
    assert select_ids(metas, parse_spec("query:paxos"), search=lambda q: ["c", "zz", "a", "c"]) == ["c", "a"]
    assert parse_spec("arxiv:consensus protocols").value == "consensus protocols"
    with pytest.raises(NotFoundError, match="tag:NAME"):
        parse_spec("tags:x")


# --- correlation -----------------------------------------------------------------------------------

def test_lineage_from_reference_lists(papers):
    # Paxos Made Moderately Complex cites "Paxos made live" and "Paxos made simple" in its reference list
    # (Megastore cites the former too, but its two-column list interleaves the title with another entry)
    live = SurveyPaper(id="chandra2007paxos", title="Paxos Made Live: An Engineering Perspective",
                       authors=["Tushar D. Chandra"], year=2007)
    simple = SurveyPaper(id="lamport2001paxos", title="Paxos Made Simple", authors=["Leslie Lamport"], year=2001)
    lin = C.find_lineages([*papers.values(), live, simple])
    pairs = {(x.paper_id, x.builds_on, x.via) for x in lin}
    assert ("paxos", "chandra2007paxos", "title") in pairs
    assert ("paxos", "lamport2001paxos", "title") in pairs
    # none of these four cites another of them (checked by hand), and a paper never cites itself
    assert not {(a, b) for a, b, _ in pairs if b in papers}


def test_correlation_cites_every_line(correlation, papers):
    assert correlation.clusters and sorted(i for c in correlation.clusters for i in c.paper_ids) == sorted(papers)
    assert [r.paper_id for r in correlation.comparison] == list(papers)
    # shared fields become consensus statements citing exactly the papers that share them
    ycsb = [s for s in correlation.consensus if "YCSB" in s.text]
    assert ycsb and sorted(ycsb[0].cites) == ["megastore", "tiered"]
    assert correlation.gaps, "papers that name future work or limitations yield gaps"
    for s in correlation.consensus + correlation.conflicts + correlation.gaps:
        assert "[@" in s.text and all(c in papers for c in s.cites)
        for q in s.quotes:   # quotations are the papers' own sentences
            assert q["text"] in {x.text for x in paper_sentences(q["paper"], papers[q["paper"]].fulltext)}
    text = E.render("correlation.md.j2", None, c=correlation, topic="t", slug="s", inputs="x")
    body = text.split("---", 2)[2]
    for line in body.splitlines():
        if line.startswith(("- ", "| [@")):
            assert "[@" in line, line


# --- outline ---------------------------------------------------------------------------------------

def test_outline_round_trip_and_edit(correlation, papers):
    o = O.make_outline("replication and consistency", correlation, list(papers.values()))
    assert o.sections[0].kind == "intro" and o.sections[-1].kind == "conclusion"
    text = O.render_outline(o, slug="s", inputs="abc")
    assert not O.is_edited(text)
    back, meta = O.parse_outline(text)
    assert meta["inputs"] == "abc"
    assert [(s.title, s.kind, s.cites) for s in back.sections] == [(s.title, s.kind, s.cites) for s in o.sections]
    # a person deletes the theme sections and adds one of their own
    keep = [s for s in o.sections if s.kind != "theme"]
    edited = text.split("## 1.")[0] + "".join(
        f"## {i}. {s.title}\n<!-- kind: {s.kind} -->\n\nPurpose: {s.purpose}\n\nCites: "
        + ", ".join(f"[@{c}]" for c in s.cites) + "\n\n" for i, s in enumerate(keep, 1))
    edited += "## 9. Quorums in practice\n\nPurpose: How quorums of replicas\nagree on writes.\n\nCites: [@paxos], [@megastore]\n"
    assert O.is_edited(edited)
    chosen, how = O.choose_outline(edited, o)
    assert how == "kept" and chosen.edited
    assert chosen.sections[-1].title == "Quorums in practice" and chosen.sections[-1].kind == "custom"
    assert chosen.sections[-1].purpose == "How quorums of replicas agree on writes."
    assert chosen.sections[-1].cites == ["paxos", "megastore"]
    assert all(s.kind != "theme" for s in chosen.sections)
    assert O.choose_outline(text, o)[1] == "new"


# --- draft -----------------------------------------------------------------------------------------

def test_extractive_draft_only_quotes(correlation, papers):
    sec = O.Section("Quorums in practice", "How replicas agree on writes with Paxos.", ["paxos", "megastore"], "custom")
    d = D.draft_section(sec, "replication", papers, correlation)
    assert d.quotes and {q["paper"] for q in d.quotes} == {"paxos", "megastore"}
    for q in d.quotes:
        assert q["text"] in {s.text for s in paper_sentences(q["paper"], papers[q["paper"]].fulltext)}
        assert f"[@{q['paper']}, p. {q['page']}]" in d.markdown
        assert f"../../papers/{q['paper']}/paper.md#page-{q['page']}" in d.markdown
    corr = C.Correlation.from_dict(correlation.as_dict())
    corr.lineages = [C.Lineage("tiered", "megastore", "doi")]
    table = D.draft_section(O.Section("Methods compared", "", list(papers), "comparison"), "t", papers, corr)
    assert "| [@megastore] | – | YCSB |" in table.markdown
    assert "- [@tiered] cites [@megastore] (matched by doi)." in table.markdown


# --- polish ----------------------------------------------------------------------------------------

def _support(papers):
    return lambda claim, pid: best_support(claim, pid, papers[pid].fulltext) if pid in papers else None


def test_support_threshold_separates_quotes_from_planted_claims(papers):
    """The measured threshold: every quotable sentence supports itself; planted claims do not reach it."""
    quotes = [s.text for p in papers.values() for s in paper_sentences(p.id, p.fulltext) if quotable(s.text)][::25]
    assert len(quotes) > 20
    for q in quotes:
        assert support_score(q, q) == 1.0
    planted = {
        "megastore": "Megastore replicates data with a blockchain consensus that mines a block every ten minutes.",
        "paxos": "The protocol guarantees progress even when every replica crashes permanently at once.",
        "harvest": "Harvest and yield are measured in kilograms of grain collected per hectare each season.",
        "tiered": "Tiered replication stores every object on magnetic tape in a single data center to save energy.",
    }
    for pid, claim in planted.items():
        best = best_support(claim, pid, papers[pid].fulltext)
        assert best.score < P.SUPPORT_THRESHOLD, (claim, best)


def test_polish_fixes_and_flags(papers):
    quote = next(s for s in paper_sentences("paxos", papers["paxos"].fulltext) if quotable(s.text) and s.page > 1)
    body = "\n".join([
        "## 1. Consensus",
        "",
        f"- **van Renesse**: “{quote.text}” [@paxos, p. {quote.page}] ([p. {quote.page}](../../papers/paxos/paper.md#page-{quote.page}))",
        "- Megastore replicates data with a blockchain consensus that mines a block every ten minutes [@megastore].",
        "- A claim citing a paper that is not in the vault at all, about replicas [@nobody2020ghost].",
        f"- Repeated: “{quote.text}” [@paxos, p. {quote.page}]",
        "The cost is $5 per node and $x^{2}$ per replica.",
        "![Figure 1: missing](../../papers/paxos/figures/fig-99.png)",
        "",
    ])
    res = P.polish(body, known=set(papers), selected=list(papers), support=_support(papers),
                   figure_exists=lambda src: False)
    out = res.markdown
    assert f"“{quote.text}” [@paxos, p. {quote.page}]" in out                      # supported quote kept
    assert out.count(quote.text) == 1                                               # duplicate removed
    planted = [f for f in res.flags if f.kind == "support" and "blockchain" in f.text]
    assert planted, res.flags                                                       # planted claim caught
    assert "ten minutes [@megastore] **(unverified)**" in out
    assert "@nobody2020ghost" not in out and any(c.kind == "citation" for c in res.changes)
    assert "fig-99.png" not in out and any(c.kind == "figure" for c in res.changes)
    assert "\\$5" in out and "$x^{2}$" in out                                      # stray dollar escaped
    assert any(c.kind == "duplicate" for c in res.changes)
    assert set(P.cite_keys(out)) <= set(papers)


def test_polish_recites_to_the_supporting_paper(papers):
    """A sentence of one paper, word for word, cited to another is re-cited to its paper when it is that paper's
    own claim (a description of other work is never re-cited to the paper that describes it)."""
    s = next(s for s in paper_sentences("tiered", papers["tiered"].fulltext)
             if quotable(s.text) and "replica" in s.text.lower() and not s.other)
    res = P.polish(f"{s.text} [@harvest]\n", known=set(papers), selected=list(papers), support=_support(papers),
                   figure_exists=lambda src: True)
    assert "[@tiered" in res.markdown and "[@harvest]" not in res.markdown
    assert res.changes[0].kind == "support" and "re-cited" in res.changes[0].reason


def test_unbalanced_math_is_flagged():
    res = P.polish("We minimise $\\frac{a}{b$ over all replicas of the system [@x].\n", known={"x"}, selected=["x"],
                   support=lambda c, p: None, figure_exists=lambda s: True)
    assert any(f.kind == "latex" for f in res.flags)


# --- exports ---------------------------------------------------------------------------------------

def test_bibliographies_and_pandoc(papers, tmp_path):
    ps = list(papers.values())
    ps[0].venue, ps[0].doi = "Conference on Innovative Data Systems Research (CIDR)", "10.1000/x_1"
    bib = E.bibtex(ps)
    assert bib.count("@") == len(ps) and "@inproceedings{megastore," in bib and "10.1000/x_1" in bib
    csl = E.csl_json(ps)
    assert [c["id"] for c in csl] == list(papers)
    assert csl[1]["author"][0] == {"family": "van Renesse", "given": "Robbert"}
    assert csl[0]["issued"] == {"date-parts": [[2011]]}
    body = "## 1. Intro\n\n- “Quoted.” [@megastore, p. 2] and [@paxos; @harvest].\n"
    doc = E.yaml_header("A survey", "s", {"csl-json": "references.json"}) + "\n" + body
    (tmp_path / "survey.md").write_text(doc)
    (tmp_path / "references.bib").write_text(bib)
    (tmp_path / "references.json").write_text(json.dumps(csl))
    if shutil.which("pandoc") is None:
        pytest.skip("pandoc is not installed; the structure was checked above")
    for bibfile in ("references.bib", "references.json"):
        r = subprocess.run(["pandoc", "survey.md", "--citeproc", "-t", "plain", "--metadata",
                            f"bibliography={bibfile}"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "not found" not in r.stderr and "???" not in r.stdout
        assert "Renesse" in r.stdout and "Megastore" in r.stdout     # the reference list was rendered


# --- arXiv retrieval in the survey's first stage ---------------------------------------------------

def test_arxiv_selection_imports_and_selects(tmp_path, monkeypatch):
    """`arxiv:QUERY` searches (a loopback arXiv), imports the matches in the same run and selects them."""
    from papervault.app.survey import Selection, SurveyContext, retrieve
    from papervault.workspace import Workspace

    from support_arxiv import Catalog, LoopbackServer, Paper

    cat = Catalog()
    cat.add(Paper("2401.00001", "Paxos Made Moderately Complex", "We explain multi-decree Paxos consensus for "
                  "replicas, leaders and acceptors.", ["Robbert van Renesse", "Deniz Altinbuken"]),
            Paper("2401.00002", "Raft: an understandable consensus algorithm", "Raft is a consensus algorithm "
                  "for managing a replicated log.", ["Diego Ongaro", "John Ousterhout"]),
            Paper("2401.00006", "Deep residual learning for image recognition", "Residual networks ease training.",
                  ["Kaiming He"]))
    ws, _ = Workspace.init(tmp_path / "arxiv-ws")
    with LoopbackServer(cat) as srv:
        srv.settings_env(monkeypatch)
        ctx = SurveyContext(Workspace(ws.root), "", "cons", "extractive")
        out = retrieve(ctx, Selection(["arxiv:consensus algorithm replicas"], arxiv_max=2))
    assert len(out["ids"]) == 2 and out["ids"] == out["retrieved"], out
    titles = {ws.vault.read_meta(i).title for i in out["ids"]}
    assert "Deep residual learning for image recognition" not in titles
    assert ws.vault.repo.head.commit.message.startswith("survey cons: retrieve from arXiv for “consensus algorithm replicas”")
