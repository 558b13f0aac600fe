"""Searchable as it arrives: time to first search, to all searchable and to index complete, side by side in one
run with the naive references, on the shared PDFs and on a scan-heavy set built from them.

    .venv/bin/python bench/arrival.py [--pdfs DIR] [--papers N] [--scan-share 0.33] [--sets corpus,scan]
                                      [--no-quality] [--json] [--keep DIR]

For each set of PDFs, from fresh workspaces (no shared parse cache), every command a process of its own:

- `reference + OCR`: the naive script of bench/time_to_search.py (PyMuPDF's plain text, one pass of embedding,
  LanceDB with a full-text index), which also reads each page without a text layer by OCR (RapidOCR with the
  parser's settings, in its one process): searchable, and complete, when it ends. Its index holds what
  papervault's complete index holds (every page's text), so the ratios are taken against it.
- `reference`: the same script without OCR (a scan's pages are left out of its index), for comparison.
- `one pass`: `papervault add DIR --wait`: every PDF parsed fully (layout, figures, tables, repair, OCR), then
  every vector embedded, then searchable: searchable and complete when it returns.
- `arrival`: `papervault add DIR` with [parse] first_pass: each PDF's text layer and identity first, searchable
  when `add` returns; the arrival worker parses fully behind it and the background fill embeds the paragraphs.
  *First search* is when a query over a paper already written (words of its first page) is answered from its
  own rows, polled in this process while `add` runs (`add` writes the cheapest papers first); *all searchable*
  is when `add` returns; *complete* is when no paper waits for its full parse, the worker has indexed its last
  batch and no paragraph waits for its vector (less the seconds the worker and the fill were paused while the
  benchmark copied the workspace for the quality measure, `paused_for_copy_s`).
  The machine's busy CPU seconds to each (`machine_cpu_s`, from /proc/stat: the worker, its parser processes and
  the fill are detached processes) say what the arrival costs in all, on an otherwise idle machine.

Quality (bench/index.py's English queries, Hit@1/Hit@5/MRR@10, hybrid) is measured on a copy of the arrival
workspace taken when `add` returned (worker and fill paused for the copy) and on the complete one, and on the
one-pass workspace. The scan-heavy set rasterises whole papers into image-only PDFs (grey, 150 dpi, as a
scanner makes them) until about `--scan-share` of its pages need OCR.

The extrapolation to 1,000 papers (15,000 pages, 5% scanned) on 2 cores uses the per-page costs measured here:
the first pass's seconds a page, the full parse's seconds a text page and a scanned page, and the embedding's
seconds a chunk, all from this run's CPU times.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


tts = _bench("time_to_search")
log = tts.log


def build_scan_set(src: Path, out: Path, share: float, papers: int | None) -> dict:
    """Copy the PDFs of `src` to `out`, whole papers rasterised into image-only PDFs until about `share` of all
    pages need OCR. Returns {papers, pages, scanned_pages, scanned}."""
    import pymupdf

    out.mkdir(parents=True, exist_ok=True)
    pdfs = sorted(src.glob("*.pdf"))[:papers] if papers else sorted(src.glob("*.pdf"))
    sizes = {p: pymupdf.open(p).page_count for p in pdfs}
    total = sum(sizes.values())
    target, got, scanned = share * total, 0, []
    for p in sorted(pdfs, key=lambda p: (sizes[p], p.name)):      # smaller papers first: many scans, not one
        if got + sizes[p] <= target * 1.15 and got < target:
            scanned.append(p)
            got += sizes[p]
    for p in pdfs:
        dst = out / p.name
        if p not in scanned:
            shutil.copy(p, dst)
            continue
        new = pymupdf.open()
        with pymupdf.open(p) as doc:
            for page in doc:
                pix = page.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY)
                q = new.new_page(width=page.rect.width, height=page.rect.height)
                q.insert_image(q.rect, pixmap=pix)
        new.save(dst, deflate=True)
    return {"papers": len(pdfs), "pages": total, "scanned_pages": got, "scanned": [p.name for p in scanned]}


def _probe(pdfs: Path) -> dict[str, str]:
    """For each PDF with a text layer on its first page: a query of its words (which paper `add` writes first is
    its business: cheapest first)."""
    import pymupdf

    out = {}
    for p in sorted(pdfs.glob("*.pdf")):
        with pymupdf.open(p) as doc:
            words = doc[0].get_text().split() if doc.page_count else []
        if len(words) >= 30:
            out[p.name] = " ".join(words[5:25])
    if not out:
        raise SystemExit(f"no PDF in {pdfs} has a text layer on its first page")
    return out


def _answered(ws_root: Path, queries: dict[str, str]) -> bool:
    """Whether a search over the workspace answers the query of a paper already in the vault with a row of that
    paper (the first paper written, whichever it is)."""
    from papervault.index.search import Searcher
    from papervault.workspace import Workspace

    try:
        ws = Workspace(ws_root)
        searcher = Searcher(ws)
        names = {}
        for meta in ws.vault.iter_meta():
            for s in meta.sources:
                names[Path(s).name] = meta.id
        for name, query in queries.items():
            if name not in names:
                continue
            if any(h.paper_id == names[name] for h in searcher.search(query, limit=5)):
                return True
    except Exception:  # noqa: BLE001 - not searchable yet (no table, no paper)
        return False
    return False


def _complete(ws_root: Path) -> bool:
    from papervault.index import fill
    from papervault.index.store import PaperIndex
    from papervault.parse import firstpass
    from papervault.workspace import Workspace

    ws = Workspace(ws_root)
    # the worker has written and indexed its last batch when its state says "finished" (its process may take a
    # moment more to exit: its threads and model sessions wind down)
    if firstpass.waiting(ws) or (firstpass.running(ws) and (firstpass.state(ws) or {}).get("phase") != "finished"):
        return False
    try:
        pending = PaperIndex(ws).stats().get("pending", 0)
    except Exception:  # noqa: BLE001
        return False
    return not pending and not fill.running(ws)


def run_arrival(pdfs: Path, base: Path, quality: bool, complete: bool = True) -> dict:
    ws = base / "ws-arrival"
    shutil.rmtree(ws, ignore_errors=True)
    env = tts.clean_env(base / "home-arrival")
    env["PAPERVAULT_PARSE_FIRST_PASS"] = "true"
    pv = [sys.executable, "-m", "papervault"]
    subprocess.run([*pv, "init", str(ws)], env=env, check=True, capture_output=True)
    env["PAPERVAULT_WORKSPACE"] = str(ws)
    queries = _probe(pdfs)
    for k in ("PAPERVAULT_EMBED_MODEL_PATH", "PAPERVAULT_EMBED_MODEL", "HF_HUB_OFFLINE"):
        os.environ[k] = env[k]
    t0, t0_wall, cpu0 = time.perf_counter(), time.time(), machine_cpu()
    proc = subprocess.Popen([*pv, "add", str(pdfs), "--json"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first = None
    while proc.poll() is None:
        if first is None and (ws / ".papervault" / "index").is_dir() and _answered(ws, queries):
            first = time.perf_counter() - t0
        time.sleep(0.25)
    out, err = proc.communicate()
    searchable = time.perf_counter() - t0
    cpu_searchable = machine_cpu()
    if proc.returncode:
        raise SystemExit(f"add failed: {err[-2000:]}")
    if first is None:
        first = searchable if _answered(ws, queries) else None
    report = json.loads(out)
    log(f"arrival: first search {first} s, all searchable {searchable:.1f} s")
    at_search = None
    paused = 0.0
    if quality:
        pids = [p for p in ((report.get("arrival") or {}).get("pid"),
                            ((report.get("index") or {}).get("fill") or {}).get("pid")) if p]
        for p in pids:
            _signal(p, signal.SIGSTOP)
        paused = time.perf_counter()
        try:
            at_search = base / "ws-arrival-at-search"
            shutil.rmtree(at_search, ignore_errors=True)
            shutil.copytree(ws, at_search, ignore=shutil.ignore_patterns("*.lock"))
        finally:
            for p in pids:
                _signal(p, signal.SIGCONT)
            paused = time.perf_counter() - paused
    done = cpu_done = None
    if complete:
        while not _complete(ws):
            time.sleep(0.25)
        # the copy for the quality measure paused the worker and the fill: not part of the arrival's time
        done = round(time.perf_counter() - t0 - paused, 2)
        cpu_done = machine_cpu()
        log(f"arrival: complete {done:.1f} s")
    else:
        _stop_behind(ws, report)
    first_commit = _first_commit_s(ws, t0_wall)
    return {"first_search_s": round(first, 2) if first is not None else None, "all_searchable_s": round(searchable, 2),
            "complete_s": done, "paused_for_copy_s": round(paused, 2), "first_commit_s": first_commit,
            "machine_cpu_s": {"all_searchable": _delta(cpu0, cpu_searchable), "complete": _delta(cpu0, cpu_done)},
            "papers": len(report.get("added", [])),
            "index_line": (report.get("index") or {}).get("line"), "timings": report.get("timings", {}),
            "quality": {"all_searchable": _quality(at_search), "complete": _quality(ws) if complete else None}
            if quality else None}


def _delta(a: float | None, b: float | None) -> float | None:
    return round(b - a, 1) if a is not None and b is not None else None


def _stop_behind(ws: Path, report: dict) -> None:
    """Stop the arrival worker and the fill (`--no-complete`: a set whose full parse would take hours)."""
    from papervault.index import fill
    from papervault.parse import firstpass
    from papervault.workspace import Workspace

    w = Workspace(ws)
    for pid in {(report.get("arrival") or {}).get("pid"), firstpass.running(w), fill.running(w)} - {None, -1}:
        _signal(pid, signal.SIGKILL)


def _first_commit_s(ws: Path, t0_wall: float) -> float | None:
    """Seconds from the add's start to its first commit (git's commit times, whole seconds)."""
    out = subprocess.run(["git", "-C", str(ws / "vault"), "log", "--reverse", "--format=%ct %s"],
                         capture_output=True, text=True).stdout.splitlines()
    for line in out:
        stamp, subject = line.split(" ", 1)
        if subject.startswith("add:"):
            return round(int(stamp) - t0_wall, 1)
    return None


def machine_cpu() -> float | None:
    """CPU seconds the whole machine has spent busy (user, nice, system, irq) since boot, from /proc/stat
    (Linux), or None: the arrival's work is spread over detached processes (the worker, its parser processes,
    the fill), so its cost is read as the machine's, on an otherwise idle machine."""
    try:
        with open("/proc/stat") as fh:
            fields = fh.readline().split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
        return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


