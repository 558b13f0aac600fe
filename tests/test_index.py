"""The paper index: chunking, incremental LanceDB sync, model-mismatch errors, hybrid search, filters, budgets."""

from __future__ import annotations

import json
import shutil
import threading

import pytest

from papervault.chunking.paper import CHUNKER_VERSION, chunk_paper, count_tokens
from papervault.config import IndexSettings
from papervault.errors import IndexMismatchError
from papervault.index.search import SearchError, Searcher, search
from papervault.index.store import PaperIndex
from papervault.models import PaperMeta
from papervault.workspace import Workspace
from support_index import add_paper, new_chunker, paper1_ids, synthetic_paper
from support_mcp import paxos_harvest

HARVEST = "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"


# --- chunking ------------------------------------------------------------------------------------

PAPER_MD = """<a id="page-1"></a>

# Sparse Sketches

## Abstract

We make sketches sparse.

## 1 Introduction

Short one.

Short two, see Figure 2 and Table 1.

![Figure 2: Error against sparsity](figures/fig-2.png)

<a id="page-2"></a>

### 1.1 Background

{long}

Table 1: Running times

| n | time |
|---|---|
| 10 | 3 |

## References

[1] A. Person. Something cited. 2001.
"""


def _chunks(long_words: int = 30, **meta):
    md = PAPER_MD.format(long=" ".join(f"Sentence {i} is here." for i in range(long_words)))
    return chunk_paper(PaperMeta(id="p1", title="Sparse Sketches", **meta), md, "## Summary\n\nA summary.\n",
                       IndexSettings(chunk_tokens=60, max_chunk_tokens=120))


def test_chunker_levels_pages_and_sections():
    chunks = _chunks()
    levels = [c.level for c in chunks]
    assert levels[0] == "paper" and "We make sketches sparse." in chunks[0].text
    assert {"section", "paragraph", "figure", "table", "note"} <= set(levels)
    fig = next(c for c in chunks if c.level == "figure")
    assert fig.extra == {"figure": "figures/fig-2.png", "number": "2"} and fig.page_start == 1
    table = next(c for c in chunks if c.level == "table")
    assert table.extra["number"] == "1" and table.page_start == 2 and "| 10 | 3 |" in table.text
    # the two short paragraphs merge into one chunk, which records what it mentions
    intro = [c for c in chunks if c.level == "paragraph" and c.section_path == "1 Introduction"]
    assert len(intro) == 1 and "Short one." in intro[0].text and "Short two" in intro[0].text
    assert intro[0].extra["mentions"] == ["figure:2", "table:1"]
    background = [c for c in chunks if c.level == "paragraph" and c.section_path == "1 Introduction > 1.1 Background"]
    assert background and all(c.page_start == 2 for c in background)
    assert all(c.parent_id for c in background)
    assert not any("Something cited" in c.text for c in chunks), "references are not indexed"
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert chunks[-1].level == "note" and chunks[-1].section_path == "Note > Summary"


def test_chunker_sizes_and_stable_ids():
    chunks = _chunks(long_words=200)
    paragraphs = [c for c in chunks if c.level == "paragraph"]
    assert len(paragraphs) > 3
    assert all(count_tokens(c.text) <= 120 for c in paragraphs)
    again = _chunks(long_words=200)
    assert [c.id for c in again] == [c.id for c in chunks]
    assert len({c.id for c in chunks}) == len(chunks)
    # a change in one place changes only the ids of what it touches
    changed = chunk_paper(PaperMeta(id="p1", title="Sparse Sketches"),
                          PAPER_MD.replace("Short one.", "Short uno.").format(
                              long=" ".join(f"Sentence {i} is here." for i in range(200))),
                          "## Summary\n\nA summary.\n", IndexSettings(chunk_tokens=60, max_chunk_tokens=120))
    assert 0 < len({c.id for c in chunks} - {c.id for c in changed}) <= 2


def test_metadata_only_paper_has_a_paper_chunk():
    chunks = chunk_paper(PaperMeta(id="m1", title="A Title", abstract="An abstract.", keywords=["x"]), "", "")
    assert [c.level for c in chunks] == ["paper"]
    assert "An abstract." in chunks[0].text and "Keywords: x" in chunks[0].text


