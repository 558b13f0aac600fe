"""Polish on what a model writes: paraphrases kept, the draft prompt's attribution form kept, failures flagged.

Every case goes through the polish stage function (`papervault.app.survey.polish`: the semantic judge with the
real embedding model) on the corpus papers as `papervault add` parsed them, with sentences written the way a
model drafting a survey writes them. Polish may flag; it must never put other words in the writer's mouth,
delete prose, glue a flag to a word or cite a source twice in a sentence, and its report must say exactly what
it did.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

from papervault.app.survey import PolishInput, SurveyContext, polish
from papervault.pages import printed
from papervault.survey import export as E
from papervault.survey.evidence import paper_sentences
from papervault.survey.polish import FLAG, SUPPORT_THRESHOLD, Change, Flag, PolishResult
from papervault.survey.select import load_papers
from papervault.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
PAXOS, MEGA, TIERED = "vanrenesse2011paxos", "baker2011megastore", "cidon2015tiered"


@pytest.fixture(scope="module")
def corpus(corpus_added):
    """The corpus workspace and a way to find a paper's sentence and the printed page it is on."""
    ws = Workspace(corpus_added).require()
    papers = {p.id: p for p in load_papers(ws.vault, [PAXOS, MEGA, TIERED])[0]}

    def page(pid: str, start: str) -> str:
        s = next(s for s in paper_sentences(pid, papers[pid].fulltext) if s.text.startswith(start))
        return printed(papers[pid].page_labels, s.page)

    return ws, page


def run(ws, body: str) -> tuple[PolishResult, str]:
    """Polish `body` as the survey's stage 8 does; the result and the report it writes."""
    res = polish(SurveyContext(ws, "t", "t", "extractive"), PolishInput([PAXOS, MEGA, TIERED], body, SUPPORT_THRESHOLD))
    pr = PolishResult(markdown=res["markdown"], changes=[Change(**c) for c in res["changes"]],
                      flags=[Flag(**f) for f in res["flags"]], claims=res["claims"], supported=res["supported"],
                      attributed=res["attributed"])
    report = E.render("polish-report.md.j2", ROOT / "templates" / "survey", r=pr, slug="t", topic="t",
                      threshold=SUPPORT_THRESHOLD, citations=E.citations(pr.markdown))
    return pr, report


def test_a_models_survey_is_polished_without_damage_and_reported_exactly(corpus):
    ws, page = corpus
    p_mega = page(MEGA, "We decided to use Paxos")
    p_smr = page(PAXOS, "Paxos [13] is a protocol for state machine replication")
    p_gc = page(PAXOS, "This garbage collection technique does not work")
    p_vr = page(PAXOS, "The Viewstamped Replication protocol by Oki and Liskov")
    p_mttf = page(TIERED, "Tiered Replication improves the cluster-wide MTTF")
    draft = [
        "## Consensus",
        "",
        # the attribution form the draft prompt asks for, both ways round
        f"[@{PAXOS}] is a proven, optimal, fault-tolerant consensus algorithm that needs no distinguished master, "
        f"as described by [@{MEGA}, p. {p_mega}].",
        f"Paxos is a proven and optimal consensus algorithm that requires no distinguished master [@{PAXOS}], "
        f"as described by [@{MEGA}, p. {p_mega}].",
        # faithful paraphrases (a word-overlap judge rejects them)
        f"Paxos replicates a state machine in an asynchronous setting where processes may fail by crashing "
        f"[@{PAXOS}, p. {p_smr}]. Garbage collection of acceptor state fails when a replica is slow or faulty; the "
        f"fix is to run at least 2f + 1 replicas rather than f + 1 [@{PAXOS}, p. {p_gc}].",
        # a changed number, and what the paper says of other work stated as its own: flagged, never rewritten
        f"Compared with random replication, Tiered Replication raises cluster-wide MTTF 2,000-fold "
        f"[@{TIERED}, p. {p_mttf}].",
        f"This paper introduces Viewstamped Replication, a protocol largely identical to Paxos "
        f"[@{PAXOS}, p. {p_vr}].",
        "",
    ]
    body = "\n".join(draft)
    pr, report = run(ws, body)
    out = pr.markdown.splitlines()

    # the remarks and the paraphrases are kept as written, and count as supported remarks / claims
    assert out[2:5] == draft[2:5], out
    assert pr.claims == 6 and pr.supported == 4 and pr.attributed >= 2, pr.scores
    # the planted number and the misattribution are flagged after their citation, one space apart
    assert out[5] == draft[5][:-1] + " " + FLAG + "." and out[6] == draft[6][:-1] + " " + FLAG + "."
    assert [(f.kind, f.line) for f in pr.flags] == [("support", 6), ("attribution", 7)], pr.flags
    assert "2000" in pr.flags[0].reason and "describes other work" in pr.flags[1].reason
    assert not pr.changes

    # nothing deleted, nothing glued, no source cited twice in a sentence
    assert set(re.findall(r"\w+", body)) <= set(re.findall(r"\w+", pr.markdown))
    assert not re.search(r"\w\*\*\(", pr.markdown)
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z\[])", pr.markdown):
        keys = re.findall(r"@([\w.:-]+)", sentence)
        assert len(keys) == len(set(keys)), sentence

    # the report says exactly what was done: its header counts and its entries match the diff
    changed = {i + 1 for op, i1, i2, _, _ in difflib.SequenceMatcher(None, body.splitlines(), out).get_opcodes()
               if op != "equal" for i in range(i1, i2)}
    assert changed == {c.line for c in pr.changes} | {f.line for f in pr.flags} == {6, 7}
    assert "Cited claims checked against passages of the cited papers: 6; supported: 4; flagged as unsupported: 1; " \
           "flagged as resting on a description of other work: 1." in report
    assert f"shown as that paper's remark (never as its own claim): {pr.attributed}." in report
    assert "Changes made: 0. Still flagged: 2: 1 attribution, 1 support." in report
    entries = re.findall(r"(?m)^- line (\d+), (\w+):", report)
    assert sorted(entries) == [("6", "support"), ("7", "attribution")]


