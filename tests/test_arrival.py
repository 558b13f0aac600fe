"""Searchable as it arrives: `add` with [parse] first_pass makes a paper searchable from its text layer, the
arrival worker parses it fully behind, and a worker killed anywhere, then run again, leaves the vault and index
a one-pass `add --wait` builds."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import lancedb
import pymupdf
import yaml

from papervault.app import arrival
from papervault.parse.firstpass import first_pass, is_first_pass
from papervault.parse.pdf import parse_pdf
from papervault.workspace import Workspace


def _pdf(path: Path, title: str, pages: int = 3) -> Path:
    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page()
        if i == 0:
            page.insert_text((72, 90), title, fontsize=20)
            page.insert_text((72, 120), "Ada Lovelace and Charles Babbage", fontsize=11)
            page.insert_text((72, 170), "Abstract", fontsize=12)
        page.insert_text((72, 200), f"# Section {i + 1}: quorum leases bound the recovery time of a log.",
                         fontsize=10)
        page.insert_text((72, 220), "<script>alert(1)</script> Replicas answer reads locally under a lease.",
                         fontsize=10)
    doc.save(path)
    return path


def test_first_pass_reads_text_and_identity_escaped(tmp_path):
    src = _pdf(tmp_path / "leases.pdf", "Quorum Leases for Replicated Logs")
    paper = first_pass(src)
    assert paper.title == "Quorum Leases for Replicated Logs" and is_first_pass(paper.parser)
    assert paper.pages == 3 and paper.markdown.count('<a id="page-') == 3
    # the text layer is the PDF's, escaped as the full parse escapes it: no markup, no headings from a page
    assert "&lt;script>" in paper.markdown and "<script>" not in paper.markdown
    assert "\n\\# Section 1" in paper.markdown or "\\# Section 1" in paper.markdown


def test_first_pass_joins_lines_as_the_full_parse_does(tmp_path):
    """A line-break hyphen is undone ("al-" + "gorithmic"), as the full parse undoes it, so that the passage
    is found by its words and embedded near its full parse's; a word written with its hyphen elsewhere on the
    page keeps it."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "Quorum Leases for Replicated Logs", fontsize=20)
    page.insert_text((72, 200), "Dimension reduction has many al-\ngorithmic uses; a state-of-the-\nart filter "
                     "and a state-of-the-art\nsketch.", fontsize=10)
    doc.save(tmp_path / "hy.pdf")
    text = first_pass(tmp_path / "hy.pdf").markdown
    assert "many algorithmic uses; a state-of-the-art filter and a state-of-the-art sketch." in text
    assert parse_pdf(tmp_path / "hy.pdf").markdown.count("algorithmic") == 1
    # a section's heading over its first lines is a heading, as the full parse makes it, not the paragraph's start
    from papervault.parse.firstpass import _block
    from papervault.parse.references import REFERENCES_HEADING

    assert _block("1. INTRODUCTION\nDimension reduction is al-\ngorithmic [2].", REFERENCES_HEADING) == [
        "## 1 INTRODUCTION", "Dimension reduction is algorithmic [2]."]
    assert _block("2.1.2\nEnter <b>Paxos</b>\nWe decided to use Paxos [14].", REFERENCES_HEADING) == [
        "#### 2.1.2 Enter &lt;b>Paxos&lt;/b>", "We decided to use Paxos [14]."]
    assert _block("1. We show that the bound\nholds.", REFERENCES_HEADING) == ["\\1. We show that the bound holds."]


