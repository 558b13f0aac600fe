"""The extractive backend on real papers of the shared corpus: every note is faithful to its paper."""

from __future__ import annotations

import pytest

from papervault.agents import get_backend
from papervault.agents.extractive import unfaithful
from papervault.config import ParseSettings, Settings
from papervault.models import PaperMeta
from papervault.note_analysis import analyse_papers
from papervault.vault.store import Vault

# A spread of the corpus that parses in seconds: prose-only, numbered and unnumbered sections, figures,
# lists of contributions, pseudo-code and mathematics (tables: tests/test_agents.py). bench/analyse.py runs the whole corpus.
PAPERS = {
    "brewer1999harvest": "distributed_systems_harvest-yield-and-scalable-tolerant-systems",
    "ritchie1974unix": "operating_systems_unix-time-sharing-system",
    "kingsbury2020elle": "datastores_elle-inferring-isolation-anomalies-from-experimental-observations",
    "vanrenesse2011paxos": "distributed_systems_paxos-made-moderately-complex",
    "kane2014sparse": "machine_learning_dimensionality_reduction_a-sparse-johnson-lindenstrauss-transform",
}


@pytest.fixture(scope="module")
def analysed(corpus_dir, tmp_path_factory, shared_parse_cache):
    from papervault.parse.batch import parse_many

    root = tmp_path_factory.mktemp("corpus-ws")
    vault = Vault.create(root / "vault")
    paths = {pid: corpus_dir / f"{stem}.pdf" for pid, stem in PAPERS.items()}
    # the default settings, through the session's parse cache: the corpus tests parse each PDF once
    parsed = parse_many(list(paths.values()), ParseSettings(), cache_dir=shared_parse_cache, workers=2)
    for pid, path in paths.items():
        paper = parsed[str(path)]
        assert not isinstance(paper, Exception), paper
        vault.write_note(PaperMeta(id=pid, title=paper.title or pid, sha256=paper.sha256, pages=paper.pages), "# x\n")
        vault.write_fulltext(pid, paper)
    backend = get_backend("extractive", Settings(), state_dir=root / ".papervault")
    outcomes = analyse_papers(vault, list(PAPERS), backend)
    return vault, {o.paper_id: o for o in outcomes}


def test_every_paper_gets_a_note(analysed):
    vault, outcomes = analysed
    assert {pid: o.status for pid, o in outcomes.items()} == {pid: "analysed" for pid in PAPERS}
    for pid in PAPERS:
        meta, body = vault.read_note(pid)
        assert meta.analyser == "extractive/rules-2" and meta.status == "analysed"
        assert "## Summary" in body and "](paper.md#page-" in body
        assert set(meta.coverage) >= {"figures", "tables", "sections", "totals", "complete"}


@pytest.mark.parametrize("pid", list(PAPERS))
def test_note_is_faithful_to_the_paper(analysed, pid):
    vault, _ = analysed
    _, body = vault.read_note(pid)
    assert unfaithful(body, vault.read_fulltext(pid)) == []


def test_notes_say_something_real(analysed):
    vault, _ = analysed
    _, paxos = vault.read_note("vanrenesse2011paxos")
    assert "“This paper provides imperative pseudo-code for the full Paxos (or Multi-Paxos) protocol" in paxos
    assert "**Figure 1** [p. 2](paper.md#page-2): “Pseudo code for a replica.”" in paxos
    meta = vault.read_meta("brewer1999harvest")
    assert {"harvest", "yield"} <= {m.lower() for m in meta.metrics}


def test_page_references_point_at_the_quoted_page(analysed):
    """A quotation's page link names the page whose text holds the quotation's start."""
    import re

    from papervault.agents.paperdoc import normalise
    from papervault.vault.paper import PAGE_ANCHOR as ANCHOR

    vault, _ = analysed
    for pid in ("vanrenesse2011paxos", "kingsbury2020elle"):
        pages: dict[int, str] = {}
        page = 1
        for line in vault.read_fulltext(pid).splitlines():
            m = ANCHOR.match(line)
            if m:
                page = int(m.group(1))
            pages[page] = pages.get(page, "") + "\n" + line
        _, body = vault.read_note(pid)
        checked = 0
        for quote, p in re.findall(r"^- “([^”]+)” \[p\. (\d+)\]", body, re.M):
            start = normalise(quote)[:25]
            near = normalise(pages.get(int(p), "") + pages.get(int(p) + 1, ""))
            assert start in normalise(re.sub(r"[*_`]", "", near)) or start in near, (pid, p, quote[:60])
            checked += 1
        assert checked >= 3
