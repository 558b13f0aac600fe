"""The flows `add` and `index` (flows/ingest.py) on a local Dask cluster give the vault and index of the
in-process path: the same note files, the same chunk ids, the same vectors; the papers are analysed in the
tasks (not in the writer); a PDF that hangs a worker's parser becomes that paper's one-line problem; and the
flow reports its progress like the in-process path. The survey's one declaration, run in process, on Prefect's
threads and on Dask over copies of the reference, writes the same artefacts, notes and index rows.

Real everything: two corpus papers (their first two pages, cut from the shared PDFs by PyMuPDF: the comparison
does not depend on a paper's length) parsed by PyMuPDF in Dask worker processes, analysed there, the local ONNX
model embedding there, git commits and LanceDB writes in the flow's process. The in-process reference is built
once for the module and each runner's result is compared with it. Each path has its own parse cache, so each
parses; the flows run with the vector cache off, so their tasks compute every vector they return. The
reference and the Dask run keep both vector spaces (English and multilingual, each embedded by tasks on the
cluster); the thread-runner run keeps the English one only.
"""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from papervault.workspace import Workspace

from conftest import environ, without_multilingual

ROOT = Path(__file__).resolve().parent.parent
PDFS = ["distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf",
        "operating_systems_unix-time-sharing-system.pdf"]
PAGES = 2


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, corpus_dir) -> Path:
    """A folder of the two papers' first PAGES pages (real pages: their text, fonts and layout as published)."""
    import pymupdf

    dest = tmp_path_factory.mktemp("in")
    for name in PDFS:
        with pymupdf.open(corpus_dir / name) as doc:
            doc.select(range(PAGES))
            doc.save(dest / name)
    return dest


def _init(root: Path, multilingual: bool = False) -> Workspace:
    ws, _ = Workspace.init(root)
    if not multilingual:
        without_multilingual(ws.root)
    return Workspace(ws.root)        # its settings read again


@pytest.fixture(scope="module")
def in_process(tmp_path_factory, inputs, model_dir):
    """The reference: the inputs added and indexed by the plain library path (what `papervault add` /
    `papervault index` run), in this process, with a parse cache of its own. Returns (workspace, add report)."""
    from papervault.app.adding import add
    from papervault.index.store import PaperIndex

    base = tmp_path_factory.mktemp("in-process")
    with environ("PAPERVAULT_PARSE_CACHE_DIR", str(base / "cache")):
        local = _init(base / "ws", multilingual=True)
        report = add(local, [str(inputs)], index=False)
        assert len(report.added) == 2 and not report.problems, report.as_dict()
        with local.write_lock("index"):
            PaperIndex(local).sync()
    assert len(list((base / "cache").rglob("*.pickle"))) == 2      # it parsed both files itself
    return local, report


STAMP = re.compile(rb"^(created|updated): '[^']*'$", re.M)


def _vault_files(ws: Workspace) -> dict[str, bytes]:
    """Every file under papers/, byte for byte, but for the `created`/`updated` times in the notes."""
    base = ws.vault.papers_dir
    return {str(p.relative_to(base)): STAMP.sub(rb"\1: <time>", p.read_bytes())
            for p in sorted(base.rglob("*")) if p.is_file()}


def _chunks(ws: Workspace, table: str | None = None) -> tuple[list[str], np.ndarray]:
    """(ids, vectors) of the English chunk table, or of `table` (the multilingual one: chunks and lexicon)."""
    from papervault.index.store import CHUNKS, open_db

    tab = open_db(ws).open_table(table or CHUNKS).to_arrow().select(["id", "vector"]).sort_by("id")
    vecs = tab["vector"].combine_chunks().flatten().to_numpy().reshape(len(tab), -1)
    return tab["id"].to_pylist(), vecs


def _task_runs(prefix: str) -> int:
    """How many completed task runs named `prefix-...` the run's Prefect server recorded."""
    import anyio
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName

    async def count() -> int:
        async with get_client() as c:
            runs = await c.read_task_runs(task_run_filter=TaskRunFilter(name=TaskRunFilterName(like_=prefix)))
        return sum(t.name.startswith(prefix + "-") and t.state is not None and t.state.is_completed() for t in runs)

    return anyio.run(count)


