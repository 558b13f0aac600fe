"""parse_many: a batch of PDFs parsed in parallel processes, each with a timeout, cached by content hash."""

from __future__ import annotations

import ctypes
import logging
import multiprocessing as mp
import os
import pickle
import time
from concurrent.futures import FIRST_COMPLETED, wait
from concurrent.futures.process import BrokenProcessPool, ProcessPoolExecutor
from pathlib import Path
from typing import Callable, Iterable
import select
import signal
import subprocess
import sys
import threading
from multiprocessing import forkserver

import pymupdf

import papervault
from papervault.config import ParseSettings
from papervault.parse import ocr
from papervault.errors import ParseError
from papervault.models import ParsedPaper
from papervault.parse.document import file_sha256
from papervault.parse.version import PARSER_VERSION
from papervault.parse.pdf import parse_pdf

log = logging.getLogger(__name__)


def cache_path(cache_dir: Path, sha256: str, settings: ParseSettings | None = None) -> Path:
    """Where the parse of a file with this hash is kept: the parser version and the digest of the parse
    settings that change the result (`ParseSettings.cache_key`) are part of the name."""
    key = (settings or ParseSettings()).cache_key()
    return cache_dir / "parse" / f"{sha256}-{PARSER_VERSION}-{key}.pickle"


def load_cached(cache_dir: Path | None, sha256: str, settings: ParseSettings | None = None) -> ParsedPaper | None:
    """The cached parse of a file with this hash made by this parser version with these settings, or None."""
    if cache_dir is None:
        return None
    p = cache_path(cache_dir, sha256, settings)
    try:
        with open(p, "rb") as fh:
            value = pickle.load(fh)
    except FileNotFoundError:
        return None
    except Exception:  # a half-written or stale cache file is only a miss
        return None
    return value if isinstance(value, ParsedPaper) else None


def store_cached(cache_dir: Path | None, paper: ParsedPaper, settings: ParseSettings | None = None) -> None:
    """Keep a parse; written to a temporary name then renamed, so readers never see half a file."""
    if cache_dir is None or not paper.sha256:
        return
    p = cache_path(cache_dir, paper.sha256, settings)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(f".tmp{os.getpid()}-{id(paper)}")
    with open(tmp, "wb") as fh:
        pickle.dump(paper, fh, protocol=pickle.HIGHEST_PROTOCOL)
    tmp.replace(p)


def parse_cached(path: Path, settings: ParseSettings | None = None, cache_dir: Path | None = None) -> ParsedPaper:
    """parse_pdf through the cache: a file already parsed by this parser version with the same settings
    (`ParseSettings.cache_key`) is not parsed again."""
    path = Path(path)
    settings = settings or ParseSettings()
    sha = file_sha256(path) if path.is_file() else ""
    if sha:
        hit = load_cached(cache_dir, sha, settings)
        if hit is not None:
            return hit
    with ocr.kept_pages(cache_dir, sha):   # a page the first pass read by OCR is not read again
        paper = parse_pdf(path, settings)
    store_cached(cache_dir, paper, settings)
    return paper


def _init_worker(parent: int | None = None) -> None:
    """Tie the worker's life to its parent's."""
    if parent is not None:
        die_with_parent(parent)


_started = None   # in a pool worker: the queue on which it says which file it starts, with its CPU time then


def _init_pool_worker(owner: int, started=None) -> None:
    """A pool worker's start: it ends when `owner`, the process whose pool it serves (an `add`), ends; it says
    on `started` which file it begins and its CPU time then, so the pool counts each file's CPU time.

    Under spawn `owner` is its parent. Under the forkserver its parent is the fork server, which runs for as
    long as any of its workers does (each holds the server's liveness pipe), so the worker watches `owner`
    itself, and its parent too."""
    global _started
    _started = started
    if os.getppid() == owner:
        die_with_parent(owner)
        return
    die_with_parent(os.getppid())
    _exit_when(lambda: not _alive(owner), "papervault-owner-watch")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- the parse timeout: CPU time, not wall-clock time ---------------------------------------------------
#
# `[parse] timeout` is the CPU time (user + system, all threads) a worker process may spend on one file: a busy
# machine slows a parse down without bringing it nearer its limit, while a parser that loops still reaches it.
# OCR is budgeted by the page: each page read by OCR starts the count again (`ocr.on_page`), so a 60-page scan
# (5-12 CPU s a page) is parsed to its end, while a parser stuck on one page or in a loop is still stopped.
# A parse that uses no CPU at all (stuck waiting) is abandoned by the wall clock after WALL_FACTOR times the
# timeout (and never before WALL_MARGIN seconds more than it), a generous backstop.

