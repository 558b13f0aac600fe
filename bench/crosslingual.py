"""Cross-lingual search benchmark: Chinese questions over the English corpus, with and without the multilingual
space (and with the space but without the lexicon's translation), against their English originals; embedding cost
per chunk; index build time with and without.

    .venv/bin/python bench/crosslingual.py [--workspace DIR] [--reuse-index] [--grid] [--json]

The questions are bench/crosslingual.yaml (Chinese, written from bench/queries.yaml's English questions, technical
names kept in English); gold paper and pages come from queries.yaml. Every figure is given for all questions and
for the odd- and even-numbered ones apart: the lexicon's constants were chosen on the odd half, so the even half
is a held-out check. The corpus workspace is built as bench/index.py builds it (`papervault add` of the 16 shared
PDFs); `--workspace DIR` keeps it there and reuses its papers on the next run (the PDFs are parsed once). The
index is built in this run, English space first, then the multilingual space (chunks and lexicon), so both build
times come from one run; `--reuse-index` skips that and only evaluates."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import index as bench_index  # noqa: E402  (sets the local model environment and sys.path)

import yaml  # noqa: E402

from papervault.config import IndexSettings  # noqa: E402
from papervault.index import multilingual as ml  # noqa: E402
from papervault.index.embed import Embedder  # noqa: E402
from papervault.index.search import Searcher  # noqa: E402
from papervault.index.store import PaperIndex  # noqa: E402
from papervault.chunking.paper import chunk_paper, embed_text  # noqa: E402
from papervault.workspace import Workspace  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
XLING = ROOT / "bench" / "crosslingual.yaml"
log = bench_index.log


def load_queries() -> list[dict]:
    """The Chinese questions joined with their English originals' gold paper and pages."""
    english = {q["query"]: q for q in yaml.safe_load(bench_index.QUERIES.read_text())["queries"]}
    out = []
    for q in yaml.safe_load(XLING.read_text())["queries"]:
        orig = english.get(q["en"])
        if orig is None:
            raise SystemExit(f"crosslingual.yaml: {q['en']!r} is not a query of queries.yaml")
        out.append({"en": q["en"], "zh": q["zh"], "paper": orig["paper"], "pages": orig["pages"]})
    return out


def _with_multilingual(ws: Workspace, on: bool) -> Workspace:
    w = Workspace(ws.root)
    w.settings.embed = w.settings.embed.model_copy(update={"multilingual": on})
    return w


def build_index(ws: Workspace) -> dict:
    """Index from scratch, English space then multilingual space, timing each (wall and CPU seconds)."""
    es = Embedder.for_workspace(ws).settings
    ws.record_embed(model=es.model, model_path=es.model_path, multilingual=True)   # the setting under test
    en_ws = _with_multilingual(ws, False)
    embedder = Embedder.for_workspace(en_ws)
    embedder.embed(["warm up the model"])
    ml.MultilingualEmbedder().embed(["warm up the model"])     # both loads paid before the clocks start
    idx = PaperIndex(en_ws, embedder)
    idx.drop()
    t, c = time.perf_counter(), time.process_time()
    report = idx.sync()
    en_s, en_cpu = time.perf_counter() - t, time.process_time() - c
    chunks = idx.db.open_table("chunks")
    t, c = time.perf_counter(), time.process_time()
    mreport = ml.sync(idx.db, chunks)
    ml_s, ml_cpu = time.perf_counter() - t, time.process_time() - c
    n_en, n_ml = report["chunks_embedded"], mreport["embedded"]
    return {
        "papers": report["papers"], "chunks": report["chunks"], "ml_chunks": n_ml,
        "lexicon_terms": mreport["terms_embedded"], "lexicon_s": mreport["terms_seconds"],
        "index_s_without": round(en_s, 1), "index_cpu_s_without": round(en_cpu, 1),
        "multilingual_s": round(ml_s, 1), "multilingual_cpu_s": round(ml_cpu, 1),
        "index_s_with": round(en_s + ml_s, 1), "index_cpu_s_with": round(en_cpu + ml_cpu, 1),
        "ratio_wall": round((en_s + ml_s) / en_s, 2), "ratio_cpu": round((en_cpu + ml_cpu) / en_cpu, 2),
        "en_ms_per_chunk": round(1000 * en_s / max(n_en, 1), 1),
        "ml_ms_per_chunk": round(1000 * ml_s / max(n_ml, 1), 1),
    }


