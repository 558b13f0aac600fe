"""Code search quality on this project's own code: Hit@1, Hit@5 and MRR@10 for hybrid, full-text and vector search.

    .venv/bin/python bench/code_search.py [--json] [--keep DIR] [--repo PATH_OR_URL]

Indexes a clean clone of the repository's HEAD (a `file://` URL, so uncommitted work is left out) with
`add_repo`, then runs bench/code_queries.yaml, whose every query names the file and symbol that answer it.
With --keep DIR the workspace is kept and reused: a second run re-embeds only the files changed since.
Uses the local all-MiniLM-L6-v2 ONNX model of ../shared (nothing is downloaded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PAPERVAULT_SHARED", ROOT.parent / "shared")).resolve()
MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(MODEL_DIR))
os.environ.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from papervault.index.code import CodeSearcher  # noqa: E402
from papervault.add_repo import add_repo  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402

QUERIES = ROOT / "bench" / "code_queries.yaml"
MODES = ("hybrid", "fts", "vector")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def evaluate(searcher: CodeSearcher, queries: list[dict], mode: str) -> dict:
    hits1 = hits5 = 0
    rr = 0.0
    misses = []
    t0 = time.perf_counter()
    for q in queries:
        gold = {tuple(g) for g in q["gold"]}
        results = searcher.search(q["query"], limit=10, mode=mode)
        ranks = [i for i, r in enumerate(results, 1) if (r["path"], r["symbol"]) in gold]
        rank = ranks[0] if ranks else None
        hits1 += rank == 1
        hits5 += bool(rank and rank <= 5)
        rr += 1.0 / rank if rank else 0.0
        if rank != 1:
            top = results[0]["location"] + " " + results[0]["symbol"] if results else "-"
            misses.append({"query": q["query"], "rank": rank, "top": top})
    n = len(queries)
    return {"hit@1": round(hits1 / n, 3), "hit@5": round(hits5 / n, 3), "mrr@10": round(rr / n, 3),
            "ms_per_query": round(1000 * (time.perf_counter() - t0) / n, 1), "misses": misses}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--keep", metavar="DIR", help="workspace to create or reuse (default: a temporary one)")
    ap.add_argument("--repo", default=ROOT.as_uri(), help="repository to index (default: this project's HEAD)")
    ap.add_argument("--misses", action="store_true", help="list the queries whose first hit is wrong")
    args = ap.parse_args()

    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pv-code-bench-"))
    ws = Workspace(root) if (root / "vault" / ".git").is_dir() else Workspace.init(root)[0]
    t0 = time.perf_counter()
    report = add_repo(ws, args.repo, name="papervault")
    index_s = time.perf_counter() - t0
    log(f"indexed {report.files} files, {report.chunks} chunks ({report.embedded} embedded) in {index_s:.1f} s")

    queries = yaml.safe_load(QUERIES.read_text())["queries"]
    searcher = CodeSearcher(ws)
    searcher.search("warm up", limit=1)      # load the model before timing queries
    out = {"repo": args.repo, "commit": report.commit, "files": report.files, "chunks": report.chunks,
           "embedded": report.embedded, "index_seconds": round(index_s, 1), "queries": len(queries)}
    for mode in MODES:
        out[mode] = evaluate(searcher, queries, mode)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"code search on {report.repo} @ {report.commit[:10]}: {report.files} files, {report.chunks} chunks, "
          f"{len(queries)} queries (bench/code_queries.yaml)")
    print(f"{'mode':8} {'Hit@1':>6} {'Hit@5':>6} {'MRR@10':>7} {'ms/query':>9}")
    for mode in MODES:
        m = out[mode]
        print(f"{mode:8} {m['hit@1']:6.3f} {m['hit@5']:6.3f} {m['mrr@10']:7.3f} {m['ms_per_query']:9.1f}")
    if args.misses:
        for m in out["hybrid"]["misses"]:
            print(f"  miss (rank {m['rank']}): {m['query']!r} -> {m['top']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