# --- the real corpus, indexed once ---------------------------------------------------------------

@pytest.fixture(scope="session")
def corpus_ws(tmp_path_factory, corpus_dir, model_dir):
    """Two real papers (the run's Paxos+Harvest workspace, tests/support_mcp.py, parsed and indexed once for
    every test file that reads it), copied, and one metadata-only paper added and indexed."""
    root = tmp_path_factory.mktemp("corpus") / "ws"
    shutil.copytree(paxos_harvest(tmp_path_factory, corpus_dir), root, symlinks=True)
    ws = Workspace(root)
    add_paper(ws.vault, "lamport1998parttime", title="The Part-Time Parliament", year=1998, venue="TOCS",
              abstract="Recent archaeological discoveries on the island of Paxos reveal that the parliament "
                       "functioned despite the peripatetic propensity of its part-time legislators.",
              tags=["consensus"], sources=["https://doi.org/10.1145/279227.279229"])
    report = PaperIndex(ws).sync()
    assert not report["errors"] and report["added"] == ["lamport1998parttime"], report
    return ws


def test_sync_reports_and_stats(corpus_ws):
    stats = PaperIndex(corpus_ws).stats()
    assert stats["papers"] == 3 and stats["chunks"] > 50
    assert stats["embedding_model"] == "sentence-transformers/all-MiniLM-L6-v2" and stats["dim"] == 384
    assert stats["chunker_version"] and stats["health"] == "ok"
    assert stats["levels"]["paper"] == 3


def test_unchanged_sync_embeds_nothing(corpus_ws):
    report = PaperIndex(corpus_ws).sync()
    assert report["chunks_embedded"] == 0 and report["unchanged"] == 3
    assert not report["added"] and not report["updated"] and not report["removed"]
    assert report["seconds"] < 2


def test_hybrid_finds_known_facts(corpus_ws):
    hits = search(corpus_ws, "probability of completing a request versus fraction of data in the answer", limit=5)
    assert hits[0].paper_id == "fox1999harvest"
    top = next(h for h in hits if "probability of completing a request" in h.text)
    assert top.page == 2 and top.anchor == "papers/fox1999harvest/paper.md#page-2"
    assert top.source.endswith(HARVEST) and top.title.startswith("Harvest")

    hits = search(corpus_ws, "scout collects phase 1 responses from a majority of acceptors", limit=5)
    assert hits[0].paper_id == "vanrenesse2015paxos"
    assert any(h.page in (6, 7) and "scout" in h.text.lower() for h in hits[:3])


def test_metadata_only_paper_is_searchable(corpus_ws):
    hits = search(corpus_ws, "legislators on a Greek island", limit=3)
    assert hits[0].paper_id == "lamport1998parttime" and hits[0].level == "paper"
    assert hits[0].page is None and hits[0].anchor == "papers/lamport1998parttime/note.md"
    assert hits[0].source == "https://doi.org/10.1145/279227.279229"


def test_modes_and_levels(corpus_ws):
    s = Searcher(corpus_ws)
    for mode in ("fts", "vector", "hybrid"):
        hits = s.search("harvest yield availability", limit=5, mode=mode)
        assert hits and hits[0].paper_id == "fox1999harvest", mode
    assert {h.level for h in s.search("harvest", level="paper", limit=10)} == {"paper"}
    assert {h.level for h in s.search("harvest", level=["note", "paper"], limit=10)} <= {"note", "paper"}


def test_filters(corpus_ws):
    s = Searcher(corpus_ws)
    q = "consensus replicas agree on a sequence of commands"
    assert {h.paper_id for h in s.search(q, filters={"year": 1999}, limit=20)} == {"fox1999harvest"}
    assert {h.paper_id for h in s.search(q, filters={"year": "..2000"}, limit=20)} == {"fox1999harvest",
                                                                                       "lamport1998parttime"}
    assert {h.paper_id for h in s.search(q, filters={"year": [2000, 2020]}, limit=20)} == {"vanrenesse2015paxos"}
    assert {h.paper_id for h in s.search(q, filters={"tag": "consensus"}, limit=200)} == {"vanrenesse2015paxos",
                                                                                        "lamport1998parttime"}
    assert {h.paper_id for h in s.search(q, filters={"venue": "computing surveys"}, limit=20)} == {"vanrenesse2015paxos"}
    assert {h.paper_id for h in s.search(q, filters={"paper": "fox1999harvest"}, limit=20)} == {"fox1999harvest"}
    assert s.search(q, filters={"year": 1990}) == []
    with pytest.raises(SearchError, match="unknown search filter"):
        s.search(q, filters={"colour": "red"})
    with pytest.raises(SearchError, match="use paper, section"):
        s.search(q, level="chapter")


