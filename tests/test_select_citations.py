"""Citation evidence in topic selection, on a small vault whose papers' reference lists cite each other.

The vault: four papers about consensus for replicated state machines (their titles repeat the topic), each citing
"Paxos Made Simple" (a canonical paper whose title shares no word with the topic and whose note says nothing of
it); every paper of the vault cites a statistics textbook; "Paxos Made Simple" itself cites "Time, Clocks, and
the Ordering of Events"; a record known only by its title repeats the topic (no abstract, no full text, cited by
no one); twelve papers on other topics fill the vault. Built through the Vault and indexed with
`papervault index` (real fastembed and LanceDB), then selected with `papervault survey TOPIC --select-only`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from papervault.models import ParsedPaper, PaperMeta
from papervault.vault import frontmatter

TOPIC = "consensus protocols for replicated state machines"
TEXTBOOK = "Statistical Methods for Research Workers and Experimenters"
PAXOS = "Paxos Made Simple"
CLOCKS = "Time, Clocks, and the Ordering of Events in a Distributed System"
TITLE_ONLY = "Consensus protocols for replicated state machines: the state of the art"

CONSENSUS = {
    "ongaro2014consensus": ("Consensus protocols for replicated state machines made understandable",
                            "We present a consensus protocol for managing a replicated log of a replicated state "
                            "machine. Leader election, log replication and safety are separated."),
    "howard2016consensus": ("Flexible quorums for consensus in replicated state machines",
                            "Consensus protocols for replicated state machines need majority quorums in both phases; "
                            "we show that only the intersection of quorums across phases matters."),
    "moraru2013consensus": ("There is more consensus in egalitarian replicated state machines",
                            "A leaderless consensus protocol for state machine replication with optimal commit "
                            "latency in the wide area and load balanced across all replicas."),
    "vanrenesse2015consensus": ("Consensus for replicated state machines made moderately complex",
                                "How to build a replicated state machine on a consensus protocol: replicas, leaders, "
                                "acceptors, ballots and slots, with pseudocode for each process."),
}
OTHER_TOPICS = [
    ("Deep residual learning for image recognition", "Residual networks ease the training of very deep convolutional networks for image classification."),
    ("Attention is all you need for machine translation", "The transformer relies on attention alone to translate between languages."),
    ("Playing Atari games with deep reinforcement learning", "A convolutional network learns control policies from raw pixels with Q-learning."),
    ("Photometric stereo for shiny surfaces", "Recovering surface normals from images under varying light for specular objects."),
    ("Sparse Johnson-Lindenstrauss transforms", "A dimensionality reduction whose embedding matrix has few nonzero entries per column."),
    ("Liquid types for program verification", "Refinement types inferred by abstract interpretation verify safety properties of programs."),
    ("Garbage collection in a real-time operating system", "An incremental copying collector bounds pause times for embedded software."),
    ("Predicting points in basketball from player tracking", "A model of expected possession value from optical tracking data of NBA games."),
    ("Smoothing time series for visual analytics", "Automatically smoothing plots of time series highlights their long-term trends for analysts."),
    ("A type system for an untyped dynamic language", "Optional typing for a Lisp dialect checks idiomatic programs with occurrence typing."),
    ("Memory safety attacks and defenses in C programs", "A systematisation of memory corruption attacks and the defenses that stop them."),
    ("Protein structure prediction with deep learning", "Predicting the three-dimensional structure of proteins from their amino acid sequence."),
]


def _refs(*titles: str) -> str:
    return "\n\n## References\n\n" + "\n\n".join(
        f"[{k}] A. Author and B. Author. {t}. In Proceedings of a Conference, 2001." for k, t in enumerate(titles, 1))


def _paper(vault, pid: str, title: str, abstract: str | None, body: str, year: int = 2015) -> None:
    vault.write_note(PaperMeta(id=pid, title=title, year=year, abstract=abstract, authors=["A. Author"]),
                     f"# {title}\n")
    if body is not None:
        vault.write_fulltext(pid, ParsedPaper(markdown=f'<a id="page-1"></a>\n\n# {title}\n\n{body}\n', pages=1))


@pytest.fixture
def citing_vault(tmp_path, cli_run, model_dir, corpus_dir) -> Path:
    from conftest import without_multilingual
    from papervault.workspace import Workspace

    ws_path = tmp_path / "ws"
    cli_run(["init", ws_path, "--workspace", ws_path])
    without_multilingual(ws_path)
    ws = Workspace(ws_path).require()
    v = ws.vault
    for pid, (title, abstract) in CONSENSUS.items():
        _paper(v, pid, title, abstract, f"## 1 Introduction\n\n{abstract}\n" + _refs(PAXOS, TEXTBOOK))
    # the canonical paper: a title without the topic's words, a note that says nothing of it
    _paper(v, "lamport2001paxos", PAXOS, None, "## 1 Introduction\n\nThe algorithm is simple." + _refs(CLOCKS), 2001)
    _paper(v, "lamport1978time", CLOCKS, None, None, 1978)
    _paper(v, "fisher1925methods", TEXTBOOK, "A handbook of methods for the analysis of experiments.", None, 1925)
    _paper(v, "titleonly2019consensus", TITLE_ONLY, None, None, 2019)     # a title, nothing else
    for k, (title, abstract) in enumerate(OTHER_TOPICS):
        _paper(v, f"other{k:02d}", title, abstract, f"## 1 Introduction\n\n{abstract}\n" + _refs(TEXTBOOK))
    v.commit("add: test papers")
    cli_run(["index", "-q", "--workspace", ws_path])
    return ws_path


def _blocks(section: str) -> dict[str, str]:
    """paper id -> its line and reason lines, in one part of selection.md."""
    return {m.group(1): m.group(0) for m in re.finditer(r"(?ms)^- \[[ x]\] @(\S+).*?(?=^- \[|\Z)", section)}


def test_canonical_paper_without_the_topics_words_enters_by_citations(citing_vault, cli_run):
    out = json.loads(cli_run(["survey", TOPIC, "--select-only", "--slug", "consensus", "--json",
                              "--workspace", citing_vault]).stdout)
    assert out["stopped_after"] == "retrieve", out
    got = set(out["papers"])
    assert set(CONSENSUS) <= got, sorted(got)
    # "Paxos Made Simple" shares no word with the topic; four of the four selected papers cite it
    assert "lamport2001paxos" in got
    # the textbook every paper of the vault cites is not a consensus paper
    assert "fisher1925methods" not in got
    assert not any(p.startswith("other") for p in got), sorted(got)

    meta, body = frontmatter.split((citing_vault / "vault" / "surveys" / "consensus" / "selection.md")
                                   .read_text(encoding="utf-8"))
    selected_part, _, near_part = body.partition("## Near misses")
    sel = _blocks(selected_part.split("## Selected", 1)[1])
    near = _blocks(near_part)
    paxos = sel["lamport2001paxos"]
    # counted in the final selection: the header's count, the four consensus papers and Paxos itself
    assert f"{len(got)} papers selected" in body
    assert f"cited by 4 of the {len(got)} selected papers" in paxos, paxos
    assert set(re.findall(r"of the (\d+) selected papers", body)) == {str(len(got))}, body
    assert all(f"@{pid}" in paxos for pid in CONSENSUS), paxos
    # every listed paper shows its citation evidence
    for pid, block in sel.items():
        assert re.search(r"cited by \d+ of the \d+ selected papers", block), block
    # near misses: the textbook (cited, but as often elsewhere) and the paper one step further
    assert "fisher1925methods" in near and "lamport1978time" in near, body
    assert "other papers of the vault" in near["fisher1925methods"], near["fisher1925methods"]
    assert "cited by @lamport2001paxos, which citation evidence chose" in near["lamport1978time"]
    # ... listed apart from the papers just below the cut-off, as what citation evidence almost brought in
    cited_part = near_part.partition("### Cited by the selection, not enough to be chosen")[2]
    assert "fisher1925methods" in _blocks(cited_part) and "lamport1978time" in _blocks(cited_part), near_part
    assert "lamport2001paxos" in meta["generated"]


def test_graph_matches_titles_dois_and_arxiv_ids_across_line_breaks(citing_vault):
    from papervault.survey.citations import Matcher

    m = Matcher(["a", "b", "c", "d"], ["Paxos Made Simple", "Paxos", "Some title here", "Another paper entirely"],
                ["", "", "10.1145/3335772.3335934", ""], ["", "", "", "2003.10554v2"])
    refs = ("[1] L. Lamport. Paxos made sim- ple. SIGACT News, 2001. [2] Paxos. [3] X. doi:10.1145/3335772.3335934. "
            "[4] arXiv:2003.10554")
    from papervault.parse.text import dehyphen

    assert m.named(dehyphen(refs)) == {"a", "c", "d"}     # a title of one word means nothing

    # ... unless its first author's family name stands just before it and its year near it
    short = Matcher(["soft", "thesis", "paxos"], ["Soft typing", "Soft typing: an approach to type checking", "Paxos"],
                    ["", "", ""], ["", "", ""],
                    [["Robert Cartwright", "Mike Fagan"], ["Mike Fagan"], ["Leslie Lamport"]], [1991, 1991, 1998])
    entries = ("[CF91] Robert Cartwright and Mike Fagan. “Soft typing”. In: SIGPLAN Not. 26.6 (May 1991), pp. 278–292. "
               "[Fag91] Mike Fagan. “Soft typing: an approach to type checking”. PhD thesis. Houston, 1991. ")
    assert short.named(entries) == {"soft", "thesis"}
    # the name without the year, the year without the name, or the name in the entry before: no citation
    assert short.named("[1] Robert Cartwright. Soft typing. In PLDI, 1989.") == set()
    assert short.named("[1] M. Fagan. Soft typing. PLDI 1991.") == set()
    assert short.named("[2] L. Lamport. The part-time parliament. 1998. [3] Paxos. ") == set()
    assert short.named("- L. Lamport. Paxos. In Distributed Computing, 1998.") == {"paxos"}

    from papervault.survey.topic import TopicSelector
    from papervault.workspace import Workspace

    selector = TopicSelector(Workspace(citing_vault).require())
    # it is the citation evidence that brings the canonical paper in: its own score does not
    assert "lamport2001paxos" not in selector.select(TOPIC, without=["citations"]).ids
    assert "lamport2001paxos" in selector.select(TOPIC).ids
    g = selector.graph()
    assert g.cited_by["lamport2001paxos"] == set(CONSENSUS)
    assert len(g.cited_by["fisher1925methods"]) == len(CONSENSUS) + len(OTHER_TOPICS)
    assert g.cites["lamport2001paxos"] == {"lamport1978time"}



FIELD = {   # about the topic, but their titles name a system, not the topic
    "ongaro2014raft": ("Raft: an understandable algorithm for a replicated log",
                       "Raft is a consensus algorithm that students find easier to learn than Paxos."),
    "moraru2013epaxos": ("EPaxos: leaderless ordering of commands in the wide area",
                         "A leaderless Paxos variant for replicated services with low commit latency."),
    "howard2016quorums": ("Flexible Paxos: quorum intersection revisited",
                          "Paxos needs majority quorums in both phases; only their intersection across phases matters "
                          "for consensus."),
}
BALLOTS = ("Paxos acceptors, proposers and learners: agreeing on one value despite crashes",
           "Proposers send numbered ballots to acceptors; once a majority of acceptors accept a ballot, learners "
           "learn the chosen value, so every server agrees on one value despite crashes and lost messages.")


def test_a_paper_that_names_none_of_the_topics_words_is_a_near_miss(tmp_path, cli_run, model_dir, corpus_dir):
    """A paper that stands out by score with the topic's papers but whose title and text never name the topic's
    own words (it speaks of ballots and acceptors) is not chosen by its score: selection.md lists it as a near
    miss and says why, where a person can tick it. (Such a paper enters by citation evidence when the selected
    papers cite it; here none has a reference list.)"""
    from conftest import without_multilingual
    from papervault.survey.topic import TopicSelector
    from papervault.workspace import Workspace

    ws_path = tmp_path / "ws"
    cli_run(["init", ws_path, "--workspace", ws_path])
    without_multilingual(ws_path)
    ws = Workspace(ws_path).require()
    for pid, (title, abstract) in FIELD.items():
        _paper(ws.vault, pid, title, abstract, f"## 1 Introduction\n\n{abstract}\n")
    _paper(ws.vault, "ballots2010", *BALLOTS, f"## 1 Introduction\n\n{BALLOTS[1]}\n")
    for k, (title, abstract) in enumerate(OTHER_TOPICS):
        _paper(ws.vault, f"other{k:02d}", title, abstract, f"## 1 Introduction\n\n{abstract}\n")
    ws.vault.commit("add: test papers")
    cli_run(["index", "-q", "--workspace", ws_path])

    # by score alone it stands out with the topic's papers
    alone = TopicSelector(ws).select(TOPIC, without=("specific",))
    assert "ballots2010" in alone.ids, alone.ids
    out = json.loads(cli_run(["survey", TOPIC, "--select-only", "--slug", "field", "--json",
                              "--workspace", ws_path]).stdout)
    got = set(out["papers"])
    assert set(FIELD) <= got and "ballots2010" not in got, sorted(got)
    body = (ws_path / "vault" / "surveys" / "field" / "selection.md").read_text(encoding="utf-8")
    near = _blocks(body.partition("## Near misses")[2])
    assert "ballots2010" in near, body
    assert "names none of the topic's own words" in near["ballots2010"], near["ballots2010"]


def test_a_near_miss_without_the_topics_words_that_the_core_cites_is_chosen(tmp_path, cli_run, model_dir,
                                                                           corpus_dir):
    """The paper of ballots and acceptors names none of the topic's words, but the topic's surest papers cite it
    in their reference lists: it is chosen by that link, and selection.md says both things."""
    from conftest import without_multilingual
    from papervault.workspace import Workspace

    ws_path = tmp_path / "ws"
    cli_run(["init", ws_path, "--workspace", ws_path])
    without_multilingual(ws_path)
    ws = Workspace(ws_path).require()
    for pid, (title, abstract) in FIELD.items():
        _paper(ws.vault, pid, title, abstract, f"## 1 Introduction\n\n{abstract}\n" + _refs(BALLOTS[0]))
    _paper(ws.vault, "ballots2010", *BALLOTS, f"## 1 Introduction\n\n{BALLOTS[1]}\n")
    for k, (title, abstract) in enumerate(OTHER_TOPICS):
        _paper(ws.vault, f"other{k:02d}", title, abstract, f"## 1 Introduction\n\n{abstract}\n")
    ws.vault.commit("add: test papers")
    cli_run(["index", "-q", "--workspace", ws_path])

    out = json.loads(cli_run(["survey", TOPIC, "--select-only", "--slug", "field", "--json",
                              "--workspace", ws_path]).stdout)
    got = set(out["papers"])
    assert set(FIELD) <= got and "ballots2010" in got, sorted(got)
    assert not any(p.startswith("other") for p in got), sorted(got)
    body = (ws_path / "vault" / "surveys" / "field" / "selection.md").read_text(encoding="utf-8")
    block = _blocks(body.partition("## Selected")[2].partition("## Near misses")[0])["ballots2010"]
    assert "names none of the topic's own words" in block, block
    assert "a selected paper (its reference list names it by title)" in block, block
    # the link alone brings it in (citation evidence, which would too, switched off); without it, a near miss
    from papervault.survey.topic import TopicSelector

    selector = TopicSelector(Workspace(ws_path).require())
    assert "ballots2010" in selector.select(TOPIC, without=("citations",)).ids
    assert "ballots2010" not in selector.select(TOPIC, without=("citations", "links")).ids


def test_every_listed_paper_says_what_its_score_rests_on(citing_vault, cli_run):
    """`papervault survey TOPIC --select-only`: each selected paper and near miss in selection.md says whether its
    score rests on its full text, its title and abstract, or its title only (a record taken from a reference
    list); a reader weighs a title-only choice accordingly."""
    out = json.loads(cli_run(["survey", TOPIC, "--select-only", "--slug", "titles", "--json",
                              "--workspace", citing_vault]).stdout)
    assert set(CONSENSUS) <= set(out["papers"])
    body = (citing_vault / "vault" / "surveys" / "titles" / "selection.md").read_text(encoding="utf-8")
    listed = {**_blocks(body.partition("## Selected")[2].partition("## Near misses")[0]),
              **_blocks(body.partition("## Near misses")[2])}
    assert listed["titleonly2019consensus"].splitlines()[0].endswith("on its title only"), listed
    assert all(re.search(r"· score [0-9.]+ on its (full text|title and abstract|title only)$", b.splitlines()[0])
               for b in listed.values()), listed
    assert all(listed[p].splitlines()[0].endswith(("on its full text", "on its title and abstract"))
               for p in CONSENSUS if p in listed)


CITED_ONCE = {   # cited by one core paper only (no citation evidence); title-only records below the near-miss window
    "ricciardi1991membership": "Membership protocols for process groups",
    "lynch1989hundred": "A hundred impossibility proofs for distributed computing",
}


def test_a_paper_the_core_cites_that_names_a_rare_topic_word_is_linked_from_further_down(tmp_path, cli_run,
                                                                                          model_dir, corpus_dir):
    """One of the topic's surest papers cites two records known only by their titles, both far below the cut-off
    and cited by no other paper (so no citation evidence): the one whose title names one of the topic's rarer
    words is chosen with the link as its reason, the other stays out. (Rarer among this vault's titles: every
    paper of the field says "consensus", "replicated", "state machines"; only that record says "protocols".)"""
    from conftest import without_multilingual
    from papervault.survey.topic import TopicSelector
    from papervault.workspace import Workspace

    ws_path = tmp_path / "ws"
    cli_run(["init", ws_path, "--workspace", ws_path])
    without_multilingual(ws_path)
    ws = Workspace(ws_path).require()
    for k, (pid, (title, abstract)) in enumerate(CONSENSUS.items()):
        _paper(ws.vault, pid, title, abstract,
               f"## 1 Introduction\n\n{abstract}\n" + (_refs(*CITED_ONCE.values()) if k == 0 else ""))
    for pid, title in CITED_ONCE.items():
        _paper(ws.vault, pid, title, None, None, 1985)
    for k, (title, abstract) in enumerate(OTHER_TOPICS):
        _paper(ws.vault, f"other{k:02d}", title, abstract, f"## 1 Introduction\n\n{abstract}\n")
    ws.vault.commit("add: test papers")
    cli_run(["index", "-q", "--workspace", ws_path])

    selector = TopicSelector(Workspace(ws_path).require())
    narrow = selector.select(TOPIC, without=("wide",))
    assert "ricciardi1991membership" not in narrow.ids, narrow.ids
    got = selector.select(TOPIC)
    assert "ricciardi1991membership" in got.ids, (got.ids, got.cutoff, [(c.id, c.score) for c in got.near])
    assert "lynch1989hundred" not in got.ids, got.ids
    assert not any(p.startswith("other") for p in got.ids), got.ids
    link = next(c for c in got.selected if c.id == "ricciardi1991membership").links[0]
    assert link.other == "ongaro2014consensus" and "protocols" in link.text, link


MEMORY_TOPIC = "memory corruption attacks and defenses"
MEMORY = {   # the topic's papers, their titles repeat the topic
    "szekeres2013sok": ("Memory corruption attacks and defenses: a systematization of knowledge",
                        "A general model of memory corruption attacks and the defenses that stop them: spatial and "
                        "temporal memory safety, code pointer integrity, control-flow integrity, randomization."),
    "akritidis2008memory": ("Preventing memory corruption attacks with write integrity",
                            "Memory corruption attacks are stopped by checking that each write stays in the objects "
                            "a static analysis allows it to write."),
    "cowan1998memory": ("Stack canaries: a defense against memory corruption attacks",
                        "A canary word next to the return address detects stack memory corruption before the "
                        "function returns, defending against buffer overflow attacks."),
    "nagarakatte2009memory": ("Complete spatial memory safety: a defense against memory corruption",
                              "Bounds metadata for every pointer stops spatial memory corruption attacks on C."),
}
SURVEY_ONLY = {   # title-only records that only the survey cites; no word of the topic in their titles
    "shacham2007geometry": "The Geometry of Innocent Flesh on the Bone: Return-into-libc without Function Calls",
    "one1996smashing": "Smashing the Stack for Fun and Profit",
    "abadi2005cfi": "Control-Flow Integrity: Principles, Implementations, and Applications",
    "pax2001aslr": "Address Space Layout Randomization for Executables",
    "necula2002ccured": "CCured: Type-Safe Retrofitting of Legacy Code",
    "checkoway2010rop": "Return-Oriented Programming without Returns",
}
VALGRIND = "Valgrind: A Framework for Heavyweight Dynamic Binary Instrumentation"


def test_a_topics_survey_vouches_for_papers_only_it_cites(tmp_path, cli_run, model_dir, corpus_dir):
    """The topic's survey (the surest paper, citing all the other selected papers and ten papers of the vault)
    cites canonical papers known only by their titles, which name none of the topic's words and which no other
    paper cites: "Control-Flow Integrity", far below the near-miss window, is chosen with "the topic's survey" as
    the reason (and is not without the rule). A tool it cites that off-topic papers
    cite too (Valgrind) is not the topic's, and stays out."""
    from conftest import without_multilingual
    from papervault.survey.topic import TopicSelector
    from papervault.workspace import Workspace

    ws_path = tmp_path / "ws"
    cli_run(["init", ws_path, "--workspace", ws_path])
    without_multilingual(ws_path)
    ws = Workspace(ws_path).require()
    for pid, (title, abstract) in MEMORY.items():
        refs = _refs(*(t for p, (t, _) in MEMORY.items() if p != pid), *SURVEY_ONLY.values(), VALGRIND) \
            if pid == "szekeres2013sok" else ""
        _paper(ws.vault, pid, title, abstract, f"## 1 Introduction\n\n{abstract}\n" + refs)
    for pid, title in SURVEY_ONLY.items():
        _paper(ws.vault, pid, title, None, None, 2005)
    _paper(ws.vault, "nethercote2007valgrind", VALGRIND, None, None, 2007)
    for k, (title, abstract) in enumerate(OTHER_TOPICS):
        if "memory" not in title.lower():       # (the other topics of this vault: not this one)
            _paper(ws.vault, f"other{k:02d}", title, abstract,
                   f"## 1 Introduction\n\n{abstract}\n" + (_refs(VALGRIND) if k in (5, 6) else ""))
    ws.vault.commit("add: test papers")
    cli_run(["index", "-q", "--workspace", ws_path])

    selector = TopicSelector(Workspace(ws_path).require())
    without = selector.select(MEMORY_TOPIC, without=("survey",))
    assert "abadi2005cfi" not in without.ids, without.ids
    out = json.loads(cli_run(["survey", MEMORY_TOPIC, "--select-only", "--slug", "memory", "--json",
                              "--workspace", ws_path]).stdout)
    got = set(out["papers"])
    assert set(MEMORY) <= got, sorted(got)
    # "Control-Flow Integrity" shares no word with the topic and is no near miss; only the survey cites it
    assert "abadi2005cfi" in got, sorted(got)
    assert "nethercote2007valgrind" not in got, sorted(got)
    assert not any(p.startswith("other") for p in got), sorted(got)
    body = (ws_path / "vault" / "surveys" / "memory" / "selection.md").read_text(encoding="utf-8")
    block = _blocks(body.partition("## Selected")[2].partition("## Near misses")[0])["abadi2005cfi"]
    assert "cited by @szekeres2013sok, the topic's survey (it cites 3 of the 3 other selected papers)" in block, block


