"""arXiv ids, search and PDFs, DOIs and PDF URLs, against a loopback server speaking the real protocols."""

from __future__ import annotations

import time

import pymupdf
import pytest

from papervault.config import Settings
from papervault.errors import SourceError
from papervault.models import SourceRecord
from papervault.sources import arxiv as arxiv_api
from papervault.sources.problems import SourceProblem
from papervault.sources.resolve import classify, fetch_pdf, records_from_inputs
from support_arxiv import Catalog, LoopbackServer, Paper

PAPERS = [
    Paper("2401.00001", "Paxos Made Moderately Complex", "We explain multi-decree Paxos consensus with pseudo-code "
          "for replicas, leaders and acceptors.", ["Robbert van Renesse", "Deniz Altinbuken"], "2015-03-01T00:00:00Z",
          doi="10.1145/2673577"),
    Paper("2401.00002", "Raft: an understandable consensus algorithm", "Raft is a consensus algorithm for managing "
          "a replicated log, designed to be easier to understand than Paxos.", ["Diego Ongaro"], "2023-06-01T00:00:00Z"),
    Paper("2401.00003", "Raft consensus explained: an understandable consensus algorithm", "Raft is a consensus "
          "algorithm for managing a replicated log; an explanation of the understandable consensus algorithm.",
          ["Someone Else"], "2023-07-01T00:00:00Z"),
    Paper("2401.00004", "Byzantine consensus for blockchains", "Byzantine fault tolerant consensus protocols for "
          "permissioned blockchains and state machine replication.", ["Miguel Castro"], "2025-01-01T00:00:00Z"),
    Paper("2401.00005", "Garbage collection of consensus logs", "Log compaction and snapshotting in consensus "
          "systems.", ["Ann Other"], "2010-01-01T00:00:00Z"),
    Paper("2401.00006", "Deep learning for images", "Convolutional networks classify images.", ["Yann Cnn"],
          "2024-01-01T00:00:00Z"),
]


@pytest.fixture(scope="module")
def server():
    cat = Catalog()
    cat.add(*PAPERS)
    cat.dois["10.1145/568425.568433"] = {
        "type": "article-journal", "title": "Paxos Made Simple", "DOI": "10.1145/568425.568433",
        "author": [{"family": "Lamport", "given": "Leslie"}], "issued": {"date-parts": [[2001, 12]]},
        "container-title": "ACM SIGACT News", "URL": "http://dx.doi.org/10.1145/568425.568433"}
    with LoopbackServer(cat) as srv:
        yield srv


@pytest.fixture
def settings(server, monkeypatch, tmp_path):
    server.catalog.fail_next = 0
    server.settings_env(monkeypatch)
    return Settings()


def _split(items):
    recs = [i for i in items if isinstance(i, SourceRecord)]
    probs = [i for i in items if isinstance(i, SourceProblem)]
    return recs, probs


def test_classify_inputs(tmp_path):
    bib = tmp_path / "refs.txt"
    bib.write_text("% exported\n@article{a, title={T}}\n")
    assert classify(str(bib)) == "bibtex"
    assert classify("arxiv:2604.06170") == "arxiv"
    assert classify("2604.06170v2") == "arxiv"
    assert classify("https://arxiv.org/pdf/2604.06170v1") == "arxiv"
    assert classify("https://doi.org/10.48550/arXiv.2604.06170") == "arxiv"
    assert classify("doi:10.1145/568425.568433") == "doi"
    assert classify("https://doi.org/10.1145/568425.568433") == "doi"
    assert classify("https://example.org/paper.pdf") == "url"
    assert classify("no-such-thing") == "unknown"


