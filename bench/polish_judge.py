"""Benchmark of polish's support judges on labelled claim/passage pairs: precision and recall of "supported".

    .venv/bin/python bench/polish_judge.py                       # imports the cited corpus papers first
    .venv/bin/python bench/polish_judge.py --workspace /tmp/ws   # a workspace that holds them already
    .venv/bin/python bench/polish_judge.py --errors              # also list the test-half pairs each judge gets wrong

Each line of bench/claim_pairs.jsonl is a claim as a survey writes it, the paper it cites (`paper`, a vault id;
`pdf`, its shared-corpus file), the PDF page it cites, the passage it rests on, and a label: "supported",
"unsupported" (a changed number or direction, an overclaim, a claim of another paper) or "misattributed" (what
the paper says of other work, stated as the paper's own). Both judges see what polish sees: the claim, the
cited paper's whole text and the page; the passage field is for people. The pairs are split in two halves,
stratified by paper and label: each judge's threshold is chosen on the tune half (best F1 of "supported") and
its figures are reported on the test half, with the old judge also at its shipped threshold (0.45).

- old: `evidence.best_support` (recall of the claim's words and word pairs) against a threshold; misattributed
  when the best sentence describes other work and the claim does not present it as a remark;
- new: `survey.support.SemanticJudge` (sentence embeddings of the index's model plus the number, negation,
  opposite and name checks).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAIRS = ROOT / "bench" / "claim_pairs.jsonl"
CORPUS = ROOT.parent / "shared" / "corpus" / "pdfs"
GRID = [round(0.30 + 0.02 * i, 2) for i in range(26)]


def load(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for r in rows:
        assert r["label"] in ("supported", "unsupported", "misattributed"), r
    return rows


def split(rows: list[dict]) -> tuple[list[dict], list[dict]]:
    """Tune and test halves: within each (paper, label) group, alternate lines."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["paper"], r["label"])].append(r)
    tune, test = [], []
    for key in sorted(groups):
        for i, r in enumerate(groups[key]):
            (tune if i % 2 == 0 else test).append(r)
    return tune, test


def prepare(workspace: Path | None, rows: list[dict], tmp: Path) -> Path:
    if workspace:
        return workspace
    from papervault.ingest import add
    from papervault.workspace import Workspace

    ws, _ = Workspace.init(tmp / "ws")
    pdfs = sorted({r["pdf"] for r in rows if r.get("pdf")})
    t0 = time.monotonic()
    report = add(ws, [str(CORPUS / f) for f in pdfs])
    print(f"  import (apart): {len(report.added)} papers in {time.monotonic() - t0:.1f} s")
    return ws.root