SMOOTH_TOPIC = "smoothing time series for visualization"
SMOOTH = {
    "rong2017asap": ("Automatic smoothing for attention prioritization in time series visualization",
                     "We smooth time series plots automatically so that dashboards show long-term trends and "
                     "deviations instead of noise."),
    "jugel2014m4": ("Visualization-oriented aggregation of time series",
                    "Aggregating a time series to the pixels of a line chart reduces the data sent to the "
                    "visualization without visual error."),
    "lin2004visual": ("Visually mining and monitoring massive time series",
                      "An interactive visualization of massive time series with smoothed overviews of their shape."),
    "hochheiser2004timebox": ("Interactive query widgets for time series visualization",
                              "Direct-manipulation widgets to query and explore time series in a visualization."),
}
# two records known by their titles only, which name none of the topic's words, cited by the same core paper:
# one in a sentence about smoothing time series for plots, one in a sentence about where the prototype keeps data
FILTERS = ("smith2003filters", "Digital filters and their frequency response")
STORE = ("pelkonen2015store", "A fast scalable key-value store kept in memory")


def test_a_title_only_record_cited_in_a_sentence_on_the_topic_is_chosen(tmp_path, cli_run, model_dir, corpus_dir):
    """Citation contexts: the core paper cites two title-only records, neither naming the topic's words; the one
    it cites in a sentence about smoothing time series for plots is chosen, and `selection.md` quotes that
    sentence with its page ("cited as: ... in @rong2017asap, p. 2"); the one it cites in a sentence about its
    storage stays out. Without the citing sentences, neither is chosen."""
    from conftest import without_multilingual
    from papervault.survey.topic import TopicSelector
    from papervault.workspace import Workspace

    ws_path = tmp_path / "ws"
    cli_run(["init", ws_path, "--workspace", ws_path])
    without_multilingual(ws_path)
    ws = Workspace(ws_path).require()
    others = [t for p, (t, _) in SMOOTH.items() if p != "rong2017asap"]
    body = ("## 1 Introduction\n\nWe smooth time series plots automatically so that dashboards show trends. "
            "Aggregation for line charts [1] reduces the points of a time series that a plot draws. Overviews "
            "of massive series [2] show their shape at a glance. Query widgets [3] let analysts explore data "
            "interactively.\n\n"
            '<a id="page-2"></a>\n\n## 2 Smoothing\n\n'
            "A moving average [4] smooths a noisy time series for visualization, removing the noise of the plot "
            "while keeping its trend visible.\n\n"
            "## 3 Implementation\n\nThe prototype keeps every series in a key-value store held in RAM [5], "
            "replicated across three machines.\n"
            + _refs(*others, FILTERS[1], STORE[1]))
    for pid, (title, abstract) in SMOOTH.items():
        _paper(ws.vault, pid, title, abstract,
               body if pid == "rong2017asap" else f"## 1 Introduction\n\n{abstract}\n")
    for pid, title in (FILTERS, STORE):
        _paper(ws.vault, pid, title, None, None, 2003)
    for k, (title, abstract) in enumerate(OTHER_TOPICS):
        if "time series" not in title.lower():
            _paper(ws.vault, f"other{k:02d}", title, abstract, f"## 1 Introduction\n\n{abstract}\n")
    ws.vault.commit("add: test papers")
    cli_run(["index", "-q", "--workspace", ws_path])

    assert not set(FILTERS[1].lower().split()) & set(SMOOTH_TOPIC.split())
    selector = TopicSelector(Workspace(ws_path).require())
    without = selector.select(SMOOTH_TOPIC, without=("contexts",))
    assert FILTERS[0] not in without.ids and STORE[0] not in without.ids, without.ids
    out = json.loads(cli_run(["survey", SMOOTH_TOPIC, "--select-only", "--slug", "smoothing", "--json",
                              "--workspace", ws_path]).stdout)
    got = set(out["papers"])
    assert set(SMOOTH) <= got, sorted(got)
    assert FILTERS[0] in got, sorted(got)
    assert STORE[0] not in got, sorted(got)
    assert not any(p.startswith("other") for p in got), sorted(got)
    text = (ws_path / "vault" / "surveys" / "smoothing" / "selection.md").read_text(encoding="utf-8")
    block = _blocks(text.partition("## Selected")[2].partition("## Near misses")[0])[FILTERS[0]]
    assert ("cited by @rong2017asap, a core paper, in a sentence on the topic, p. 2: “A moving average \\[4\\] "
            "smooths a noisy time series for visualization") in block, block
    # every listed paper that a paper of the vault cites in its text says how it is cited
    m4 = _blocks(text.partition("## Selected")[2].partition("## Near misses")[0])["jugel2014m4"]
    assert "cited as: “Aggregation for line charts \\[1\\] reduces the points" in m4, m4
    assert "” in @rong2017asap, p. 1" in m4, m4
    # the derived state: the extraction is cached by the citing paper's full-text hash
    assert list((ws_path / ".papervault" / "cache" / "contexts").glob("*.json"))