def test_first_pass_writes_headings_as_the_full_parse_does():
    """A heading on a line of its own, as the text layer often has it, is a heading too, written as the full
    parse writes it (number without its dot, one level deeper a part: "### 2.1 Replication"), so a section's
    path, and the text its passages are embedded with, are the full parse's; a table of contents' entries, a
    lettered line in a paper without roman sections and a sentence are not."""
    from papervault.parse.firstpass import ABSTRACT_BLOCKS, _abstract_kept, _block, _chapters, _Outline, _toc_page
    from papervault.parse.references import REFERENCES_HEADING as H

    outline = _Outline()
    blocks = [*_chapters(["CHAPTER 1\n", "Introduction\n"]), " \n1.2 The <b>Lease</b> Rule \n", "Abstract\n",
              "II. RELATED WORK\nAND ITS LIMITS\nLeases bound recovery.", "A. Memory corruption\n",
              "2.1.2 Enter Paxos\n", "3 Paxos orders the log; Raft elects a leader.\n", "64 Threads\n", "2.3 Pro-\n"]
    assert [x for b in blocks for x in _block(b, H, outline=outline)] == [
        "## 1 Introduction", "### 1.2 The &lt;b>Lease&lt;/b> Rule", "## Abstract", "## II RELATED WORK AND ITS LIMITS",
        "Leases bound recovery.", "### A Memory corruption", "#### 2.1.2 Enter Paxos",
        "3 Paxos orders the log; Raft elects a leader.", "64 Threads", "2.3 Pro-"]
    assert _block("A. Memory corruption\n", H, outline=_Outline()) == ["A. Memory corruption"]
    assert _block("[CDCV81]\nM. Coppo. Functional characters.", H) == ["[CDCV81] M. Coppo. Functional characters."]
    # an "Abstract" heading no heading follows soon stays text: its section, left to the paper row by the
    # chunker, would take the paper's body with it
    body = ["## Abstract", "We read.", '<a id="page-2"></a>', *["More."] * ABSTRACT_BLOCKS]
    assert _abstract_kept(["## Abstract", "We read.", "## 1 Introduction"])[0] == "## Abstract"
    assert _abstract_kept(body)[0] == "Abstract"
    toc = ["Contents\n", "1 Introduction . . . . . . 1\n", "7 Conclusion\n59\n"]
    assert _toc_page(toc) and _block(toc[2], H, outline=_Outline(toc=True)) == ["7 Conclusion 59"]


def test_first_pass_writes_a_table_s_blocks_as_a_table(corpus_dir):
    """A run of a table's blocks (cells side by side in a block's width, no line a sentence's end) is a Markdown
    table, as the full parse writes one: ASAP's datasets table names its sources ("traffic data [14]"), which are
    no citing sentences, while its prose keeps its citations, and Megastore's paragraph cut at a page's end (no
    sentence's end) keeps its."""
    from papervault.parse.firstpass import _tabular
    from papervault.survey.contexts import extract

    row = (101, 105, 499, 141, "window size: 16\n# candidates: 23\ntraffic data [14]\nVehicle traffic\n", 0, 0)
    prose = (101, 105, 499, 141, "Contrary to conventional wisdom [24, 28], we were able to use Paxos [27] to\n"
             "build a highly available system that provides reasonable latencies for interactive\n", 0, 0)
    assert _tabular(row, 4.0) and not _tabular(prose, 4.0) and not _tabular(row, 0.0)
    assert not _tabular(row[:4] + ("a cell\nends a sentence.\n",) + row[5:], 4.0)

    asap = first_pass(corpus_dir / "time_series_ts-asap.pdf").markdown
    assert "\n| window size: 16 # candidates: 23 traffic data [14] Vehicle traffic observed between two points " \
           "for 4 months |\n" in asap
    contexts = extract(asap)["contexts"]
    assert "14" not in contexts and not any(s.startswith("window size") for v in contexts.values() for s, _ in v)
    assert any("similar to M4 [33]" in s for s, _ in contexts["33"])
    megastore = "datastores_megastore-providing-scalable-highly-available-storage-for-interactive-services.pdf"
    assert any(s.startswith("Contrary to conventional wisdom [24, 28]")
               for s, _ in extract(first_pass(corpus_dir / megastore).markdown)["contexts"]["27"])