def _cli(args: list[str], env: dict, timeout: float = 600, pid: list | None = None) -> dict:
    proc = subprocess.Popen([sys.executable, "-m", "papervault", *args, "--json"], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if pid is not None:
        pid.append(proc.pid)
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"{args[:3]} failed:\n{out[-2000:]}\n{err[-3000:]}"
    return json.loads(out)


def _analyses(ws: Workspace) -> list[dict]:
    """The run log's entries of paper analyses (`paper-note` tasks), with the process that ran each."""
    out = []
    for f in sorted((ws.state_dir / "runs").glob("*.jsonl")):
        out += [e for e in map(json.loads, f.read_text().splitlines()) if e.get("kind") == "paper-note"]
    return out


def test_dask_add_and_index_equal_in_process(tmp_path, in_process, inputs, prefect_api):
    local, report = in_process

    # Through the flows, on local Dask clusters of two worker processes, from the real CLI.
    dist = _init(tmp_path / "dist", multilingual=True)
    # the workers embed for real (no shared vector cache), so the vectors compared below are theirs
    env = dict(os.environ, PYTHONPATH=str(ROOT), PAPERVAULT_PARSE_CACHE_DIR=str(tmp_path / "cache-dist"),
               PAPERVAULT_EMBED_VECTOR_CACHE="")
    # `add` as from a fresh shell, with no Prefect server configured: the CLI starts a temporary one that its
    # Dask workers can reach. `index` reports to the run's server (conftest `prefect_api`), as a lab's would.
    fresh = {k: v for k, v in env.items() if k != "PREFECT_API_URL"}
    fresh["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    writer: list[int] = []
    # `--no-index`: the index flow below is the one compared (its batches embedded by the workers)
    added = _cli(["add", str(inputs), "--no-index", "--task-runner", "dask", "--workers", "2", "-w", str(dist.root)],
                 fresh, pid=writer)
    assert sorted(added["added"]) == sorted(report.added) and not added["problems"], added
    # the analyses ran in the tasks, in Dask worker processes, not in the writer (the CLI's process)
    ran = _analyses(dist)
    assert sorted(e["key"] for e in ran) == sorted(report.added) and all(e["ok"] for e in ran), ran
    assert all(e["pid"] != writer[0] for e in ran), (writer, ran)
    assert {e["pid"] for e in _analyses(local)} == {os.getpid()}     # in process: right here
    indexed = _cli(["index", "--task-runner", "dask", "--workers", "2", "-w", str(dist.root)], env)
    assert indexed["chunks_embedded"] == indexed["chunks"] > 0 and not indexed["errors"], indexed
    # the workers really parsed: the flow side's own cache holds both files
    assert len(list((tmp_path / "cache-dist").rglob("*.pickle"))) == 2

    files = _vault_files(local)
    assert len(files) >= 4 and _vault_files(dist) == files
    ids_local, vecs_local = _chunks(local)
    ids_dist, vecs_dist = _chunks(dist)
    assert ids_dist == ids_local and len(ids_local) == indexed["chunks"]
    assert vecs_dist.shape == vecs_local.shape
    np.testing.assert_allclose(vecs_dist, vecs_local, rtol=0, atol=1e-6)
    # the multilingual space too: its chunk rows and lexicon, embedded by tasks on the cluster, not the writer
    from papervault.index.multilingual import CHUNKS_ML

    ml_local, ml_vecs_local = _chunks(local, CHUNKS_ML)
    ml_dist, ml_vecs_dist = _chunks(dist, CHUNKS_ML)
    assert ml_dist == ml_local and indexed["multilingual"]["embedded"] > 0 and indexed["multilingual"]["terms"] > 0
    np.testing.assert_allclose(ml_vecs_dist, ml_vecs_local, rtol=0, atol=1e-6)
    assert _task_runs("embed-multilingual-batch") >= 2      # the chunk batch and the lexicon's
    # one commit of the add, made by the flow's process
    assert next(dist.vault.repo.iter_commits(max_count=1)).message.startswith("add: 2 new")


def test_thread_runner_flows_equal_in_process(tmp_path, in_process, inputs, monkeypatch, prefect_api):
    """The default task runner (threads; each PDF parsed in its own process, PyMuPDF not being thread-safe)."""
    from flows.ingest import add as add_flow, index as index_flow, run

    local, report = in_process
    monkeypatch.setenv("PAPERVAULT_PARSE_CACHE_DIR", str(tmp_path / "cache-flow"))
    monkeypatch.setenv("PAPERVAULT_EMBED_VECTOR_CACHE", "")     # the flow's tasks embed for real
    flowed = _init(tmp_path / "flowed")
    done = run(add_flow, task_runner_kind="thread", workers=2, inputs=[str(inputs)], workspace=str(flowed.root),
               index=False).as_dict()
    assert sorted(done["added"]) == sorted(report.added) and not done["problems"], done
    assert len(list((tmp_path / "cache-flow").rglob("*.pickle"))) == 2
    indexed = run(index_flow, task_runner_kind="thread", workers=2, workspace=str(flowed.root))
    assert indexed["chunks_embedded"] == indexed["chunks"] > 0

    assert _vault_files(flowed) == _vault_files(local)
    ids_local, vecs_local = _chunks(local)
    ids_flow, vecs_flow = _chunks(flowed)
    assert ids_flow == ids_local
    np.testing.assert_allclose(vecs_flow, vecs_local, rtol=0, atol=1e-6)


def _long_pdf(path, n: int) -> None:
    """A real PDF of `n` pages that all draw one shared content stream, written directly (instant at any size)."""
    stream = b"BT /F1 12 Tf 72 500 Td (A very long report.) Tj ET"
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>", None, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)]
    first = len(objs) + 1
    objs[1] = b"<< /Type /Pages /Count %d /Kids [%s] >>" % (n, " ".join(f"{first + i} 0 R" for i in range(n)).encode())
    objs += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
             b"/Contents 4 0 R >>"] * n
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    path.write_bytes(bytes(out))


def test_dask_parse_timeout_and_progress(tmp_path, prefect_api, monkeypatch):
    """A PDF whose parse overruns `[parse] timeout` on a Dask worker becomes that paper's one-line problem, the
    batch goes on with the next file on the same worker, and the flow reports parse, analysis and add progress.
    Run after an in-process flow has built a backend in this process: the analysis task still ships to Dask."""
    import pymupdf

    from flows.ingest import add as add_flow, run

    src = tmp_path / "in"
    src.mkdir()
    _long_pdf(src / "a-long-report.pdf", 32768)    # a parse of many seconds on any machine: abandoned, not waited for
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 100), "Leases for Replicated Logs", fontsize=18)
    page.insert_text((72, 160), "Abstract. We bound the recovery time of a replicated log with leases.")
    doc.save(src / "b-short-paper.pdf")
    monkeypatch.setenv("PAPERVAULT_PARSE_TIMEOUT", "3")
    monkeypatch.setenv("PAPERVAULT_PARSE_MAX_PAGES", "40000")      # long, not refused for its length
    monkeypatch.setenv("PAPERVAULT_PARSE_CACHE_DIR", str(tmp_path / "cache"))
    ws, _ = Workspace.init(tmp_path / "ws")
    calls: list[tuple] = []
    t0 = __import__("time").monotonic()
    done = run(add_flow, task_runner_kind="dask", workers=1, progress=lambda *a: calls.append(a),
               inputs=[str(src)], workspace=str(ws.root), index=False).as_dict()
    assert __import__("time").monotonic() - t0 < 300
    assert len(done["added"]) == 1 and ws.vault.read_meta(done["added"][0]).title == "Leases for Replicated Logs"
    [problem] = done["problems"]
    assert problem["source"].endswith("a-long-report.pdf")
    assert problem["error"] == "parsing took longer than 3 s of CPU time and was abandoned", problem
    assert ("parse", 2, 2) in calls and ("analyse", 1, 1) in calls and ("add", 2, None) in calls, calls