def metrics(rows: list[dict], pred: list[str]) -> dict[str, float]:
    tp = sum(1 for r, p in zip(rows, pred) if p == "supported" and r["label"] == "supported")
    fp = sum(1 for r, p in zip(rows, pred) if p == "supported" and r["label"] != "supported")
    fn = sum(1 for r, p in zip(rows, pred) if p != "supported" and r["label"] == "supported")
    mis = [p for r, p in zip(rows, pred) if r["label"] == "misattributed"]
    uns = [p for r, p in zip(rows, pred) if r["label"] == "unsupported"]
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"precision": prec, "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0,
            "misattributed caught": sum(p == "misattributed" for p in mis) / (len(mis) or 1),
            "unsupported caught": sum(p != "supported" for p in uns) / (len(uns) or 1),
            "accuracy": sum(r["label"] == p for r, p in zip(rows, pred)) / (len(rows) or 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=Path, default=PAIRS)
    ap.add_argument("--workspace", type=Path, help="a workspace holding the papers the pairs cite")
    ap.add_argument("--errors", action="store_true", help="list the test-half pairs each judge gets wrong")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    args = ap.parse_args()

    from papervault.index.embed import Embedder
    from papervault.survey.attribution import reported
    from papervault.survey.evidence import best_support
    from papervault.survey.support import Claim, LexicalJudge, SemanticJudge
    from papervault.workspace import Workspace

    rows = load(args.pairs)
    tune, test = split(rows)
    print(f"pairs: {len(rows)} ({dict(Counter(r['label'] for r in rows))}), papers: {len({r['paper'] for r in rows})}; "
          f"tune {len(tune)}, test {len(test)}")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(prepare(args.workspace, rows, Path(tmp))).require()
        texts: dict[str, str] = {}

        def text(pid: str) -> str:
            if pid not in texts:
                texts[pid] = ws.vault.read_fulltext(pid) if pid in ws.vault.paper_ids() else ""
            return texts[pid]

        claims = [Claim(r["claim"], [r["paper"]], str(r["page"]), reported(r["claim"])) for r in rows]
        # the old judge at every threshold: its best passage does not depend on the threshold
        best = {id(r): best_support(r["claim"], r["paper"], text(r["paper"])) for r in rows}

        def old(rs: list[dict], th: float) -> list[str]:
            j = LexicalJudge(lambda claim, pid, _rs={r["claim"] + r["paper"]: r for r in rs}:
                             best[id(_rs[claim + pid])], th)
            return [v.label for v in j.judge([Claim(r["claim"], [r["paper"]], str(r["page"]), reported(r["claim"]))
                                              for r in rs])]

        embedder = Embedder.for_workspace(ws)
        t0 = time.monotonic()
        sem = SemanticJudge(text, embedder.embed, threshold=-1.0)
        sem.judge(claims)                                     # embeds every claim and candidate once
        t_embed = time.monotonic() - t0

        def new(rs: list[dict], th: float) -> list[str]:
            sem.threshold = th
            return [v.label for v in sem.judge([claims[rows.index(r)] for r in rs])]

        table = []
        for name, fn, shipped in (("old (word overlap)", old, 0.45), ("new (embedding + checks)", new, None)):
            th = max(GRID, key=lambda t: (round(metrics(tune, fn(tune, t))["f1"], 4), -abs(t - 0.6)))
            table.append((f"{name}, tuned", th, metrics(test, fn(test, th)), fn(test, th)))
            if shipped is not None:
                table.append((f"{name}, shipped", shipped, metrics(test, fn(test, shipped)), fn(test, shipped)))
        t1 = time.monotonic()
        sem.threshold = table[-1][1]
        sem.judge(claims)
        t_judge = time.monotonic() - t1

    if args.json:
        print(json.dumps([{"judge": name, "threshold": th, **{k: round(v, 3) for k, v in m.items()}}
                          for name, th, m, _ in table], indent=2))
        return
    print(f"\ntest half ({len(test)} pairs: {dict(Counter(r['label'] for r in test))}); "
          f"threshold chosen on the tune half ({len(tune)} pairs)\n")
    print(f"{'judge':34} {'thr':>5} {'prec':>6} {'recall':>6} {'F1':>6} {'misattr':>8} {'unsupp':>7} {'acc':>6}")
    for name, th, m, _ in table:
        print(f"{name:34} {th:5.2f} {m['precision']:6.2f} {m['recall']:6.2f} {m['f1']:6.2f} "
              f"{m['misattributed caught']:8.2f} {m['unsupported caught']:7.2f} {m['accuracy']:6.2f}")
    print("\nprec/recall: of \"supported\"; misattr: share of misattributed pairs judged misattributed; "
          "unsupp: share of unsupported pairs not judged supported")
    print(f"new judge: first pass (embedding {len(rows)} claims and their candidates) {t_embed:.1f} s, "
          f"a pass with vectors kept {t_judge * 1000 / len(rows):.1f} ms per claim")
    if args.errors:
        for name, th, _, pred in table:
            print(f"\n{name} at {th:.2f}, wrong on:")
            for r, p in zip(test, pred):
                if p != r["label"]:
                    print(f"  [{r['label']} -> {p}] {r['paper']} p.{r['page']} ({r['kind']}): {r['claim'][:110]}")


if __name__ == "__main__":
    main()
