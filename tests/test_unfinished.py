"""What is finished is used, what is not is said: a survey, `locate`, `open`, the site and MCP on a vault where
one paper is still read by its first pass (its text layer; a scanned page waiting for OCR; not analysed) and
its paragraphs still wait for the background fill, while the other papers are complete."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from pathlib import Path

import lancedb
import pymupdf
import pytest
from conftest import environ, invoke, without_multilingual

from papervault.app import arrival
from papervault.parse.firstpass import is_first_pass
from papervault.workspace import Workspace

COMPLETE = ["distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf",
            "distributed_systems_paxos-made-moderately-complex.pdf"]
ARRIVING = "operating_systems_unix-time-sharing-system.pdf"
SCANNED = 3       # the page of the arriving paper rasterised as a scanner would (no text layer)


def _scan_of(src: Path, dst: Path) -> Path:
    """The first three pages of `src`, the third an image only (a scan): its text waits for OCR."""
    with pymupdf.open(src) as doc, pymupdf.open() as out:
        out.insert_pdf(doc, from_page=0, to_page=SCANNED - 2)
        pix = doc[SCANNED - 1].get_pixmap(dpi=100)
        page = out.new_page(width=doc[SCANNED - 1].rect.width, height=doc[SCANNED - 1].rect.height)
        page.insert_image(page.rect, pixmap=pix)
        out.save(dst)
    return dst


def _pending(ws: Path) -> dict[str, int]:
    rows = lancedb.connect(str(ws / ".papervault" / "index")).open_table("chunks").to_arrow() \
        .select(["paper_id", "pending"]).to_pylist()
    out: dict[str, int] = {}
    for r in rows:
        if r["pending"]:
            out[r["paper_id"]] = out.get(r["paper_id"], 0) + 1
    return out


@pytest.fixture(scope="module")
def arriving(tmp_path_factory, corpus_dir, model_dir) -> tuple[Path, str]:
    """A workspace with two complete papers (a one-pass `add`) and one added by its first pass while no arrival
    worker may run (its lock held here), its paragraphs left pending (no fill is started for a first pass).
    Returns (workspace, the first-pass paper's id). Read-only: tests that write take `_copy(...)`."""
    base = tmp_path_factory.mktemp("unfinished")
    ws = base / "ws"
    invoke(["init", ws])
    without_multilingual(ws)
    pdfs = base / "pdfs"
    pdfs.mkdir()
    for name in COMPLETE:
        shutil.copy(corpus_dir / name, pdfs / name)
    done = json.loads(invoke(["add", *[pdfs / n for n in COMPLETE], "--wait", "--json", "--workspace", ws]).stdout)
    assert len(done["added"]) == 2 and done["arrival"] is None, done
    scan = _scan_of(corpus_dir / ARRIVING, base / "unix-scan.pdf")
    fd = os.open(arrival.lock_path(Workspace(ws)), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)        # `add` starts no worker: one runs per workspace
        with environ("PAPERVAULT_PARSE_FIRST_PASS", "true"), environ("PAPERVAULT_INDEX_BACKGROUND_FILL", "true"):
            got = json.loads(invoke(["add", scan, "--json", "--workspace", ws]).stdout)
    finally:
        os.close(fd)
    [pid] = got["added"]
    assert got["arrival"]["waiting"] == 1 and is_first_pass(Workspace(ws).vault.read_meta(pid).parser)
    assert set(_pending(ws)) == {pid}, _pending(ws)
    return ws, pid


def _copy(ws: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "ws"
    shutil.copytree(ws, dst, symlinks=True)
    return dst


def test_a_survey_reads_what_is_finished_and_says_what_is_not(arriving, tmp_path):
    ws, pid = _copy(arriving[0], tmp_path), arriving[1]
    pending = _pending(ws)[pid]
    out = json.loads(invoke(["survey", "replication and consistency of distributed systems", "--papers", "all",
                             "--slug", "s", "--json", "--workspace", ws]).stdout)
    # the survey ran to its end over the three papers, without waiting for the fill or the worker
    assert sorted(out["papers"]) == sorted(Workspace(ws).vault.paper_ids()) and out["sections"] > 0
    survey = (ws / "vault" / "surveys" / "s" / "survey.md").read_text(encoding="utf-8")
    assert "1 of the papers was read by the text layer only" in survey
    un = out["unfinished"]
    assert [(p["id"], p["pending_pages"], p["stage"]) for p in un["papers"]] == [(pid, [SCANNED], "text layer")]
    assert un["paragraphs_pending"] == pending and "papervault status" in un["hint"], un
    # a first pass is never analysed (its full parse is): the survey read its text and left its note alone
    assert pid not in out["analysed"] + out["current"] and not out["failed"]
    meta = Workspace(ws).vault.read_meta(pid)
    assert meta.status == "parsed" and is_first_pass(meta.parser)
    assert _pending(ws) == {pid: pending}          # the survey filled nothing: the fill does that behind
    sel = (ws / "vault" / "surveys" / "s" / "selection.md").read_text(encoding="utf-8")
    assert "1 of them is still read by the text layer only" in sel
    entry = sel.split(f"@{pid} ")[1].split("\n- [")[0]
    assert f"not finished: read by its text layer only (no headings, figures or tables yet; page {SCANNED} " \
           "waits for OCR); not analysed yet" in entry, entry
    text = invoke(["survey", "--papers", "all", "--slug", "s", "--select-only", "replication", "--workspace", ws])
    assert f"not finished: {pid}: read by its text layer only" in text.stderr and "Unfinished:" in text.stderr


def test_locate_and_open_say_a_page_waits_for_ocr(arriving):
    ws, pid = arriving
    body = Workspace(ws).vault.read_fulltext(pid)
    page2 = body.split('<a id="page-2"></a>')[1].split('<a id="page-3"></a>')[0]
    quote = " ".join(max(page2.split("\n\n"), key=len).split()[:12])
    [hit] = json.loads(invoke(["locate", quote, "--json", "--workspace", ws]).stdout)
    assert (hit["paper_id"], hit["page"], hit["stage"], hit["pending_pages"]) == (pid, 2, "text layer", [SCANNED])
    shown = invoke(["locate", quote, "--workspace", ws]).stdout
    assert f"read by its text layer only; page {SCANNED} waits for OCR" in shown
    missing = invoke(["locate", "a sentence written on no page of any paper here", "--workspace", ws], check=False)
    assert missing.exit_code == 1 and f"{pid}: page {SCANNED}" in missing.stderr
    assert "no full parse is running" in missing.stderr            # and how to start it
    opened = json.loads(invoke(["open", pid, "--page", SCANNED, "--json", "--workspace", ws]).stdout)
    assert opened["stage"] == "text layer" and opened["note"].startswith(f"page {SCANNED} is a scan waiting for OCR")


def test_mcp_and_search_mark_a_hit_of_a_paper_read_by_its_text_layer(arriving):
    from mcp_server.tools import VaultTools

    ws, pid = arriving
    tools = VaultTools(Workspace(ws))
    got = tools.search("UNIX time-sharing system file system", limit=10)
    mine = [h for h in got["hits"] if h["paper_id"] == pid]
    others = [h for h in got["hits"] if h["paper_id"] != pid]
    assert mine and all(h["stage"] == "text layer" and h["pending_pages"] == [SCANNED] for h in mine)
    assert all("stage" not in h for h in others) and "read by the text layer only" in got["unfinished"]
    assert tools.get_paper(pid)["pending_pages"] == [SCANNED]
    # the CLI's search says the same, in text and --json
    rows = json.loads(invoke(["search", "UNIX time-sharing system file system", "--json", "--workspace", ws]).stdout)
    assert any(r["paper_id"] == pid for r in rows)
    assert all((r.get("stage") == "text layer") == (r["paper_id"] == pid) for r in rows)
    text = invoke(["search", "UNIX time-sharing system file system", "--workspace", ws]).stdout
    assert f"[{pid}]" in text and "(text layer only: its full parse follows)" in text
    assert "1 of these papers is read by the text layer only" in text and "no full parse is running" in text


def test_site_notes_an_unfinished_paper_and_rebuilds_it_when_finished(arriving, tmp_path):
    ws, pid = _copy(arriving[0], tmp_path), arriving[1]
    invoke(["site", "build", "--workspace", ws])
    page, full = ws / "site" / "papers" / pid / "note.html", ws / "site" / "papers" / pid / "paper.html"
    for html in (page.read_text(encoding="utf-8"), full.read_text(encoding="utf-8")):
        assert "pv-unfinished" in html and f"scanned page {SCANNED} (waiting for OCR)" in html
    home = (ws / "site" / "index.html").read_text(encoding="utf-8")
    assert re.search(r"<strong>1</strong> paper is read by the text layer only", home), home[:3000]
    # the full parse done (here, in this process, without OCR: the page stays a scan of no text), the site is
    # built again and says nothing of it any more
    with environ("PAPERVAULT_PARSE_OCR", "false"):
        assert arrival.run(Workspace(ws))["done"] == [pid]
    invoke(["site", "build", "--workspace", ws])
    assert "pv-unfinished" not in page.read_text(encoding="utf-8") + full.read_text(encoding="utf-8")
    assert "read by the text layer only" not in (ws / "site" / "index.html").read_text(encoding="utf-8")


def test_a_survey_waits_out_a_batch_of_the_arrival_worker(arriving, tmp_path):
    """The worker holds the write lock while it writes one batch: a survey started meanwhile waits for it
    instead of failing (as for a background fill's batch)."""
    import threading
    import time

    ws = Workspace(_copy(arriving[0], tmp_path))
    held = ws.write_lock(arrival.COMMAND).acquire()
    threading.Timer(1.0, held.release).start()
    t0 = time.monotonic()
    out = json.loads(invoke(["survey", "replication", "--papers", "all", "--slug", "w", "--select-only", "--json",
                             "--workspace", ws.root]).stdout)
    assert time.monotonic() - t0 >= 0.9 and len(out["papers"]) == 3


def test_a_topic_weighs_a_paper_still_arriving_by_its_passages(arriving):
    """A survey's topic selection ranks passages by their vectors; a paper read by its first pass has none yet
    (its paragraphs wait for the fill): the best full-text hits among them get their vectors at query time, as
    `search` gives them, so the paper is weighed by its passages too, not by its title and abstract alone."""
    import numpy as np

    from papervault.chunking.paper import embed_text
    from papervault.index.search import PENDING_PER_PAPER, Searcher
    from papervault.models import Chunk
    from papervault.survey.topic.scoring import CHUNK_COLUMNS, chunk_hits

    ws, pid = arriving
    searcher = Searcher(Workspace(ws))
    topic = "i-nodes, directories and special files in a time-sharing file system"
    q = np.asarray(searcher.embedder.embed_query(topic), dtype=np.float32)
    vec_rows, fts_rows = searcher.passage_rankings(topic, q, None, 100, CHUNK_COLUMNS)
    # its paper row has its vector; its paragraphs found by full text get theirs now
    mine = [r for r in vec_rows if r["paper_id"] == pid and r["level"] == "paragraph"]
    assert mine and all({*CHUNK_COLUMNS, "_distance"} <= set(r) for r in mine), mine[:1]
    assert all("pending" not in r for r in fts_rows)
    # up to PENDING_PER_PAPER of its best full-text hits get theirs, not only its best one
    found = [r for r in fts_rows if r["paper_id"] == pid and r["level"] != "paper"]
    made = [r for r in vec_rows if r["paper_id"] == pid and r["level"] != "paper"]
    assert len(made) == min(PENDING_PER_PAPER, len(found)) and len(made) > 2, (len(made), len(found))
    # each made vector is the one the fill will give the passage
    row = mine[0]
    text = embed_text(Chunk(id=row["id"], paper_id=pid, level=row["level"], text=row["text"] or "",
                            section_path=row["section_path"] or ""), Workspace(ws).vault.read_meta(pid).title)
    want = 1.0 - float(np.dot(q, searcher.embedder.embed([text])[0]))
    assert abs(row["_distance"] - want) < 1e-4, (row["_distance"], want)
    assert [r["_distance"] for r in vec_rows] == sorted(r["_distance"] for r in vec_rows)
    dense, _ = chunk_hits(searcher, topic, q, None, 100)
    assert pid in dense and dense[pid][0] > 0.3, dense.get(pid)
