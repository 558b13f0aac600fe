"""Details a reader of a survey notices: a comparison cell cut inside a word, a lineage edge to a later paper
called "builds on", a selection line whose list of papers names the wrong direction of a citation."""

from __future__ import annotations

import json
import re

from test_select_citations import CONSENSUS, TOPIC, _blocks, citing_vault  # noqa: F401  (the fixture)

from papervault.survey import correlate as C
from papervault.survey import draft as D
from papervault.survey import export as E
from papervault.survey.papers import SurveyPaper

DLS = "Consensus in the presence of partial synchrony"


def _paper(pid: str, year: int, title: str, refs: str = "") -> SurveyPaper:
    text = f'<a id="page-1"></a>\n\n# {title}\n\nBody.\n\n## References\n\n{refs}\n'
    return SurveyPaper(id=pid, title=title, year=year, fulltext=text)


def test_a_long_comparison_cell_ends_at_a_word():
    method = ("Fault-tolerant replication of a state machine through remote method invocation with a leader "
              "that orders every request, and acceptors that remember the ballots they promised")
    row = C.ComparisonRow("doe2020", method=method, datasets=["WidgetBench"])
    corr = C.Correlation("t", ["doe2020"], comparison=[row])
    (line,) = D._comparison_table(corr, {"doe2020": SurveyPaper("doe2020", "Widgets")})[2:]
    cell = line.split(" | ")[1]
    assert cell.endswith(" …") and len(cell) <= D.CELL_MAX + 2
    kept = cell[:-2].split()
    assert kept == method.split()[:len(kept)], cell          # whole words of the method, never "invoc"


def test_a_paper_never_cites_a_later_one_and_correlation_says_cites():
    ref = f"[1] C. Dwork, N. Lynch and L. Stockmeyer. {DLS}. In PODC, 1984."
    flp = _paper("fischer1985impossibility", 1985, "Impossibility of distributed consensus with one faulty process", ref)
    dls = _paper("dwork1988consensus", 1988, DLS)
    assert C.find_lineages([flp, dls]) == []               # the 1984 version, not the 1988 paper
    dls.year = 1986                                         # within a year: a preprint or "to appear"
    (edge,) = C.find_lineages([flp, dls])
    assert (edge.paper_id, edge.builds_on, edge.via) == ("fischer1985impossibility", "dwork1988consensus", "title")
    corr = C.Correlation("consensus", [flp.id, dls.id], lineages=[edge])
    md = E.render("correlation.md.j2", None, c=corr, topic="consensus", slug="s", inputs="x")
    assert "- [@fischer1985impossibility] cites [@dwork1988consensus]" in md and "builds on" not in md


def test_selection_lists_who_cites_a_paper_and_whom_it_cites(citing_vault, cli_run):
    out = json.loads(cli_run(["survey", TOPIC, "--select-only", "--slug", "cites", "--json",
                              "--workspace", citing_vault]).stdout)
    assert "lamport2001paxos" in out["papers"]
    body = (citing_vault / "vault" / "surveys" / "cites" / "selection.md").read_text(encoding="utf-8")
    selected = _blocks(body.partition("## Near misses")[0])
    # a consensus paper cites "Paxos Made Simple": the ids after "cites" are the papers it cites, those after
    # "cited by" the papers that cite it
    for pid in (p for p in CONSENSUS if p in selected):
        line = re.search(r"citations: (.*)", selected[pid]).group(1)
        assert re.fullmatch(r"cited by 0 of the \d+ selected papers; cites 1 of them: @lamport2001paxos", line), line
    paxos = selected["lamport2001paxos"]
    assert re.search(r"cited by 4 of the \d+ selected papers .*: @howard2016consensus", paxos), paxos


def test_the_correlation_prompt_gives_pages_only_where_the_notes_have_them():
    note = ("# Widgets\n\n## Summary\n- “Gizmo places widgets in constant time.” [p. 223](paper.md#page-1)\n\n"
            "## Method\n**In one line:** Gizmo\n- A sorted index of free capacity. [p. 224](paper.md#page-2)\n\n"
            "## Coverage\n- Figures: Figure 3\n")
    p = SurveyPaper("doe2020widgets", "Widgets at Scale", year=2020, abstract="We present Gizmo.", method="Gizmo",
                    key_results=[{"setting": "Gizmo", "metric": "latency", "value": "1.2", "page": 2}], note=note)
    assert p.analysis == {"summary": [{"text": "Gizmo places widgets in constant time.", "page": 1}],
                          "method": [{"text": "A sorted index of free capacity.", "page": 2}]}
    text = E.render("correlate.prompt.md.j2", None, topic="t", papers=[p, SurveyPaper("x2021", "Other")], lineages=[])
    assert "- Gizmo places widgets in constant time. (p. 1)" in text
    assert "- A sorted index of free capacity. (p. 2)" in text and "- Gizmo: latency = 1.2 (p. 2)" in text
    assert "Abstract: We present Gizmo.\n" in text and "Cite a page, [@id, p. N], only from a statement" in text
    assert "Figure 3" not in text