WALL_FACTOR = 10
WALL_MARGIN = 120.0
POLL_SECONDS = 0.25     # how often the CPU time of a busy worker is read (at most)


def wall_limit(timeout: float) -> float:
    """The wall-clock seconds after which a parse is abandoned whatever its CPU time: 3000 s for the default
    300 s of CPU time."""
    return max(float(timeout) * WALL_FACTOR, float(timeout) + WALL_MARGIN)


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system) process `pid` has used so far, or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS     # utime, stime (fields 14 and 15)
    except (OSError, IndexError, ValueError):
        pass
    try:
        import psutil  # deferred: optional, only where /proc cannot be read

        t = psutil.Process(pid).cpu_times()
        return float(t.user + t.system)
    except Exception:  # noqa: BLE001 - no psutil, or the process is gone: the wall clock decides alone
        return None


def _clock_ticks() -> int:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100


_CLOCK_TICKS = _clock_ticks()


def timeout_reason(timeout: float, *, wall: bool = False) -> str:
    """The one-line reason of an abandoned parse."""
    if wall:
        return f"parsing took longer than {wall_limit(timeout):g} s (wall clock) and was abandoned"
    return f"parsing took longer than {timeout:g} s of CPU time and was abandoned"


TIMEOUT_FIX = ("add the same file again to retry it when the machine is less busy, or raise [parse] timeout in "
               "papervault.toml, or split the PDF")


# The fork server imports the parser once; each worker is then a fork of it (milliseconds) instead of a new
# interpreter importing PyMuPDF and the parser (0.6 s of CPU a worker, measured).
PRELOAD = "papervault.parse.preload"


def pool_context():
    """The start method of the parse workers: the forkserver where there is one (Linux, macOS), else spawn.
    Never plain fork: forking a process that runs threads (ONNX, LanceDB) can deadlock. The fork server is one
    single-threaded process per `add` process, started by its first pool and kept for the next ones."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")

    server = getattr(forkserver, "_forkserver", None)
    if getattr(server, "_forkserver_pid", None) is None:   # not started yet (or unknown): preload the parser
        ctx.set_forkserver_preload([PRELOAD])
    return ctx


WATCH_SECONDS = 1.0   # how often a worker checks that its parent still lives (the fallback to PR_SET_PDEATHSIG)


def die_with_parent(parent: int) -> None:
    """Make this process exit when process `parent` dies, even by SIGKILL (a killed `add` left its ~113 MB
    workers running forever).

    On Linux the kernel sends SIGKILL on the parent's death (prctl PR_SET_PDEATHSIG). A daemon thread that
    checks the parent pid every WATCH_SECONDS covers other systems, and a parent that died before this ran.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)   # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    _exit_when(lambda: os.getppid() != parent, "papervault-parent-watch")


def _exit_when(gone, name: str) -> None:
    """Exit this process now if `gone()`, else as soon as a daemon thread, checking every WATCH_SECONDS,
    finds it true."""
    if gone():
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCH_SECONDS)
            if gone():
                os._exit(1)

    threading.Thread(target=watch, name=name, daemon=True).start()


def _worker(path: str, settings_dict: dict, cache_dir: str | None):
    # Exceptions cross the process boundary as plain tuples: ParseError's constructor does not match its
    # `args`, so pickling it back would fail and look like a crashed worker.
    settings = ParseSettings(**settings_dict)
    if _started is not None:
        _say_started(path)
        # each OCR'd page starts the file's budget again: the timeout bounds a page, not a long scan
        ocr.on_page = lambda: _say_started(path)
    try:
        return parse_cached(Path(path), settings, Path(cache_dir) if cache_dir else None)
    except ParseError as exc:
        return ("error", exc.reason, exc.fix)
    except Exception as exc:  # a parser bug on one file must not stop the batch
        return ("error", f"parser failed ({type(exc).__name__}: {str(exc)[:160]})",
                "report the file; the rest of the batch was parsed")


def _say_started(path: str) -> None:
    """Tell the pool that this worker (re)starts the budget of `path` now, with its CPU time then."""
    t = os.times()
    _started.put((path, os.getpid(), t.user + t.system))


def _result(key: str, value) -> ParsedPaper | ParseError:
    if isinstance(value, tuple) and value and value[0] == "error":
        return ParseError(key, value[1], fix=value[2])
    return value


