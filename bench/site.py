"""Benchmark: build the site for a vault of N synthetic paper notes (default 1,000) and print the time.

    .venv/bin/python bench/site.py [N] [--fulltext] [--stage-only] [--engine mkdocs|zensical] [--no-compare]

Notes carry realistic frontmatter, a few hundred words, citations between papers and a survey citing 50 of
them; --fulltext adds a 4-page paper.md per paper whose reference list (30 entries)
names 8 vault papers by title, the low numbers most (the citation map and the paper pages' neighbourhoods);
--stage-only stops after staging (the part papervault computes, timed per part). Staging runs twice: the second
time the citation edges, the full texts' page anchors and the sanitised neighbourhood drawings come from what an
unchanged vault keeps (.papervault/cache/site-graph.json, site-pages.json). The
site is then built with the citation map and, for comparison, without it (no edges: no neighbourhoods, empty
maps). The first build also loads jieba's dictionary (~1-4 s). Between them the site is built once more from the
unchanged vault: it stages, finds nothing changed and leaves site/ as it is.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
from pathlib import Path

from papervault.models import PaperMeta
from papervault.site.build import build_site, stage
from papervault.workspace import Workspace

WORDS = ("consensus quorum replica latency throughput index vector embedding transformer attention storage "
         "compaction garbage collector heap pointer type inference theorem proof benchmark dataset cache "
         "scheduler kernel process thread lock transaction isolation snapshot 注意力 机制 分布式 系统").split()


def make(root: Path, n: int, fulltext: bool) -> Workspace:
    rnd = random.Random(7)
    ws, _ = Workspace.init(root)
    v = ws.vault
    ids = [f"author{i:04d}{1990 + i % 35}{rnd.choice(WORDS[:20])}" for i in range(n)]
    titles = [f"On {rnd.choice(WORDS)} and {rnd.choice(WORDS)} ({i})" for i in range(n)]
    for i, pid in enumerate(ids):
        body = [f"# Paper {i}\n", "## Summary\n"]
        for _ in range(6):
            body.append(" ".join(rnd.choice(WORDS) for _ in range(60)) + f" [p. {rnd.randint(1, 3)}](paper.md#page-1).\n")
        body.append(f"\nRelated: [@{rnd.choice(ids)}] and $O(n \\log n)$.\n")
        meta = PaperMeta(id=pid, title=titles[i],
                         authors=[f"Ada Author{i}", "Bo Second", "Cy Third"][: 1 + i % 3], year=1990 + i % 35,
                         venue=rnd.choice(["SOSP", "OSDI", "NeurIPS", "ICML", "VLDB", "PLDI"]),
                         tags=rnd.sample(WORDS[:12], 2), doi=f"10.1000/{i}", status="analysed")
        v.write_note(meta, "\n".join(body))
        if fulltext:
            pages = [f'<a id="page-{p}"></a>\n\n## Section {p}\n\n' + " ".join(rnd.choice(WORDS) for _ in range(400))
                     for p in (1, 2, 3)]
            # a reference list of 30 entries, 8 of them vault papers (the low numbers cited most, as in a field)
            cited = {int(n * rnd.random() ** 2.5) for _ in range(8)} - {i}
            refs = [f"[{k}] A. Author and B. Author. {titles[j]}. In Proc. SOSP, 2001." for k, j in enumerate(cited, 1)]
            refs += [f"[{k}] C. Other. A paper outside the vault number {k} on {rnd.choice(WORDS)}. Journal, 1999."
                     for k in range(len(refs) + 1, 31)]
            pages.append('<a id="page-4"></a>\n\n## References\n\n' + "\n\n".join(refs))
            (v.paper_dir(pid) / "paper.md").write_text("\n\n".join(pages), encoding="utf-8")
    s = v.survey_dir("bench-survey")
    s.mkdir(parents=True)
    (s / "survey.md").write_text("# Bench survey\n\n" + "\n\n".join(f"Claim {k} [@{pid}, p. 2]." for k, pid in
                                                                     enumerate(ids[:50])), encoding="utf-8")
    v.commit("bench vault")
    return ws


def build(ws: Workspace, label: str, engine: str) -> dict:
    c0 = time.process_time()
    r = build_site(ws, engine=engine)
    t = r.get("timings") or {}
    print(f"{label}: {r['pages']} pages in {r['seconds']:.1f} s wall (CPU in this process "
          f"{time.process_time() - c0:.1f} s); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    return r


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", nargs="?", type=int, default=1000, help="number of synthetic notes (default 1000)")
    ap.add_argument("--fulltext", action="store_true", help="a paper.md with a reference list per paper")
    ap.add_argument("--stage-only", action="store_true", help="stop after staging (timed per part)")
    ap.add_argument("--engine", choices=["mkdocs", "zensical"], default="mkdocs")
    ap.add_argument("--no-compare", action="store_true",
                    help="skip the second build (unchanged vault) and the build without the citation map")
    args = ap.parse_args()
    n, fulltext = args.n, args.fulltext
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.monotonic()
        ws = make(Path(tmp) / "ws", n, fulltext)
        print(f"vault: {n} notes{' + full texts' if fulltext else ''} written in {time.monotonic() - t0:.1f} s")
        # CPU time beside wall time: on a shared machine the wall clock mostly measures the neighbours.
        for label in ("staging alone (first: every reference list matched)",
                      "staging alone (again, unchanged vault: the edges from the cache)"):
            t0, c0 = time.monotonic(), time.process_time()
            staged = stage(ws)
            print(f"{label}: {staged['pages']} pages in {time.monotonic() - t0:.1f} s "
                  f"(CPU {time.process_time() - c0:.1f} s)")
            t = staged["timings"]
            print(f"  of which: citation graph {t.get('graph', 0):.2f} s ({staged['graph_reused']} papers' edges "
                  f"reused), neighbourhoods of the paper pages {t.get('neighbourhoods', 0):.2f} s, citation maps "
                  f"{t.get('map', 0):.2f} s; {staged['render_reused']} page anchors and drawings reused, "
                  f"{staged['written']} files written")
        if args.stage_only:
            return
        build(ws, f"site build with the citation map ({args.engine}, edges cached)", args.engine)
        size = sum(f.stat().st_size for f in ws.site_dir.rglob("*") if f.is_file())
        index = next(p for p in (ws.site_dir / "search" / "search_index.json", ws.site_dir / "search.json")
                     if p.is_file()).stat().st_size
        print(f"site size {size / 1e6:.1f} MB, search index {index / 1e6:.1f} MB")
        page, svg = ws.site_dir / "map.html", ws.site_dir / "map.svg"
        if page.is_file():
            print(f"citation map: map.html {page.stat().st_size / 1e6:.2f} MB, map.svg "
                  f"{svg.stat().st_size / 1e6:.2f} MB" if svg.is_file() else "")
        if args.no_compare:
            return
        again = build(ws, f"site build again, unchanged vault ({args.engine})", args.engine)
        print(f"  site/ left as it was: {again.get('unchanged')}")
        # the same build without the citation map: no edges (no neighbourhoods, empty maps)
        from papervault.site import citemap

        real = citemap.vault_graph
        citemap.vault_graph = lambda papers, cache=None: citemap.SiteGraph()
        try:
            build(ws, f"site build without the citation map ({args.engine})", args.engine)
        finally:
            citemap.vault_graph = real


if __name__ == "__main__":
    main()
