"""Benchmark of per-paper analysis: notes per minute.

    .venv/bin/python bench/analyse.py                     # both parts
    .venv/bin/python bench/analyse.py --only extractive   # the shared corpus, no model
    .venv/bin/python bench/analyse.py --only claude --papers 8 --delay 2 --concurrency 1 4

`extractive` parses the shared corpus (../shared/corpus/pdfs; parsing is timed apart), analyses every paper,
and checks every note against its paper (quotations, names, numbers). `claude` runs the real Claude Agent
SDK and CLI against the loopback Messages API of tests/support_llm.py answering after a fixed delay, once
per concurrency level, to show sessions running at once. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def bench_extractive(corpus: Path, ocr: bool) -> None:
    from papervault.agents import get_backend
    from papervault.agents.extractive import unfaithful
    from papervault.config import ParseSettings, Settings
    from papervault.models import PaperMeta
    from papervault.parse.batch import parse_many
    from papervault.note_analysis import analyse_papers
    from papervault.vault.store import Vault

    pdfs = sorted(corpus.glob("*.pdf"))
    with tempfile.TemporaryDirectory() as tmp:
        vault = Vault.create(Path(tmp) / "vault")
        t0 = time.monotonic()
        parsed = parse_many(pdfs, ParseSettings(ocr=ocr), workers=2)
        t_parse = time.monotonic() - t0
        ids = []
        for i, pdf in enumerate(pdfs):
            paper = parsed[str(pdf)]
            if isinstance(paper, Exception):
                print(f"  parse failed: {pdf.name}: {paper}")
                continue
            pid = f"paper{i:02d}"
            vault.write_note(PaperMeta(id=pid, title=paper.title or pdf.stem, sha256=paper.sha256, pages=paper.pages), "# x\n")
            vault.write_fulltext(pid, paper)
            ids.append((pid, pdf.name))
        backend = get_backend("extractive", Settings(), state_dir=Path(tmp) / ".papervault")
        t0 = time.monotonic()
        outcomes = analyse_papers(vault, [pid for pid, _ in ids], backend)
        t_analyse = time.monotonic() - t0
        ok = [o for o in outcomes if o.status == "analysed"]
        problems = 0
        missing = {"figures": 0, "tables": 0, "sections": 0}
        totals = {"figures": 0, "tables": 0, "sections": 0}
        for (pid, name), o in zip(ids, outcomes):
            if o.status != "analysed":
                print(f"  {name}: {o.status} {o.message}")
                continue
            _, body = vault.read_note(pid)
            bad = unfaithful(body, vault.read_fulltext(pid))
            problems += len(bad)
            for b in bad[:3]:
                print(f"  {name}: {b}")
            for k in missing:
                missing[k] += len(o.coverage.get(k, []))
                totals[k] += o.coverage.get("totals", {}).get(k, 0)
        print(f"extractive: {len(ok)}/{len(pdfs)} papers analysed in {t_analyse:.1f} s "
              f"= {len(ok) / t_analyse * 60:.0f} notes/min (parsing, apart: {t_parse:.1f} s, ocr={'on' if ocr else 'off'})")
        print(f"  faithfulness: {problems} statement(s) not found in their paper")
        print("  coverage: " + ", ".join(f"{totals[k] - missing[k]}/{totals[k]} {k}" for k in totals))


def bench_claude(papers: int, delay: float, levels: list[int]) -> None:
    from papervault.agents import get_backend
    from papervault.config import Settings
    from papervault.note_analysis import analyse_papers
    from support_llm import SAMPLE_ANSWER, MessagesServer, Turn, make_paper_vault

    with MessagesServer(lambda req: Turn.structured(SAMPLE_ANSWER, delay=delay)) as srv, \
            tempfile.TemporaryDirectory() as tmp:
        os.environ.update(srv.claude_env())
        os.environ["HOME"] = str(Path(tmp) / "home")
        ids = [f"doe{2000 + i}widgets" for i in range(papers)]
        for pid in ids:
            vault = make_paper_vault(Path(tmp) / "ws", pid)
        for level in levels:
            s = Settings()
            s.agents.concurrency = level
            backend = get_backend("claude", s, state_dir=Path(tmp) / "ws" / ".papervault")
            srv.max_in_flight = 0
            t0 = time.monotonic()
            outcomes = analyse_papers(vault, ids, backend, force=True, concurrency=level)
            took = time.monotonic() - t0
            done = sum(o.status == "analysed" for o in outcomes)
            print(f"claude (scripted server, {delay:g} s per answer): concurrency {level}: {done}/{papers} notes "
                  f"in {took:.1f} s = {done / took * 60:.1f} notes/min, {srv.max_in_flight} sessions answering at once")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["extractive", "claude"])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus" / "pdfs")
    ap.add_argument("--ocr", action="store_true", help="OCR the scanned paper too (slow)")
    ap.add_argument("--papers", type=int, default=8, help="papers for the claude part")
    ap.add_argument("--delay", type=float, default=2.0, help="seconds the scripted server takes per answer")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    if args.only in (None, "extractive"):
        bench_extractive(args.corpus, args.ocr)
    if args.only in (None, "claude"):
        bench_claude(args.papers, args.delay, args.concurrency)


if __name__ == "__main__":
    main()