def test_citation_contexts_read_numeric_alphanumeric_and_author_year_markers():
    """The sentences citing each entry of a reference list: "[3, 5-6]" ranges, "[Fag91; CF91]" labels, and
    "Lamport (1998)" where the entries carry no label; each with its page."""
    from papervault.survey.contexts import extract

    numeric = ('<a id="page-1"></a>\n\n# A paper\n\n## 1 Introduction\n\nPaxos [1] solves consensus. '
               "Replicas agree on a log [2, 3-4].\n\n"
               '<a id="page-2"></a>\n\nUnrelated text without markers.\n' + _refs(PAXOS, CLOCKS, TEXTBOOK, TITLE_ONLY))
    got = extract(numeric)
    assert [label for label, _ in got["entries"]] == ["1", "2", "3", "4"]
    assert got["contexts"]["1"] == [["Paxos [1] solves consensus.", 1]]
    assert got["contexts"]["4"] == [["Replicas agree on a log [2, 3-4].", 1]]
    assert "Paxos Made Simple" in dict(got["entries"])["1"]

    labelled = ("# A thesis\n\n## Background\n\nSoft typing is not new (see [Fag91; CF91]).\n\n## References\n\n"
                "- [CF91] Robert Cartwright and Mike Fagan. “Soft typing”. In: PLDI 1991.\n"
                "- [Fag91] Mike Fagan. “Soft typing: an approach to type checking”. PhD thesis. 1991.\n"
                "- [Wad95] Philip Wadler. “Monads for functional programming”. 1995.\n")
    got = extract(labelled)
    assert got["contexts"]["CF91"] == got["contexts"]["Fag91"] == [["Soft typing is not new (see [Fag91; CF91]).", None]]
    assert "Wad95" not in got["contexts"]

    author_year = ("# A note\n\n## 1 Introduction\n\nThe part-time parliament of Lamport (1998) is consensus. "
                   "Clocks order events.\n\n## References\n\n"
                   "Lamport, L. The part-time parliament. ACM TOCS, 1998.\n\n"
                   "Fisher, R. A. Statistical methods for research workers. 1925.\n")
    got = extract(author_year)
    assert got["contexts"] == {"Lamport|1998": [["The part-time parliament of Lamport (1998) is consensus.", None]]}


