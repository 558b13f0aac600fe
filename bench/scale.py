"""Scale benchmark (issue 19): parse pages/s and embedding chunks/s with 1 and 2 Dask workers, the index on local
disk vs a loopback S3 server, peak memory of `add` + `index` against library size, and an estimate of the wall
time of a 20,000-paper library on N workers.

    python bench/scale.py                       # short runs: 4 corpus PDFs, CSL sizes 1000,3000,9000
    python bench/scale.py --sizes 10000,30000,90000 --index-max 10000 --skip dask,s3   # memory against size
    python bench/scale.py --sizes 10000,30000,90000 --index-max 90000 --skip dask,s3 --vectors stub   # the sync's own

Every number is measured here, on subsets; the 20,000-paper estimate extrapolates the per-worker rates and
says how. The parse and embedding rates time only the mapped tasks (after the cluster and each worker's model
are up), so they are throughput, not start-up cost. Results are printed as JSON (and to --out FILE).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(ROOT.parent / "shared/models/all-MiniLM-L6-v2-onnx"))
os.environ.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
CORPUS = ROOT.parent / "shared" / "corpus"
# Short, born-digital papers first (the scanned LISP II paper needs OCR: it is measured when --pdfs reaches it).
SMALL_FIRST = ["distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf",
               "operating_systems_unix-time-sharing-system.pdf",
               "machine_learning_dimensionality_reduction_a-sparse-johnson-lindenstrauss-transform.pdf",
               "security_sok-eternal-war-in-memory.pdf",
               "distributed_systems_paxos-made-moderately-complex.pdf",
               "datastores_elle-inferring-isolation-anomalies-from-experimental-observations.pdf"]


# --- parse and embed rates on Dask -------------------------------------------------------------------------

def dask_rates(pdfs: list[Path], workers: int, tmp: Path) -> dict:
    """pages/s of the parse task and chunks/s of the embedding task on a local Dask cluster of `workers`."""
    from prefect import flow

    from flows.executor import PrefectExecutor
    from flows.runner import api_for_workers, task_runner
    from papervault.app.adding import PARSE, add_context
    from papervault.app.indexing import EMBED, EMBED_ML
    from papervault.chunking.paper import chunk_paper, embed_text
    from papervault.config import IndexSettings
    from papervault.models import PaperMeta
    from papervault.parse.batch import _result
    from papervault.workspace import Workspace

    ws, _ = Workspace.init(tmp / f"ws-{workers}")       # its own parse cache: every PDF is parsed
    ctx = add_context(ws, "extractive", distributed=True)

    @flow(name="bench-scale")
    def measure() -> dict:
        ex = PrefectExecutor()
        # warm up: every worker imports the parser and loads the model before the clock starts
        ex.map(EMBED, ctx, [["warm up"]] * (workers * 2))
        ex.map(EMBED_ML, ctx, [["warm up"]] * (workers * 2))
        t0 = time.perf_counter()
        parsed = [_result(str(p), got) for p, got in zip(pdfs, ex.map(PARSE, ctx, [str(p) for p in pdfs]))]
        parse_s = time.perf_counter() - t0
        good = [p for p in parsed if not isinstance(p, Exception)]
        pages = sum(p.pages for p in good)
        texts = []
        for p in good:
            meta = PaperMeta(id=f"p{len(texts)}", title=p.title or "untitled", abstract=p.abstract)
            texts += [embed_text(c, meta.title) for c in chunk_paper(meta, p.markdown, "", IndexSettings())]
        batches = [texts[i:i + 256] for i in range(0, len(texts), 256)]
        t0 = time.perf_counter()
        ex.map(EMBED, ctx, batches)
        embed_s = time.perf_counter() - t0
        # the multilingual space (on by default): the same chunks, as `papervault index` maps them
        t0 = time.perf_counter()
        ex.map(EMBED_ML, ctx, batches)
        ml_s = time.perf_counter() - t0
        return {"workers": workers, "papers": len(good), "pages": pages, "parse_s": round(parse_s, 2),
                "pages_per_s": round(pages / parse_s, 2), "chunks": len(texts), "embed_s": round(embed_s, 2),
                "chunks_per_s": round(len(texts) / embed_s, 1), "ml_embed_s": round(ml_s, 2),
                "ml_chunks_per_s": round(len(texts) / ml_s, 1)}

    with api_for_workers():
        return measure.with_options(task_runner=task_runner("dask", workers))()


# --- the index on local disk vs loopback S3 ----------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def index_local_vs_s3(tmp: Path, papers: int) -> list[dict]:
    """The same synthetic vault synced and searched with the index on disk, then on moto_server (loopback)."""
    import boto3

    from papervault.index.search import Searcher
    from papervault.index.store import PaperIndex
    from papervault.models import PaperMeta
    from papervault.workspace import Workspace

    port = _free_port()
    log = open(tmp / "moto.log", "wb")
    moto = subprocess.Popen([str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    rows = []
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        aws = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
               "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
        boto3.client("s3", endpoint_url=aws["AWS_ENDPOINT_URL"], aws_access_key_id="bench",
                     aws_secret_access_key="bench", region_name="us-east-1").create_bucket(Bucket="papervault-bench")
        queries = ["quorum leases", "replicated log recovery", "garbage collection pause", "type inference"]
        for where in ("local disk", "loopback S3"):
            if where == "loopback S3":
                os.environ.update(aws, PAPERVAULT_INDEX_URI="s3://papervault-bench/index")
            ws, _ = Workspace.init(tmp / f"idx-{where.split()[0]}")
            for i in range(papers):
                meta = PaperMeta(id=f"paper{i:05d}", title=f"Replicated log variant {i}", year=2000 + i % 25,
                                 abstract=f"Consensus variant {i}: quorum {i % 7 + 3}, lease {i % 11} ms.")
                body = "## Summary\n\n" + " ".join(f"Paragraph {q} on recovery {i}." * 8 for q in range(4)) + "\n"
                ws.vault.write_note(meta, body, force=True)
            idx = PaperIndex(ws)
            idx.embedder.embed(["warm up"])
            t0 = time.perf_counter()
            report = idx.sync()
            sync_s = time.perf_counter() - t0
            searcher = Searcher(ws)
            searcher.search("warm up", limit=5)
            t0 = time.perf_counter()
            for _ in range(5):
                for q in queries:
                    searcher.search(q, limit=10)
            search_ms = (time.perf_counter() - t0) * 1000 / (5 * len(queries))
            rows.append({"index": where, "papers": papers, "chunks": report["chunks"], "sync_s": round(sync_s, 2),
                         "chunks_per_s": round(report["chunks"] / sync_s, 1), "search_ms": round(search_ms, 1)})
        for k in (*aws, "PAPERVAULT_INDEX_URI"):
            os.environ.pop(k, None)
    finally:
        os.killpg(moto.pid, signal.SIGTERM)
        moto.wait(timeout=20)
    return rows


# --- peak memory against library size ----------------------------------------------------------------------

def csl_library(n: int, out: Path) -> Path:
    """n CSL records: the shared 20k export, repeated with altered titles and DOIs past its end."""
    import ijson

    base = []
    with open(CORPUS / "conference-20k.csl.json", "rb") as fh:
        for item in ijson.items(fh, "item", use_float=True):
            base.append(item)
            if len(base) >= n:
                break
    items = []
    for i in range(n):
        item = dict(base[i % len(base)])
        rnd = i // len(base)
        if rnd:
            item["id"] = f"{item.get('id', 'r')}-r{rnd}"
            item["title"] = f"{item.get('title', '')} (reprint {rnd})"
            if item.get("DOI"):
                item["DOI"] = f"{item['DOI']}.r{rnd}"
        items.append(item)
    out.write_text(json.dumps(items))
    return out


_ADD = """
import json, sys, time
def hwm():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
from papervault.app.adding import add
from papervault.workspace import Workspace
ws, _ = Workspace.init(sys.argv[1])
t = time.perf_counter()
r = add(ws, [sys.argv[2]], backend='extractive', index=False)  # the index is measured apart
print(json.dumps({'added': len(r.added), 'commits': len(r.commits), 'add_s': round(time.perf_counter() - t, 1),
                  'add_peak_mb': round(hwm())}))