SURVEY_FILES = ("selection.md", "correlation.md", "outline.md", "survey.md", "references.bib", "references.json",
                "polish-report.md")
SECONDS = re.compile(r"\b\d+\.\d+ ?s\b")


def _survey_files(ws: Workspace, slug: str) -> dict[str, str]:
    """The survey's artefacts as text, but for the times a run reports in them."""
    sdir = ws.vault.survey_dir(slug)
    return {name: SECONDS.sub("<t>", (sdir / name).read_text(encoding="utf-8")) for name in SURVEY_FILES}


def test_a_survey_is_the_same_in_process_on_prefect_threads_and_on_dask(tmp_path, in_process, prefect_api):
    """The survey's one declaration run by each executor over copies of the reference workspace: the same
    artefacts, the same notes and the same index rows (its index stage finds nothing new to embed)."""
    import shutil

    from flows.survey import run_survey
    from papervault.app.surveyplan import run_survey as run_in_process

    local, _ = in_process
    got = {}
    for how in ("in-process", "thread", "dask"):
        ws = Workspace(shutil.copytree(local.root, tmp_path / how, symlinks=True))
        params = dict(slug="s", papers=["all"], backend="extractive")
        if how == "in-process":
            result = run_in_process(ws, "fault tolerance in systems", **params)
        else:
            result = run_survey("fault tolerance in systems", task_runner=how, workers=1, workspace=str(ws.root),
                                **params)
        assert sorted(result["papers"]) == sorted(local.vault.paper_ids()) and not result["failed"], result
        got[how] = (_survey_files(ws, "s"), _vault_files(ws), _chunks(ws)[0])
    assert all(got["in-process"][0].values()) and got["in-process"][2]
    assert got["thread"] == got["in-process"]
    assert got["dask"] == got["in-process"]
