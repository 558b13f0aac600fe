"""Benchmark of the survey flow: wall time, parallel speed-up with a model, and the support threshold.

    .venv/bin/python bench/survey.py --only extractive              # the 7 related papers, no model
    .venv/bin/python bench/survey.py --only claude --delay 2        # scripted loopback Messages API
    .venv/bin/python bench/survey.py --only support                 # how the support score separates
    .venv/bin/python bench/survey.py --workspace /tmp/ws7           # reuse a workspace with the 7 papers

`extractive` imports the 7 related shared-corpus papers with `papervault add` (timed apart; skipped with
--workspace) and times the whole flow on a copy of the workspace. `claude` runs the same flow with the real
Claude Agent SDK and CLI against the loopback server of tests/support_llm.py answering after a fixed delay,
and compares the wall time of the model stages with the serial sum of the model calls (from the run log).
`support` scores true quotations and mis-cited sentences (a sentence of one paper checked against another)
and prints how many each threshold gets right. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

TOPIC = "replication and consistency in distributed storage"


def prepare(workspace: Path | None, tmp: Path) -> Path:
    """A workspace holding the 7 related papers (imported with the real parser and extractive analysis)."""
    from support_survey import RELATED

    if workspace:
        return workspace
    from papervault.ingest import add
    from papervault.workspace import Workspace

    ws, _ = Workspace.init(tmp / "prepared")
    corpus = ROOT.parent / "shared" / "corpus" / "pdfs"
    t0 = time.monotonic()
    report = add(ws, [str(corpus / f) for f in RELATED.values()])
    print(f"  import (apart): {len(report.added)} papers parsed and analysed in {time.monotonic() - t0:.1f} s")
    return ws.root


def copy_ws(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True, ignore=shutil.ignore_patterns("write.lock"))
    return dst


def bench_extractive(src: Path, tmp: Path, workers: int) -> None:
    from flows.survey import run_survey

    ws = copy_ws(src, tmp / "extractive")
    t0 = time.monotonic()
    r = run_survey(TOPIC, workspace=str(ws), backend="extractive", workers=workers)
    wall = time.monotonic() - t0
    print(f"extractive: survey of {len(r['papers'])} papers in {wall:.1f} s wall (flow {r['seconds']} s), "
          f"{r['sections']} sections, {r['claims']} cited claims, {r['changes']} fixed, {r['flags']} flagged")
    print("  stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in r["timings"].items()))
    t0 = time.monotonic()
    r = run_survey(TOPIC, workspace=str(ws), backend="extractive", workers=workers)
    print(f"  again, nothing changed: {time.monotonic() - t0:.1f} s wall; stages: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in r["timings"].items()))


def _responder(delay: float):
    from support_llm import SAMPLE_ANSWER, Turn, all_text

    def answer(req: dict):
        schema = {}
        for t in req.get("tools") or []:
            if t.get("name") == "StructuredOutput":
                schema = t.get("input_schema") or {}
        props = schema.get("properties") or {}
        ids = list(dict.fromkeys(re.findall(r"\[@([A-Za-z0-9][A-Za-z0-9_.-]*[A-Za-z0-9])", all_text(req))))
        if "clusters" in props:
            data = {"clusters": [{"label": "replication", "paper_ids": ids}],
                    "consensus": [{"text": "Replication improves availability.", "cites": ids[:2]}],
                    "conflicts": [], "gaps": [{"text": "Costs of geo-replication.", "cites": ids[:1]}]}
        elif "sections" in props:
            data = {"sections": [{"title": "Introduction", "purpose": "Introduce the topic.", "cites": ids},
                                 {"title": "Replication", "purpose": "How papers replicate.", "cites": ids[:3]},
                                 {"title": "Conclusion", "purpose": "Wrap up.", "cites": ids[:2]}]}
        elif "markdown" in props:
            data = {"markdown": " ".join(f"Replicated storage is discussed [@{i}]." for i in ids[:3]) or "Nothing."}
        else:
            data = SAMPLE_ANSWER
        return Turn.structured(data, delay=delay)

    return answer


def bench_claude(src: Path, tmp: Path, delay: float, workers_list: list[int]) -> None:
    from flows.survey import run_survey
    from support_llm import MessagesServer

    with MessagesServer(_responder(delay)) as srv:
        os.environ.update(srv.claude_env())
        for workers in workers_list:
            ws = copy_ws(src, tmp / f"claude-{workers}")
            os.environ["HOME"] = str(tmp / f"home-{workers}")
            Path(os.environ["HOME"]).mkdir(exist_ok=True)
            srv.max_in_flight = 0
            t0 = time.monotonic()
            r = run_survey(TOPIC, workspace=str(ws), backend="claude", workers=workers)
            wall = time.monotonic() - t0
            calls = []
            for f in (ws / ".papervault" / "runs").glob("*.jsonl"):
                calls += [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
            serial = sum(c.get("seconds", 0) for c in calls)
            model_wall = sum(r["timings"].get(k, 0) for k in ("analyse", "correlate", "outline", "draft"))
            print(f"claude (scripted server, {delay:g} s per answer), {workers} worker(s): {len(calls)} model calls, "
                  f"serial sum {serial:.1f} s, model stages {model_wall:.1f} s wall -> speed-up {serial / max(model_wall, 1e-9):.2f}x; "
                  f"whole flow {wall:.1f} s; {srv.max_in_flight} requests answering at once at peak; "
                  f"{len(r['analysed'])} analysed, {len(r['failed'])} failed")
            print("  stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in r["timings"].items()))


def bench_support(src: Path, sample: int) -> None:
    from papervault.survey.evidence import best_support, paper_sentences, quotable
    from papervault.workspace import Workspace

    ws = Workspace(src)
    ids = ws.vault.paper_ids()
    texts = {pid: ws.vault.read_fulltext(pid) for pid in ids}
    quotes = {pid: [s.text for s in paper_sentences(pid, texts[pid]) if quotable(s.text)] for pid in ids}
    true_scores, false_scores = [], []
    t0 = time.monotonic()
    for i, pid in enumerate(ids):
        picks = quotes[pid][:: max(1, len(quotes[pid]) // sample)][:sample]
        other = ids[(i + 1) % len(ids)]
        for q in picks:
            true_scores.append(best_support(q, pid, texts[pid]).score)
            # the same sentence cited to the wrong paper: what the check must catch
            b = best_support(q, other, texts[other])
            false_scores.append(b.score if b else 0.0)
    took = time.monotonic() - t0
    n = len(true_scores) + len(false_scores)

    def pct(xs, p):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(p * len(xs)))]

    print(f"support: {len(true_scores)} quotations and {len(false_scores)} mis-citations over {len(ids)} papers "
          f"({n / took:.0f} checks/s, lexical)")
    print(f"  quotations:   min {min(true_scores):.2f}, p5 {pct(true_scores, 0.05):.2f}, median {pct(true_scores, 0.5):.2f}")
    print(f"  mis-citations: median {pct(false_scores, 0.5):.2f}, p95 {pct(false_scores, 0.95):.2f}, max {max(false_scores):.2f}")
    for th in (0.3, 0.35, 0.4, 0.45, 0.5, 0.6):
        tp = sum(s >= th for s in true_scores)
        tn = sum(s < th for s in false_scores)
        print(f"  threshold {th:.2f}: quotations kept {tp}/{len(true_scores)}, mis-citations caught {tn}/{len(false_scores)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["extractive", "claude", "support"])
    ap.add_argument("--workspace", type=Path, help="a workspace that already holds the 7 related papers")
    ap.add_argument("--delay", type=float, default=2.0, help="seconds the scripted server takes per answer")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 4], help="task-runner threads for the claude part")
    ap.add_argument("--sample", type=int, default=40, help="sentences per paper for the support part")
    args = ap.parse_args()
    os.environ.setdefault("PREFECT_HOME", str(ROOT / ".pytest_cache" / "prefect-bench"))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    model = ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-onnx"
    if model.is_dir():
        os.environ.setdefault("PAPERVAULT_EMBED_MODEL_PATH", str(model))
        os.environ.setdefault("PAPERVAULT_EMBED_MODEL", "sentence-transformers/all-MiniLM-L6-v2")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        src = prepare(args.workspace, tmp)
        if args.only in (None, "support"):
            bench_support(src, args.sample)
        if args.only in (None, "extractive"):
            bench_extractive(src, tmp, 4)
        if args.only in (None, "claude"):
            bench_claude(src, tmp, args.delay, args.workers)


if __name__ == "__main__":
    main()