def test_a_first_pass_s_sections_are_headings_whose_rows_wait_as_its_paragraphs_do(tmp_path, monkeypatch,
                                                                                   corpus_dir):
    """The first pass sets a section's heading apart as a heading, so its paragraphs are chunked by section as
    the full parse's are; the add that makes the paper searchable embeds its paper row only, its sections',
    tables' and paragraphs' rows left pending (found by full text, given vectors at query time) until the full
    parse (ASAP's tables: 1,080 table rows of the identity set's 317 PDFs were embedded by the add before)."""
    from papervault.app.adding import add

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 90), "Quorum Leases for Replicated Logs", fontsize=20)
    page.insert_text((72, 120), "Ada Lovelace and Charles Babbage", fontsize=11)
    for y, text in ((200, "1. INTRODUCTION\nReplicas answer reads locally under a lease.\nLeases bound recovery."),
                    (300, "2. RELATED WORK\nPaxos orders the log of every replica.\nRaft elects one leader.")):
        page.insert_text((72, y), text, fontsize=10)
    doc.save(tmp_path / "leases.pdf")
    monkeypatch.setenv("PAPERVAULT_PARSE_FIRST_PASS", "true")
    monkeypatch.setenv("PAPERVAULT_INDEX_BACKGROUND_FILL", "true")
    ws = Workspace(Workspace.init(tmp_path / "ws")[0].root)
    ws.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(arrival.lock_path(ws), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)            # a worker "runs": the first pass is all there is
        report = add(ws, [str(tmp_path / "leases.pdf"), str(corpus_dir / "time_series_ts-asap.pdf")])
    finally:
        os.close(fd)
    [pid] = [p for p in report.added if "asap" not in p]
    text = ws.vault.fulltext_path(pid).read_text(encoding="utf-8")
    assert "\n## 1 INTRODUCTION\n" in text and "\n## 2 RELATED WORK\n" in text, text
    rows = [(level, pending) for _, p, level, _, pending in _index(ws.root)["chunks"]]
    assert {("section", True), ("paragraph", True), ("table", True)} <= set(rows), rows
    assert {level for level, pending in rows if not pending} == {"paper"}, rows
    assert report.index["chunks_embedded"] == 2, report.index
    assert report.index["line"].endswith("passages follow behind: the full parse, then their vectors)"), report.index


def test_an_add_whose_early_worker_has_not_taken_its_lock_yet_starts_no_second(tmp_path):
    """On a busy machine the worker an add started at its first commit may not hold its lock when the add
    returns: the add reports that worker and starts none beside it (which would run at full priority)."""
    ws = Workspace(Workspace.init(tmp_path / "ws")[0].root)
    ws.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(arrival.lock_path(ws), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)            # a worker "runs" while the add does: it starts none
        _pv(ws.root, "add", str(_pdf(tmp_path / "a.pdf", "Quorum Leases for Replicated Logs")),
            PAPERVAULT_PARSE_FIRST_PASS="true")
    finally:
        os.close(fd)
    ids = arrival.waiting(ws)
    assert len(ids) == 1 and not arrival.running(ws)
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])    # started, no lock yet
    arrival._STARTED[str(ws.root)] = slow
    try:
        assert arrival.after_add(ws, ids) == {"waiting": 1, "pid": slow.pid}
    finally:
        slow.kill()
        slow.wait()
    # once it has gone, the add starts a worker, which completes the paper
    pid = arrival.after_add(ws, ids)["pid"]
    assert pid and pid != slow.pid
    deadline = time.monotonic() + 300
    while (arrival.running(ws) or arrival.waiting(ws)) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not arrival.waiting(ws)


def _scan(src: Path, out: Path) -> Path:
    """`src` rasterised into an image-only PDF, as a scanner makes one."""
    with pymupdf.open(src) as doc, pymupdf.open() as scan:
        for page in doc:
            pix = page.get_pixmap(dpi=120, colorspace=pymupdf.csGRAY)
            new = scan.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, pixmap=pix)
        scan.save(out)
    return out