def _signal(pid: int, sig) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _quality(ws_root: Path | None) -> dict | None:
    if ws_root is None:
        return None
    index = _bench("index")
    import yaml

    from papervault.workspace import Workspace

    ws = Workspace(ws_root)
    queries = yaml.safe_load(index.QUERIES.read_text())["queries"]
    have = {Path(s).name for m in ws.vault.iter_meta() for s in m.sources}
    queries = [q for q in queries if q["paper"] in have]
    en = index.evaluate(ws, queries, {"hybrid": index.VARIANTS["hybrid"]})["hybrid"]
    return {k: en[k] for k in ("hit@1", "hit@5", "mrr@10")} | {"queries": len(queries)}


def run_one_pass(pdfs: Path, base: Path, quality: bool) -> dict:
    ws = base / "ws-one-pass"
    shutil.rmtree(ws, ignore_errors=True)
    env = tts.clean_env(base / "home-one-pass")
    pv = [sys.executable, "-m", "papervault"]
    subprocess.run([*pv, "init", str(ws)], env=env, check=True, capture_output=True)
    env["PAPERVAULT_WORKSPACE"] = str(ws)
    cpu0 = machine_cpu()
    wall, cpu, out = tts._timed([*pv, "add", str(pdfs), "--wait", "--json"], env)
    busy = _delta(cpu0, machine_cpu())
    log(f"one pass (add --wait): {wall:.1f} s wall, {cpu:.1f} CPU s, machine {busy} CPU s")
    # (`cpu_s` leaves out the parser processes: the fork server's children, never reaped by `add`)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "machine_cpu_s": busy, "timings": out.get("timings", {}),
            "quality": _quality(ws) if quality else None}


