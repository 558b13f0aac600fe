"""OCR of pages without a usable text layer, with RapidOCR (ONNX models shipped in its wheel, offline)."""

from __future__ import annotations

import logging
import threading

import pymupdf

from papervault.parse.layout import Line, Span

_engine = None
_lock = threading.Lock()


def _get_engine():
    """One RapidOCR engine per process: loading its three models costs seconds, so it is built once."""
    global _engine
    with _lock:
        if _engine is None:
            from rapidocr import RapidOCR

            # The angle classifier only matters for upside-down text lines; scanned papers are upright,
            # and skipping it saves about a third of the time per page.
            # Detection on the full 200-dpi render (limit_type "min") dominated the time; capping the longer
            # side at 960 px reads the same lines of a scanned page about three times faster.
            _engine = RapidOCR(params={"Global.use_cls": False, "Global.log_level": "error",
                                       "Det.limit_side_len": 960, "Det.limit_type": "max"})
            logging.getLogger("RapidOCR").setLevel(logging.ERROR)
        return _engine


def ocr_page(page: pymupdf.Page, dpi: int = 200) -> list[Line]:
    """Render `page` at `dpi` and read it back as lines in PDF coordinates (points), with estimated sizes."""
    pix = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY)
    result = _get_engine()(pix.tobytes("png"))
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