def test_a_scan_s_first_page_is_read_by_ocr_once(tmp_path):
    """The first pass reads a scan's first page by OCR to name it; the full parse behind it takes that reading
    from the parse cache instead of reading the page again, and reads the other pages itself."""
    from papervault.parse import ocr
    from papervault.parse.batch import parse_cached

    scan = _scan(_pdf(tmp_path / "leases.pdf", "Quorum Leases for Replicated Logs", pages=2), tmp_path / "scan.pdf")
    cache = tmp_path / "cache"
    first = first_pass(scan, cache_dir=cache)
    assert first.title == "Quorum Leases for Replicated Logs"
    kept = sorted((cache / "ocr").iterdir())
    assert [p.name.split("-")[1] for p in kept] == ["p1"], kept
    # what the full parse then reads as page 1 is the kept reading: marked here, so its use is seen
    import pickle

    lines = pickle.loads(kept[0].read_bytes())
    lines[0].spans[0].text = "Quorum Leases for Replicated Logs (kept)"
    kept[0].write_bytes(pickle.dumps(lines))
    full = parse_cached(scan, cache_dir=cache)
    assert "(kept)" in full.markdown and full.ocr_pages == [1, 2]
    assert sorted(p.name.split("-")[1] for p in (cache / "ocr").iterdir()) == ["p1", "p2"]
    # without the cache, the page is read again (and nothing is kept)
    assert "(kept)" not in parse_pdf(scan).markdown
    with ocr.kept_pages(None, "x"):
        assert ocr._kept is None


def test_first_pass_reads_the_abstract_and_the_reference_list(corpus_dir):
    """The paper row gets its abstract, and the citation graph its reference list, from the first pass: the
    abstract by the full parse's rule over the first pages; a reference list's title ("9." above "REFERENCES",
    "§9" above "References", or "References" after the acknowledgements in one block) becomes the heading the
    full parse writes, the entries after it."""
    from papervault.survey.citations import reference_list

    for name, abstract, first_entry in (
            ("datastores_megastore-providing-scalable-highly-available-storage-for-interactive-services.pdf",
             "Megastore is a storage system developed", "[1] Apache HBase. http://hbase.apache.org/"),
            ("machine_learning_Understanding-Deep-Convolutional-Networks.pdf",
             "Deep convolutional networks provide", "[1] Agrawal A, Girshick R, Malik J, 2014"),
            ("sports_analytics_2014-ssac-pointwise-predicting-points-and-valuing-decisions-in-real-time.pdf",
             "Basketball is a game of decisions", "[1] J. Hollinger. Pro basketball forecast")):
        paper = first_pass(corpus_dir / name)
        assert paper.abstract.startswith(abstract) and paper.provenance["abstract"] == "first-pass", name
        assert reference_list(paper.markdown).startswith(first_entry), name
        assert paper.markdown.count("\n## References\n") == 1, name


def test_first_pass_references_title_only_where_a_heading_stands():
    from papervault.parse.firstpass import _block
    from papervault.parse.references import REFERENCES_HEADING as H

    assert _block("9.\nREFERENCES\n[1] A. Author. A title. 2008.", H) == [
        "## References", "[1] A. Author. A title. 2008."]
    assert _block("thank them.\n\nReferences \n[1] J. Doe. <b>X</b>.", H) == [
        "thank them.", "## References", "[1] J. Doe. &lt;b>X&lt;/b>."]
    # running text that wraps at the word, and a sentence about references, stay text
    for text in ("the two\nreferences\nagree", "References to objects are counted.", "REFERENCES User;"):
        assert _block(text, H) == [" ".join(text.split())], text


