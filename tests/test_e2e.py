"""The walking skeleton through the user's entry points on the real corpus: the CLI (the add of all 16 papers and
the first search in their own processes, the other commands in this one) and MCP over stdio."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import CORPUS_INDEXED, pv

ROOT = Path(__file__).resolve().parent.parent

# Facts a researcher remembers, in their own words, and the paper (file name prefix) that holds them.
KNOWN_FACTS = [
    ("fraction of the data reflected in a query answer when some nodes are down", "distributed_systems_harvest-yield"),
    ("entity groups replicated synchronously with Paxos across datacenters", "datastores_megastore"),
    ("scouts and commanders adopt ballots for a leader", "distributed_systems_paxos-made-moderately-complex"),
    ("infer isolation anomalies from list append histories", "datastores_elle"),
    ("refinement type inference with logical qualifiers is decidable", "languages-theory_liquid_types"),
    ("i-node file system and the fork system call on the PDP-11", "operating_systems_unix-time-sharing-system"),
    ("smoothing time series plots for visualization by preserving kurtosis", "time_series_ts-asap"),
    ("expected possession value of a basketball ballcarrier", "sports_analytics_2014-ssac-pointwise"),
    ("control-flow hijacking and memory corruption defenses", "security_sok-eternal-war-in-memory"),
    ("error-controlled quantization for lossy compression of scientific data", "data_compression_Significantly"),
]


@pytest.fixture
def corpus_ws(corpus_workspace) -> Path:
    """The session's corpus workspace (conftest): the shared papers the searches ask about (CORPUS_INDEXED),
    added through the CLI with the other six, indexed through it."""
    return corpus_workspace


def test_every_paper_a_search_asks_about_is_indexed(corpus_ws):
    """The index holds the papers the known facts and the MCP search ask about, and only them (conftest's
    CORPUS_INDEXED): a fact's paper left out would make its search fail for want of it, not of the search."""
    from papervault.workspace import Workspace

    vault = Workspace(corpus_ws).vault
    names = {pid: [Path(f).name for f in [*vault.read_meta(pid).files, *vault.read_meta(pid).sources]]
             for pid in vault.paper_ids()}
    assert sorted(names) == CORPUS_INDEXED
    for prefix in {prefix for _, prefix in KNOWN_FACTS} | {"datastores_megastore"}:
        assert sum(any(n.startswith(prefix) for n in found) for found in names.values()) == 1, (prefix, names)


def test_add_writes_notes_fulltext_and_one_commit(corpus_added):
    import git

    corpus_ws = corpus_added
    papers = sorted((corpus_ws / "vault" / "papers").iterdir())
    papers = [p for p in papers if p.is_dir()]
    assert len(papers) == 16
    for p in papers:
        text = (p / "paper.md").read_text(encoding="utf-8")
        assert '<a id="page-1"></a>' in text
        note = (p / "note.md").read_text(encoding="utf-8")
        assert note.startswith("---\n") and "sources:" in note
    assert any((p / "figures").is_dir() and list((p / "figures").glob("*.png")) for p in papers)
    log = [c.message for c in git.Repo(corpus_ws / "vault").iter_commits()]
    assert sum(m.startswith("add:") for m in log) == 1, log


def _original_names(ws: Path, hit: dict) -> list[str]:
    """The file names a hit's paper was added from: a hit's `source` is the workspace's kept copy of the PDF
    (`pdfs/<sha256>.pdf`), and the note records the originals."""
    from papervault.workspace import Workspace

    meta = Workspace(ws).vault.read_meta(hit["paper_id"])
    return [Path(f).name for f in [*meta.files, *meta.sources, hit["source"]]]


def test_search_finds_known_facts(corpus_ws, cli_run):
    # The first query as a user's process runs it; the others through the same command in this process, so
    # the model loads once rather than ten times.
    misses = []
    for i, (query, prefix) in enumerate(KNOWN_FACTS):
        args = ["search", query, "--limit", "5", "--json"]
        out = pv(*args, ws=corpus_ws).stdout if i == 0 else cli_run([*args, "--workspace", corpus_ws]).stdout
        hits = json.loads(out)
        assert hits, query
        assert set(hits[0]) >= {"paper_id", "title", "level", "section", "page", "text", "score", "source"}
        sources = [name for h in hits[:3] for name in _original_names(corpus_ws, h)]
        if not any(s.startswith(prefix) for s in sources):
            misses.append((query, prefix, sources))
    assert len(misses) <= 1, misses


