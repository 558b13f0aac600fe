"""Searchable as it arrives: the full parse of papers that `add` read by their first pass, done behind them.

With `[parse] first_pass`, `add` writes each PDF's first pass (papervault.parse.firstpass: the text layer and
the identity, milliseconds a page), indexes it and returns: the paper is in `status`, `search` and MCP at once.
This worker then parses those papers fully (layout, headings, figures, tables, text repair, OCR: the parse of a
one-pass `add --wait`, through the same parser pool, timeout and parse cache), replaces their `paper.md`, figures
and identity, analyses them (once: the first pass is never analysed), commits, and brings their index rows up to
date (paragraph vectors through the background fill, as after any `add`).

The vault is the queue: a paper whose note says `parser: first-pass/...` still waits, so a worker killed at any
point loses nothing and does nothing twice: what it wrote and did not commit is undone by the next writer's
recovery (the same journal as `add`), the parse of a paper it finished is in the parse cache, and the next worker
(started by the next `add`, or `python -m papervault.app.arrival --workspace DIR`) takes the papers that
still wait. One worker runs per workspace (an flock on `.papervault/arrival.lock`); it takes the write lock only
around each batch it writes. It says what it is doing in `.papervault/arrival.json` (read by `status`) and logs
to `.papervault/logs/arrival.log`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from papervault.errors import ParseError, PapervaultError
from papervault.index import fill
from papervault.parse.firstpass import (FIRST_PASS_ABSTRACT, add_running, lock_path, running, stages,  # noqa: F401
                                         state, waiting, write_state)
from papervault.vault.lock import ARRIVAL_HOLDER
from papervault.workerlock import held
from papervault.workspace import Workspace

COMMAND = ARRIVAL_HOLDER   # the write lock's holder name while the worker writes a batch (others wait it out)


NICE = 19   # a worker an add starts at its first commit yields the CPU to that add (and to searches)


_STARTED: dict[str, subprocess.Popen] = {}     # the worker this process started last, by workspace (`after_add`)


def start(ws, *, nice: bool = False) -> int | None:
    """Start the worker for this workspace unless one runs; returns its pid (None when one was running). The
    process is detached (its own session): it outlives the command that started it. `nice`: it (and the parser
    processes and the fill it starts) runs at a lower priority, beside the add that started it."""
    if running(ws):
        return None
    log_dir = ws.state_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "arrival.log", "ab") as log:
        proc = _STARTED[str(ws.root)] = subprocess.Popen([sys.executable, "-m", "papervault.app.arrival", "--workspace", str(ws.root)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True,
                                start_new_session=True, cwd=str(ws.root))
    if nice:
        try:    # at once, while it is one thread: the threads and processes it starts inherit the priority
            os.setpriority(os.PRIO_PROCESS, proc.pid, NICE)
        except OSError:
            pass
    return proc.pid


def after_add(ws, ids: list[str] | None = None) -> dict:
    """What `add` reports of the papers (`ids`: those it wrote) it left to the worker: {waiting, pid}; the
    worker is started when any paper of the vault waits (one of these, or one a killed worker left), unless the
    one this process started at the add's first commit still runs (on a busy machine it may not hold its lock
    yet: a second worker would be started beside it, at full priority)."""
    mine = waiting(ws, ids)
    wait = bool(mine) or (ids is not None and bool(waiting(ws)))
    if not wait:
        return {"waiting": len(mine), "pid": None}
    early = _STARTED.get(str(ws.root))
    if early is not None and early.poll() is None and not running(ws):
        return {"waiting": len(mine), "pid": early.pid}
    return {"waiting": len(mine), "pid": start(ws) or running(ws)}


# --- the worker ---------------------------------------------------------------------------------------------

def _source_pdf(ws, meta) -> str | None:
    from papervault.pdfstore import kept  # deferred: with the rest of the write path

    stored = kept(ws.root, meta.pdf)
    if stored:
        return str(stored)
    for f in meta.files or []:
        if Path(f).is_file():
            return str(f)
    return None


def run(ws, *, batch: int | None = None, progress=None) -> dict:
    """Parse every waiting paper fully, a batch at a time; returns {done, failed, batches} (or {"running": pid}
    when another worker holds the workspace). Papers an add commits while it runs are taken too; what waits once
    it has let go of its lock (an add that found it still running and so started none) is taken by a next round."""
    report: dict = {"done": [], "failed": {}, "batches": 0}
    while True:
        with held(lock_path(ws)) as mine:
            if not mine:
                return report if report["batches"] else {"running": running(ws)}
            rep = _run_locked(ws, batch=batch, progress=progress, skip=set(report["failed"]))
        report["done"] += rep["done"]
        report["failed"].update(rep["failed"])
        report["batches"] += rep["batches"]
        if not rep["batches"] or not [p for p in waiting(ws) if p not in report["failed"]]:
            return report     # (a round that wrote nothing is not repeated: what it could not take stays)


MORE_EVERY = 1.0   # seconds between the reader's looks for papers an add wrote meanwhile


class _Reader:
    """Parses the waiting papers in a thread of the worker, through the parser pool and its cache, while the
    worker writes and indexes what was parsed before: the pool never waits for a write, an index step or an add
    that holds the write lock. It takes the papers an add commits while it runs, and ends once none is left and
    no add is running."""

    def __init__(self, ws, skip: set[str]):
        self.ws, self.skip = ws, set(skip)
        self.ready: dict[str, tuple] = {}      # pid -> (meta, ParsedPaper or ParseError), parsed and not yet taken
        self.failed: dict[str, str] = {}
        self.metas: dict[str, object] = {}
        self.pid_of: dict[str, str] = {}       # the PDF's path -> the paper
        self._asked = 0.0
        self.finished = False
        self.error: BaseException | None = None
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="arrival-reader", daemon=True)

    def start(self) -> "_Reader":
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()

    def take(self, most: int, wait: float) -> dict[str, tuple]:
        """Up to `most` parsed papers (waiting up to `wait` s for one), in the order they were read."""
        with self._cond:
            if not self.ready and not self.finished:
                self._cond.wait(wait)
            pids = list(self.ready)[:most]
            return {p: self.ready.pop(p) for p in pids}

    def _put(self, pid: str, item) -> None:
        with self._cond:
            self.ready[pid] = item
            self._cond.notify_all()

    def _more(self) -> list[str]:
        """The PDFs of the papers that wait and were not taken yet, registered for `_put` (asked by the parser
        pool whenever a process is free; at most once a second, as it reads every note's front matter)."""
        now = time.monotonic()
        if now - self._asked < MORE_EVERY:
            return []
        self._asked = now
        out = []
        for pid in waiting(self.ws):
            if pid in self.skip:
                continue
            try:
                meta = self.ws.vault.read_meta(pid)
            except (OSError, ValueError, PapervaultError):
                continue        # gone meanwhile (an add rolled back), or mid-way through a write: asked again
            self.skip.add(pid)
            path = _source_pdf(self.ws, meta)
            if path is None:
                self.failed[pid] = "its PDF is gone from the workspace and from where it was added"
                continue
            self.metas[pid], self.pid_of[path] = meta, pid
            out.append(path)
        return out

    def _run(self) -> None:
        from papervault.parse.batch import parse_many  # deferred: PyMuPDF and the parser pool

        s = self.ws.settings.parse
        try:
            while not self._stop:
                adding = add_running(self.ws)     # asked before the vault is read: what it commits is seen after
                self._asked = 0.0
                first = self._more()
                if not first and not adding:
                    break
                if first:
                    # one pool for as long as papers come: a free process takes the next one the add wrote
                    parse_many(first, s, cache_dir=self.ws.parse_cache_dir, workers=s.workers, more=self._more,
                               on_result=lambda key, res: self._put(self.pid_of[key], (self.metas[self.pid_of[key]],
                                                                                       res)))
                    continue
                with self._cond:
                    self._cond.wait(0.5)
        except BaseException as exc:  # noqa: BLE001 - said by the worker, which then stops
            self.error = exc
        finally:
            with self._cond:
                self.finished = True
                self._cond.notify_all()


def _run_locked(ws, *, batch: int | None, progress, skip: set[str] = frozenset()) -> dict:
    s = ws.settings.parse
    size = batch or max(4, 4 * s.workers)
    info = {"pid": os.getpid(), "started": time.time(), "done": 0, "failed": 0, "total": None, "phase": "start"}
    write_state(ws, info)
    report = {"done": [], "failed": {}, "batches": 0}
    reader = _Reader(ws, skip).start()
    try:
        while True:
            if add_running(ws):
                # the add that started this worker writes and indexes until it returns: the reader reads on
                time.sleep(0.2)
                continue
            info.update(phase="parse", current=[], updated=time.time(),
                        total=info["done"] + info["failed"] + len([p for p in waiting(ws) if p not in skip]))
            write_state(ws, info)
            # what was parsed while the last batch was written; a first batch is taken as soon as it is read, and
            # kept small, so the fill has paragraphs to embed while the next is written
            items = reader.take(size if report["batches"] else min(size, 2), wait=1.0)
            report["failed"].update(reader.failed)
            if not items:
                if reader.finished and not reader.ready:
                    break
                continue
            info.update(phase="write", current=list(items), updated=time.time())
            write_state(ws, info)
            done, failed = _write_batch(ws, items)
            report["failed"].update(failed)
            report["done"] += done
            report["batches"] += 1
            info.update(phase="index", done=info["done"] + len(done), failed=len(report["failed"]),
                        updated=time.time())
            write_state(ws, info)
            if done:
                _index(ws, done)     # the fill embeds their paragraphs while the next batch is parsed
            if progress:
                progress("full parse", info["done"], info["total"])
    finally:
        reader.stop()
    if reader.error is not None:
        raise reader.error
    report["failed"].update(reader.failed)
    if report["batches"] or info["total"] == 0:
        info.update(phase="closing", updated=time.time())    # a fill that waits for more full parses ends now
        write_state(ws, info)
        while fill.running(ws):     # a fill that ends while a batch is written leaves its rows to this last one
            time.sleep(1.0)
        # what a killed worker committed and did not index (and a kill between an add's commit and its index
        # step) is brought in step: unchanged papers cost a hash each
        info.update(phase="index", updated=time.time())
        write_state(ws, info)
        _index(ws, None)
    info.update(phase="finished", finished=time.time(), current=[], seconds=round(time.time() - info["started"], 2),
                failed=len(report["failed"]), problems=report["failed"])
    write_state(ws, info)
    return report


def _write_batch(ws, items: dict) -> tuple[list[str], dict[str, str]]:
    """Write the full parses of a batch under the write lock (after recovering what a killed run left), analyse
    them, commit. A paper changed meanwhile (gone, its file replaced, already complete) is left alone."""
    from papervault.ingest import Ingest, recover  # deferred: the write path loads with the worker's first batch

    done: list[str] = []
    failed: dict[str, str] = {}
    with ws.write_lock(COMMAND, wait=24 * 3600):
        recover(ws)
        job = Ingest(ws, backend=ws.settings.agents.backend)
        job.what = "add (full parse)"
        try:
            for pid, (meta, parsed) in items.items():
                if not ws.vault.has_paper(pid):
                    continue
                now = ws.vault.read_meta(pid)
                if not (now.parser or "").startswith("first-pass/") or now.sha256 != meta.sha256:
                    continue
                if isinstance(parsed, ParseError):
                    # The first pass stays (searchable by its text layer); the reason is said where status reads it.
                    failed[pid] = parsed.reason
                    continue
                replace_first_pass(job, now, parsed)
                done.append(pid)
            job.analyse_pending()
            job.commit()
        finally:
            job.close()
    return done, failed


IDENTITY = ("title", "authors", "year", "venue", "doi", "arxiv")
_SOURCES = {"bibtex", "csl", "zotero", "arxiv", "doi", "url"}    # provenance of a source's own metadata


def replace_first_pass(job, meta, parsed) -> None:
    """Write a paper's full parse over its first pass, as a one-pass `add` would have written it: the full text
    and figures, the PDF's identity fields where the PDF gave them (a source's metadata always wins), the pages
    OCR'd or repaired, the printed page labels; then queue its analysis on `job`."""
    from papervault.ingest import _page_labels  # deferred: with the write path (see _write_batch)

    vault = job.vault
    pid = meta.id
    job.journal.touch(pid)
    fields: dict = {}
    prov = dict(meta.provenance)
    for f in IDENTITY:
        if prov.get(f) in _SOURCES:
            continue        # the source's own metadata (BibTeX, CSL, Zotero, arXiv, DOI, URL) always wins
        value = getattr(parsed, f)
        fields[f] = value if value else ([] if f == "authors" else None)
        if value:
            prov[f] = parsed.provenance.get(f, "layout")
        else:
            prov.pop(f, None)
    if "title" in fields and not fields["title"]:
        fields["title"] = Path(meta.sources[0]).stem if meta.sources else pid    # as `add` names a paper
    if prov.get("abstract") == FIRST_PASS_ABSTRACT:
        # the first pass's reading of the abstract gives way to the full parse's (a source's is never touched)
        prov.pop("abstract")
        fields["abstract"] = parsed.abstract or None
    elif not meta.abstract and parsed.abstract:
        fields["abstract"] = parsed.abstract
    for f, src in parsed.provenance.items():
        if fields.get(f, getattr(meta, f, None)) == getattr(parsed, f, None):
            prov.setdefault(f, src)
    vault.write_fulltext(pid, parsed)
    fields.update(pages=parsed.pages, parser=parsed.parser, ocr_pages=list(parsed.ocr_pages),
                  repaired_pages=list(parsed.repaired_pages), page_labels=_page_labels(parsed, meta.bib),
                  provenance=prov)
    vault.update_meta(pid, **fields)
    job.catalog.note_paper(vault.read_meta(pid))
    job.touched.append(vault.paper_dir(pid))
    job.pending.append((pid, meta.sources[0] if meta.sources else pid))
    job.report.merged.append({"id": pid, "source": meta.sources[0] if meta.sources else pid, "origin": "pdf",
                              "reason": "full parse", "gained_pdf": False, "new_source": False})


def _index(ws, ids: list[str] | None) -> None:
    """Bring the index rows of these papers (None: every paper) up to date (paragraphs through the background
    fill, as `add`)."""
    from papervault.app.indexing import update_index_reported  # deferred: the index loads after the first parse

    report = update_index_reported(ws, ids, code=False)
    if report.get("error"):
        print(f"index: not updated: {report['error']}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m papervault.app.arrival",
                                 description="Parse fully the papers `add` read by their first pass.")
    ap.add_argument("--workspace", required=True)
    ap.add_argument("--batch", type=int, default=None, help="papers parsed and written together")
    args = ap.parse_args(argv)
    ws = Workspace(Path(args.workspace))
    report = run(ws, batch=args.batch)
    print(json.dumps({k: v for k, v in report.items()}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