"""

_INDEX = """
import json, sys, time
def hwm():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
import threading
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) / 1024
trace, stop = [], threading.Event()
def sample():   # the resident size every 2 s: where in the sync memory grows, not only its peak
    t0 = time.perf_counter()
    while not stop.wait(2.0):
        trace.append((round(time.perf_counter() - t0), round(rss())))
threading.Thread(target=sample, daemon=True).start()
from papervault.index.store import PaperIndex
from papervault.workspace import Workspace
ws = Workspace.resolve(sys.argv[1]).require()
hooks = {}
if sys.argv[2] == 'stub':
    # The sync's own memory: the same rows, writes, windows and index builds, with vectors that stand in for the
    # models' (one per text, seeded by its digest, unit length), so neither model loads; see memory_vs_size.
    import hashlib
    import numpy as np
    def stub(dim):
        def embed(batches):
            out = []
            for texts in batches:
                v = np.stack([np.random.default_rng(int.from_bytes(hashlib.blake2b(x.encode(), digest_size=8)
                              .digest(), 'little')).standard_normal(dim, dtype=np.float32) for x in texts])
                out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
            return out
        return embed
    from papervault.index.multilingual import DIM
    hooks = {'embed_batches': stub(384), 'embed_ml_batches': stub(DIM)}
t = time.perf_counter()
with ws.write_lock('index'):
    idx = PaperIndex(ws, **hooks)
    if hooks:
        idx.embedder._dim = 384   # all-MiniLM-L6-v2's, without loading it to ask
    s = idx.sync()
