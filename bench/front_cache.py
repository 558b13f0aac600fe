"""What the header reader reads of each PDF of the identity set, kept in a folder so that the title model can be
fitted, and the header reader measured, without the layout and OCR of every run.

    .venv/bin/python bench/front_cache.py --set DIR [--half tune|heldout|both] [--cache DIR]

One pickle a PDF, `<sha256>-<parser version>.pickle`, holding `papervault.parse.pdf.front_inputs` (the
arguments of `read_header`); a new parser version reads the PDFs again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.modules.setdefault("pymupdf.layout", None)

from papervault.parse.pdf import front_inputs  # noqa: E402
from papervault.parse.version import PARSER  # noqa: E402

SET_LABELS = ROOT / "bench" / "identity_set" / "labels.jsonl"
DEFAULT_CACHE = Path("/tmp/papervault-front-cache")


def load_labels(labels_file: Path, set_dir: Path, half: str) -> dict[str, dict]:
    """The labels of `half` ("both" for all) keyed by the PDF's path in `set_dir` (files absent are left out)."""
    out = {}
    for line in labels_file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            lab = json.loads(line)
            path = set_dir / Path(lab["file"]).name
            if (half == "both" or lab["half"] == half) and path.is_file():
                out[str(path)] = lab
    return out


def cached_inputs(path: str, cache: Path | None) -> dict:
    """`front_inputs(path)`, from the cache when it holds this file for this parser version."""
    if cache is None:
        return front_inputs(Path(path))
    sha = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    file = cache / f"{sha}-{PARSER.replace('/', '-')}.pickle"
    if file.is_file():
        with file.open("rb") as fh:
            return pickle.load(fh)
    args = front_inputs(Path(path))
    cache.mkdir(parents=True, exist_ok=True)
    tmp = file.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        pickle.dump(args, fh)
    tmp.replace(file)
    return args


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", type=Path, required=True)
    ap.add_argument("--labels", type=Path, default=SET_LABELS)
    ap.add_argument("--half", choices=("tune", "heldout", "both"), default="tune")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = ap.parse_args()
    labs = load_labels(args.labels, args.set, args.half)
    t = time.perf_counter()
    for i, p in enumerate(sorted(labs), 1):
        try:
            cached_inputs(p, args.cache)
        except Exception as exc:  # one unreadable PDF never stops the run
            print(f"  {Path(p).name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        if i % 20 == 0 or i == len(labs):
            print(f"  {i}/{len(labs)} PDFs read ({time.perf_counter() - t:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
