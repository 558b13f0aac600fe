"""Wall time of the demo on the shared corpus (`make demo PAPERS=../shared/corpus/pdfs`) and of a cold `index`.

Usage: .venv/bin/python bench/demo.py [--corpus DIR] [--json]
Builds a fresh workspace in a temporary folder: init, add (16 PDFs), index, survey, site build, each timed;
then deletes the index and times `papervault index` alone on the same vault.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=str(SHARED / "corpus" / "pdfs"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", help="build the workspace in DIR (which must not exist) and keep it")
    args = ap.parse_args()
    env = dict(os.environ)
    model = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
    if model.is_dir():
        env.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(model))
        env.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(args.keep) if args.keep else Path(tmp) / "ws"
        env["PREFECT_HOME"] = str(Path(tmp) / "prefect")
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "papervault", "demo", "--papers", args.corpus,
                               "--workspace", str(ws), "--json"], capture_output=True, text=True, env=env)
        demo_s = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        demo = json.loads(proc.stdout)
        shutil.rmtree(ws / ".papervault" / "index")
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "papervault", "index", "-q", "-w", str(ws)], check=True,
                       capture_output=True, env=env)
        index_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "papervault", "index", "-q", "-w", str(ws)], check=True,
                       capture_output=True, env=env)
        reindex_s = time.perf_counter() - t0
    out = {"papers": demo["papers"], "demo_wall_s": round(demo_s, 1), "steps_s": demo["timings"],
           "index_cold_s": round(index_s, 1), "index_unchanged_s": round(reindex_s, 2)}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"demo on {out['papers']} papers: {out['demo_wall_s']} s wall "
              f"({', '.join(f'{k} {v} s' for k, v in demo['timings'].items())})")
        print(f"papervault index (cold, same vault): {out['index_cold_s']} s; unchanged re-index: {out['index_unchanged_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
