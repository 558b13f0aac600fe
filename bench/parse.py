"""Benchmark of the PDF parser on a corpus: full-parse pages/s against plain `page.get_text()`.

    .venv/bin/python bench/parse.py [--corpus DIR] [--workers N] [--no-split] [--json]

The full parse (reading order, figures, tables, equations, references, OCR where needed) runs through
`parse_many` in parallel processes without a cache, as `papervault add` would on a new batch; the plain
baseline extracts each page's text in one process. Both include opening the files. A second run of the same
batch with OCR off splits the time between the pages with a text layer and the OCR'd ones.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# PyMuPDF would otherwise load its optional ONNX layout model on import (seconds, never used by us).
sys.modules.setdefault("pymupdf.layout", None)

import pymupdf  # noqa: E402

from papervault.config import ParseSettings  # noqa: E402
from papervault.errors import ParseError  # noqa: E402
from papervault.parse import PARSER  # noqa: E402
from papervault.parse.batch import parse_many  # noqa: E402


def plain_text(files: list[Path]) -> tuple[int, float]:
    t = time.perf_counter()
    pages = 0
    for f in files:
        try:
            with pymupdf.open(f) as doc:
                for page in doc:
                    page.get_text()
                    pages += 1
        except Exception:
            pass
    return pages, time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=Path(os.environ.get("PAPERVAULT_SHARED", ROOT.parent / "shared"))
                    / "corpus" / "pdfs")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--no-split", action="store_true", help="skip the second run with OCR off")
    args = ap.parse_args()
    files = sorted(args.corpus.glob("*.pdf"))
    if not files:
        print(f"no PDFs in {args.corpus}", file=sys.stderr)
        return 2
    plain_pages, plain_s = plain_text(files)
    t = time.perf_counter()
    results = parse_many(files, ParseSettings(), cache_dir=None, workers=args.workers)
    full_s = time.perf_counter() - t
    rows, failures = [], []
    for f in files:
        r = results[str(f)]
        if isinstance(r, ParseError):
            failures.append({"file": f.name, "error": str(r)})
            continue
        rows.append({"file": f.name, "pages": r.pages, "figures": len(r.figures), "tables": len(r.tables),
                     "references": len(r.references), "headings": len(r.headings), "ocr_pages": r.ocr_pages,
                     "warnings": len(r.warnings)})
    pages = sum(r["pages"] for r in rows)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    summary = {"parser": PARSER, "files": len(files), "pages": pages, "workers": args.workers,
               "cpus": os.cpu_count(), "load_avg_1min": load,
               "full_seconds": round(full_s, 2), "full_pages_per_s": round(pages / full_s, 1),
               "plain_seconds": round(plain_s, 2), "plain_pages_per_s": round(plain_pages / plain_s, 1),
               "ratio_full_to_plain": round((pages / full_s) / (plain_pages / plain_s), 3),
               "figures": sum(r["figures"] for r in rows), "tables": sum(r["tables"] for r in rows),
               "references": sum(r["references"] for r in rows),
               "ocr_pages": sum(len(r["ocr_pages"]) for r in rows), "failures": len(failures)}
    if not args.no_split:
        # The same batch with OCR off: what the pages with a text layer cost, and so what OCR costs.
        t = time.perf_counter()
        parse_many(files, ParseSettings(ocr=False), cache_dir=None, workers=args.workers)
        no_ocr_s = time.perf_counter() - t
        summary.update({"no_ocr_seconds": round(no_ocr_s, 2), "no_ocr_pages_per_s": round(pages / no_ocr_s, 1),
                        "ocr_seconds_per_ocr_page": round((full_s - no_ocr_s) / max(1, summary["ocr_pages"]), 2)})
    if args.json:
        print(json.dumps({"summary": summary, "files": rows, "failures": failures}, indent=2))
        return 0
    print(f"{'file':58} {'pages':>5} {'figs':>4} {'tabs':>4} {'refs':>4} {'ocr':>8}")
    for r in rows:
        print(f"{r['file'][:58]:58} {r['pages']:5} {r['figures']:4} {r['tables']:4} {r['references']:4} "
              f"{','.join(map(str, r['ocr_pages'])) or '-':>8}")
    for fl in failures:
        print(f"FAILED {fl['file']}: {fl['error']}")
    print()
    print("| measure | value |\n|---|---|")
    for k, v in summary.items():
        print(f"| {k} | {v} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