def test_budget_expansion(corpus_ws):
    s = Searcher(corpus_ws)
    q = "pseudo code for a replica and the variables it maintains"
    plain = s.search(q, limit=5)
    assert all(not h.context for h in plain)
    hits = s.search(q, limit=5, budget=1200)
    assert hits and hits[0].paper_id == "vanrenesse2015paxos"
    used = sum(count_tokens(h.text) + sum(count_tokens(c["text"]) for c in h.context) for h in hits)
    assert used <= 1200
    context = [c for h in hits for c in h.context]
    assert context, "the best hits come with neighbouring paragraphs"
    assert {c["relation"] for c in context} & {"next", "previous"}
    shown = [h.chunk_id for h in hits] + [c["chunk_id"] for c in context]
    assert len(shown) == len(set(shown)), "nothing is shown twice"
    tiny = s.search(q, limit=5, budget=30)
    assert len(tiny) == 1 and count_tokens(tiny[0].text) <= 31


def test_search_without_index_is_empty(tmp_path):
    ws, _ = Workspace.init(tmp_path / "empty")
    assert search(ws, "anything") == []
    assert PaperIndex(ws).stats()["health"] == "empty"


# --- incremental sync on small generated papers --------------------------------------------------

@pytest.fixture(scope="session")
def small_template(tmp_path_factory, model_dir):
    """Three generated papers, indexed once; each test works on its own copy."""
    ws, _ = Workspace.init(tmp_path_factory.mktemp("small") / "ws")
    for i in range(3):
        title, md = synthetic_paper(i, pages=2, paragraphs=2)
        add_paper(ws.vault, f"paper{i}", title=title, fulltext=md, year=2000 + i)
    report = PaperIndex(ws).sync()
    return ws, report


@pytest.fixture
def small_ws(small_template, tmp_path):
    shutil.copytree(small_template[0].root, tmp_path / "small", symlinks=True)
    return Workspace(tmp_path / "small")


def test_first_sync_embeds_everything(small_template):
    ws, report = small_template
    assert report["chunks_embedded"] == report["chunks"] > 0 and report["chunks_reused"] == 0
    assert sorted(report["added"]) == ["paper0", "paper1", "paper2"]


def test_changed_paper_reembeds_only_changed_chunks(small_ws):
    ix = PaperIndex(small_ws)
    first = ix.sync()
    assert first["chunks_embedded"] == 0 and first["unchanged"] == 3
    path = small_ws.vault.fulltext_path("paper1")
    text = path.read_text()
    path.write_text(text.replace("Paragraph 0 on page 2 of paper 1", "A rewritten paragraph on page 2 of paper 1"))
    seen = []
    second = ix.sync(progress=lambda done, total: seen.append((done, total)))
    assert second["updated"] == ["paper1"] and second["unchanged"] == 2
    assert 1 <= second["chunks_embedded"] <= 2 and second["chunks_reused"] > 5   # the paragraph (+ its section)
    assert seen[-1] == (second["chunks_embedded"], second["chunks_embedded"])
    assert second["chunks"] == first["chunks"]
    hits = search(small_ws, "A rewritten paragraph", filters={"paper": "paper1"}, mode="fts", limit=3)
    assert "rewritten" in hits[0].text
    old = search(small_ws, "Paragraph 0 on page 2 of paper 1", mode="fts", filters={"paper": "paper1"}, limit=50)
    assert all("Paragraph 0 on page 2 of paper 1" not in h.text for h in old)
    assert ix.sync()["chunks_embedded"] == 0