stop.set()
from papervault.index import embed, multilingual
# whether either model ran (the vectors all came from a warm [embed] vector_cache, or not): a peak with a model
# loaded is not comparable with one without (the models and their runtime arenas are 400-600 MB)
print(json.dumps({'chunks': s['chunks'], 'index_s': round(time.perf_counter() - t, 1), 'index_peak_mb': round(hwm()),
                  'models_loaded': [name for name, on in (('english', bool(embed._MODELS)),
                                                          ('multilingual', multilingual._ENCODER is not None)) if on],
                  'rss_trace_mb': trace[::max(1, len(trace) // 40)]}))
"""


def memory_vs_size(sizes: list[int], tmp: Path, index_max: int = 3000, vectors: str = "model") -> list[dict]:
    """Each size in fresh processes (peaks are per process): `add` of the CSL file, then `index` of the
    abstracts when the library has at most `index_max` records (embedding 90,000 abstracts takes hours here).

    `vectors="stub"` measures the sync's own memory at sizes the models cannot reach here in a session: every
    row, window, write, compaction and index build is the same, but the vectors come from a digest-seeded
    generator instead of the two models, which then never load (they add a constant, measured by a "model" run
    at a smaller size). Peaks are VmHWM of the Python process (git runs in children of its own)."""
    rows = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for n in sizes:
        csl = csl_library(n, tmp / f"lib-{n}.json")
        row: dict = {"records": n, "vectors": vectors}
        # VmHWM, not ru_maxrss: on Linux ru_maxrss survives exec, so a child would report this process's peak.
        for script, args, skip in ((_ADD, [str(tmp / f"mem-{n}"), str(csl)], False),
                                   (_INDEX, [str(tmp / f"mem-{n}"), vectors], n > index_max)):
            if skip:
                continue
            r = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env)
            if r.returncode:
                raise SystemExit(f"memory run at {n} failed: {r.stderr[-2000:]}")
            row.update(json.loads(r.stdout.strip().splitlines()[-1]))
        print(f"  {n:>6} records: {row}", flush=True)
        rows.append(row)
        shutil.rmtree(tmp / f"mem-{n}", ignore_errors=True)
        (tmp / f"lib-{n}.json").unlink(missing_ok=True)
    return rows


# --- the estimate ------------------------------------------------------------------------------------------

def estimate(rates: list[dict], papers: int = 20_000) -> list[dict]:
    """Wall time of a `papers`-paper library on N workers from the 1-worker rates: parse and embedding scale
    with workers (they are independent per paper / per batch); the single writer does not (its cost is not
    measured here separately and is left out, so these are lower bounds)."""
    one = next(r for r in rates if r["workers"] == 1)
    pages_per_paper = one["pages"] / max(1, one["papers"])
    chunks_per_paper = one["chunks"] / max(1, one["papers"])
    out = []
    for n in (1, 2, 4, 8, 16, 32):
        parse_h = papers * pages_per_paper / (one["pages_per_s"] * n) / 3600
        embed_h = papers * chunks_per_paper / (one["chunks_per_s"] * n) / 3600
        ml_h = papers * chunks_per_paper / (one["ml_chunks_per_s"] * n) / 3600
        out.append({"workers": n, "parse_h": round(parse_h, 1), "embed_h": round(embed_h, 1),
                    "ml_embed_h": round(ml_h, 1), "total_h": round(parse_h + embed_h + ml_h, 1)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdfs", type=int, default=4, help="corpus PDFs parsed and embedded per worker count")
    ap.add_argument("--sizes", default="1000,3000,9000", help="CSL library sizes for the memory runs")
    ap.add_argument("--index-max", type=int, default=3000,
                    help="index the abstracts only for libraries of at most this many records")
    ap.add_argument("--vectors", choices=["model", "stub"], default="model",
                    help="memory runs: embed with the models, or measure the sync alone with stand-in vectors")
    ap.add_argument("--index-papers", type=int, default=300, help="papers in the local-vs-S3 index run")
    ap.add_argument("--out", help="also write the results (JSON) to this file")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: dask,s3,memory")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    from papervault.index.embed import Embedder

    emb = Embedder()
    out: dict = {"provider": emb.provider, "precision": emb.settings.precision, "cpus": os.cpu_count(),
                 "load_avg": os.getloadavg()[0]}
    print(f"embedding provider: {out['provider']}, precision {out['precision']} ({out['cpus']} CPUs, load "
          f"average {out['load_avg']:.1f})",
          flush=True)
    names = [n for n in SMALL_FIRST if (CORPUS / "pdfs" / n).exists()]
    names += sorted(p.name for p in (CORPUS / "pdfs").glob("*.pdf") if p.name not in names)
    pdfs = [CORPUS / "pdfs" / n for n in names[:args.pdfs]]
    with tempfile.TemporaryDirectory(prefix="scale-bench-") as t:
        tmp = Path(t)
        if "dask" not in skip:
            out["dask"] = [dask_rates(pdfs, w, tmp) for w in (1, 2)]
            for r in out["dask"]:
                print(f"  dask {r}", flush=True)
            out["estimate_20k"] = estimate(out["dask"])
        if "s3" not in skip:
            out["index"] = index_local_vs_s3(tmp, args.index_papers)
            for r in out["index"]:
                print(f"  index {r}", flush=True)
        if "memory" not in skip:
            out["memory"] = memory_vs_size([int(s) for s in args.sizes.split(",")], tmp, args.index_max,
                                           args.vectors)
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=2))
    out["load_avg_end"] = os.getloadavg()[0]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
