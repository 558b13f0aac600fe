"""Warm `search` latency through MCP over stdio on the shared corpus (p50, p95).

Imports and indexes the 16 shared PDFs once into a temporary workspace (or reuses --workspace), starts
`python -m papervault mcp` as a real stdio server through the `mcp` SDK client, warms it up, then times
~100 `search` calls with varied queries, levels and budgets. Run:

    .venv/bin/python bench/mcp_latency.py [--calls 100] [--workspace DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PAPERVAULT_SHARED", ROOT.parent / "shared")).resolve()
CORPUS = SHARED / "corpus" / "pdfs"
MODEL = SHARED / "models" / "all-MiniLM-L6-v2-onnx"

QUERIES = [
    "Paxos ballots and leader election", "garbage collection compaction", "type inference for refinement types",
    "isolation anomalies in databases", "CAP theorem harvest and yield", "geo-replication cost",
    "lossy compression error bound", "distributed array tiling", "Johnson-Lindenstrauss sparse projection",
    "memory corruption attacks and defenses", "time series smoothing for visualization",
    "points prediction in basketball", "UNIX file system design", "optional typing for Clojure",
    "convolutional network invariants", "Megastore synchronous replication", "quorum of acceptors",
    "how to measure availability", "control-flow integrity", "prediction-based quantization",
]


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(q / 100 * (len(s) - 1))))
    return s[k]


def build(root: Path) -> dict:
    from papervault.index.store import PaperIndex
    from papervault.ingest import add
    from papervault.workspace import Workspace

    ws, _ = Workspace.init(root)
    t0 = time.perf_counter()
    report = add(ws, [str(CORPUS)])
    t1 = time.perf_counter()
    idx = PaperIndex(ws).sync()
    t2 = time.perf_counter()
    return {"added": len(report.added), "problems": [p.as_dict() for p in report.problems],
            "import_s": round(t1 - t0, 1), "index_s": round(t2 - t1, 1), "chunks": idx.get("chunks")}


async def measure(root: Path, calls: int) -> dict:
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("PAPERVAULT_", "HF_")) or k in ("HOME", "PATH")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "papervault", "mcp", "--workspace", str(root)],
                                   env=env)
    t0 = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as c:
        t_ready = time.perf_counter() - t0
        t1 = time.perf_counter()
        first = await c.call_tool("search", {"query": "warm up the model", "limit": 10})
        t_first = time.perf_counter() - t1
        assert not first.is_error, first.content
        times, sizes, empty = [], [], 0
        for i in range(calls):
            args = {"query": QUERIES[i % len(QUERIES)], "limit": 10}
            if i % 4 == 1:
                args["level"] = "paragraph"
            if i % 4 == 2:
                args["budget"] = 1000
            t = time.perf_counter()
            r = await c.call_tool("search", args)
            times.append((time.perf_counter() - t) * 1000)
            assert not r.is_error, r.content
            sizes.append(len(r.content[0].text))
            empty += r.structured_content["count"] == 0
    return {"startup_s": round(t_ready, 2), "first_search_s": round(t_first, 2), "calls": calls,
            "p50_ms": round(statistics.median(times), 1), "p95_ms": round(percentile(times, 95), 1),
            "max_ms": round(max(times), 1), "mean_kb": round(statistics.mean(sizes) / 1024, 1), "empty": empty}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--workspace", type=Path, help="reuse (or create) this workspace instead of a temporary one")
    ap.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    args = ap.parse_args()
    if MODEL.is_dir():
        os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(MODEL))
        os.environ.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    root = args.workspace or Path(tempfile.mkdtemp(prefix="pv-mcp-bench-"))
    try:
        if (root / "vault" / ".git").is_dir() and any((root / "vault" / "papers").glob("*/note.md")):
            from papervault.index.store import PaperIndex
            from papervault.workspace import Workspace

            idx = PaperIndex(Workspace(root)).sync()     # incremental: a no-op when the index is current
            print(f"workspace {root} (reused; {idx['papers']} papers, {idx['chunks']} chunks, "
                  f"synced in {idx['seconds']} s)", flush=True)
        else:
            b = build(root)
            print(f"import 16 PDFs: {b['import_s']} s ({b['added']} added, {len(b['problems'])} problems); "
                  f"index: {b['index_s']} s ({b['chunks']} chunks)", flush=True)
            for p in b["problems"]:
                print(f"  problem: {p['source']}: {p['error']}")
        import anyio

        m = anyio.run(measure, root, args.calls)
        print(f"server ready in {m['startup_s']} s; first search (loads the model) {m['first_search_s']} s")
        print(f"warm search over MCP stdio, {m['calls']} calls: p50 {m['p50_ms']} ms, p95 {m['p95_ms']} ms, "
              f"max {m['max_ms']} ms; mean answer {m['mean_kb']} KB; {m['empty']} empty")
    finally:
        if not args.workspace and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif not args.workspace:
            print(f"kept {root}")


if __name__ == "__main__":
    main()