def test_arxiv_ids_and_urls_become_records_with_one_metadata_request(server, settings, tmp_path):
    before = len(server.catalog.requests)
    items = list(records_from_inputs(
        ["arxiv:2401.00001", "https://arxiv.org/abs/2401.00002v3", "https://arxiv.org/pdf/2401.00004v1.pdf",
         "arxiv:2401.09999"], settings, workspace=None))
    recs, probs = _split(items)
    assert [r.arxiv for r in recs] == ["2401.00001", "2401.00002", "2401.00004"]
    r = recs[0]
    assert r.title == "Paxos Made Moderately Complex" and r.authors[0] == "Robbert van Renesse"
    assert r.year == 2015 and r.doi == "10.1145/2673577" and r.abstract.startswith("We explain")
    assert len(probs) == 1 and "2401.09999" in str(probs[0])
    api_calls = [p for _, p in server.catalog.requests[before:] if p.startswith("/api/query")]
    assert len(api_calls) == 1 and "id_list=" in api_calls[0]
    # the PDF: downloaded once, a real PDF
    got = fetch_pdf(r, settings, tmp_path / "dl")
    with pymupdf.open(got.pdfs[0]) as doc:
        assert "Paxos Made Moderately Complex" in doc[0].get_text()
    n = len(server.catalog.requests)
    assert fetch_pdf(r, settings, tmp_path / "dl").pdfs == got.pdfs and len(server.catalog.requests) == n


def test_rate_limit_and_retries(server, monkeypatch):
    server.settings_env(monkeypatch, delay=0.4)
    s = Settings()
    start = time.monotonic()
    for ax in ("2401.00001", "2401.00002", "2401.00003"):
        assert ax in arxiv_api.fetch_metadata([ax], s)
    assert time.monotonic() - start >= 0.8 - 0.05     # three requests, two waits of 0.4 s
    server.settings_env(monkeypatch, delay=0.0, retries=3)
    server.catalog.fail_next = 2                       # two 503s, then an answer
    assert "2401.00005" in arxiv_api.fetch_metadata(["2401.00005"], Settings())
    server.catalog.fail_next = 5
    server.settings_env(monkeypatch, delay=0.0, retries=2)
    with pytest.raises(SourceError, match="HTTP 503 \\(2 attempts\\)"):
        arxiv_api.fetch_metadata(["2401.00005"], Settings())
    server.catalog.fail_next = 0


def test_a_retry_waits_as_long_as_the_server_asks(server, monkeypatch):
    """A 503 with `Retry-After: 1` is tried again after a second, not after the 0.05 s backoff; the seconds or an
    HTTP date both count."""
    import email.utils

    server.settings_env(monkeypatch, delay=0.0, retries=3)
    try:
        for ahead in ("1", 5):
            # the date is made just before the request: 5 s ahead still asks for a wait of over a second when the
            # request leaves late on a loaded machine (an HTTP date has whole seconds)
            header = ahead if isinstance(ahead, str) else email.utils.formatdate(time.time() + ahead, usegmt=True)
            server.catalog.fail_next, server.catalog.retry_after = 1, header
            start = len(server.catalog.requests)
            assert "2401.00005" in arxiv_api.fetch_metadata(["2401.00005"], Settings())
            (first, _), (second, _) = server.catalog.requests[start:start + 2]
            assert second - first >= 0.9, header
    finally:
        server.catalog.fail_next, server.catalog.retry_after = 0, None


def test_doi_content_negotiation_gives_metadata_only_record(server, settings):
    items = list(records_from_inputs(["https://doi.org/10.1145/568425.568433", "doi:10.9999/missing"], settings))
    recs, probs = _split(items)
    assert len(recs) == 1 and len(probs) == 1
    r = recs[0]
    assert (r.origin, r.title, r.authors, r.year, r.doi) == ("doi", "Paxos Made Simple", ["Leslie Lamport"], 2001,
                                                            "10.1145/568425.568433")
    assert r.venue == "ACM SIGACT News" and not r.pdfs
    assert "HTTP 404" in str(probs[0])