def parse_many(paths: Iterable[Path | str], settings: ParseSettings | None = None, cache_dir: Path | None = None,
               workers: int | None = None, on_result: Callable[[str, ParsedPaper | ParseError], None] | None = None,
               more: Callable[[], list[str]] | None = None) -> dict[str, ParsedPaper | ParseError]:
    """Parse many PDFs; returns {str(path): ParsedPaper or ParseError} in input order. Never raises per file.

    Cached files are answered without starting a process. Each file gets `settings.timeout` seconds of its
    worker's CPU time (and `wall_limit` of wall-clock time); a file that overruns is abandoned (its worker
    process is killed) and reported as a ParseError. A busy machine does not abandon a file: its worker gets
    less CPU time, not more.

    `on_result(path, result)` is told each file's result as soon as it is known (the arrival worker writes one
    batch while the pool reads the next); the results are then not kept (the returned dict holds none of the
    files the pool read). `more()` is asked for further files whenever a parser process is free and none is
    queued (the arrival worker's reader: papers an add writes meanwhile), so the processes never wait for the
    longest file of a batch; the call returns once nothing is queued, running or coming.
    """
    settings = settings or ParseSettings()
    workers = max(1, workers or settings.workers)
    keys = [str(p) for p in paths]
    results: dict[str, ParsedPaper | ParseError] = {}
    todo: list[str] = []
    for key in dict.fromkeys(keys):
        p = Path(key)
        if not p.is_file():
            results[key] = ParseError(key, "file not found", fix="check the path")
        elif (hit := load_cached(cache_dir, file_sha256(p), settings)) is not None:
            results[key] = hit
        else:
            todo.append(key)
            continue
        if on_result:
            on_result(key, results[key])
    if todo or more:
        results.update(_run_pool(todo, settings, cache_dir, workers, on_result, more))
    return {k: results[k] for k in dict.fromkeys(keys) if k in results}


class _Told(dict):
    """The pool's results, each told to `on_result` as it is set (and then not kept)."""

    def __init__(self, on_result):
        super().__init__()
        self.on_result = on_result

    def __setitem__(self, key, value) -> None:
        if self.on_result:
            self.on_result(key, value)
        else:
            super().__setitem__(key, value)