def test_a_record_known_by_its_title_alone_needs_a_closer_score(citing_vault):
    """A record whose score rests on its title alone is chosen by its score only above the title-only cut-off
    (`title_only_fraction` of the best papers' margin, above the others' cut-off); under it, it is a near miss,
    and selection.md's method names both cut-offs."""
    from dataclasses import replace

    from papervault.survey.topic import TopicSelector
    from papervault.workspace import Workspace

    def by_score(sel, basis):    # chosen by its score: no citation link or evidence brought it in
        return [c for c in sel.selected if c.basis == basis and not c.links
                and all(r.kind == "citations" for r in c.evidence)]

    selector = TopicSelector(Workspace(citing_vault).require())
    got = selector.select(TOPIC)
    assert got.title_cutoff > got.cutoff
    method = got.method()
    assert float(method["cut-off score of a record known by its title only"]) > float(method["cut-off score"])
    # the record whose title is the topic's own words stands among the best: chosen by its score
    assert [c.id for c in by_score(got, "title only")] == ["titleonly2019consensus"]
    assert all(c.score >= got.title_cutoff for c in by_score(got, "title only"))
    assert all(c.score >= got.cutoff for c in by_score(got, "title and abstract") + by_score(got, "full text"))
    # with the title-only cut-off above every score, it is a near miss, and nothing else changes
    selector.params = replace(selector.params, title_only_fraction=5.0)
    strict = selector.select(TOPIC)
    assert by_score(strict, "title only") == []
    near = {c.id: c for c in strict.near}
    assert "titleonly2019consensus" not in strict.ids and near["titleonly2019consensus"].basis == "title only"
    assert set(strict.ids) == set(got.ids) - {"titleonly2019consensus"}


