"""`[parse] timeout` counts the parser's CPU time, not the wall clock: a worker that a busy machine holds back
(here: stopped with SIGSTOP for several times the timeout) finishes its paper, a parse that spends its CPU time
is abandoned, and the next `add` of the same file parses it again."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pymupdf
import pytest

from papervault.config import ParseSettings
from papervault.errors import ParseError
from papervault.parse import batch
from papervault.workspace import Workspace

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find the workers")


def _pdf(path: Path, pages: int, title: str = "Leases for Replicated Logs") -> Path:
    doc = pymupdf.open()
    for i in range(pages):
        page = doc.new_page()
        if i == 0:
            page.insert_text((72, 100), title, fontsize=18)
        page.insert_text((72, 160), f"Page {i + 1}. We bound the recovery time of a replicated log with leases.")
    doc.save(path)
    return path


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    if int(fh.read().rsplit(b")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def _cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read()
    except OSError:
        return b""


class Freezer(threading.Thread):
    """Stops every parse worker (a process whose parent is a child of this one: the fork server's children, or
    the parse child itself when `direct`) with SIGSTOP as soon as it appears, for `seconds`, then resumes it:
    what a machine too busy to schedule the parser does to it."""

    def __init__(self, seconds: float, direct: bool = False):
        super().__init__(daemon=True)
        self.seconds, self.direct = seconds, direct
        self.frozen: list[int] = []
        self.done = threading.Event()

    def _workers(self) -> list[int]:
        kids = _children(os.getpid())
        return kids if self.direct else [g for k in kids if b"forkserver" in _cmdline(k) for g in _children(k)]

    def run(self) -> None:
        end = time.monotonic() + 120
        while not self.frozen and time.monotonic() < end and not self.done.is_set():
            for pid in self._workers():
                os.kill(pid, signal.SIGSTOP)
                self.frozen.append(pid)
            time.sleep(0.005)
        time.sleep(self.seconds)
        for pid in self.frozen:
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass


def test_a_busy_machine_does_not_abandon_a_paper(tmp_path, cli_run, monkeypatch):
    """`add` with a 1 s timeout while the parse worker is stopped for 4 s: the paper is parsed and added."""
    src = _pdf(tmp_path / "leases.pdf", 40)
    ws, _ = Workspace.init(tmp_path / "ws")
    monkeypatch.setenv("PAPERVAULT_PARSE_TIMEOUT", "1")
    monkeypatch.setenv("PAPERVAULT_PARSE_CACHE_DIR", str(tmp_path / "cache"))   # parsed here, not served
    freezer = Freezer(4.0)
    freezer.start()
    t0 = time.monotonic()
    try:
        out = cli_run(["add", src, "--json", "--workspace", ws.root])
    finally:
        freezer.done.set()
        freezer.join()
    assert freezer.frozen, "no parse worker was seen to stop"
    assert time.monotonic() - t0 >= 4.0          # the wall clock ran well past the timeout
    report = json.loads(out.stdout)
    assert report["problems"] == [] and len(report["added"]) == 1, report
    assert Workspace(ws.root).vault.read_meta(report["added"][0]).status != "metadata"


def test_a_stopped_parse_child_is_not_abandoned(tmp_path):
    """The parse child of a Dask worker (one file at a time over a pipe) counts CPU time the same way."""
    src = _pdf(tmp_path / "leases.pdf", 40)
    settings = {"timeout": 1.0}
    child = batch.ParseChild()
    child._start()
    try:
        freezer = Freezer(4.0, direct=True)
        freezer.start()
        t0 = time.monotonic()
        got = child.parse(str(src), settings, None)
        freezer.done.set()
        freezer.join()
        assert child.proc.pid in freezer.frozen
        assert time.monotonic() - t0 >= 4.0
        assert not isinstance(got, tuple), got
        assert got.pages == 40 and "Leases for Replicated Logs" in got.markdown
    finally:
        child.stop()


def test_a_parse_over_its_cpu_time_is_abandoned_and_the_next_add_retries(tmp_path, cli_run, monkeypatch):
    """A file that needs more CPU time than the timeout is abandoned with a one-line reason that says how to
    retry; adding the same file again (with time enough) parses and adds it."""
    src = _pdf(tmp_path / "long-report.pdf", 1500, title="A Long Report on Leases")
    ws, _ = Workspace.init(tmp_path / "ws")
    monkeypatch.setenv("PAPERVAULT_PARSE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PAPERVAULT_PARSE_TIMEOUT", "0.05")
    first = cli_run(["add", src, "--json", "--workspace", ws.root], check=False)
    [problem] = json.loads(first.stdout)["problems"]
    assert problem["error"] == "parsing took longer than 0.05 s of CPU time and was abandoned", problem
    assert Workspace(ws.root).vault.paper_ids() == []
    monkeypatch.setenv("PAPERVAULT_PARSE_TIMEOUT", "300")
    second = json.loads(cli_run(["add", src, "--json", "--workspace", ws.root]).stdout)
    assert second["problems"] == [] and len(second["added"]) == 1
    meta = Workspace(ws.root).vault.read_meta(second["added"][0])
    assert meta.status != "metadata" and meta.pages == 1500


def test_a_parse_that_uses_no_cpu_is_abandoned_by_the_wall_clock(monkeypatch):
    """The backstop: a worker that never gets to run is abandoned after `WALL_FACTOR` times the timeout."""
    assert batch._overrun(None, batch.wall_limit(1.0), 1.0) == "wall" and batch.wall_limit(1.0) == 121
    assert batch._overrun((os.getpid(), batch.cpu_seconds(os.getpid())), 5.0, 1.0) is None
    assert batch._overrun((os.getpid(), -100.0), 0.1, 1.0) == "cpu"
    assert batch.wall_limit(300) == 3000


def _scan(path: Path, src: Path, pages: int) -> Path:
    """An image-only PDF of `pages` pages, as a scanner makes: each page of `src` (cycled) rendered to pixels."""
    out = pymupdf.open()
    with pymupdf.open(src) as doc:
        for i in range(pages):
            page = doc[i % doc.page_count]
            pix = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
            new = out.new_page(width=page.rect.width, height=page.rect.height)
            new.insert_image(new.rect, pixmap=pix)
    out.save(path)
    return path


def test_a_long_scan_is_given_its_time_page_by_page(tmp_path, corpus_dir):
    """OCR is budgeted by the page: a three-page scan whose OCR needs about twice the timeout in all (a page
    takes 1.5-2.5 CPU s here) is read to its end, while the same timeout still stops a parse that never ends
    a page."""
    src = _scan(tmp_path / "scan.pdf", corpus_dir / "garbage_collection_the_lisp_ii_garbage_collector.pdf", 3)
    got = batch.parse_many([src], ParseSettings(timeout=3.5), workers=1)[str(src)]
    assert not isinstance(got, ParseError), got.reason
    assert got.ocr_pages == [1, 2, 3] and "LISP" in got.markdown.upper(), got.ocr_pages


def test_a_long_scan_is_given_its_time_page_by_page_in_a_parse_child(tmp_path, corpus_dir):
    """The same budget in the parse child of a Dask worker (`add --task-runner dask`): the child tells its parent
    when it begins a page's OCR, and a five-page scan whose OCR needs about twice the timeout in all is read to
    its end."""
    lisp = corpus_dir / "garbage_collection_the_lisp_ii_garbage_collector.pdf"
    warm, src = _scan(tmp_path / "warm.pdf", lisp, 1), _scan(tmp_path / "scan.pdf", lisp, 5)
    child = batch.ParseChild()
    try:
        # the child's OCR engine loaded first (seconds of CPU once a process), so each count below is a page's
        assert not isinstance(child.parse(str(warm), ParseSettings(timeout=300, ocr_threads=1).model_dump(), None),
                              tuple)
        got = child.parse(str(src), ParseSettings(timeout=4.0, ocr_threads=1).model_dump(), None)
    finally:
        child.stop()
    assert not isinstance(got, tuple), got
    assert got.ocr_pages == [1, 2, 3, 4, 5] and "LISP" in got.markdown.upper(), got.ocr_pages
