"""OCR of pages without a usable text layer, with RapidOCR (ONNX models shipped in its wheel, offline)."""

from __future__ import annotations

import contextlib
import functools
import logging
import pickle
import threading
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Iterator

import pymupdf

from papervault.parse.layout import Line, Span
from papervault.vault.files import atomic_write

_engine = None
_engine_threads = None
_lock = threading.Lock()
# Called after each page read by OCR (in a parser process: it tells the pool, whose CPU budget is then counted
# from that page on, so a long scan is given time page by page and never abandoned for being long).
on_page = None
# Pages read by OCR are kept under the parse cache while a file is read through it (`kept_pages`): the first
# pass reads a scan's first page to name it, and the full parse behind it then finds that page read.
OCR_VERSION = "1"    # bumped when the engine's settings below (or the lines made of its output) change
_kept: tuple[Path, str] | None = None    # (folder, the file's sha256) while a file is read through the cache


def _get_engine(threads: int = 0):
    """One RapidOCR engine per process: loading its models costs seconds, so it is built once.

    `threads` is ONNX Runtime's intra-op thread count (0: its default, one per core). Parser processes that
    run side by side use one each: more threads than cores only make them wait on each other.
    """
    global _engine, _engine_threads
    with _lock:
        if _engine is None or _engine_threads != threads:
            from rapidocr import RapidOCR  # deferred: ~0.6 s to import, only for a page without text

            # The angle classifier only matters for upside-down text lines; scanned papers are upright,
            # and skipping it saves about a third of the time per page.
            # Detection on the full 200-dpi render (limit_type "min") dominated the time; capping the longer
            # side at 960 px reads the same lines of a scanned page about three times faster.
            # Recognition one line at a time: a batch is padded to its widest line, and on a page of
            # short figure labels next to long text lines that padding costs a third of the time.
            params = {"Global.use_cls": False, "Global.log_level": "error",
                      "Det.limit_side_len": 960, "Det.limit_type": "max", "Rec.rec_batch_num": 1}
            if threads > 0:
                params["EngineConfig.onnxruntime.intra_op_num_threads"] = threads
                params["EngineConfig.onnxruntime.inter_op_num_threads"] = 1
            _no_spinning()
            _engine = RapidOCR(params=params)
            _engine_threads = threads
            logging.getLogger("RapidOCR").setLevel(logging.ERROR)
        return _engine


def _no_spinning() -> None:
    """Make ONNX Runtime's idle threads sleep instead of spinning.

    By default its intra-op threads busy-wait between operators; with two parser processes on two cores the
    spinning of one steals the CPU the other needs (measured: the corpus parse took 48% longer). RapidOCR
    builds its SessionOptions itself, so the option is added where it builds them.
    """
    try:
        from rapidocr.inference_engine.onnxruntime.main import OrtInferSession  # deferred: as RapidOCR above
    except ImportError:  # another RapidOCR layout: keep its defaults
        return
    build = OrtInferSession.__dict__.get("_init_sess_opts")
    inner = build.__func__ if isinstance(build, staticmethod) else build
    if inner is None or getattr(inner, "_papervault", False):  # missing, or patched already in this process
        return

    def init_sess_opts(cfg):
        opts = inner(cfg)
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.add_session_config_entry("session.inter_op.allow_spinning", "0")
        return opts

    init_sess_opts._papervault = True
    OrtInferSession._init_sess_opts = staticmethod(init_sess_opts)


@contextlib.contextmanager
def kept_pages(cache_dir: Path | None, sha256: str | None) -> Iterator[None]:
    """Within the block, pages of the file with this hash read by OCR are kept in (and taken from)
    `cache_dir/ocr`; without a cache folder or a hash, nothing is kept."""
    global _kept
    before = _kept
    _kept = (Path(cache_dir) / "ocr", sha256) if cache_dir and sha256 else None
    try:
        yield
    finally:
        _kept = before


@functools.lru_cache(maxsize=1)
def _engine_version() -> str:
    try:
        return version("rapidocr")
    except PackageNotFoundError:
        return "unknown"


def _kept_path(page: pymupdf.Page, dpi: int) -> Path | None:
    if _kept is None:
        return None
    engine = _engine_version()
    folder, sha = _kept
    return folder / f"{sha}-p{page.number + 1}-{dpi}dpi-{OCR_VERSION}-{engine}.pickle"


def ocr_page(page: pymupdf.Page, dpi: int = 200, threads: int = 0) -> list[Line]:
    """Render `page` at `dpi` and read it back as lines in PDF coordinates (points), with estimated sizes (a
    page already read so, of the same file, is taken from the parse cache: see `kept_pages`)."""
    kept = _kept_path(page, dpi)
    if kept is not None:
        try:
            with open(kept, "rb") as fh:
                lines = pickle.load(fh)
            if isinstance(lines, list) and all(isinstance(ln, Line) for ln in lines):
                return lines
        except Exception:  # noqa: BLE001 - not kept yet, or half a file: read the page
            pass
    lines = _read(page, dpi, threads)
    if kept is not None:
        try:
            atomic_write(kept, pickle.dumps(lines, protocol=pickle.HIGHEST_PROTOCOL), fsync=False)
        except OSError:
            pass    # a cache that cannot be written costs the page a second reading, nothing else
    return lines


def _read(page: pymupdf.Page, dpi: int, threads: int) -> list[Line]:
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    try:
        result = _get_engine(threads)(pix.tobytes("png"))
    finally:
        if on_page is not None:
            on_page()
    if result is None or result.boxes is None or result.txts is None:
        return []
    scale = 72.0 / dpi
    ox, oy = page.rect.x0, page.rect.y0
    lines: list[Line] = []
    for box, text, score in zip(result.boxes, result.txts, result.scores):
        text = str(text).strip()
        if not text or float(score) < 0.5:
            continue
        xs = [float(p[0]) for p in box]
        ys = [float(p[1]) for p in box]
        bbox = (ox + min(xs) * scale, oy + min(ys) * scale, ox + max(xs) * scale, oy + max(ys) * scale)
        # A text line's box is about 1.2-1.4 times its font size high; round so lines of one style share a size.
        size = round((bbox[3] - bbox[1]) / 1.3 * 2) / 2
        lines.append(Line(spans=[Span(text=text, size=size, font="ocr", flags=0, bbox=bbox)], bbox=bbox))
    lines.sort(key=lambda ln: (round(ln.bbox[1] / 4), ln.bbox[0]))
    return lines
