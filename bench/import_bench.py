"""Import benchmark: records/s and peak memory of reading + dedup for a large CSL-JSON export and a Zotero library,
the full `add` of the Zotero library into a vault, and the near-duplicate title threshold on labelled pairs.

    python bench/import_bench.py                 # 90,000 CSL records, 1,000 Zotero items, full add
    python bench/import_bench.py --csl 20000 --zotero 300 --no-add --json
    python bench/import_bench.py --titles        # similarity of labelled title pairs vs. the threshold

Each phase runs in its own process so that its peak resident memory (ru_maxrss) is its own.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))   # the Zotero library builder and PDF maker the tests use


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_csl(path: Path, n: int) -> None:
    """A CSL-JSON export of `n` records, about 1 KB each: titles of 4-12 words drawn from a Zipf vocabulary of
    20,000 words (like real titles: a few very common words, many rare ones); 2% are the same paper again
    (same DOI) and 1% the same title with a typo (no DOI)."""
    import random

    rnd = random.Random(5)
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "qu", "da", "fe", "gi", "ho", "ja"]
    vocab = list(dict.fromkeys("".join(rnd.choice(syll) for _ in range(rnd.randint(2, 4))) for _ in range(30000)))[:20000]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    titles: list[tuple[str, str, int]] = []
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("[\n")
        for i in range(n):
            doi, author, year = f"10.5555/bench.{i}", f"Author{i % 5000}", 1990 + i % 35
            if i % 50 == 49 and titles:
                j = rnd.randrange(len(titles))
                (title, author, year), doi = titles[j], f"10.5555/bench.{j}"
            elif i % 100 == 33 and titles:
                t, author, year = titles[rnd.randrange(len(titles))]
                k = rnd.randrange(1, len(t) - 1)
                title, doi = t[:k] + t[k + 1:], None          # a dropped letter: a near-duplicate
            else:
                title = " ".join(rnd.choices(vocab, weights, k=rnd.randint(4, 12))).capitalize()
                titles.append((title, author, year))
            item = {"id": f"key{i}", "type": rnd.choice(["article-journal", "paper-conference", "book", "report"]),
                    "title": title, "author": [{"family": author, "given": "A."}],
                    "issued": {"date-parts": [[year, 1 + i % 12]]}, "DOI": doi,
                    "container-title": "Journal of Benchmarks", "abstract": "An abstract about " + title + ". " * 40,
                    "keyword": "bench, import"}
            fh.write(("," if i else "") + json.dumps(item) + "\n")
        fh.write("]\n")


def phase_csl(n: int) -> dict:
    from papervault.sources.csl import read_csl
    from papervault.sources.dedup import DedupIndex
    from papervault.sources.problems import SourceProblem

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "export.json"
        make_csl(path, n)
        size = path.stat().st_size
        base = _rss_mb()
        ix = DedupIndex()
        t0 = time.perf_counter()
        recs = merged = problems = 0
        for item in read_csl(path):
            if isinstance(item, SourceProblem):
                problems += 1
                continue
            recs += 1
            _, match = ix.assign(item)
            merged += match is not None
        dt = time.perf_counter() - t0
    return {"phase": "csl", "records": recs, "merged": merged, "problems": problems, "file_mb": round(size / 2**20, 1),
            "seconds": round(dt, 2), "records_per_s": round(recs / dt), "peak_rss_mb": round(_rss_mb(), 1),
            "rss_growth_mb": round(_rss_mb() - base, 1)}


def phase_zotero(n: int, full_add: bool) -> dict:
    from support_arxiv import make_pdf
    from support_zotero import build_large_library

    from papervault.sources.dedup import DedupIndex
    from papervault.sources.zotero import read_library

    out: dict = {"phase": "zotero", "items": n}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = build_large_library(Path(tmp) / "Zotero", n, pdf=lambda title: make_pdf(title, pages=2))
        base = _rss_mb()
        t0 = time.perf_counter()
        ix = DedupIndex()
        recs = 0
        for r in read_library(data_dir):
            recs += 1
            ix.assign(r)
        dt = time.perf_counter() - t0
        out.update(records=recs, read_dedup_seconds=round(dt, 2), read_dedup_records_per_s=round(recs / dt),
                   read_peak_rss_mb=round(_rss_mb(), 1), read_rss_growth_mb=round(_rss_mb() - base, 1))
        if full_add:
            os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(ROOT.parent / "shared/models/all-MiniLM-L6-v2-onnx"))
            from papervault.ingest import add
            from papervault.workspace import Workspace

            ws, _ = Workspace.init(Path(tmp) / "ws")
            t0 = time.perf_counter()
            report = add(ws, [], options={"zotero": str(data_dir)})
            dt = time.perf_counter() - t0
            out.update(add_seconds=round(dt, 1), add_records_per_s=round(recs / dt, 1), added=len(report.added),
                       with_pdf=sum(1 for m in ws.vault.iter_meta() if m.sha256),
                       add_merged=len(report.merged), add_problems=len(report.problems),
                       add_peak_rss_mb=round(_rss_mb(), 1))
    return out


def phase_titles() -> dict:
    from papervault.ids import normalize_title
    from papervault.sources.dedup import TITLE_THRESHOLD, title_similarity, titles_differ

    rows = [r for r in csv.reader(open(ROOT / "bench" / "title_pairs.tsv", encoding="utf-8"), delimiter="\t")
            if r and not r[0].startswith("#")]
    scored = []
    for label, a, b in rows:
        na, nb = normalize_title(a), normalize_title(b)
        guard = not titles_differ(na, nb)
        scored.append((label, round(title_similarity(na, nb) if guard else 0.0, 3), a, b))
    same = sorted(s for lab, s, *_ in scored if lab == "same")
    diff = sorted(s for lab, s, *_ in scored if lab == "diff")
    return {"phase": "titles", "threshold": TITLE_THRESHOLD, "pairs_same": len(same), "pairs_diff": len(diff),
            "recall": round(sum(s >= TITLE_THRESHOLD for s in same) / len(same), 3),
            "false_merges": sum(s >= TITLE_THRESHOLD for s in diff),
            "lowest_same": same[:3], "highest_diff": diff[-4:],
            "misses": [(a, b, s) for lab, s, a, b in scored if lab == "same" and s < TITLE_THRESHOLD],
            "false": [(a, b, s) for lab, s, a, b in scored if lab == "diff" and s >= TITLE_THRESHOLD]}


def _child(args: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csl", type=int, default=90000, help="CSL-JSON records to generate and import")
    ap.add_argument("--zotero", type=int, default=1000, help="Zotero items to generate and import")
    ap.add_argument("--no-add", action="store_true", help="skip the full `add` of the Zotero library to a vault")
    ap.add_argument("--titles", action="store_true", help="only the title-threshold measurement")
    ap.add_argument("--json", action="store_true", help="print JSON")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.phase == "csl":
        print(json.dumps(phase_csl(a.csl)))
        return
    if a.phase == "zotero":
        print(json.dumps(phase_zotero(a.zotero, not a.no_add)))
        return
    results = [phase_titles()] if a.titles else [
        _child(["--phase", "csl", "--csl", str(a.csl)]),
        _child(["--phase", "zotero", "--zotero", str(a.zotero)] + (["--no-add"] if a.no_add else [])),
        phase_titles()]
    if a.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        if r["phase"] == "csl":
            print(f"CSL-JSON  {r['records']:>7} records ({r['file_mb']} MB): read+dedup {r['seconds']} s = "
                  f"{r['records_per_s']} records/s; merged {r['merged']}; peak RSS {r['peak_rss_mb']} MB "
                  f"(+{r['rss_growth_mb']} MB while importing)")
        elif r["phase"] == "zotero":
            print(f"Zotero    {r['records']:>7} items: read+dedup {r['read_dedup_seconds']} s = "
                  f"{r['read_dedup_records_per_s']} records/s; peak RSS {r['read_peak_rss_mb']} MB "
                  f"(+{r['read_rss_growth_mb']} MB)")
            if "add_seconds" in r:
                print(f"          full add to vault: {r['add_seconds']} s = {r['add_records_per_s']} records/s "
                      f"({r['added']} added, {r['with_pdf']} with PDF, {r['add_problems']} problems); peak RSS {r['add_peak_rss_mb']} MB")
        else:
            print(f"Titles    threshold {r['threshold']}: recall {r['recall']} on {r['pairs_same']} true variants, "
                  f"{r['false_merges']} false merges on {r['pairs_diff']} hard negatives; "
                  f"lowest true {r['lowest_same']}, highest negative {r['highest_diff']}")
            for a_, b_, s in r["misses"]:
                print(f"          missed {s}: {a_!r} / {b_!r}")
            for a_, b_, s in r["false"]:
                print(f"          merged {s}: {a_!r} / {b_!r}")


if __name__ == "__main__":
    main()