# long: one state machine over the pool (the queue `more` feeds, the files in flight with their CPU and wall
# clocks, the suspects of a crash retried alone, the pool killed on a timeout); split, each part would need it all
def _run_pool(todo: list[str], settings: ParseSettings, cache_dir: Path | None, workers: int, on_result=None,
              more=None):
    """Run the files through worker processes; a timed-out or crashed worker is killed and replaced.

    When a worker dies (MuPDF can abort on a malformed file) the pool cannot say which file did it, so
    every file in flight then is retried alone: only the one that crashes alone is reported.
    """
    out: dict[str, ParsedPaper | ParseError] = _Told(on_result)
    ctx = pool_context()
    # Longest first: a long file started last would leave the other processes idle while it finishes.
    todo = sorted(todo, key=estimated_cost, reverse=True)
    settings_dict = settings.model_dump()
    if not settings.ocr_threads and workers > 1:
        settings_dict["ocr_threads"] = 1  # the processes are the parallelism; OCR threads would only compete
    cdir = str(Path(cache_dir).absolute()) if cache_dir else None   # the workers' working folder is the fork
    # server's, not necessarily this process's
    queue = list(todo)
    seen = set(queue)

    def topped() -> bool:
        """Whether files are queued, after asking `more` for new ones when none is."""
        if more is not None and not queue:
            got = [k for k in dict.fromkeys(more()) if k not in seen]
            seen.update(got)
            queue.extend(sorted(got, key=estimated_cost, reverse=True))
        return bool(queue)

    suspects: list[str] = []
    wall = wall_limit(settings.timeout)
    while topped() or suspects:
        solo = not queue
        batch = [suspects.pop(0)] if solo else queue
        width = 1 if solo else (workers if more is not None else min(workers, len(queue)))
        # (absolute path, worker pid, its CPU seconds then) as each file starts; one queue a pool, so a worker
        # killed while it wrote cannot leave the next pool's queue locked
        started = ctx.SimpleQueue()
        pool = ProcessPoolExecutor(max_workers=width, mp_context=ctx, initializer=_init_pool_worker,
                                   initargs=(os.getpid(), started))
        running: dict = {}
        where: dict[str, tuple[int, float]] = {}      # absolute path -> (worker pid, its CPU seconds at the start)
        broken = False
        try:
            while (batch or running or (not solo and len(running) < width and topped())) and not broken:
                # At most `width` futures are in flight, so each starts as soon as it is submitted and
                # its clocks start then.
                if not solo and len(running) < width:
                    topped()          # a free process: what `more` has come meanwhile is queued (batch is queue)
                while batch and len(running) < width:
                    key = batch.pop(0)
                    absolute = str(Path(key).absolute())
                    where.pop(absolute, None)
                    running[pool.submit(_worker, absolute, settings_dict, cdir)] = (key, time.monotonic(), absolute)
                oldest = min(t for _, t, _ in running.values())
                done, _ = wait(list(running), timeout=min(POLL_SECONDS, max(0.0, oldest + wall - time.monotonic())),
                               return_when=FIRST_COMPLETED)
                while not started.empty():
                    absolute, pid, cpu = started.get()
                    if absolute in where:       # a page done by OCR: the file's clocks start again from here
                        for fut, (key, _, path) in list(running.items()):
                            if path == absolute:
                                running[fut] = (key, time.monotonic(), path)
                    where[absolute] = (pid, cpu)
                for fut in done:
                    key, _, _ = running.pop(fut)
                    try:
                        out[key] = _result(key, fut.result())
                    except BrokenProcessPool:
                        broken = True
                        if solo:
                            out[key] = ParseError(key, "the parser process crashed on this file",
                                                  fix="repair the PDF (e.g. with qpdf) and add it again")
                        else:
                            suspects.append(key)
                now = time.monotonic()
                for fut, (key, t, absolute) in list(running.items()):
                    over = _overrun(where.get(absolute), now - t, settings.timeout)
                    if over is None:
                        continue
                    running.pop(fut)
                    out[key] = ParseError(key, timeout_reason(settings.timeout, wall=over == "wall"),
                                          fix=TIMEOUT_FIX)
                    broken = True  # the only way to stop a hung worker is to kill the pool
            for fut, (key, _, _) in running.items():
                if fut.done() and fut.exception() is None:
                    out[key] = _result(key, fut.result())
                elif fut.done() and isinstance(fut.exception(), BrokenProcessPool):
                    suspects.append(key)
                else:
                    batch.insert(0, key)  # innocent bystander of a timeout: run it again
        finally:
            _kill_pool(pool)
    return out


def _overrun(start: tuple[int, float] | None, elapsed: float, timeout: float) -> str | None:
    """Whether a file in progress is over its limits: "cpu" when its worker (`start`: pid, CPU seconds when
    the file began) has spent `timeout` CPU seconds on it, "wall" when `elapsed` passed the wall-clock
    backstop, else None. Where a process's CPU time cannot be read, the wall clock counts against `timeout`."""
    if elapsed >= wall_limit(timeout):
        return "wall"
    if start is None:
        return None                 # not begun yet (its worker is starting): only the backstop counts
    now = cpu_seconds(start[0])
    if now is None:
        return "cpu" if elapsed >= timeout else None
    return "cpu" if now - start[1] >= timeout else None


SCAN_COST = 40  # an OCR'd page costs about as much as forty pages with a text layer


def estimated_cost(path: str) -> int:
    """A cheap guess at a file's parse time, in pages with a text layer: each page counts one, and a page
    that looks scanned (an image, almost no drawing instructions) counts `SCAN_COST`. It reads only the page
    resources and the raw content streams (about 10 ms for a 16-paper corpus), never the text."""
    try:
        with pymupdf.open(path) as doc:
            if doc.needs_pass:
                return 1
            cost = 0
            for page in doc:
                scan = False
                if page.get_images():
                    size = sum(len(doc.xref_stream_raw(x) or b"") for x in page.get_contents())
                    scan = size < 400
                cost += SCAN_COST if scan else 1
            return cost
    except Exception:  # noqa: BLE001 - a file that cannot be opened here fails properly in its worker
        return 0


def _kill_pool(pool: ProcessPoolExecutor) -> None:
    """Shut a pool down without waiting for a hung worker: terminate its processes first."""
    procs = list(getattr(pool, "_processes", {}).values())
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()


# --- one file at a time in a child process, where multiprocessing may not start one ----------------------