def embed_cost(ws: Workspace, n: int = 300) -> dict:
    """Pure model time per chunk (CPU ms) for both encoders on the same chunk texts."""
    texts = []
    for pid in ws.vault.paper_ids():
        meta, body = ws.vault.read_note(pid)
        for c in chunk_paper(meta, ws.vault.read_fulltext(pid), body, ws.settings.index):
            if c.level in ml.LEVELS:
                texts.append(embed_text(c, meta.title or pid))
    texts = texts[::max(1, len(texts) // n)][:n]
    out = {"texts": len(texts), "mean_chars": round(statistics.mean(len(t) for t in texts))}
    for name, emb in (("english", Embedder.for_workspace(ws)), ("multilingual", ml.MultilingualEmbedder())):
        emb.embed(texts[:4])
        t, c = time.perf_counter(), time.process_time()
        emb.embed(texts)
        out[f"{name}_ms_per_chunk"] = round(1000 * (time.perf_counter() - t) / len(texts), 1)
        out[f"{name}_cpu_ms_per_chunk"] = round(1000 * (time.process_time() - c) / len(texts), 1)
    return out


def _gold_ids(ws: Workspace) -> dict[str, str]:
    pid_of = {pdf.name: bench_index.paper_id(pdf) for pdf in bench_index.CORPUS.glob("*.pdf")}
    for meta in ws.vault.iter_meta():
        for src in meta.sources:
            if Path(src).name in pid_of:
                pid_of[Path(src).name] = meta.id
    return pid_of


def evaluate(ws: Workspace, queries: list[dict], lang: str, searcher: Searcher) -> dict:
    """Hit@1, Hit@5, MRR@10 (a hit is a chunk of the gold paper whose pages include a gold page) and paper@1,
    over all questions and over the odd- and even-numbered ones (`split`)."""
    pid_of = _gold_ids(ws)
    ranks, pranks, times = [], [], []
    for q in queries:
        t = time.perf_counter()
        hits = searcher.search(q[lang], limit=10)
        times.append(1000 * (time.perf_counter() - t))
        gold, pages = pid_of[q["paper"]], set(q["pages"])
        ranks.append(next((i for i, h in enumerate(hits, 1) if h.paper_id == gold and h.page is not None and
                           pages & set(range(h.page, (h.page_end or h.page) + 1))), None))
        pranks.append(next((i for i, h in enumerate(hits, 1) if h.paper_id == gold), None))
    out = _metrics(ranks, pranks)
    out.update({"p50_ms": round(statistics.median(times), 1), "p95_ms": round(sorted(times)[int(0.95 * (len(times) - 1))], 1)})
    out["split"] = {name: _metrics(ranks[first::2], pranks[first::2]) for name, first in (("odd", 0), ("even", 1))}
    return out


def _metrics(ranks: list, pranks: list) -> dict:
    n = len(ranks)
    return {"hit@1": round(sum(r == 1 for r in ranks) / n, 3),
            "hit@5": round(sum(r is not None and r <= 5 for r in ranks) / n, 3),
            "mrr@10": round(sum(1 / r for r in ranks if r) / n, 3),
            "paper@1": round(sum(r == 1 for r in pranks) / n, 3)}


def searcher(ws: Workspace, multilingual: bool, **index_settings) -> Searcher:
    s = Searcher(_with_multilingual(ws, multilingual))
    if index_settings:
        s.settings = IndexSettings(**{**ws.settings.index.model_dump(), **index_settings})
    return s


def quality(ws: Workspace, queries: list[dict]) -> dict:
    """English and Chinese questions without and with the multilingual space, and Chinese questions with the
    space but without the lexicon's translation (what each part adds)."""
    out = {}
    for name, on, lang, extra in (("en_without", False, "en", {}), ("zh_without", False, "zh", {}),
                                  ("en_with", True, "en", {}), ("zh_with_vectors_only", True, "zh",
                                                                 {"cjk_lexicon_weight": 0.0}),
                                  ("zh_with", True, "zh", {})):
        s = searcher(ws, on, **extra)
        evaluate(ws, queries[:3], lang, s)          # warm: models loaded, tables opened, lexicon read
        out[name] = evaluate(ws, queries, lang, s)
    return out


def grid(ws: Workspace, queries: list[dict]) -> dict:
    """Fusion weights for CJK questions (full text, multilingual vectors, lexicon translation)."""
    out = {}
    for fts, w, lex in ((1.0, 2.0, 0.0), (1.0, 2.0, 1.0), (1.0, 2.0, 2.0), (1.0, 1.0, 1.5), (1.0, 3.0, 1.5),
                        (0.5, 2.0, 1.5), (2.0, 2.0, 1.5)):
        s = searcher(ws, True, cjk_fts_weight=fts, multilingual_weight=w, cjk_lexicon_weight=lex)
        out[f"zh fts={fts} ml={w} lex={lex}"] = evaluate(ws, queries, "zh", s)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", help="corpus workspace DIR (built there when it has no papers, else reused)")
    ap.add_argument("--reuse-index", action="store_true", help="evaluate the existing index, do not rebuild it")
    ap.add_argument("--grid", action="store_true", help="also try other fusion weights")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    queries = load_queries()
    root = Path(args.workspace) if args.workspace else Path(tempfile.mkdtemp(prefix="pv-xling-")) / "corpus"
    results: dict = {"questions": len(queries), "cpus": os.cpu_count(), "load_avg_start": os.getloadavg()[0]}
    ws = Workspace(root)
    if not (ws.exists and ws.vault.paper_ids()):
        log("adding the corpus (papervault add) ...")
        ws = bench_index.build_corpus_workspace(root)
    if not args.reuse_index:
        log("indexing: English space, then the multilingual space ...")
        results["index"] = build_index(ws)
    log("embedding cost per chunk ...")
    results["embed_cost"] = embed_cost(ws)
    log("quality ...")
    results["quality"] = quality(ws, queries)
    if args.grid:
        log("fusion grid ...")
        results["grid"] = grid(ws, queries)
    results["load_avg_end"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(results, indent=2, ensure_ascii=False))
    else:
        _print(results)
    return 0


def _print(r: dict) -> None:
    print(f"machine: {r['cpus']} cpus, load average {r['load_avg_start']:.1f} -> {r['load_avg_end']:.1f}; "
          f"{r['questions']} questions in Chinese and English")
    if "index" in r:
        i = r["index"]
        print(f"index of {i['papers']} papers, {i['chunks']} chunks: without multilingual {i['index_s_without']} s "
              f"({i['index_cpu_s_without']} CPU s); multilingual space {i['multilingual_s']} s for {i['ml_chunks']} "
              f"chunks and {i['lexicon_terms']} lexicon terms ({i['lexicon_s']} s of it); with it {i['index_s_with']} s: "
              f"ratio {i['ratio_wall']} wall, {i['ratio_cpu']} CPU")
    e = r["embed_cost"]
    print(f"embedding cost per chunk ({e['texts']} chunk texts, {e['mean_chars']} characters on average): English "
          f"{e['english_ms_per_chunk']} ms ({e['english_cpu_ms_per_chunk']} CPU ms), multilingual "
          f"{e['multilingual_ms_per_chunk']} ms ({e['multilingual_cpu_ms_per_chunk']} CPU ms)")
    print(f"{'':36} {'hit@1':>6} {'hit@5':>6} {'mrr@10':>7} {'paper@1':>8} {'p50 ms':>7} {'p95 ms':>7}")
    for name, m in {**r["quality"], **r.get("grid", {})}.items():
        print(f"{name:36} {m['hit@1']:6.3f} {m['hit@5']:6.3f} {m['mrr@10']:7.3f} {m['paper@1']:8.3f} "
              f"{m['p50_ms']:7.1f} {m['p95_ms']:7.1f}")
        for half, h in m["split"].items():
            print(f"{'  ' + half + '-numbered questions':36} {h['hit@1']:6.3f} {h['hit@5']:6.3f} {h['mrr@10']:7.3f} "
                  f"{h['paper@1']:8.3f}")


if __name__ == "__main__":
    sys.exit(main())