def test_citing_sentences_are_embedded_once_per_workspace(citing_vault):
    """The sentences that cite a paper are embedded on the first selection and read back from the workspace's
    derived state after: a second selection embeds none of them, and gets the same vectors."""
    from papervault.survey.topic import TopicSelector
    from papervault.workspace import Workspace

    ws = Workspace(citing_vault).require()
    # a paper of the vault that cites in its text (the fixture's cite in their reference lists only)
    ws.vault.write_fulltext("ongaro2014consensus", ParsedPaper(markdown=(
        '<a id="page-1"></a>\n\n# Consensus made understandable\n\n## 1 Introduction\n\n'
        "Paxos [1] is the consensus protocol most replicated state machines start from. "
        "Statistics [2] play no part here.\n" + _refs(PAXOS, TEXTBOOK, CLOCKS, TITLE_ONLY)), pages=1))
    first = TopicSelector(ws)
    _, ctxs, vecs = first.citing.context_rows()
    assert ctxs and (ws.cache_dir / "contexts" / "vectors.sqlite").is_file()

    second = TopicSelector(ws)
    real, calls = second.searcher.embedder.embed, []
    second.searcher.embedder.embed = lambda texts: calls.append(len(texts)) or real(texts)   # counts, then embeds
    _, ctxs2, vecs2 = second.citing.context_rows()
    assert calls == [] and [c.text for c in ctxs2] == [c.text for c in ctxs]
    assert (vecs2 == vecs).all()
    assert second.select(TOPIC).ids == first.select(TOPIC).ids