def test_metadata_change_updates_rows_without_embedding(small_ws):
    ix = PaperIndex(small_ws)
    ix.sync()
    small_ws.vault.update_meta("paper0", tags=["new-tag"], venue="SOSP")
    report = ix.sync()
    assert report["updated"] == ["paper0"] and report["chunks_embedded"] == 0
    hits = search(small_ws, "consensus", filters={"tag": "new-tag", "venue": "sosp"}, limit=50)
    assert hits and {h.paper_id for h in hits} == {"paper0"}


def test_deleted_papers_leave_the_index(small_ws):
    ix = PaperIndex(small_ws)
    ix.sync()
    small_ws.vault.delete_paper("paper2")
    report = ix.sync()
    assert report["removed"] == ["paper2"] and report["chunks_embedded"] == 0
    assert ix.stats()["papers"] == 2
    assert not search(small_ws, "paper 2", filters={"paper": "paper2"}, limit=5)
    assert ix.delete_paper("paper1") > 0
    assert {h.paper_id for h in search(small_ws, "paragraph", limit=50)} == {"paper0"}
    assert ix.stats()["health"].startswith("stale")   # paper1 is still in the vault


def test_tables_a_killed_first_index_left_unfinished_read_as_absent_and_are_made_again(small_ws):
    """Killed while creating its tables, a first index leaves table folders with no version, which LanceDB lists
    but cannot open. Search and status read them as no index; the next index makes them again."""
    index_dir = small_ws.state_dir / "index"
    shutil.rmtree(index_dir)
    for name in ("papers", "chunks"):
        (index_dir / f"{name}.lance" / "_versions").mkdir(parents=True)
        (index_dir / f"{name}.lance" / "data").mkdir()
    assert search(small_ws, "paragraph", limit=3) == []
    assert PaperIndex(small_ws).stats()["health"] == "empty"
    report = PaperIndex(small_ws).sync()
    assert sorted(report["added"]) == ["paper0", "paper1", "paper2"] and not report["errors"]
    assert {h.paper_id for h in search(small_ws, "paragraph", limit=50)} == {"paper0", "paper1", "paper2"}


def test_bad_note_does_not_stop_the_batch(small_ws):
    small_ws.vault.note_path("paper1").write_text("---\ntitle: [unclosed\n---\nbody\n")
    report = PaperIndex(small_ws).sync()
    assert report["errors"].get("paper1")
    assert report["unchanged"] == 2 and not report["removed"]
    # the last good version of the broken paper stays searchable until its note is repaired
    assert search(small_ws, "paragraph", filters={"paper": "paper1"}, limit=3)


def test_model_mismatch_names_the_rebuild(small_ws, monkeypatch):
    monkeypatch.setenv("PAPERVAULT_EMBED_MODEL", "BAAI/bge-small-en-v1.5")
    monkeypatch.setenv("PAPERVAULT_EMBED_MODEL_PATH", str(small_ws.root / "nowhere"))   # never loaded
    ws = Workspace(small_ws.root)
    with pytest.raises(IndexMismatchError, match="papervault index --rebuild") as err:
        PaperIndex(ws).sync()
    assert "BAAI/bge-small-en-v1.5" in str(err.value) and "all-MiniLM-L6-v2" in str(err.value)
    with pytest.raises(IndexMismatchError, match="papervault index --rebuild"):
        search(ws, "anything")
    assert PaperIndex(ws).stats()["health"].startswith("mismatch")


def _level_count(ws, level: str) -> int:
    return PaperIndex(ws).db.open_table("chunks").count_rows(f"level = '{level}'")


