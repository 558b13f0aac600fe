"""A model's first-page read of a paper's identity, replayed from a real model's recorded answers
(tests/data/recorded/identity-first-page): `add --backend openai` writes whose reading each note keeps, and
`status` lists what the page left unsettled."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import without_multilingual
from papervault.agents.openai import OpenAIBackend
from papervault.config import OpenAISettings
from papervault.identity import identity_doubt
from papervault.identity_read import settle
from papervault.models import PaperMeta
from papervault.note_analysis import analyse_paper
from papervault.workspace import Workspace
from support_index import add_paper
from support_llm import ChatServer, Turn
from support_replay import Replay, SchemaRobot, key_of, kind_of, load, request_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from identity_pdfs import make  # noqa: E402

RECORDING = "identity-first-page"
HARVEST = "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"


@pytest.fixture
def ws(tmp_path):
    root = Workspace.init(tmp_path / "ws")[0].root
    without_multilingual(root)
    return Workspace(root)


def _recorded_reads() -> dict[str, dict]:
    return {key_of("note", request_text(ex["request"])): json.loads(ex["answer"]).get("identity")
            for ex in load(RECORDING)}


def test_recorded_notes_keep_the_better_supported_identity(ws, tmp_path, corpus_dir, cli_run, monkeypatch):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for style in ("author-line", "two-column-header", "cover-page"):
        make(style, folder)
    (folder / HARVEST).write_bytes((corpus_dir / HARVEST).read_bytes())
    replay = Replay(RECORDING)
    with ChatServer(replay) as server:
        monkeypatch.setenv("PAPERVAULT_OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("PAPERVAULT_OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("PAPERVAULT_AGENTS_RETRIES", "1")
        out = json.loads(cli_run(["add", str(folder), "--backend", "openai", "--no-index", "--json",
                                  "--workspace", ws.root]).stdout)
    assert not replay.misses, replay.misses
    assert sorted(out["added"]) == ["foxharvest", "klimovic2018sharding", "page1998pagerank", "saltzer1984end"]
    for pid in out["added"]:
        meta = ws.vault.read_meta(pid)
        assert meta.status == "analysed" and meta.identity["source"] in ("parse", "model"), pid
    # The model agreed with the parse on every title and author list: nothing changed, nothing is doubted.
    saltzer = ws.vault.read_meta("saltzer1984end")
    assert (saltzer.title, saltzer.authors) == ("End-to-End Arguments in System Design",
                                                ["J.H. Saltzer", "D.P. Reed", "D.D. Clark"])
    assert "title" not in saltzer.identity.get("disagreed", [])
    # The parse found no venue on the PageRank report: the model's, printed on the page, is taken and said so.
    page = ws.vault.read_meta("page1998pagerank")
    assert page.venue == "Technical Report SIDL-WP-1999-0120" and page.provenance["venue"] == "model"
    assert page.identity == {"source": "model", "model": ["venue"]}
    st = json.loads(cli_run(["status", "--json", "--workspace", ws.root]).stdout)
    assert st["low_confidence"] == []


def test_a_recorded_read_corrects_the_issues_wrong_parses():
    """The real model's reading of the first page, against what the header reader once read (an author line as
    the title, a name set above the title glued to it, a column name over the title)."""
    reads = _recorded_reads()
    saltzer = ("# End-to-End Arguments in System Design\n\n<a id=\"page-1\"></a>\n\nJ.H. Saltzer, D.P. Reed and "
               "D.D. Clark*\n\nM.I.T. Laboratory for Computer Science\n\nEnd-to-End Arguments in System Design\n\n"
               "<a id=\"page-2\"></a>\n")
    meta = PaperMeta(id="anon1984j", title="J.H. Saltzer, D.P. Reed and D.D. Clark*", year=1984,
                     provenance={"title": "layout", "title_confidence": "low", "year": "layout"})
    record = settle(meta, reads["saltzer1984end"], saltzer)
    assert meta.title == "End-to-End Arguments in System Design" and "title" in record["model"]
    assert meta.authors == ["J.H. Saltzer", "D.P. Reed", "D.D. Clark"] and meta.provenance["authors"] == "model"

    koch = "# A Science of Intelligence\n\n<a id=\"page-1\"></a>\n\nViews & Reviews\n\nA Science of Intelligence\n\n" \
           "Christof Koch and Tomaso Poggio\n"
    meta = PaperMeta(id="koch2015views", title="Views & Reviews A Science of Intelligence", authors=["Christof Koch"],
                     provenance={"title": "layout", "title_confidence": "high", "authors": "layout"})
    record = settle(meta, reads["koch2015science"], koch)
    assert meta.title == "A Science of Intelligence" and meta.authors == ["Christof Koch", "Tomaso Poggio"]
    assert record["source"] == "model" and {"title", "authors"} <= set(record["disagreed"])

    # Two names printed on the page (an author and the collection's editor): the page cannot say which wrote
    # it, so the parse stays and the paper is listed as uncertain.
    hodges = "# Did Church and Turing Have a Thesis about Machines?\n\n<a id=\"page-1\"></a>\n\nAndrew Hodges∗\n\n" \
             "Did Church and Turing Have a Thesis about Machines?\n\nB.J. Copeland (ed.)\n"
    meta = PaperMeta(id="copeland1936did", title="Did Church and Turing Have a Thesis about Machines?",
                     authors=["B.J. Copeland"], provenance={"title": "layout", "title_confidence": "high",
                                                            "authors": "layout"})
    record = settle(meta, reads["copeland1936did"], hodges)
    assert meta.authors == ["B.J. Copeland"] and record["uncertain"] == ["authors"]


def test_the_title_the_page_leaves_open_is_asked_and_a_recorded_real_answer_settles_it(ws):
    """A column's name set above the title (paper.md as the parse writes it: its `# title` line, the column and
    the title, is not printed again below the page anchor). The model reads the title alone, the page supports
    neither reading better, so the analysis asks which is the title; a real model's recorded answer
    (tests/data/recorded/identity-title) names the title without the column, and nothing is left uncertain."""
    page = (Path(__file__).parent / "data" / "identity_title_page.md").read_text(encoding="utf-8")
    add_paper(ws.vault, "fu2018inside", title="Inside Risks Risks of Trusting the Physics of Sensors",
              fulltext=page, authors=["Kevin Fu", "Wenyuan Xu"], year=2018,
              provenance={"title": "layout", "title_confidence": "high", "authors": "layout", "year": "layout"})
    replay, robot, kinds = Replay("identity-title"), SchemaRobot(), []

    def respond(req):
        kinds.append(kind_of(req))
        if kinds[-1] == "title":
            return replay(req)
        data = robot.instance(req)      # a note whose identity reads the title without the column's name
        data["identity"] = {**data.get("identity", {}), "title": "Risks of Trusting the Physics of Sensors",
                            "authors": ["Kevin Fu", "Wenyuan Xu"], "year": 2018}
        return Turn.structured(data)

    with ChatServer(respond) as server:
        backend = OpenAIBackend(OpenAISettings(base_url=server.url + "/v1", api_key="sk-test", model="recorded"),
                                retries=1)
        outcome = analyse_paper(ws.vault, "fu2018inside", backend)
    assert outcome.status == "analysed" and not replay.misses and kinds == ["note", "title"]
    meta = ws.vault.read_meta("fu2018inside")
    assert meta.title == "Risks of Trusting the Physics of Sensors" and meta.provenance["title"] == "model"
    assert meta.identity == {"source": "model", "disagreed": ["title"], "model": ["title"], "asked": ["title"]}
    assert identity_doubt(meta) is None
