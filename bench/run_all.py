"""Run every benchmark in bench/ one after another on the shared corpus and print their figures.

Usage: .venv/bin/python bench/run_all.py [--only NAME ...] [--json]
Each benchmark is also runnable alone (see its docstring); this only sequences them, so their figures are
measured one at a time on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["parse", "index", "code_search", "import_bench", "analyse", "survey", "site", "mcp_latency", "faults", "demo"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="benchmark names (file stems) to run")
    ap.add_argument("--json", action="store_true", help="ask each benchmark for JSON and print one JSON object")
    args = ap.parse_args()
    names = [n for n in ORDER if (HERE / f"{n}.py").exists()]
    names += sorted(p.stem for p in HERE.glob("*.py") if p.stem not in ORDER and p.stem != "run_all")
    if args.only:
        names = [n for n in names if n in args.only]
    results = {}
    for name in names:
        cmd = [sys.executable, str(HERE / f"{name}.py")] + (["--json"] if args.json else [])
        if not args.json:
            print(f"\n=== bench/{name}.py", flush=True)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=args.json, text=True)
        took = time.perf_counter() - t0
        if args.json:
            try:
                results[name] = json.loads(proc.stdout)
            except ValueError:
                results[name] = {"error": (proc.stderr or proc.stdout)[-2000:], "exit": proc.returncode}
        else:
            print(f"--- bench/{name}.py: exit {proc.returncode}, {took:.1f} s", flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