def test_chunker_version_mismatch(small_ws, monkeypatch):
    """Another chunker is no rebuild: search keeps the chunks as built and says `papervault index` re-chunks;
    that sync re-chunks every paper, embeds only the texts the new chunker changed, and records its version."""
    import papervault.index.schema as schema
    import papervault.index.syncing as syncing

    before = PaperIndex(small_ws).stats()
    figures = _level_count(small_ws, "figure")
    monkeypatch.setattr(schema, "CHUNKER_VERSION", "paper-999")
    monkeypatch.setattr(syncing, "chunk_paper", new_chunker("figure"))
    s = Searcher(small_ws)
    assert s.search("paragraph on page", limit=3)
    assert s.search("consensus", limit=3) and len(s.notices) == 1, "said once"
    assert f"chunker {before['chunker_version']}" in s.notices[0] and "paper-999" in s.notices[0]
    assert "run `papervault index`" in s.notices[0]
    health = PaperIndex(small_ws).stats()["health"]
    assert health.startswith("stale") and "paper-999" in health and "papervault index" in health

    report = PaperIndex(small_ws).sync()
    assert sorted(report["updated"]) == ["paper0", "paper1", "paper2"] and not report["errors"]
    assert report["chunks_embedded"] == figures > 0
    assert report["chunks_reused"] == report["chunks"] - figures > 0 and report["chunks"] == before["chunks"]
    after = PaperIndex(small_ws).stats()
    assert after["chunker_version"] == "paper-999" and after["health"] == "ok"
    s = Searcher(small_ws)
    hits = s.search("as the next chunker renders it", level="figure", mode="fts", limit=3)
    assert hits and "next chunker" in hits[0].text and not s.notices
    again = PaperIndex(small_ws).sync()
    assert again["unchanged"] == 3 and again["chunks_embedded"] == 0


def test_interrupted_rechunk_keeps_the_old_version(small_ws, monkeypatch):
    """A re-chunking sync that does not reach every paper records nothing; the next one finishes the rest."""
    import papervault.index.schema as schema
    import papervault.index.syncing as syncing

    monkeypatch.setattr(schema, "CHUNKER_VERSION", "paper-999")
    chunker = new_chunker("figure")

    def broken(meta, *args, **kw):
        if meta.id == "paper2":
            raise RuntimeError("killed here")
        return chunker(meta, *args, **kw)

    monkeypatch.setattr(syncing, "chunk_paper", broken)
    first = PaperIndex(small_ws).sync()
    assert sorted(first["updated"]) == ["paper0", "paper1"] and "paper2" in first["errors"]
    stats = PaperIndex(small_ws).stats()
    assert stats["chunker_version"] != "paper-999" and stats["health"].startswith("stale")
    monkeypatch.setattr(syncing, "chunk_paper", chunker)
    rest = PaperIndex(small_ws).sync()
    assert rest["updated"] == ["paper2"] and rest["unchanged"] == 2 and not rest["errors"]
    assert 1 <= rest["chunks_embedded"] < rest["chunks_reused"]
    assert PaperIndex(small_ws).stats()["chunker_version"] == "paper-999"


def test_a_paper1_index_upgrades_with_plain_index(tmp_path, model_dir, monkeypatch, cli_run):
    """An index built by chunker paper-1 (its version in every chunk id): `search` works and says what to run,
    `status` says the same, and a plain `papervault index` re-chunks reusing every unchanged text's vector."""
    ws, _ = Workspace.init(tmp_path / "old")
    for i in range(3):
        title, md = synthetic_paper(i, pages=2, paragraphs=2)
        add_paper(ws.vault, f"paper{i}", title=title, fulltext=md, year=2000 + i)
    with monkeypatch.context() as m:
        paper1_ids(m)
        built = PaperIndex(Workspace(ws.root)).sync()
    old_ids = set(PaperIndex(ws).db.open_table("chunks").to_arrow()["id"].to_pylist())
    assert PaperIndex(ws).stats()["chunker_version"] == "paper-1"

    found = cli_run(["search", "consensus", "--json", "--workspace", ws.root])
    assert json.loads(found.stdout) and "chunked by chunker paper-1" in found.stderr
    assert "run `papervault index`" in found.stderr
    status = json.loads(cli_run(["status", "--json", "--workspace", ws.root]).stdout)
    assert status["index_health"].startswith("stale") and "paper-1" in status["index_health"]
    from papervault.doctor import _index

    check = _index(Workspace(ws.root))   # what `doctor` reports for the index
    assert check.ok and check.level == "warning" and "paper-1" in check.detail and "papervault index" in check.fix

    report = json.loads(cli_run(["index", "--json", "--workspace", ws.root]).stdout)
    assert report["chunks_embedded"] == 0 and report["chunks_reused"] == built["chunks"] == report["chunks"]
    assert len(report["updated"]) == 3
    stats = PaperIndex(Workspace(ws.root)).stats()
    assert stats["chunker_version"] == CHUNKER_VERSION and stats["health"] == "ok"
    new_ids = set(PaperIndex(ws).db.open_table("chunks").to_arrow()["id"].to_pylist())
    assert len(new_ids) == len(old_ids) and not new_ids & old_ids
    quiet = cli_run(["search", "consensus", "--json", "--workspace", ws.root])
    assert json.loads(quiet.stdout) and "chunk" not in quiet.stderr


