"""A long paper read whole by a backend that takes the text in its message (the `openai` backend): in parts
within `[openai] max_input_chars`, each labelled with its pages, then merged into one note; and the analysis
prompts fit the backend (tools for `claude`, the text in the message for `openai`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support_llm import ChatServer, Turn, make_paper_vault
from support_survey import read_pdf

from papervault.agents import get_backend
from papervault.agents.paperdoc import read_paper, split_paper
from papervault.config import Settings
from papervault.note_analysis import analyse_paper, build_task, load_template, merge_answers

PAXOS = "distributed_systems_paxos-made-moderately-complex.pdf"
ANCHOR = re.compile(r'<a id="page-(\d+)"></a>')
PART = re.compile(r"<<<PAPER pages (\d+)-(\d+) of paper\.md \(part (\d+) of (\d+)\)\n(.*?)\nPAPER>>>", re.S)
BUDGET = 20_000


@pytest.fixture(scope="module")
def paxos_md(corpus_dir) -> tuple[str, int]:
    return read_pdf(corpus_dir / PAXOS)


def part_answer(req: dict) -> Turn:
    """A part's note names its first and its last page; the merge request gets a summary of its own."""
    user = req["messages"][1]["content"]
    m = PART.search(user)
    if m is None:
        assert "was read in" in user
        return Turn.structured({"summary": [{"text": "Merged: Paxos replicates a state machine.", "page": 2}],
                                "method": "Multi-decree Paxos, step by step"})
    first, last = int(m.group(1)), int(m.group(2))
    claim = lambda text, page: {"text": text, "page": page, "section": None}
    return Turn.structured({
        "summary": [claim(f"Part summary of pages {first}-{last}.", first)],
        "contributions": [], "method": f"method seen on page {first}",
        "method_details": [claim(f"Detail first read on page {first}.", first)],
        "datasets": [], "metrics": [], "baselines": [],
        "key_results": [{"setting": f"pages {first}-{last}", "metric": "m", "value": str(last), "page": last}],
        "results": [claim(f"Result read on page {last}.", last)],
    })


def openai_backend(tmp_path, server, budget: int = BUDGET):
    s = Settings()
    s.openai.base_url, s.openai.model, s.openai.api_key = server.url + "/v1", "local-test", "sk-test"
    s.openai.max_input_chars = budget
    s.agents.backoff = 0.0
    return get_backend("openai", s, state_dir=tmp_path / "ws" / ".papervault")


def test_the_parts_hold_the_whole_paper_within_the_budget(paxos_md):
    text, pages = paxos_md
    parts = split_paper(text, BUDGET)
    assert len(parts) > 2 and "".join(p.text for p in parts) == text
    assert all(len(p.text) <= BUDGET for p in parts)
    assert [p.index for p in parts] == list(range(1, len(parts) + 1)) and parts[-1].last == pages
    for a, b in zip(parts, parts[1:]):
        assert b.first in (a.last, a.last + 1)          # in page order, nothing skipped
    # a page longer than the budget is cut in pieces, never inside a word
    small = split_paper(text, 1500)
    assert "".join(p.text for p in small) == text and all(len(p.text) <= 1500 for p in small)
    assert all(not (p.text[-1:].isalnum() and q.text[:1].isalnum()) for p, q in zip(small, small[1:]))


def test_a_long_paper_is_analysed_in_parts_that_reach_every_page(tmp_path, paxos_md):
    text, pages = paxos_md
    vault = make_paper_vault(tmp_path / "ws", "renesse2015paxos", text=text, pages=pages,
                             title="Paxos Made Moderately Complex", year=2015)
    with ChatServer(part_answer) as server:
        out = analyse_paper(vault, "renesse2015paxos", openai_backend(tmp_path, server))
        requests = list(server.requests)
    assert out.status == "analysed", out.message
    n = len(split_paper(text, BUDGET))
    parts = [PART.search(r["messages"][1]["content"]) for r in requests]
    assert sum(m is not None for m in parts) == n and len(requests) == n + 1       # the parts, then the merge
    seen: set[int] = set()
    for req, m in zip(requests, parts):
        if m is None:
            continue
        assert len(m.group(5)) <= BUDGET and "cut after" not in m.group(5)
        assert int(m.group(4)) == n
        seen |= {int(p) for p in ANCHOR.findall(m.group(5))}
        system, user = req["messages"][0]["content"], req["messages"][1]["content"]
        assert "Read, Grep and Glob" not in system + user and "You have no tools" in system
        assert f"This message holds part {m.group(3)}:" in user
    assert seen == set(range(1, pages + 1))
    meta, body = vault.read_note("renesse2015paxos")
    # items from the last pages reach the note, each linked to its page; the summary is the merged one
    assert f"Result read on page {pages}. [p. {pages}](paper.md#page-{pages})" in body
    assert "Merged: Paxos replicates a state machine." in body and "Part summary" not in body
    assert meta.method == "Multi-decree Paxos, step by step"
    assert [r["value"] for r in meta.key_results][-1] == str(pages)


def test_a_short_paper_is_one_request_and_the_prompts_fit_each_backend(tmp_path, paxos_md):
    text, _ = paxos_md
    vault = make_paper_vault(tmp_path / "ws")
    meta, _ = vault.read_note("doe2020widgets")
    tmpl = load_template(vault)
    doc = read_paper(vault.read_fulltext("doe2020widgets"))
    claude = build_task(vault, meta, vault.read_fulltext("doe2020widgets"), doc, tmpl, reads_files=True)
    assert "Read, Grep and Glob" in claude.system and "Read `paper.md`" in claude.prompt
    openai = build_task(vault, meta, vault.read_fulltext("doe2020widgets"), doc, tmpl, reads_files=False)
    assert "Read, Grep and Glob" not in openai.system + openai.prompt and "whole text follows" in openai.prompt
    with ChatServer(part_answer) as server:
        server.respond = lambda req: Turn.structured({"summary": [], "contributions": [], "method": None,
                                                      "datasets": [], "metrics": [], "key_results": []})
        out = analyse_paper(vault, "doe2020widgets", openai_backend(tmp_path, server))
        (req,) = server.requests
    assert out.status == "analysed" and "<<<PAPER paper.md\n" in req["messages"][1]["content"]


def test_merged_lists_keep_each_item_once_in_page_order():
    schema = json.loads((Path(__file__).parents[1] / "templates" / "note.schema.json").read_text())
    a = {"datasets": ["WidgetBench"], "method": None, "main_figures": [{"number": "1", "page": 2}],
         "results": [{"text": "A holds.", "page": 2}]}
    b = {"datasets": ["widgetbench", "Sprockets"], "method": "Gizmo", "main_figures": [{"number": "1", "page": 2}],
         "results": [{"text": "A  holds.", "page": 2}, {"text": "B holds.", "page": 9}]}
    m = merge_answers([a, b], schema)
    assert m["datasets"] == ["WidgetBench", "Sprockets"] and m["method"] == "Gizmo"
    assert m["main_figures"] == [{"number": "1", "page": 2}]
    assert [r["text"] for r in m["results"]] == ["A holds.", "B holds."]