def test_a_quoted_description_of_other_work_is_introduced_as_a_remark(corpus):
    """The one rewrite polish makes on its own: a bare quotation of what a paper says of other work gets the
    words that make it that paper's remark; the quotation, its citation and the rest of the line are kept."""
    ws, page = corpus
    quote = ("The Viewstamped Replication protocol by Oki and Liskov [19], largely identical to Paxos, was "
             "published in 1988.")
    p_vr = page(PAXOS, "The Viewstamped Replication protocol by Oki and Liskov")
    line = f"- **van Renesse and Altinbuken (2015)**: “{quote}” [@{PAXOS}, p. {p_vr}]"
    pr, report = run(ws, line + "\n")
    assert pr.markdown.strip() == (f"- **van Renesse and Altinbuken (2015)**, describing other work: “{quote}” "
                                   f"[@{PAXOS}, p. {p_vr}]")
    assert [(c.kind, c.line) for c in pr.changes] == [("attribution", 1)] and not pr.flags
    assert pr.attributed == 1 and pr.supported == pr.claims == 1
    assert "Changes made: 1: 1 attribution. Still flagged: 0." in report


def test_the_labelled_pairs_can_be_appended_to():
    """bench/claim_pairs.jsonl (bench/polish_judge.py): one pair a line, the fields the bench reads, three labels."""
    import json

    rows = [json.loads(line) for line in (ROOT / "bench" / "claim_pairs.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 150
    for r in rows:
        assert {"claim", "paper", "page", "passage", "label", "kind", "origin"} <= set(r), r
        assert r["label"] in ("supported", "unsupported", "misattributed") and isinstance(r["page"], int), r
    assert {r["label"] for r in rows} == {"supported", "unsupported", "misattributed"}
    assert len({r["paper"] for r in rows}) >= 12


def test_a_remark_is_recognised_in_any_paragraph_a_model_writes():
    from papervault.survey.attribution import reported

    assert reported("Strong consistency is costly, as Fox and Brewer note")
    assert reported("Leases bound staleness, as Cidon et al. observe,")
    assert reported("Quorums intersect, as Lamport & Shostak put it")
    assert not reported("Raft separates leader election from log replication and safety")
    # a long paragraph of capitalised words after "as" is read in one pass (the pattern once backtracked on it)
    para = "as " + " ".join(["Replication Keeps Copies Of Data On Several Nodes"] * 30) + "."
    assert not reported(para)
    assert reported(para + " as Fox and Brewer note")


def test_the_checks_read_numbers_and_negations_as_a_paraphrase_words_them():
    from papervault.survey.support import check

    paper = "Megastore places replicas. Fox and Brewer state a Weak CAP Principle."
    triplet = "Within that region they assign a triplet or quintuplet of replicas to datacenters."
    assert check("It places three or five replicas in datacenters", triplet, triplet, paper) == ""
    assert check("It places three or seven replicas in datacenters", triplet, triplet, paper)
    weak = "There is a Weak CAP Principle which we have yet to characterize precisely."
    assert check("They add a Weak CAP Principle that they have not yet characterized precisely", weak, weak,
                 paper) == ""
    assert check("They add a Weak CAP Principle that they have not characterized", "There is a Weak CAP "
                 "Principle which we characterize precisely.", weak, paper)