class ParseChild:
    """A parser in a child process started with `subprocess`, kept for the next file.

    A Dask worker is a daemon process: multiprocessing (and so `parse_many`'s pool) may not start children
    there, but `subprocess` may. Each file gets `settings.timeout` seconds of the child's CPU time (and
    `wall_limit` of wall-clock time), counted once the child is up and again from each page it reads by OCR (the
    child says so with an empty frame); one that overruns, or crashes the child (MuPDF can abort), becomes that
    file's ParseError and the child is replaced.
    Requests and answers are pickles over the child's stdin and stdout, framed by their length.
    """

    READY = b"papervault-parse-ready\n"

    def __init__(self):
        self.proc = None

    def _start(self) -> None:
        env = dict(os.environ)
        root = str(Path(papervault.__file__).resolve().parent.parent)   # the child imports this papervault
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen([sys.executable, "-m", "papervault.parse.batch", str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, close_fds=True)
        got = _read_exact(self.proc.stdout.fileno(), len(self.READY), time.monotonic() + 120)
        if got != self.READY:
            self.stop()
            raise RuntimeError("the parser process did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            self.proc = None

    def parse(self, path: str, settings_dict: dict, cache_dir: str | None):
        """What `_worker` returns for `path`: a ParsedPaper or an ("error", reason, fix) tuple."""
        timeout = float(settings_dict.get("timeout") or ParseSettings().timeout)
        try:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            data = pickle.dumps((path, settings_dict, cache_dir), protocol=pickle.HIGHEST_PROTOCOL)
            pid, t0 = self.proc.pid, time.monotonic()
            start = cpu_seconds(pid)
            self.proc.stdin.write(len(data).to_bytes(8, "big") + data)
            self.proc.stdin.flush()
            over: list[str] = []

            def check() -> None:
                why = _overrun(None if start is None else (pid, start), time.monotonic() - t0, timeout)
                if why is not None:
                    over.append(why)
                    raise TimeoutError

            while True:
                size = _read_exact(self.proc.stdout.fileno(), 8, t0 + wall_limit(timeout), check)
                if int.from_bytes(size, "big"):
                    break
                # an empty frame: the child begins a page's OCR, and the file's budget starts again from it
                # (as in the pool: the timeout bounds a page, not a long scan)
                start, t0 = cpu_seconds(pid), time.monotonic()
            answer = _read_exact(self.proc.stdout.fileno(), int.from_bytes(size, "big"), time.monotonic() + 60)
            return pickle.loads(answer)
        except TimeoutError:
            self.stop()
            return ("error", timeout_reason(timeout, wall=not over or over[-1] == "wall"), TIMEOUT_FIX)
        except (EOFError, OSError, RuntimeError, pickle.UnpicklingError):
            self.stop()
            return ("error", "the parser process crashed on this file",
                    "repair the PDF (e.g. with qpdf) and add it again")


def _read_exact(fd: int, n: int, deadline: float, check=None) -> bytes:
    """`n` bytes from pipe `fd` by `deadline` (TimeoutError), or EOFError when the writer died first; `check()`,
    called every POLL_SECONDS while waiting, may raise TimeoutError sooner (the child's CPU time is up)."""
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        if check is not None:
            check()
        ready, _, _ = select.select([fd], [], [], min(left, POLL_SECONDS) if check is not None else left)
        if not ready:
            continue
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


_children = None


def parse_in_child(path: str, settings_dict: dict, cache_dir: str | None):
    """`_worker` for one file in this thread's `ParseChild` (started on first use), with the parse timeout."""
    global _children
    if _children is None:
        _children = threading.local()
    child = getattr(_children, "child", None)
    if child is None:
        child = _children.child = ParseChild()
    return child.parse(path, settings_dict, cache_dir)


def _child_main(parent: int) -> None:
    """The child's loop: read a request from stdin, parse, write the answer; exit with the parent or at EOF."""
    _init_worker(parent)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)         # whatever a library prints goes to stderr, never into the answers
    # the parser (imported at the top of this module) is loaded before the first file's clock starts
    out.write(ParseChild.READY)
    out.flush()

    def page_started() -> None:
        """Each page read by OCR starts the file's budget again: an empty frame tells the parent."""
        out.write(bytes(8))
        out.flush()

    ocr.on_page = page_started
    inp = sys.stdin.buffer
    while True:
        size = inp.read(8)
        if len(size) < 8:
            return
        path, settings_dict, cache_dir = pickle.loads(inp.read(int.from_bytes(size, "big")))
        data = pickle.dumps(_worker(path, settings_dict, cache_dir), protocol=pickle.HIGHEST_PROTOCOL)
        out.write(len(data).to_bytes(8, "big") + data)
        out.flush()


if __name__ == "__main__":
    import sys

    _child_main(int(sys.argv[1]))