def test_add_first_pass_is_searchable_and_status_names_its_stage(tmp_path, monkeypatch, cli_run):
    """The paper is in the vault, its stage is "text layer" in status and MCP, and the worker's run makes it
    complete (here in this process)."""
    from mcp_server.tools import VaultTools as Tools

    src = _pdf(tmp_path / "leases.pdf", "Quorum Leases for Replicated Logs")
    ws, _ = Workspace.init(tmp_path / "ws")
    monkeypatch.setenv("PAPERVAULT_PARSE_FIRST_PASS", "true")
    monkeypatch.setattr(arrival, "start", lambda ws: None)      # the worker runs below, in this process
    report = json.loads(cli_run(["add", src, "--no-index", "--json", "--workspace", ws.root]).stdout)
    [pid] = report["added"]
    assert report["arrival"]["waiting"] == 1
    ws = Workspace(ws.root)
    st = json.loads(cli_run(["status", "--json", "--workspace", ws.root]).stdout)
    assert st["stages"]["first_pass"] == [pid]
    assert Tools(ws).get_paper(pid)["stage"] == "text layer"
    meta = ws.vault.read_meta(pid)     # the abstract the first pass read, said so, until the full parse's
    assert meta.abstract and meta.abstract == first_pass(src).abstract and meta.provenance["abstract"] == "first-pass"
    done = arrival.run(ws)
    assert done["done"] == [pid] and arrival.waiting(ws) == []
    meta = ws.vault.read_meta(pid)
    assert not is_first_pass(meta.parser) and meta.status == "analysed"
    assert meta.abstract == parse_pdf(src).abstract and "abstract" not in meta.provenance
    assert Tools(Workspace(ws.root)).get_paper(pid)["stage"] == "complete"


# --- killed anywhere, then run again: the one-pass result ----------------------------------------------------

_VOLATILE = {"added", "updated", "analysed_at", "created"}


def _vault(ws: Path) -> dict:
    out = {}
    papers = ws / "vault" / "papers"
    for pdir in sorted(p for p in papers.iterdir() if p.is_dir()):
        note = (pdir / "note.md").read_text()
        _, front, body = note.split("---", 2)
        meta = {k: v for k, v in (yaml.safe_load(front) or {}).items() if k not in _VOLATILE}
        figs = sorted(p.name for p in (pdir / "figures").glob("*.png")) if (pdir / "figures").is_dir() else []
        out[pdir.name] = {"meta": meta, "body": body, "paper": (pdir / "paper.md").read_text(), "figures": figs}
    return out


def _index(ws: Path) -> dict:
    db = lancedb.connect(str(ws / ".papervault" / "index"))
    chunks = db.open_table("chunks").to_arrow().select(["id", "paper_id", "level", "text", "pending"]).to_pylist()
    # (a paper's content hash digests its note's bytes, and so the note's timestamps: left out)
    papers = db.open_table("papers").to_arrow().select(["paper_id", "title", "chunks"]).to_pylist()
    return {"chunks": sorted((c["id"], c["paper_id"], c["level"], c["text"], c["pending"]) for c in chunks),
            "papers": sorted(tuple(p.values()) for p in papers)}


def _env(ws: Path, **extra) -> dict:
    return dict(os.environ, PAPERVAULT_WORKSPACE=str(ws), PAPERVAULT_INDEX_BACKGROUND_FILL="false",
                PAPERVAULT_PARSE_TIMEOUT="1200", **extra)


def _pv(ws: Path, *args, **extra) -> dict:
    r = subprocess.run([sys.executable, "-m", "papervault", *args, "--json"], env=_env(ws, **extra),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def _kill_worker_at(ws: Path, phase: str, batch: int, **env) -> str:
    """Run the worker (a batch a paper) and kill it with SIGKILL once its state says `phase` of its `batch`-th
    batch (or whatever it has reached when it is seen); returns where it was killed."""
    state = ws / ".papervault" / "arrival.json"
    state.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "papervault.app.arrival", "--workspace", str(ws), "--batch", "1"],
                            env=_env(ws, **env), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen, deadline = "not started", time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                info = json.loads(state.read_text())
            except (OSError, ValueError):
                info = {}
            if info.get("pid") == proc.pid and info.get("phase"):
                seen = f"{info['phase']} after {info.get('done', 0)} done"
                if info["phase"] == phase and info.get("done", 0) >= batch - 1 or info.get("done", 0) >= batch:
                    break
            time.sleep(0.002)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    return seen


