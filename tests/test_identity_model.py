"""A model's first-page read of a paper's identity, replayed from a real model's recorded answers
(tests/data/recorded/identity-first-page): `add --backend openai` writes whose reading each note keeps, and
`status` lists what the page left unsettled."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import without_multilingual
from papervault.identity_read import settle
from papervault.models import PaperMeta
from papervault.workspace import Workspace
from support_llm import ChatServer
from support_replay import Replay, key_of, load, request_text

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