def test_pdf_urls_html_timeouts_and_size_cap(server, settings, monkeypatch):
    ok = f"{server.url}/files/paper.pdf"
    html = f"{server.url}/files/landing.pdf"
    recs, probs = _split(list(records_from_inputs([ok, html], settings)))
    assert len(recs) == 1 and recs[0].origin == "url" and recs[0].source == ok
    with pymupdf.open(recs[0].pdfs[0]) as doc:
        assert "A Direct Download" in doc[0].get_text()
    assert len(probs) == 1 and "returned an HTML page, not a PDF" in str(probs[0])
    assert "\n" not in str(probs[0])

    server.settings_env(monkeypatch, timeout=0.3, retries=1)
    server.catalog.slow_seconds = 1.0
    recs, probs = _split(list(records_from_inputs([f"{server.url}/files/slow.pdf"], Settings())))
    assert not recs and "timed out after 0.3 s" in str(probs[0])

    monkeypatch.setenv("PAPERVAULT_SOURCES_MAX_PDF_MB", "0.0001")
    server.settings_env(monkeypatch)
    recs, probs = _split(list(records_from_inputs([f"{server.url}/files/paper.pdf?again"], Settings())))
    assert not recs and "MB" in str(probs[0]) and "max_pdf_mb" in str(probs[0])


def test_arxiv_search_ranks_by_relevance_recency_and_diversity(server, settings):
    cands = arxiv_api.search("understandable consensus algorithm", 3, settings, embedder=None)
    assert len(cands) == 3
    ids = [c.record.arxiv for c in cands]
    # Two near-identical Raft papers: diversity keeps only one of them in the top 3
    assert len({"2401.00002", "2401.00003"} & set(ids)) == 1
    assert "2401.00006" not in ids                       # deep learning has nothing to do with consensus
    for c in cands:
        assert c.record.reason and "relevance" in c.record.reason and c.record.pdf_url


def test_mmr_rank_lexical_fallback_and_recency():
    recs = [SourceRecord(origin="arxiv", source=f"arxiv:{i}", arxiv=f"2401.0000{i}", title=t, abstract=a, year=y)
            for i, (t, a, y) in enumerate([
                ("Consensus protocols", "consensus protocols for replication", 2000),
                ("Consensus protocols", "consensus protocols for replication", 2024),
                ("Consensus protocols revisited", "consensus protocols for replication again", 2024),
                ("Vector clocks", "consensus and causality with vector clocks", 2020)], 1)]
    out = arxiv_api.rank("consensus protocols", recs, 2, embedder=None)
    assert out[0].record.arxiv == "2401.00002"           # same text, the recent one wins
    assert out[1].record.arxiv == "2401.00003"           # the identical older text is skipped for diversity
    assert out[1].redundancy < 0.9 and out[1].relevance < out[0].relevance
    assert "tf-idf" in out[0].reason and "first pick" in out[0].reason


def test_a_near_copy_of_a_pick_comes_after_every_other_paper():
    """The same work posted twice is relevant and recent twice over: the MMR penalty alone would take both before
    a less relevant paper; a near copy (similarity >= NEAR_COPY) is taken only when nothing else is left."""
    recs = [SourceRecord(origin="arxiv", source=f"arxiv:{i}", arxiv=f"2402.0000{i}", title=t, abstract=a, year=y)
            for i, (t, a, y) in enumerate([
                ("Consensus protocols for replication", "consensus protocols for state machine replication", 2024),
                ("Consensus protocols for replication", "consensus protocols for state machine replication.", 2024),
                ("Vector clocks", "causality tracking with vector clocks in replication", 2010)], 1)]
    plain = arxiv_api.rank("consensus protocols", recs, 2, embedder=None, near_copy=1.01)   # MMR alone
    assert [c.record.arxiv for c in plain] == ["2402.00001", "2402.00002"]
    out = arxiv_api.rank("consensus protocols", recs, 3, embedder=None)
    assert [c.record.arxiv for c in out] == ["2402.00001", "2402.00003", "2402.00002"]
    assert out[2].redundancy >= arxiv_api.NEAR_COPY and "near copy of 2402.00001" in out[2].reason
    assert "near copy" not in out[1].reason