def measure(pdfs: Path, base: Path, quality: bool, arrival_only: bool = False, complete: bool = True) -> dict:
    if arrival_only:
        return {"arrival": run_arrival(pdfs, base, quality, complete)}
    ref = tts.run_reference(str(pdfs), "pdfs", base, "ref")
    ref_ocr = tts.run_reference(str(pdfs), "pdfs+ocr", base, "ref-ocr")
    one = run_one_pass(pdfs, base, quality)
    arr = run_arrival(pdfs, base, quality)
    dens = (("script_ocr", ref_ocr["wall_s"]), ("script", ref["wall_s"]), ("one_pass", one["wall_s"]))
    ratio = {f"{k}_over_{name}": round(arr[k] / den, 3) if arr[k] is not None else None
             for k in ("first_search_s", "all_searchable_s", "complete_s") for name, den in dens}
    return {"reference_script": ref, "reference_script_ocr": ref_ocr, "one_pass": one, "arrival": arr,
            "ratios": ratio}


def extrapolate(results: dict) -> dict:
    """1,000 papers, 15,000 pages, 5% scanned, on 2 cores, from this run's per-page costs: the machine's busy CPU
    seconds of the one-pass add a text page (the shared PDFs) and an OCR'd page (what the scan-heavy set costs
    more, over its scanned pages), and the first pass's seconds a page."""
    corpus = results.get("corpus") or next(iter(results.values()))
    pages = corpus["set"]["pages"]
    t = corpus["arrival"]["timings"]
    first_cpu = sum(v.get("cpu_s", 0) for k, v in t.items() if "first pass" in k) / max(pages, 1)
    add_wall = corpus["arrival"]["all_searchable_s"]
    one_cpu = corpus["one_pass"].get("machine_cpu_s") or corpus["one_pass"]["cpu_s"]
    scan = results.get("scan")
    per_text = one_cpu / max(pages, 1)
    per_scan = None
    if scan:
        scan_cpu = scan["one_pass"].get("machine_cpu_s") or scan["one_pass"]["cpu_s"]
        extra = scan_cpu - per_text * (scan["set"]["pages"] - scan["set"]["scanned_pages"])
        per_scan = max(extra / max(scan["set"]["scanned_pages"], 1), per_text)
    per_scan = per_scan or 8.0
    n_pages, n_scan = 15_000, 750
    searchable = add_wall / pages * n_pages         # the first pass and its index steps scale with the pages
    complete_cpu = per_text * (n_pages - n_scan) + per_scan * n_scan
    return {"pages": n_pages, "scanned_pages": n_scan, "first_pass_cpu_s_per_page": round(first_cpu, 4),
            "full_parse_and_index_cpu_s_per_text_page": round(per_text, 3),
            "cpu_s_per_scanned_page": round(per_scan, 2),
            "all_searchable_min": round(searchable / 60, 1),
            "complete_min_on_2_cores": round(complete_cpu / 2 / 60, 1),
            "how": "all searchable: this run's `add` wall seconds per page x 15,000 (an upper bound: a 16-paper "
                   "add is mostly its fixed costs); complete: the one pass's machine CPU seconds per text page "
                   "and per scanned page, over 2 cores"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", default=str(tts.CORPUS))
    ap.add_argument("--papers", type=int, default=None, help="only the first N PDFs (by name) of each set")
    ap.add_argument("--scan-papers", type=int, default=None, help="only the first N PDFs for the scan-heavy set")
    ap.add_argument("--scan-share", type=float, default=1 / 3)
    ap.add_argument("--sets", default="corpus,scan")
    ap.add_argument("--no-quality", action="store_true")
    ap.add_argument("--arrival-only", action="store_true",
                    help="only the first pass and its worker (a large folder: first search and all searchable)")
    ap.add_argument("--no-complete", action="store_true",
                    help="stop the worker once all is searchable (a set whose full parse would take hours)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep")
    args = ap.parse_args(argv)
    base = Path(args.keep or tempfile.mkdtemp(prefix="pv-arrival-")).resolve()
    base.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.sets.split(","):
        src = base / f"pdfs-{name}"
        shutil.rmtree(src, ignore_errors=True)
        n = args.scan_papers if name == "scan" and args.scan_papers else args.papers
        info = build_scan_set(Path(args.pdfs), src, args.scan_share if name == "scan" else 0.0, n)
        log(f"{name}: {info['papers']} PDFs, {info['pages']} pages, {info['scanned_pages']} rasterised")
        results[name] = {"set": info, **measure(src, base / name, not args.no_quality, args.arrival_only,
                                                not args.no_complete)}
    if not args.arrival_only:
        results["extrapolation"] = extrapolate(results)
    results["load_average_end"] = round(os.getloadavg()[0], 2)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print(results)
    return 0


def _print(r: dict) -> None:
    for name, res in r.items():
        if name in ("extrapolation", "load_average_end"):
            continue
        s, a = res["set"], res["arrival"]
        o, ref, ref_ocr = res.get("one_pass") or {}, res.get("reference_script"), res.get("reference_script_ocr")
        print(f"{name}: {s['papers']} PDFs, {s['pages']} pages, {s['scanned_pages']} of them scans")
        if ref:
            print(f"  reference script + OCR  {ref_ocr['wall_s']:8.1f} s (searchable = complete; "
                  f"{ref_ocr.get('ocr_pages')} pages read by OCR)")
            print(f"  reference script        {ref['wall_s']:8.1f} s (searchable = complete; reads no scan)")
            print(f"  one pass (add --wait)   {o['wall_s']:8.1f} s (searchable = complete)")
        print(f"  arrival: first search   {a['first_search_s']} s (first commit {a.get('first_commit_s')} s)")
        print(f"  arrival: all searchable {a['all_searchable_s']:8.1f} s ({a.get('papers')} papers)")
        print(f"  arrival: complete       {a['complete_s']} s")
        cpu = a.get("machine_cpu_s") or {}
        if cpu.get("complete") is not None:
            print(f"  arrival: machine CPU    {cpu.get('all_searchable')} s to all searchable, {cpu['complete']} s to "
                  "complete")
        for k, v in (res.get("ratios") or {}).items():
            print(f"    {k:40s} {v}")
        aq = a.get("quality") or {}
        for label, q in (("one pass", o.get("quality")), ("arrival, all searchable", aq.get("all_searchable")),
                         ("arrival, complete", aq.get("complete"))):
            if q:
                print(f"  quality {label:24s} hit@1 {q['hit@1']:.3f} hit@5 {q['hit@5']:.3f} MRR@10 {q['mrr@10']:.3f} "
                      f"({q['queries']} queries)")
    e = r.get("extrapolation")
    if e:
        print(f"1,000 papers ({e['pages']} pages, {e['scanned_pages']} scanned) on 2 cores: all searchable in about "
              f"{e['all_searchable_min']} min, complete in about {e['complete_min_on_2_cores']} min ({e['how']})")
    print(f"load average at the end: {r['load_average_end']}")


if __name__ == "__main__":
    raise SystemExit(main())
