"""What a model drafting a survey section is given (`papervault.survey.draft.evidence_for`): for each cited
paper its analysed note (summary, method, results with pages) and the passages the index retrieves for the
section, cleared of boilerplate and scan noise; the prompt stays within its stated size on the largest corpus
paper. Real corpus papers, parsed and analysed by `papervault add`, indexed by `papervault index`."""

from __future__ import annotations

import re

import pytest

from papervault.survey import draft as D
from papervault.survey import export as E
from papervault.survey.outline import Section
from papervault.survey.select import load_papers
from papervault.workspace import Workspace

TOPIC = "consensus protocols for replicated state machines"
PAXOS, MEGASTORE = "vanrenesse2011paxos", "baker2011megastore"


def prompt(section: Section, evidence: dict) -> str:
    # the survey's templates render with StrictUndefined: a missing key fails here as it would in a run
    return E.render("draft.prompt.md.j2", None, topic=TOPIC, section=section, evidence=evidence)


def test_noise_and_boilerplate_are_not_given_to_the_model():
    keep = "The leader sends a prepare message with its ballot number to a majority of the acceptors."
    assert D.informative(keep)
    for noise in ("(N I 2)", "The remainder of the paper introduces the protocol and its proof in detail.",
                  "This paper is organized as follows, with the model first and the evaluation last.",
                  "Section 3 describes the design of the system and Section 4 its implementation.",
                  "Permission to make digital or hard copies of all or part of this work is granted.",
                  "a b c d e f g h replicas i j k l m n o p q r s."):
        assert not D.informative(noise), noise


def test_each_cited_paper_comes_with_its_note_and_passages_for_the_section(corpus_workspace):
    ws = Workspace(corpus_workspace)
    papers = {p.id: p for p in load_papers(ws.vault, [PAXOS, MEGASTORE])[0]}
    sec = Section("How agreement is reached", "how leaders, acceptors and replicas agree on the order of commands: "
                  "ballots, the two phases of Paxos, and Megastore's use of it across datacenters",
                  [PAXOS, MEGASTORE], "custom")
    ev = D.evidence_for(sec, TOPIC, papers, ws=ws)
    assert [b["id"] for b in ev["papers"]] == [PAXOS, MEGASTORE]
    for b in ev["papers"]:
        p = papers[b["id"]]
        assert b["summary"] and all(c["page"] for c in b["summary"])              # the note's own statements
        assert {c["text"][:60] for c in b["summary"]} <= {c["text"][:60] for c in p.analysis["summary"]}
        assert b["passages"] and all(x["page"] and not D._BOILERPLATE.search(x["text"]) for x in b["passages"])
        for x in b["passages"]:                                                  # the paper's own words, with pages
            assert len(x["text"]) <= D.PASSAGE_MAX + 2
            assert " ".join(x["text"].split())[:60] in " ".join(p.fulltext.split()), x
    paxos = " ".join(x["text"] for x in ev["papers"][0]["passages"]).lower()
    assert "ballot" in paxos, paxos                   # retrieved for the section: the mechanism, not the plan
    text = prompt(sec, ev)
    assert "## [@vanrenesse2011paxos]" in text and "Passages retrieved for this section:" in text
    assert "how each cited work does what it does" in text and "compare the papers" in text
    assert not re.search(r"remainder of (?:this|the) paper", text, re.I)
    quotes = D.evidence_quotes(ev)
    assert quotes and all({"paper", "text", "page", "about"} <= set(q) for q in quotes)


def test_the_prompt_stays_within_its_size_on_the_largest_corpus_paper(corpus_added):
    ws = Workspace(corpus_added)
    papers = {p.id: p for p in load_papers(ws.vault, ws.vault.paper_ids())[0]}
    largest = max(papers.values(), key=lambda p: len(p.fulltext))
    assert len(largest.fulltext) > 100_000, (largest.id, len(largest.fulltext))
    alone = Section("Type systems", "how the type system checks programs", [largest.id], "custom")
    ev = D.evidence_for(alone, TOPIC, papers, ws=ws)
    (b,) = ev["papers"]
    assert b["summary"] and b["passages"] and b["size"] <= D.PAPER_BRIEF_MAX
    one = prompt(alone, ev)
    every = Section("Everything", "all of it", sorted(papers), "custom")
    ev_all = D.evidence_for(every, TOPIC, papers, ws=ws)
    assert all(b["size"] <= D.BRIEF_BUDGET // len(papers) + 1 for b in ev_all["papers"])
    many = prompt(every, ev_all)
    # the instructions, each paper's heading and labels, and the remarks (at most REMARKS of PASSAGE_MAX)
    overhead = 3_000 + 400 * len(papers) + D.REMARKS * (D.PASSAGE_MAX + 200)
    assert len(one) <= D.PAPER_BRIEF_MAX + overhead and len(many) <= D.BRIEF_BUDGET + overhead, (len(one), len(many))
    print(f"draft prompt: {len(one)} characters for {largest.id} alone, {len(many)} for {len(papers)} papers")