def test_a_killed_full_parse_then_a_rerun_gives_the_one_pass_vault_and_index(tmp_path, corpus_dir):
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    for name in ("distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf",
                 "operating_systems_unix-time-sharing-system.pdf"):
        shutil.copy(corpus_dir / name, pdfs / name)
    one, arrive = tmp_path / "one-pass", tmp_path / "arrive"
    for ws in (one, arrive):
        Workspace.init(ws)
    ref = _pv(one, "add", str(pdfs), "--wait")
    assert len(ref["added"]) == 2 and ref["arrival"] is None

    # the worker's lock held here: `add` starts none (one runs per workspace), the kills below are ours to place
    (arrive / ".papervault").mkdir(exist_ok=True)
    fd = os.open(arrival.lock_path(Workspace(arrive)), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        got = _pv(arrive, "add", str(pdfs), PAPERVAULT_PARSE_FIRST_PASS="true")
    finally:
        os.close(fd)
    assert sorted(got["added"]) == sorted(ref["added"]) and got["arrival"]["waiting"] == 2
    # killed while it parses a paper (for real: a parse cache of its own), while it indexes one it committed,
    # while it writes the next
    where = [_kill_worker_at(arrive, "parse", 1, PAPERVAULT_PARSE_CACHE_DIR=str(tmp_path / "own-cache")),
             _kill_worker_at(arrive, "index", 1), _kill_worker_at(arrive, "write", 1)]
    assert where[0] == "parse after 0 done" and where[1].endswith("after 1 done"), where
    print("killed at", where)
    rerun = subprocess.run([sys.executable, "-m", "papervault.app.arrival", "--workspace", str(arrive)],
                           env=_env(arrive), capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert arrival.waiting(Workspace(arrive)) == [], where
    a, b = _vault(arrive), _vault(one)
    for pid in b:
        for part in ("meta", "body", "paper", "figures"):
            if part == "meta":
                diff = {k: (a[pid]["meta"].get(k), v) for k, v in b[pid]["meta"].items() if a[pid]["meta"].get(k) != v}
                diff.update({k: (v, None) for k, v in a[pid]["meta"].items() if k not in b[pid]["meta"]})
                assert not diff, (pid, diff, where)
            assert a[pid][part] == b[pid][part], (pid, part, where)
    assert a == b, where
    assert _index(arrive) == _index(one), where
    # nothing done twice: one full-parse commit a paper, however often the worker was killed
    log = subprocess.run(["git", "-C", str(arrive / "vault"), "log", "--format=%s"], capture_output=True,
                         text=True).stdout.splitlines()
    assert sum(line.startswith("add (full parse)") for line in log) == 2, (log, where)


# --- "auto": which adds go by their first pass; a large one searchable from its first commit ----------------------

def test_auto_reads_a_large_add_by_its_first_pass_and_a_small_one_in_one_pass(tmp_path, monkeypatch, corpus_dir):
    from papervault.app.adding import first_pass_wanted

    monkeypatch.delenv("PAPERVAULT_PARSE_FIRST_PASS", raising=False)
    ws, _ = Workspace.init(tmp_path / "ws")
    ws = Workspace(ws.root)
    assert ws.settings.parse.first_pass == "auto"
    small = _pdf(tmp_path / "one.pdf", "Quorum Leases for Replicated Logs")
    bib = tmp_path / "refs.bib"
    bib.write_text("@article{x, title={A}, year={2001}}\n")
    # a paper or two: one pass (complete in seconds); a folder of 16 papers, a library, a model: first pass
    assert first_pass_wanted(ws, [str(small)], "extractive") is False
    assert first_pass_wanted(ws, [str(corpus_dir)], "extractive") is True
    assert first_pass_wanted(ws, [str(bib)], "extractive") is True
    assert first_pass_wanted(ws, [], "extractive", {"zotero": None}) is True
    assert first_pass_wanted(ws, [str(small)], "openai") is True
    monkeypatch.setenv("PAPERVAULT_PARSE_FIRST_PASS", "false")
    assert first_pass_wanted(Workspace(ws.root), [str(corpus_dir)], "openai") is False
    monkeypatch.setenv("PAPERVAULT_PARSE_FIRST_PASS", "true")
    assert first_pass_wanted(Workspace(ws.root), [str(small)], "extractive") is True


def test_a_first_pass_add_is_searchable_from_its_first_commit(tmp_path, monkeypatch):
    """The first pass commits and indexes its first papers at once (2, then 4 times as many each commit): a search
    made while the add still reads the rest finds them; the add's one index line counts every paper once (one
    that an early step added and the last updated, another file of it merged in, too)."""
    from papervault.app.adding import add
    from papervault.index.search import Searcher

    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    words = ("Leases", "Ballots", "Witnesses", "Epochs", "Fences", "Tickets")
    for i, w in enumerate(words):
        _pdf(pdfs / f"p{i}.pdf", f"Quorum {w} for Replicated Logs")
    # first by name, but a scan (its first page read by OCR): the cheapest papers are written first
    text = _pdf(tmp_path / "scan-src.pdf", "Quorum Tokens for Replicated Logs", pages=1)
    with pymupdf.open(text) as doc, pymupdf.open() as out:
        pix = doc[0].get_pixmap(dpi=100, colorspace=pymupdf.csGRAY)
        page = out.new_page(width=doc[0].rect.width, height=doc[0].rect.height)
        page.insert_image(page.rect, pixmap=pix)
        out.save(pdfs / "a-scan.pdf")
    # another file of the first paper (another printing: more pages), merged into it by a later commit
    _pdf(pdfs / "p0-printed.pdf", "Quorum Leases for Replicated Logs", pages=9)
    monkeypatch.setenv("PAPERVAULT_PARSE_FIRST_PASS", "true")
    ws, _ = Workspace.init(tmp_path / "ws")
    ws = Workspace(ws.root)
    seen: list[tuple[int, int]] = []

    def progress(stage, done, total):
        if stage == "add":     # after each batch the import wrote (and, when due, committed and indexed)
            hits = Searcher(Workspace(ws.root)).search("quorum leases bound the recovery time of a log", limit=10)
            seen.append((done, len({h.paper_id for h in hits})))

    fd = os.open(arrival.lock_path(ws), os.O_RDWR | os.O_CREAT, 0o644)   # a worker "runs": add starts none
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        report = add(ws, [str(pdfs)], progress=progress)
    finally:
        os.close(fd)
    assert seen[0] == (2, 2), seen          # the first two searchable while five more were still to be read
    assert seen[-1][0] == 8
    assert len(report.added) == 7 and report.arrival["waiting"] == 7 and len(report.merged) == 1
    assert report.index["early_steps"] == 1 and report.index["line"].startswith("indexed 7 of 7 papers"), report.index
    log = subprocess.run(["git", "-C", str(ws.root / "vault"), "log", "--format=%s"], capture_output=True,
                         text=True).stdout.splitlines()
    assert [line.split(";")[0].split(" (")[0] for line in log[:2]] == ["add: 5 new", "add: 2 new"], log
    [scan] = [p for p in report.added if Path(ws.vault.read_meta(p).sources[0]).name == "a-scan.pdf"]
    assert scan not in log[1], log          # not in the first commit
    hits = Searcher(Workspace(ws.root)).search("quorum leases bound the recovery time of a log", limit=50)
    assert len({h.paper_id for h in hits}) == 7


def test_an_add_with_another_backend_than_the_workspace_s_goes_in_one_pass(tmp_path, monkeypatch):
    """The worker analyses with the workspace's backend: an add that asks for another one (`--backend`) is
    parsed and analysed in one pass by the backend it asked for, whatever `[parse] first_pass` says."""
    from papervault.app.adding import add

    monkeypatch.setenv("PAPERVAULT_PARSE_FIRST_PASS", "true")
    monkeypatch.setenv("PAPERVAULT_AGENTS_BACKEND", "openai")
    src = _pdf(tmp_path / "leases.pdf", "Quorum Leases for Replicated Logs")
    ws, _ = Workspace.init(tmp_path / "ws")
    report = add(Workspace(ws.root), [str(src)], backend="extractive")
    [pid] = report.added
    meta = Workspace(ws.root).vault.read_meta(pid)
    assert report.arrival is None and not is_first_pass(meta.parser) and meta.status == "analysed"


def test_the_parser_pool_takes_files_that_come_while_it_runs(tmp_path, corpus_dir):
    """`parse_many(more=...)`: a free parser process takes a file that came meanwhile (the arrival worker's
    reader: papers an add writes while it parses), each result is told as it comes and not kept, and the call
    returns once nothing is queued, running or coming. A file given twice is read once."""
    from papervault.config import ParseSettings
    from papervault.parse.batch import parse_many

    a = _pdf(tmp_path / "a.pdf", "Quorum Leases for Replicated Logs")
    b = _pdf(tmp_path / "b.pdf", "Ballots and Witnesses in Replicated Logs")
    c = corpus_dir / "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"
    coming = [[str(b), str(a)], [], [str(c)], []]
    asked: list[int] = []

    def more() -> list[str]:
        asked.append(len(asked))
        return coming.pop(0) if coming else []

    told: dict[str, object] = {}
    got = parse_many([str(a)], ParseSettings(), cache_dir=tmp_path / "cache", workers=2, more=more,
                     on_result=lambda key, res: told.setdefault(key, res))
    assert got == {} and not coming, (got, coming)
    assert sorted(told) == sorted([str(a), str(b), str(c)])
    assert told[str(b)].title == "Ballots and Witnesses in Replicated Logs"
    assert told[str(c)].title.startswith("Harvest, Yield")
    # without `on_result`, the results are returned as before
    assert parse_many([str(a)], ParseSettings(), cache_dir=tmp_path / "cache")[str(a)].title.startswith("Quorum")


def test_an_add_starts_the_full_parse_at_its_first_commit_and_it_writes_after(tmp_path):
    """`add` by first pass starts the arrival worker after its first commit, while it reads the rest; the worker
    parses ahead but writes only once the add has returned (every full-parse commit comes after the add's), and
    then completes every paper."""
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    for i, w in enumerate(("Leases", "Ballots", "Witnesses", "Epochs", "Fences")):
        _pdf(pdfs / f"p{i}.pdf", f"Quorum {w} for Replicated Logs")
    ws = tmp_path / "ws"
    Workspace.init(ws)
    got = _pv(ws, "add", str(pdfs), PAPERVAULT_PARSE_FIRST_PASS="true")
    returned = time.time()
    assert len(got["added"]) == 5 and got["arrival"]["waiting"] == 5 and got["arrival"]["pid"], got["arrival"]
    # the worker the first commit started, at the lowest priority (it still loads its model and writes now)
    assert os.getpriority(os.PRIO_PROCESS, got["arrival"]["pid"]) == arrival.NICE
    w = Workspace(ws)
    deadline = time.monotonic() + 600
    while (arrival.running(w) or arrival.waiting(w)) and time.monotonic() < deadline:
        time.sleep(0.5)
    info = arrival.state(w)
    assert info["phase"] == "finished" and info["done"] == 5 and not info["problems"], info
    assert info["started"] < returned
    assert all(not is_first_pass(w.vault.read_meta(p).parser) for p in got["added"])
    log = subprocess.run(["git", "-C", str(ws / "vault"), "log", "--reverse", "--format=%s"], capture_output=True,
                         text=True).stdout.splitlines()
    adds = [i for i, s in enumerate(log) if s.startswith("add:")]
    full = [i for i, s in enumerate(log) if s.startswith("add (full parse)")]
    assert len(adds) >= 2 and full and max(adds) < min(full), log
