"""A survey's figures (lineage graph, timeline), the site that shows them, and `graph`: a paper's citations.

The vault: five papers on replicated logs whose reference lists cite each other by title, one of them with a
hostile title (markup, quotes, an XML end marker), built through the Vault in tmp_path; the survey runs in
this process with the extractive backend (the stages the Prefect flow also runs, `run_stages`).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from papervault.models import PaperMeta, ParsedPaper

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = 'Chain replication <script>alert("x")</script> & "quoted" ]]> for logs'

# id -> (title, year, abstract, the titles its reference list cites)
PAPERS = {
    "lamport1998parttime": ("The part-time parliament of replicated logs", 1998,
                            "A consensus protocol for a replicated log among part-time legislators.", []),
    "oki1988viewstamped": ("Viewstamped replication for highly available logs", 1988,
                           "Primary copy replication of a log with view changes for highly available services.", []),
    "renesse2004chain": (HOSTILE, 2004,
                         "Chain replication of a log supports high throughput and availability for storage.",
                         ["The part-time parliament of replicated logs"]),
    "ongaro2014raft": ("In search of an understandable consensus algorithm for logs", 2014,
                       "Raft is a consensus algorithm for managing a replicated log, leader based.",
                       ["The part-time parliament of replicated logs",
                        "Viewstamped replication for highly available logs"]),
    "howard2016flexible": ("Flexible quorums for replicated log consensus", 2016,
                           "Only quorum intersection across phases matters for consensus on a replicated log.",
                           ["The part-time parliament of replicated logs",
                            "In search of an understandable consensus algorithm for logs"]),
}
# who cites whom (citing, cited): what the reference lists above say
EDGES = {("renesse2004chain", "lamport1998parttime"), ("ongaro2014raft", "lamport1998parttime"),
         ("ongaro2014raft", "oki1988viewstamped"), ("howard2016flexible", "lamport1998parttime"),
         ("howard2016flexible", "ongaro2014raft")}


def _fulltext(title: str, abstract: str, cites: list[str]) -> str:
    body = (f'<a id="page-1"></a>\n\n# {title}\n\n## Abstract\n\n{abstract} We describe the protocol, its '
            f"safety argument and its performance on a replicated log.\n\n## 1 Introduction\n\n{abstract} The "
            "protocol keeps replicas of the log consistent when servers fail.\n\n")
    if cites:
        body += '<a id="page-2"></a>\n\n## References\n\n' + "\n\n".join(
            f"[{k}] A. Author and B. Author. {t}. In Proceedings of a Conference, 2001."
            for k, t in enumerate(cites, 1)) + "\n"
    return body


@pytest.fixture
def log_vault(tmp_path, cli_run) -> Path:
    from conftest import without_multilingual
    from papervault.workspace import Workspace

    ws_path = tmp_path / "ws"
    cli_run(["init", ws_path, "--workspace", ws_path])
    without_multilingual(ws_path)
    v = Workspace(ws_path).require().vault
    for pid, (title, year, abstract, cites) in PAPERS.items():
        v.write_note(PaperMeta(id=pid, title=title, year=year, abstract=abstract, authors=["A. Author"],
                               status="parsed"), f"# {title}\n")
        v.write_fulltext(pid, ParsedPaper(markdown=_fulltext(title, abstract, cites), pages=2))
    v.commit("add: test papers")
    return ws_path


@pytest.fixture
def log_survey(log_vault) -> Path:
    from papervault.app.surveyplan import run_survey_inprocess

    run_survey_inprocess("consensus on replicated logs", workspace=log_vault, slug="logs", papers=["all"],
                         backend="extractive")
    return log_vault / "vault" / "surveys" / "logs"


def _list_after(md: str, intro: str) -> list[str]:
    """The list items that follow the line starting with `intro`."""
    part = md.split(intro, 1)[1].split("\n\n", 2)[1]
    return [line for line in part.splitlines() if line.startswith("- ")]


def _keys(svg_root) -> set[str]:
    """The citation keys the nodes of a figure link to."""
    out = set()
    for a in svg_root.iter(f"{SVG}a"):
        m = re.fullmatch(r"(?:\.\./)+papers/([A-Za-z0-9_.-]+)/(?:paper|note)\.md", a.get("href"))
        assert m, a.get("href")        # the only links are paper pages
        out.add(m.group(1))
    return out


def test_survey_draws_lineage_and_timeline_with_text_alternatives(log_survey):
    md = (log_survey / "survey.md").read_text(encoding="utf-8")
    lineage = (log_survey / "figures" / "lineage.svg").read_text(encoding="utf-8")
    timeline = (log_survey / "figures" / "timeline.svg").read_text(encoding="utf-8")
    assert "![Figure 1: Lineage of the 5 selected papers" in md and "(figures/lineage.svg)" in md
    assert "![Figure 2: Papers per year and theme" in md and "(figures/timeline.svg)" in md

    # Figure 1: the nodes, their links and the arrows are the facts its list states
    root = ET.fromstring(lineage)
    assert _keys(root) == set(PAPERS)
    drawn = {tuple(t.text.split(" cites ")) for p in root.iter(f"{SVG}path") for t in p.iter(f"{SVG}title")}
    assert drawn == EDGES
    items = _list_after(md, "Figure 1 as a list")
    listed = {}
    for line in items:
        m = re.match(r"- \[([^\]]+)\]\(\.\./\.\./papers/\1/paper\.md\) \((\d{4}); .*\): (.*)$", line)
        assert m, line
        listed[m.group(1)] = (int(m.group(2)), m.group(3))
    assert set(listed) == set(PAPERS)
    for pid, (year, cites) in listed.items():
        assert year == PAPERS[pid][1]
        want = sorted(b for a, b in EDGES if a == pid)
        assert (sorted(cites.removeprefix("cites ").split(", ")) if want else cites) == \
            (want or "cites no other selected paper"), (pid, cites)
    # laid out by year: a column per year, left to right
    x_of = {}
    for a in root.iter(f"{SVG}a"):
        pid = a.get("href").split("/")[-2]
        x_of[pid] = float(a.find(f"{SVG}rect").get("x"))
    by_year = sorted(PAPERS, key=lambda p: PAPERS[p][1])
    assert [x_of[p] for p in by_year] == sorted(x_of[p] for p in by_year)
    assert len({x_of[p] for p in PAPERS}) == len({y for _, y, _, _ in PAPERS.values()})

    # Figure 2: the papers per year in the drawing and in its list
    troot = ET.fromstring(timeline)
    assert _keys(troot) == set(PAPERS)
    per_year = {}
    for line in _list_after(md, "Figure 2 as a list"):
        m = re.match(r"- (\d{4}): (.*)$", line)
        assert m, line
        per_year[int(m.group(1))] = set(re.findall(r"\(([^()]*)\)(?:;|$)", m.group(2))[0].split(", ")) \
            if m.group(2).count("(") == 1 else {k for g in re.findall(r"\(([^()]*)\)", m.group(2)) for k in g.split(", ")}
    assert per_year == {y: {p for p in PAPERS if PAPERS[p][1] == y} for _, y, _, _ in PAPERS.values()}
    years_drawn = {t.text for t in troot.iter(f"{SVG}text") if re.fullmatch(r"\d{4}", t.text or "")}
    assert years_drawn == {str(y) for y in per_year}

    # committed with the correlation
    import git

    repo = git.Repo(log_survey.parents[2] / "vault")
    assert not repo.is_dirty(untracked_files=True)
    msg = next(c.message for c in repo.iter_commits(paths="surveys/logs/figures/lineage.svg"))
    assert msg.startswith("survey logs: correlate")


def test_hostile_titles_are_escaped_in_the_figures(log_survey):
    lineage = (log_survey / "figures" / "lineage.svg").read_text(encoding="utf-8")
    assert "<script" not in lineage and "]]>" not in lineage
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quoted&quot; ]]&gt;" in lineage
    root = ET.fromstring(lineage)           # still well-formed XML
    assert not [e for e in root.iter() if e.tag.split("}")[-1] in ("script", "foreignObject", "style")]
    tips = [t.text for t in root.iter(f"{SVG}title") if t.text and t.text.startswith("renesse2004chain:")]
    assert tips and HOSTILE in tips[0]      # read back as the paper wrote it
    for e in root.iter():
        assert not [k for k in e.attrib if k.lower().startswith("on")], e.attrib


def test_field_map_escapes_theme_labels_and_keys():
    from types import SimpleNamespace as P

    from papervault.survey.correlate import Cluster, Correlation, Lineage
    from papervault.survey.figures import field_map, figures_markdown, lineage_svg, timeline_svg

    evil = '<img src=x onerror="alert(1)"> & ]]> "theme"'
    papers = [P(id="a2001x", title="A <b>", year=2001, fulltext="x"), P(id="b2002y", title="B", year=None, fulltext="")]
    corr = Correlation(topic="t", papers=["a2001x", "b2002y"], clusters=[Cluster(label=evil, paper_ids=["a2001x", "b2002y"])],
                       lineages=[Lineage("b2002y", "a2001x", "title")])
    fm = field_map(corr, papers, "s")
    for svg in (lineage_svg(fm), timeline_svg(fm)):
        root = ET.fromstring(svg)
        texts = [t.text for t in root.iter(f"{SVG}text")]
        assert " ".join(evil.split()) in texts           # the legend names the theme as written
        assert "<img" not in svg and 'onerror="' not in svg
        assert {a.get("href") for a in root.iter(f"{SVG}a")} <= {"../../../papers/a2001x/paper.md",
                                                                  "../../../papers/b2002y/note.md"}
    md = figures_markdown(fm)
    assert "<img" not in md and "n.d." in md          # the undated paper has its own column
    assert "[b2002y](../../papers/b2002y/note.md)" in md   # no full text: its note


EVIL_SVG = """<?xml version="1.0"?>
<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" onload="alert(1)">
<script>alert(2)</script><style>rect { fill: url(https://evil.example/x) }</style>
<a href="javascript:alert(3)"><text x="1" y="2">js</text></a>
<a xlink:href="https://evil.example/"><text x="1" y="2">away</text></a>
<a href="../../../papers/ongaro2014raft/paper.md"><rect x="1" y="1" width="5" height="5" fill="url(https://evil.example/p)" onclick="alert(4)"/><text x="1" y="9">raft</text></a>
<foreignObject><div xmlns="http://www.w3.org/1999/xhtml">html</div></foreignObject>
<image href="https://evil.example/i.png"/><use href="#x"/>
<text x="3" y="4" style="fill:red">kept &lt;b&gt;</text>
</svg>
"""


def test_site_publishes_the_figures_sanitised(log_survey, cli_run):
    ws = log_survey.parents[2]
    (log_survey / "figures" / "evil.svg").write_text(EVIL_SVG, encoding="utf-8")
    (ws / "vault" / "drawing.svg").write_text(EVIL_SVG, encoding="utf-8")     # an SVG outside a survey's figures
    out = json.loads(cli_run(["site", "build", "--json", "--workspace", ws]).stdout)
    site = Path(out["site_dir"])
    page = (site / "surveys" / "logs" / "survey.html").read_text(encoding="utf-8")
    assert re.search(r'<img[^>]+src="figures/lineage\.svg"', page) and re.search(r'<img[^>]+src="figures/timeline\.svg"', page)
    assert "Figure 1 as a list" in page
    assert not (site / "drawing.svg").exists()
    assert any("drawing.svg: not published" in w for w in out["warnings"]), out["warnings"]

    fig = site / "surveys" / "logs" / "figures" / "lineage.svg"
    assert not fig.is_symlink()              # a staged, rebuilt copy, not the vault's file
    root = ET.fromstring(fig.read_text(encoding="utf-8"))
    hrefs = {a.get("href") for a in root.iter(f"{SVG}a")}
    assert hrefs == {f"../../../papers/{pid}/paper.html" for pid in PAPERS}
    for h in hrefs:                          # every node opens a page of the site
        assert (fig.parent / h).resolve().is_file(), h
    assert "&lt;script&gt;" in fig.read_text(encoding="utf-8")

    evil = (site / "surveys" / "logs" / "figures" / "evil.svg").read_text(encoding="utf-8")
    eroot = ET.fromstring(evil)
    names = {e.tag.split("}")[-1] for e in eroot.iter()}
    assert not names & {"script", "style", "foreignObject", "image", "use", "div"}, names
    assert "alert" not in evil and "evil.example" not in evil and "javascript" not in evil.lower()
    assert [a.get("href") for a in eroot.iter(f"{SVG}a")] == [None, None, "../../../papers/ongaro2014raft/paper.html"]
    assert "kept &lt;b&gt;" in evil and "style=" not in evil


def _edges_ok(got: dict, pid: str) -> None:
    """`got` (a neighbourhood of `pid`) holds exactly the vault's edges, each with its reference line and page."""
    cites = {r["id"]: r["evidence"] for r in got["cites"]}
    cited_by = {r["id"]: r["evidence"] for r in got["cited_by"]}
    assert set(cites) == {b for a, b in EDGES if a == pid}, cites
    assert set(cited_by) == {a for a, b in EDGES if b == pid}, cited_by
    for cited, ev in cites.items():
        assert ev["in"] == pid and PAPERS[cited][0] in ev["reference"] and ev["reference"].startswith("[")
        assert ev["page"] == 2 and ev["anchor"] == f"papers/{pid}/paper.md#page-2"
    for citing, ev in cited_by.items():
        assert ev["in"] == citing and PAPERS[pid][0] in ev["reference"] and ev["page"] == 2
        assert ev["anchor"] == f"papers/{citing}/paper.md#page-2"


def test_graph_json_gives_citing_and_cited_papers_with_evidence(log_vault, cli_run):
    got = json.loads(cli_run(["graph", "ongaro2014raft", "--json", "--workspace", log_vault]).stdout)
    assert got["paper"]["id"] == "ongaro2014raft" and got["has_references"]
    _edges_ok(got, "ongaro2014raft")
    first = json.loads(cli_run(["graph", "lamport1998parttime", "--json", "--workspace", log_vault]).stdout)
    _edges_ok(first, "lamport1998parttime")
    assert first["cites"] == [] and not first["has_references"]
    text = cli_run(["graph", "ongaro2014raft", "--workspace", log_vault]).stdout
    assert "Cites, in the vault (2):" in text and "Cited by, in the vault (1):" in text and "p. 2" in text
    from papervault.errors import NotFoundError

    with pytest.raises(NotFoundError, match="no paper 'nobody1900none'"):    # one line from `papervault`
        cli_run(["graph", "nobody1900none", "--workspace", log_vault])


def test_mcp_citations_tool_gives_the_same_edges(log_vault):
    import anyio
    from mcp import Client

    from mcp_server.server import build_server
    from papervault.workspace import Workspace

    async def main():
        async with Client(build_server(Workspace(log_vault).require())) as c:
            listed = {t.name: t for t in (await c.list_tools()).tools}
            assert listed["citations"].annotations.read_only_hint
            r = await c.call_tool("citations", {"paper_id": "renesse2004chain"})
            assert not r.is_error, r.content
            got = r.structured_content
            _edges_ok(got, "renesse2004chain")
            assert got["cites"][0]["evidence"]["cite"] == "[@renesse2004chain, p. 2]"
            # the hostile title reaches the agent as text, not markup
            assert "<script>" not in json.dumps(got) and "alert" in got["paper"]["title"]
            r = await c.call_tool("citations", {"paper_id": "lamport1998parttime"})
            _edges_ok(r.structured_content, "lamport1998parttime")
            r = await c.call_tool("citations", {"paper_id": "nobody1900none"})
            assert r.is_error

    anyio.run(main)


def test_comparison_chart_draws_shared_metrics_with_citation_and_page():
    """Where the comparison table has numbers for one metric in one setting from several papers, a chart of
    them: each point labelled with its paper and page and linked to that page; the list says the same."""
    from types import SimpleNamespace as P

    from papervault.site.svg import sanitise_svg
    from papervault.survey.correlate import ComparisonRow, Correlation
    from papervault.survey.figures import comparison_svg, field_map, figures_markdown

    evil = 'Top-1 <script>alert(1)</script> "acc"'
    papers = [P(id="he2016resnet", title="ResNet", year=2016, fulltext="x"),
              P(id="tan2019effnet", title="EfficientNet", year=2019, fulltext="x"),
              P(id="dosov2021vit", title="ViT", year=2021, fulltext=""),
              P(id="lone2020cifar", title="Alone", year=2020, fulltext="x")]

    def ev(metric, setting, value, page):
        return {"metric": metric, "setting": setting, "value": value, "page": page, "source": "Table 2"}

    rows = [ComparisonRow("he2016resnet", evidence=[ev(evil, "ImageNet", "76.1%", 7), ev("FLOPs", "ImageNet", "3.8", 7)]),
            ComparisonRow("tan2019effnet", evidence=[ev(evil, "imagenet", "84.3 %", 5)]),
            ComparisonRow("dosov2021vit", evidence=[ev(evil, "ImageNet", "88.55", 4)]),
            ComparisonRow("lone2020cifar", evidence=[ev("Accuracy", "CIFAR-10", "93", 2)])]
    corr = Correlation(topic="t", papers=[p.id for p in papers], comparison=rows)
    fm = field_map(corr, papers, "vision")
    assert [(c.metric, c.setting) for c in fm.charts] == [(evil, "ImageNet")]     # one metric+setting, 3 papers
    svg = comparison_svg(fm)
    root = ET.fromstring(svg)
    points = {}
    for a in root.iter(f"{SVG}a"):
        label = next(t.text for t in a.iter(f"{SVG}text") if ", p. " in (t.text or ""))
        points[label] = a.get("href")
    assert points == {"tan2019effnet, p. 5": "../../../papers/tan2019effnet/paper.md#page-5",
                      "he2016resnet, p. 7": "../../../papers/he2016resnet/paper.md#page-7",
                      "dosov2021vit, p. 4": "../../../papers/dosov2021vit/note.md"}      # no full text: its note
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    # the text alternative names the same papers, values and pages
    md = figures_markdown(fm)
    assert "![Figure 3: Results the selected papers report" in md and "(figures/comparison.svg)" in md
    item = _list_after(md, "Figure 3 as a list")
    assert len(item) == 1 and "ImageNet" in item[0] and "<script>" not in item[0]
    listed = re.findall(r"\[([\w.-]+), p\. (\d+)\]\(([^)]+)\) ([\d.]+ ?%?)", item[0])
    assert {f"{k}, p. {p}" for k, p, _, _ in listed} == set(points)
    assert [v for *_, v in listed] == ["88.55", "84.3 %", "76.1%"]                 # highest first, as printed
    # on the site the links open the full text at that page (or the note)
    clean = sanitise_svg(svg, "surveys/vision/figures/comparison.svg", {p.id for p in papers},
                         {"he2016resnet", "tan2019effnet", "lone2020cifar"})
    hrefs = {a.get("href") for a in ET.fromstring(clean).iter(f"{SVG}a")}
    assert hrefs == {"../../../papers/tan2019effnet/paper.html#page-5", "../../../papers/he2016resnet/paper.html#page-7",
                     "../../../papers/dosov2021vit/note.html"}
    # no metric shared by two papers: no chart and no Figure 3
    lone = field_map(Correlation(topic="t", papers=["lone2020cifar"], comparison=rows[3:]), papers[3:], "x")
    assert lone.charts == [] and "Figure 3" not in figures_markdown(lone)