def test_readers_work_while_a_writer_runs(small_ws):
    ix = PaperIndex(small_ws)
    ix.sync()
    for i in range(3, 6):
        title, md = synthetic_paper(i, pages=2, paragraphs=2)
        add_paper(small_ws.vault, f"paper{i}", title=title, fulltext=md)
    reader = Searcher(small_ws)
    errors, counts = [], []
    writer = threading.Thread(target=lambda: ix.sync())
    writer.start()
    while writer.is_alive():
        try:
            counts.append(len(reader.search("paragraph on page", limit=5)))
        except Exception as exc:   # pragma: no cover - a failure is what this test looks for
            errors.append(exc)
    writer.join()
    assert not errors and counts and all(c > 0 for c in counts)
    assert {h.paper_id for h in reader.search("paper 5", filters={"paper": "paper5"})} == {"paper5"}


def test_a_paper_indexed_before_unclosed_fences_were_read_as_text_is_chunked_again(tmp_path):
    """A `paper.md` written before the writer escaped fence lines may hold a ``` line nothing closes; an older
    reader hid every later page anchor in it, so its chunks carried the fence's page. Such a paper hashes with a
    mark: an index made before is chunked again for that paper alone, once, with the right pages."""
    import hashlib

    from conftest import without_multilingual
    from papervault.index.store import _content_hash
    from papervault.index.tables import PAPERS, open_db
    from papervault.models import ParsedPaper
    from papervault.vault import paper as paper_md

    ws, _ = Workspace.init(tmp_path / "ws")
    without_multilingual(ws.root)
    ws = Workspace(ws.root).require()
    md = "\n\n".join([paper_md.page_anchor(1), "# Fenced Text", "Some prose of page one.\r```\r",
                      paper_md.page_anchor(2), "## 2 Later", "Leases bound the recovery time on page two.",
                      paper_md.page_anchor(3), "Page three closes the paper."]) + "\n"
    ws.vault.write_note(PaperMeta(id="tester2026fenced", title="Fenced Text"), "# Fenced\n")
    ws.vault.write_fulltext("tester2026fenced", ParsedPaper(markdown=md, pages=3))
    add_paper(ws.vault, "lamport1998parttime", title="The Part-Time Parliament", abstract="Paxos on the island of Paxos.")
    ws.vault.commit("add")
    idx = PaperIndex(ws)
    assert not idx.sync()["errors"]

    def leases_pages() -> set:
        rows = idx.db.open_table("chunks").search().where("paper_id = 'tester2026fenced'").select(
            ["text", "page_start"]).limit(None).to_list()
        return {r["page_start"] for r in rows if "Leases bound" in r["text"]}

    assert leases_pages() == {2}
    # the index as an older reader left it: the fence's page on the passage, its digest without the mark
    papers = open_db(ws).open_table(PAPERS)
    name = papers.schema.metadata[b"index_name"].decode()
    note = ws.vault.note_path("tester2026fenced").read_bytes()
    ft = ws.vault.fulltext_path("tester2026fenced").read_bytes()
    old = hashlib.sha256(b"".join([CHUNKER_VERSION.encode(), name.encode(), b"\x00", note, b"\x00", ft]))
    assert old.hexdigest()[:32] != _content_hash(note, ft, name)
    papers.update(where="paper_id = 'tester2026fenced'", values={"content_hash": old.hexdigest()[:32]})
    idx.db.open_table("chunks").update(where="paper_id = 'tester2026fenced'", values={"page_start": 1})
    assert leases_pages() == {1}

    again = PaperIndex(ws).sync()
    assert again["updated"] == ["tester2026fenced"] and again["unchanged"] == 1, again
    assert leases_pages() == {2}
    assert PaperIndex(ws).sync()["unchanged"] == 2
