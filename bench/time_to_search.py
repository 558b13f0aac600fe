"""Time to search, side by side: papervault (`add DIR` then `index`, from a fresh workspace with no shared cache)
against the naive script a user would write instead (PyMuPDF's plain text cut into windows, embedded once with
fastembed's float32 model, written to LanceDB with a full-text index), on the same PDFs in one run.

    .venv/bin/python bench/time_to_search.py [--pdfs DIR] [--csl FILE --records N] [--quality] [--json] [--keep DIR]

The reference runs before and after papervault (the machine's load moves; the ratio uses their mean). Every
command runs as its own process, as a user runs it: model loads and imports are counted. Where papervault's time
goes comes from the `timings` each command reports in its `--json` output (wall and CPU seconds per phase).

`papervault index` returns once the index is searchable ([index] background_fill, docs/index.md) and a
background process embeds the paragraphs: the benchmark also waits for that fill and reports when the index was
complete. With `--quality` it measures search quality (bench/queries.yaml in English, bench/crosslingual.yaml in
Chinese) on a copy of the workspace taken the moment `index` returned (the fill paused for the copy) and on the
complete index: quality at time-to-search and at the end.

With `--csl FILE --records N` the input is the first N records of a CSL-JSON library (titles and abstracts, no
PDF): the reference embeds each record's title and abstract, papervault imports the file and indexes it.

Uses the local all-MiniLM-L6-v2 ONNX model in ../shared/models (nothing is downloaded).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PAPERVAULT_SHARED", ROOT.parent / "shared")).resolve()
CORPUS = SHARED / "corpus" / "pdfs"
MODEL_DIR = SHARED / "models" / "all-MiniLM-L6-v2-onnx"
MODEL = "sentence-transformers/all-MiniLM-L6-v2"

# The reference script, as a user would write it: every page's plain text, windows of WINDOW words that overlap by
# OVERLAP, fastembed's defaults (float32 model, batches of 256), one LanceDB table with a full-text index. Mode
# "pdfs+ocr" also reads a page without a text layer by OCR (bench/arrival.py: the scan-heavy set).
REFERENCE = r'''
import json, sys, time
t0 = time.perf_counter()
import fitz, lancedb
from fastembed import TextEmbedding
mode, src, out, model_dir, model = sys.argv[1:6]
WINDOW, OVERLAP = 200, 50
rows = []
ocr_pages = 0
if mode in ("pdfs", "pdfs+ocr"):
    from pathlib import Path
    engine = None
    if mode == "pdfs+ocr":
        # a page without a text layer read by RapidOCR, with the settings papervault's parser uses (its render,
        # detection size and one thread a process): the pipelines are compared, not two OCR set-ups
        from rapidocr import RapidOCR
        engine = RapidOCR(params={"Global.use_cls": False, "Global.log_level": "error",
                                  "Det.limit_side_len": 960, "Det.limit_type": "max", "Rec.rec_batch_num": 1})

    def text(page):
        global ocr_pages
        t = page.get_text()
        if engine is None or len(t.strip()) >= 40:
            return t
        ocr_pages += 1
        out = engine(page.get_pixmap(dpi=200, colorspace=fitz.csGRAY).tobytes("png"))
        return " ".join(out.txts) if out is not None and out.txts is not None else ""

    for pdf in sorted(Path(src).glob("*.pdf")):
        with fitz.open(pdf) as doc:
            words = " ".join(text(page) for page in doc).split()
        for i in range(0, max(len(words) - OVERLAP, 1), WINDOW - OVERLAP):
            rows.append({"paper": pdf.stem, "text": " ".join(words[i:i + WINDOW])})
else:
    n = int(mode.split(":")[1])
    for item in json.load(open(src))[:n]:
        rows.append({"paper": str(item.get("id")), "text": f"{item.get('title', '')}\n{item.get('abstract', '')}"})
t_parse = time.perf_counter()
emb = TextEmbedding(model_name=model, specific_model_path=model_dir)
vecs = list(emb.embed([r["text"] for r in rows], batch_size=32))  # 256 (the default) grew to 21 GB here
t_embed = time.perf_counter()
for r, v in zip(rows, vecs):
    r["vector"] = v.tolist()
db = lancedb.connect(out)
table = db.create_table("chunks", rows, mode="overwrite")
table.create_fts_index("text", replace=True)
t_end = time.perf_counter()
print(json.dumps({"windows": len(rows), "ocr_pages": ocr_pages, "parse_s": t_parse - t0, "embed_s": t_embed - t_parse,
                  "write_s": t_end - t_embed}))
'''


def log(*a) -> None:
    print(*a, file=sys.stderr, flush=True)


def _timed(cmd: list[str], env: dict) -> tuple[float, float, dict]:
    """(wall s, CPU s of the process and its children, its JSON output)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({r.returncode}): {r.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    try:
        out = json.loads(r.stdout)
    except json.JSONDecodeError:
        out = {}
    return wall, cpu, out


def clean_env(home: Path) -> dict:
    """No shared cache: a fresh HOME (so a fresh model cache and int8 copy), no PAPERVAULT_* cache variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAPERVAULT_")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), HF_HUB_OFFLINE="1", DO_NOT_TRACK="1",
               PAPERVAULT_EMBED_MODEL_PATH=str(MODEL_DIR), PAPERVAULT_EMBED_MODEL=MODEL,
               PAPERVAULT_PARSE_FIRST_PASS="false")   # the one pass; bench/arrival.py measures the first pass
    home.mkdir(parents=True, exist_ok=True)
    return env


def run_reference(src: str, mode: str, base: Path, tag: str) -> dict:
    out = base / f"reference-{tag}"
    shutil.rmtree(out, ignore_errors=True)
    wall, cpu, info = _timed([sys.executable, "-c", REFERENCE, mode, src, str(out), str(MODEL_DIR), MODEL],
                             clean_env(base / f"home-ref-{tag}"))
    log(f"reference ({tag}): {wall:.1f} s wall, {cpu:.1f} CPU s, {info.get('windows')} windows")
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), **{k: round(v, 2) if isinstance(v, float) else v
                                                               for k, v in info.items()}}


def _bench_module(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def quality(ws_root: Path) -> dict:
    """Hybrid Hit@1/Hit@5/MRR@10 of the English questions and of their Chinese versions (with the multilingual
    space) on this workspace, as bench/index.py and bench/crosslingual.py measure them."""
    os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(MODEL_DIR))
    os.environ.setdefault("PAPERVAULT_EMBED_MODEL", MODEL)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from papervault.workspace import Workspace

    index, xl = _bench_module("index"), _bench_module("crosslingual")
    import yaml

    ws = Workspace(ws_root)
    queries = yaml.safe_load(index.QUERIES.read_text())["queries"]
    en = index.evaluate(ws, queries, {"hybrid": index.VARIANTS["hybrid"]})["hybrid"]
    zh_queries = xl.load_queries()
    zh = xl.evaluate(ws, zh_queries, "zh", xl.searcher(ws, True))
    keep = ("hit@1", "hit@5", "mrr@10")
    return {"en": {k: en[k] for k in keep}, "zh": {k: zh[k] for k in keep},
            "zh_over_en_hit@5": round(zh["hit@5"] / en["hit@5"], 3) if en["hit@5"] else None}


def run_papervault(inputs: list[str], base: Path, measure_quality: bool = False, foreground: bool = False) -> dict:
    ws = base / "workspace"
    shutil.rmtree(ws, ignore_errors=True)
    env = clean_env(base / "home-pv")
    if foreground:      # every vector made before `index` returns, as before the background fill existed
        env["PAPERVAULT_INDEX_BACKGROUND_FILL"] = "false"
    pv = [sys.executable, "-m", "papervault"]
    subprocess.run([*pv, "init", str(ws)], env=env, check=True, capture_output=True)
    env["PAPERVAULT_WORKSPACE"] = str(ws)
    add_wall, add_cpu, add = _timed([*pv, "add", *inputs, "--json"], env)
    log(f"papervault add: {add_wall:.1f} s wall, {add_cpu:.1f} CPU s")
    t_index = time.perf_counter()
    idx_wall, idx_cpu, idx = _timed([*pv, "index", "--json"], env)
    log(f"papervault index: {idx_wall:.1f} s wall, {idx_cpu:.1f} CPU s, {idx.get('chunks_embedded')} chunks "
        f"embedded, {idx.get('chunks_pending')} left to the background fill")
    fill_pid = (idx.get("fill") or {}).get("pid")
    at_search = None
    if measure_quality and fill_pid:
        # the state a user searches the moment `index` returns: the fill paused while the workspace is copied
        os.kill(fill_pid, signal.SIGSTOP)
        try:
            at_search = base / "workspace-at-search"
            shutil.rmtree(at_search, ignore_errors=True)
            shutil.copytree(ws, at_search, ignore=shutil.ignore_patterns("*.lock"))
        finally:
            os.kill(fill_pid, signal.SIGCONT)
    fill = _wait_for_fill(ws, fill_pid) if fill_pid else {}
    complete_wall = time.perf_counter() - t_index + add_wall
    log(f"papervault complete (background fill done): {complete_wall:.1f} s after `add` began; "
        f"fill {fill.get('seconds')} s for {fill.get('filled')} paragraphs")
    return {"add": {"wall_s": round(add_wall, 2), "cpu_s": round(add_cpu, 2), "timings": add.get("timings", {}),
                    "papers": len(add.get("added", []))},
            "index": {"wall_s": round(idx_wall, 2), "cpu_s": round(idx_cpu, 2), "timings": idx.get("timings", {}),
                      "chunks": idx.get("chunks"), "embedded": idx.get("chunks_embedded"),
                      "multilingual": idx.get("multilingual")},
            "fill": fill, "complete_wall_s": round(complete_wall, 2),
            "quality": ({"at_search": quality(at_search) if at_search else None, "complete": quality(ws)}
                        if measure_quality else None),
            "wall_s": round(add_wall + idx_wall, 2), "cpu_s": round(add_cpu + idx_cpu, 2)}


def _wait_for_fill(ws: Path, pid: int, timeout: float = 4 * 3600) -> dict:
    """What `.papervault/fill.json` says once the background fill (process `pid`) has finished."""
    state = ws / ".papervault" / "fill.json"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            info = json.loads(state.read_text())
        except (OSError, ValueError):
            info = {}
        if info.get("finished") and info.get("pid") == pid:
            return info
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            raise SystemExit(f"the background fill (pid {pid}) ended without finishing; see "
                             f"{ws / '.papervault' / 'logs' / 'fill.log'}") from None
        time.sleep(0.5)
    raise SystemExit(f"the background fill of {ws} did not finish in {timeout} s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", default=str(CORPUS), help="folder of PDFs (default: the shared corpus)")
    ap.add_argument("--csl", help="a CSL-JSON library instead of PDFs")
    ap.add_argument("--records", type=int, default=2000, help="records of --csl to use (default 2000)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--keep", help="build under DIR and keep it")
    ap.add_argument("--quality", action="store_true", help="measure search quality at time-to-search and at the end")
    ap.add_argument("--foreground", action="store_true", help="papervault without the background fill "
                    "([index] background_fill = false): `index` embeds everything before it returns")
    args = ap.parse_args(argv)
    base = Path(args.keep or tempfile.mkdtemp(prefix="pv-tts-")).resolve()
    base.mkdir(parents=True, exist_ok=True)
    if args.csl:
        items = json.loads(Path(args.csl).read_text())[:args.records]
        src = base / f"library-{len(items)}.json"
        src.write_text(json.dumps(items))
        mode, inputs, what = f"csl:{len(items)}", [str(src)], f"{len(items)} CSL records"
    else:
        mode, inputs, what = "pdfs", [args.pdfs], f"PDFs in {args.pdfs}"
    log(f"time to search on {what}; load average {os.getloadavg()[0]:.2f}")
    before = run_reference(str(inputs[0]), mode, base, "before")
    pv = run_papervault(inputs, base, args.quality and not args.csl, args.foreground)
    after = run_reference(str(inputs[0]), mode, base, "after")
    ref_wall = (before["wall_s"] + after["wall_s"]) / 2
    ref_cpu = (before["cpu_s"] + after["cpu_s"]) / 2
    result = {"input": what, "load_average_end": round(os.getloadavg()[0], 2),
              "reference": {"before": before, "after": after, "mean_wall_s": round(ref_wall, 2),
                            "mean_cpu_s": round(ref_cpu, 2)},
              "papervault": pv,
              "ratio_wall": round(pv["wall_s"] / ref_wall, 3), "ratio_cpu": round(pv["cpu_s"] / ref_cpu, 3)}
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        _print(result)
    return 0


def _print(r: dict) -> None:
    ref, pv = r["reference"], r["papervault"]
    print(f"time to search on {r['input']}")
    print(f"  reference before    {ref['before']['wall_s']:8.1f} s wall {ref['before']['cpu_s']:8.1f} CPU s "
          f"({ref['before'].get('windows')} windows)")
    print(f"  papervault add      {pv['add']['wall_s']:8.1f} s wall {pv['add']['cpu_s']:8.1f} CPU s")
    print(f"  papervault index    {pv['index']['wall_s']:8.1f} s wall {pv['index']['cpu_s']:8.1f} CPU s "
          f"({pv['index']['chunks']} chunks, {pv['index']['embedded']} embedded)")
    print(f"  reference after     {ref['after']['wall_s']:8.1f} s wall {ref['after']['cpu_s']:8.1f} CPU s")
    print(f"  ratio papervault / reference: {r['ratio_wall']:.3f} wall, {r['ratio_cpu']:.3f} CPU "
          "(time to search: `add` + `index`)")
    fill = pv.get("fill") or {}
    if fill:
        print(f"  background fill           {fill.get('seconds', 0):8.1f} s for {fill.get('filled')} paragraphs; "
              f"index complete {pv['complete_wall_s']:.1f} s after `add` began "
              f"({pv['complete_wall_s'] / ref['mean_wall_s']:.3f} of the reference)")
    q = pv.get("quality") or {}
    for when in ("at_search", "complete"):
        if q.get(when):
            en, zh = q[when]["en"], q[when]["zh"]
            print(f"  quality {when:10s} English hit@1 {en['hit@1']:.3f} hit@5 {en['hit@5']:.3f} "
                  f"MRR@10 {en['mrr@10']:.3f}; Chinese hit@5 {zh['hit@5']:.3f} "
                  f"({q[when]['zh_over_en_hit@5']:.2f} x English)")
    for cmd in ("add", "index"):
        timings = pv[cmd].get("timings") or {}
        if timings:
            print(f"  where `{cmd}` spends its time (wall s / CPU s):")
            for phase, t in timings.items():
                print(f"    {phase:28s} {t.get('wall_s', 0):8.2f} {t.get('cpu_s', 0):8.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