def test_status_reports_counts(corpus_added, corpus_ws, cli_run):
    added = json.loads(cli_run(["status", "--json", "--workspace", corpus_added]).stdout)
    assert added["papers"] == added["papers_with_text"] == 16 and added["chunks"] == 0
    assert added["index_health"] != "ok", added["index_health"]          # 16 papers, none of them indexed
    st = json.loads(cli_run(["status", "--json", "--workspace", corpus_ws]).stdout)
    assert st["papers"] == st["indexed_papers"] == len(CORPUS_INDEXED) and st["index_health"] == "ok"
    assert st["chunks"] > len(CORPUS_INDEXED) * 5
    assert st["embedding_model"] == os.environ["PAPERVAULT_EMBED_MODEL"]


def test_bad_inputs_are_reported_and_the_batch_goes_on(tmp_path, corpus_dir, cli_run):
    ws = tmp_path / "bad"
    cli_run(["init", ws])
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "empty.pdf").write_bytes(b"")
    (folder / "notapdf.pdf").write_text("<html><body>404 not found</body></html>")
    good = corpus_dir / "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"
    (folder / "corrupt.pdf").write_bytes(good.read_bytes()[:20000])
    (folder / "good.pdf").write_bytes(good.read_bytes())
    proc = cli_run(["add", folder, "--workspace", ws])     # what it prints: in this process
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("skipped")]
    assert len(lines) >= 2, proc.stderr
    assert any("empty.pdf" in ln for ln in lines) and any("notapdf.pdf" in ln for ln in lines)
    assert all("Traceback" not in ln for ln in proc.stderr.splitlines())
    assert "Added 1" in proc.stdout or "Added 2" in proc.stdout


def test_survey_writes_every_artefact_and_commits_each_stage(corpus_workspace_copy, prefect_api, cli_run):
    import git

    # in this process (the model the searches loaded serves it); the survey as its own process is checked by
    # tests/test_survey_select.py and by the README's commands in tests/test_everyday.py
    corpus_ws = corpus_workspace_copy
    repo = git.Repo(corpus_ws / "vault")
    before = repo.head.commit.hexsha
    out = json.loads(cli_run(["survey", "replication and consistency in distributed storage", "--slug",
                              "replication", "--json", "--workspace", corpus_ws]).stdout)
    sdir = corpus_ws / "vault" / "surveys" / "replication"
    for name in ("correlation.md", "outline.md", "survey.md", "references.bib", "references.json", "polish-report.md"):
        assert (sdir / name).is_file() and (sdir / name).stat().st_size > 0, name
    survey = (sdir / "survey.md").read_text(encoding="utf-8")
    import re

    cited = set(re.findall(r"@([A-Za-z0-9_.-]+[A-Za-z0-9])", survey))
    papers = {p.name for p in (corpus_ws / "vault" / "papers").iterdir() if p.is_dir()}
    assert cited and cited <= papers, cited - papers
    messages = [c.message.splitlines()[0] for c in repo.iter_commits(f"{before}..HEAD")]
    for stage in ("correlate", "outline", "draft", "polish"):
        assert any(m.startswith(f"survey replication: {stage}") for m in messages), (stage, messages)
    assert len(out["commits"]) >= 4
    assert not repo.is_dirty(untracked_files=True)


def test_site_build_has_a_page_per_paper(corpus_added_copy, cli_run):
    corpus_ws = corpus_added_copy
    out = json.loads(cli_run(["site", "build", "--json", "--workspace", corpus_ws]).stdout)
    site = corpus_ws / "site"
    assert (site / "index.html").is_file()
    for p in (corpus_ws / "vault" / "papers").iterdir():
        if p.is_dir():
            pages = list(site.glob(f"papers/{p.name}/*.html"))
            assert pages, f"no page for {p.name}"
    assert out["papers"] == 16


def test_mcp_stdio_client_lists_tools_and_searches(corpus_ws):
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "papervault", "mcp", "--workspace", str(corpus_ws)],
                                   env={k: v for k, v in os.environ.items()})

    async def main():
        async with Client(params, read_timeout_seconds=300) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"search", "get_paper", "list_papers"} <= names
            res = await c.call_tool("search", {"query": "entity groups replicated with Paxos across datacenters",
                                               "limit": 5})
            assert not res.is_error
            hits = res.structured_content["hits"]
            assert any(n.startswith("datastores_megastore") for h in hits[:3] for n in _original_names(corpus_ws, h))
            listed = await c.call_tool("list_papers", {})
            assert not listed.is_error
            return hits

    hits = anyio.run(main)
    assert set(hits[0]) >= {"paper_id", "title", "level", "section", "page", "text", "score", "source"}
