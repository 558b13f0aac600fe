"""Index benchmarks on this machine: throughput against bare fastembed, unchanged re-index of 200 papers,
hybrid query latency at 100,000 chunks, and retrieval quality (full text, vectors, hybrid) on bench/queries.yaml.

    .venv/bin/python bench/index.py [--json] [--skip-latency] [--keep DIR]
    PAPERVAULT_EMBED_PRECISION=float32 .venv/bin/python bench/index.py ...   # the model as published

Uses the shared corpus and the local all-MiniLM-L6-v2 ONNX model (nothing is downloaded).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PAPERVAULT_SHARED", ROOT.parent / "shared")).resolve()
CORPUS = SHARED / "corpus" / "pdfs"
MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(MODEL_DIR))
os.environ.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# the corpus is parsed in one pass, so the figures are those of the complete index (bench/arrival.py measures the
# first pass)
os.environ.setdefault("PAPERVAULT_PARSE_FIRST_PASS", "false")
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import yaml  # noqa: E402

from papervault.chunking.paper import chunk_paper, embed_text  # noqa: E402
from papervault.config import IndexSettings  # noqa: E402
from papervault.index import store  # noqa: E402
from papervault.index.embed import Embedder  # noqa: E402
from papervault.index.search import Searcher  # noqa: E402
from papervault.index.store import PaperIndex  # noqa: E402
from papervault.models import PaperMeta  # noqa: E402
from papervault.vault.store import atomic_write  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402
from support_index import synthetic_paper  # noqa: E402

QUERIES = ROOT / "bench" / "queries.yaml"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def paper_id(pdf: Path) -> str:
    return pdf.stem.lower().replace("_", "-")[:60].strip("-.")


def build_corpus_workspace(root: Path) -> Workspace:
    """The 16 shared PDFs added to a fresh vault the way a user adds them (`papervault add`, parse and
    extractive notes, no index yet), so the quality figures are those of the index the product builds."""
    ws, _ = Workspace.init(root)
    env = {**os.environ, "PAPERVAULT_WORKSPACE": str(root)}
    subprocess.run([sys.executable, "-m", "papervault", "add", str(CORPUS), "--workspace", str(root), "--json"],
                   check=True, capture_output=True, env=env)
    return Workspace(root)


def bench_throughput(ws: Workspace) -> dict:
    """Index the corpus, then embed the same chunk texts with bare fastembed: the ratio is our overhead."""
    embedder = Embedder(ws.settings.embed)
    embedder.embed(["warm up the model"])       # model load is paid once per process, by both sides
    # CPU seconds as well as wall seconds: on a shared machine the wall ratio mostly measures the neighbours.
    t, c = time.perf_counter(), time.process_time()
    report = PaperIndex(ws, embedder).sync()
    index_s, index_cpu = time.perf_counter() - t, time.process_time() - c
    texts = []
    for pid in ws.vault.paper_ids():
        meta, body = ws.vault.read_note(pid)
        for c in chunk_paper(meta, ws.vault.read_fulltext(pid), body, ws.settings.index):
            texts.append(embed_text(c, meta.title or pid))
    model = embedder.model
    # Two baselines: fastembed as a user would call it on the texts in document order, and fastembed on the
    # same texts in the length order the index embeds them in (pure model time; the honest denominator).
    t, c = time.perf_counter(), time.process_time()
    list(model.embed(texts, batch_size=ws.settings.embed.batch()))
    bare_s, bare_cpu = time.perf_counter() - t, time.process_time() - c
    by_length = sorted(texts, key=len)
    t, c = time.perf_counter(), time.process_time()
    list(model.embed(by_length, batch_size=ws.settings.embed.batch()))
    sorted_s, sorted_cpu = time.perf_counter() - t, time.process_time() - c
    return {"precision": embedder.settings.precision, "papers": report["papers"], "chunks": report["chunks"],
            "index_s": round(index_s, 2),
            "bare_embed_s": round(bare_s, 2), "ratio": round(index_s / bare_s, 3),
            "bare_sorted_embed_s": round(sorted_s, 2), "ratio_to_sorted": round(index_s / sorted_s, 3),
            "index_cpu_s": round(index_cpu, 1), "bare_cpu_s": round(bare_cpu, 1),
            "bare_sorted_cpu_s": round(sorted_cpu, 1),
            "cpu_ratio": round(index_cpu / bare_cpu, 3), "cpu_ratio_to_sorted": round(index_cpu / sorted_cpu, 3),
            "load_avg": round(os.getloadavg()[0], 2),
            "chunks_per_s": round(report["chunks"] / index_s, 1)}


class RandomEmbedder(Embedder):
    """Random unit vectors under the real model's name: only to fill a large synthetic index quickly."""

    def __init__(self, settings, dim: int):
        super().__init__(settings)
        self._dim = dim
        self._rng = np.random.default_rng(0)

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts):
        v = self._rng.standard_normal((len(texts), self._dim)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def bench_reindex(root: Path, n: int = 200) -> dict:
    """Unchanged re-index of n generated papers (~60 chunks each), then with one paper changed."""
    ws, _ = Workspace.init(root)
    for i in range(n):
        title, md = synthetic_paper(i, pages=8, paragraphs=4)
        ws.vault.write_note(PaperMeta(id=f"synth{i:04d}", title=title, year=1990 + i % 30), "## Summary\n\nok\n",
                            force=True)
        atomic_write(ws.vault.fulltext_path(f"synth{i:04d}"), md)
    real = Embedder(ws.settings.embed)
    first = PaperIndex(ws, RandomEmbedder(ws.settings.embed, real.dim)).sync()
    t = time.perf_counter()
    again = PaperIndex(ws, real).sync()     # the real model: nothing may need it
    unchanged_s = time.perf_counter() - t
    assert again["chunks_embedded"] == 0, again
    path = ws.vault.fulltext_path("synth0007")
    path.write_text(path.read_text().replace("Paragraph 1 on page 3", "An edited paragraph on page 3"))
    t = time.perf_counter()
    one = PaperIndex(ws, real).sync()
    one_s = time.perf_counter() - t
    return {"papers": n, "chunks": first["chunks"], "unchanged_s": round(unchanged_s, 3),
            "one_changed_s": round(one_s, 3), "one_changed_embedded": one["chunks_embedded"]}


def bench_latency(root: Path, corpus_ws: Workspace, queries: list[dict], rows: int = 100_000) -> dict:
    """Hybrid query latency at `rows` chunks: the corpus's real vectors and texts, repeated with noise."""
    src = Workspace(corpus_ws.root)
    real = store.open_db(src).open_table(store.CHUNKS).to_arrow().to_pylist()
    ws, _ = Workspace.init(root)
    db = store.open_db(ws)
    embedder = Embedder(ws.settings.embed)
    meta = store.index_meta(embedder)
    rng = np.random.default_rng(1)
    chunks = db.create_table(store.CHUNKS, schema=store.chunks_schema(embedder.dim, meta))
    papers = db.create_table(store.PAPERS, schema=store.papers_schema(embedder.dim, meta))
    base = np.asarray([r["vector"] for r in real], dtype=np.float32)
    n_papers = rows // 60
    t = time.perf_counter()
    for start in range(0, rows, 20_000):
        out = []
        for i in range(start, min(rows, start + 20_000)):
            r = dict(real[i % len(real)])
            copy = i // len(real)
            v = base[i % len(real)] + rng.normal(0, 0.03, base.shape[1]).astype(np.float32)
            r.update(id=f"{r['id']}-{copy}", paper_id=f"{r['paper_id']}-{copy}", vector=v / np.linalg.norm(v),
                     fts_text=f"{r['fts_text']} copy{copy}")
            out.append(r)
        chunks.add(pa.Table.from_pylist(out, schema=chunks.schema))
    heads = [r for r in real if r["level"] == "paper"]
    papers.add(pa.Table.from_pylist([
        {"paper_id": f"{h['paper_id']}-{k}", "title": h["title"], "authors": [], "year": h["year"],
         "venue": "", "tags": [], "source": h["source"], "status": "parsed", "has_fulltext": True,
         "content_hash": "", "chunks": 60, "text": h["text"], "vector": h["vector"]}
        for k in range(max(1, n_papers // len(heads))) for h in heads], schema=papers.schema))
    fill_s = time.perf_counter() - t
    result = {"rows": chunks.count_rows(), "fill_s": round(fill_s, 1), "real_vectors": len(real)}

    def timed(tag):
        s = Searcher(ws, embedder)
        s.search(queries[0]["query"])          # open tables and caches
        lat = []
        for q in queries * 2:
            t0 = time.perf_counter()
            s.search(q["query"], limit=10)
            lat.append((time.perf_counter() - t0) * 1000)
        lat.sort()
        result[f"{tag}_p50_ms"] = round(statistics.median(lat), 1)
        result[f"{tag}_p95_ms"] = round(lat[int(0.95 * (len(lat) - 1))], 1)

    def top10(vec, exact: bool) -> set[str]:
        q = chunks.search(vec, vector_column_name="vector").distance_type("cosine")
        if exact:
            q = q.bypass_vector_index()
        # The 100k rows are noisy copies of the corpus chunks: a hit counts as its original chunk.
        return {r["id"].rsplit("-", 1)[0] for r in q.select(["id", "_distance"]).limit(10).to_list()}

    vecs = [embedder.embed_query(q["query"]) for q in queries]

    from lancedb.index import FTS

    t = time.perf_counter()
    chunks.create_index("fts_text", config=FTS(), replace=True)
    papers.create_index("text", config=FTS(), replace=True)
    result["fts_index_s"] = round(time.perf_counter() - t, 1)
    timed("flat")
    t = time.perf_counter()
    PaperIndex(ws, embedder)._maintain(chunks, papers)     # >= VECTOR_INDEX_MIN_ROWS: builds IVF-PQ
    result["maintain_with_ivfpq_s"] = round(time.perf_counter() - t, 1)
    result["indices"] = sorted({ix.index_type for ix in chunks.list_indices()})
    timed("ivfpq")
    # Recall of the vector index: the share of the exact top 10 (by original chunk) that IVF-PQ returns.
    recall = [len(top10(v, False) & top10(v, True)) / max(1, len(top10(v, True))) for v in vecs]
    result["ivfpq_recall_at_10"] = round(statistics.mean(recall), 3)
    return result


def evaluate(ws: Workspace, queries: list[dict], variants: dict[str, dict]) -> dict:
    """Hit@1, Hit@5, MRR@10 per variant: a hit is a chunk of the gold paper whose pages include a gold page."""
    # gold papers are named by file; a workspace made by `papervault add` has citation-key ids, so map through
    # each paper's source path (the bench's own workspaces use ids derived from the file name)
    pid_of = {pdf.name: paper_id(pdf) for pdf in CORPUS.glob("*.pdf")}
    for meta in ws.vault.iter_meta():
        for src in meta.sources:
            if Path(src).name in pid_of:
                pid_of[Path(src).name] = meta.id
    out = {}
    embedder = Embedder(ws.settings.embed)
    for name, opts in variants.items():
        opts = dict(opts)
        s = Searcher(ws, embedder)
        s.settings = IndexSettings(**{**ws.settings.index.model_dump(), **opts.pop("settings", {})})
        ranks, paper_ranks = [], []
        for q in queries:
            hits = s.search(q["query"], limit=10, **opts)
            gold, pages = pid_of[q["paper"]], set(q["pages"])
            rank = next((i for i, h in enumerate(hits, 1) if h.paper_id == gold and h.page is not None and
                         pages & set(range(h.page, (h.page_end or h.page) + 1))), None)
            prank = next((i for i, h in enumerate(hits, 1) if h.paper_id == gold), None)
            ranks.append(rank)
            paper_ranks.append(prank)
        n = len(queries)
        out[name] = {
            "hit@1": round(sum(r == 1 for r in ranks) / n, 3),
            "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
            "mrr@10": round(sum(1 / r for r in ranks if r) / n, 3),
            "paper_hit@1": round(sum(r == 1 for r in paper_ranks) / n, 3),
            "paper_mrr@10": round(sum(1 / r for r in paper_ranks if r) / n, 3),
        }
    return out


VARIANTS = {
    "fts": {"mode": "fts"},
    "vector": {"mode": "vector"},
    "hybrid": {"mode": "hybrid"},
    "hybrid_no_coarse": {"mode": "hybrid", "coarse": False},
    "plain_rrf_k60": {"mode": "hybrid", "coarse": False,
                      "settings": {"fts_weight": 1.0, "vector_weight": 1.0, "rrf_k": 60}},
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--skip-latency", action="store_true", help="skip the 100k-chunk latency run")
    ap.add_argument("--keep", help="build workspaces under DIR and keep them")
    ap.add_argument("--quality-only", help="evaluate an already indexed corpus workspace DIR")
    ap.add_argument("--latency-only", help="run the latency benchmark from an already indexed corpus workspace DIR")
    args = ap.parse_args(argv)
    queries = yaml.safe_load(QUERIES.read_text())["queries"]
    results: dict = {"queries": len(queries), "cpus": os.cpu_count(), "load_avg": os.getloadavg()[0]}
    if args.quality_only:
        results["quality"] = evaluate(Workspace(args.quality_only), queries, VARIANTS)
        print(json.dumps(results, indent=2))
        return 0
    if args.latency_only:
        with tempfile.TemporaryDirectory(prefix="pv-bench-") as tmp:
            results["latency"] = bench_latency(Path(tmp) / "big", Workspace(args.latency_only), queries)
        print(json.dumps(results, indent=2))
        return 0
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pv-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    try:
        log("adding the corpus (papervault add) ...")
        t = time.perf_counter()
        ws = build_corpus_workspace(base / "corpus")
        results["add_s"] = round(time.perf_counter() - t, 1)
        log("throughput ...")
        results["throughput"] = bench_throughput(ws)
        log("quality ...")
        results["quality"] = evaluate(ws, queries, VARIANTS)
        log("re-index of 200 papers ...")
        results["reindex"] = bench_reindex(base / "synth200")
        if not args.skip_latency:
            log("latency at 100k chunks ...")
            results["latency"] = bench_latency(base / "big", ws, queries)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print(results)
    return 0


def _print(r: dict) -> None:
    print(f"machine: {r['cpus']} cpus, load average {r['load_avg']:.1f}; {r['queries']} queries")
    t = r["throughput"]
    print(f"throughput ([embed] precision {t['precision']}): {t['papers']} papers, {t['chunks']} chunks indexed in "
          f"{t['index_s']} s "
          f"({t['chunks_per_s']} chunks/s); bare fastembed on the same texts {t['bare_embed_s']} s; "
          f"ratio {t['ratio']} (CPU seconds {t['index_cpu_s']} / {t['bare_cpu_s']} = {t['cpu_ratio']}); "
          f"against bare fastembed on the texts in length order {t['bare_sorted_embed_s']} s: ratio "
          f"{t['ratio_to_sorted']} (CPU {t['cpu_ratio_to_sorted']})")
    x = r["reindex"]
    print(f"re-index: {x['papers']} papers / {x['chunks']} chunks unchanged in {x['unchanged_s']} s; "
          f"one paper changed in {x['one_changed_s']} s ({x['one_changed_embedded']} chunk(s) embedded)")
    if "latency" in r:
        lt = r["latency"]
        print(f"latency at {lt['rows']} chunks: flat p50 {lt['flat_p50_ms']} ms p95 {lt['flat_p95_ms']} ms; "
              f"IVF-PQ p50 {lt['ivfpq_p50_ms']} ms p95 {lt['ivfpq_p95_ms']} ms "
              f"(index build {lt['maintain_with_ivfpq_s']} s, recall@10 vs exact {lt.get('ivfpq_recall_at_10')})")
    print(f"{'quality':22} {'hit@1':>6} {'hit@5':>6} {'mrr@10':>7} {'paper@1':>8} {'paperMRR':>9}")
    for name, m in r["quality"].items():
        print(f"{name:22} {m['hit@1']:6.3f} {m['hit@5']:6.3f} {m['mrr@10']:7.3f} {m['paper_hit@1']:8.3f} "
              f"{m['paper_mrr@10']:9.3f}")


if __name__ == "__main__":
    sys.exit(main())