def test_a_paper_cited_in_one_sentence_with_selected_papers_is_chosen(citing_vault, cli_run):
    """A vault paper cited in one sentence with two papers chosen by their own score enters the selection,
    whatever its title says, and selection.md says by which sentence of which paper; switched off (`alongside`)
    it does not."""
    from papervault.survey.topic import TopicSelector
    from papervault.workspace import Workspace

    ws = Workspace(citing_vault).require()
    before = TopicSelector(ws).select(TOPIC)
    assert "lamport1978time" not in before.ids
    chosen = [pid for pid in CONSENSUS if pid in before.ids][:2]
    assert len(chosen) == 2
    titles = [CONSENSUS[p][0] for p in chosen] + [CLOCKS, TEXTBOOK]
    # a paper of the vault whose text enumerates its field: two selected papers and the clocks paper together
    ws.vault.write_fulltext("other00", ParsedPaper(markdown=(
        '<a id="page-1"></a>\n\n# Deep residual learning for image recognition\n\n## 5 Related work\n\n'
        "Replicas agree on the order of commands as in [1], [2], [3]. Statistics [4] help nobody here.\n"
        + _refs(*titles)), pages=1))
    after = TopicSelector(ws).select(TOPIC)
    assert "lamport1978time" in after.ids
    assert "fisher1925methods" not in after.ids      # cited alone in its sentence
    off = TopicSelector(ws).select(TOPIC, without=("alongside",))
    assert "lamport1978time" not in off.ids

    out = json.loads(cli_run(["survey", TOPIC, "--select-only", "--slug", "alongside", "--json",
                              "--workspace", citing_vault]).stdout)
    assert "lamport1978time" in out["papers"]
    body = (citing_vault / "vault" / "surveys" / "alongside" / "selection.md").read_text(encoding="utf-8")
    block = _blocks(body.partition("## Selected")[2].partition("## Near misses")[0])["lamport1978time"]
    assert "cited by @other00 in one sentence with the selected @" in block, block
    assert "Replicas agree on the order of commands" in block and "p. 1" in block, block
