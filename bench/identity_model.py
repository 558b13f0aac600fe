"""The model's first-page read in `bench/identity.py --set`: the identity a model reads off each paper's first
pages, weighed against the header reader's by `papervault.identity_read.settle`, as `add` with a model does.

The request is the one the per-paper analysis sends through the `openai` backend for the first part of a paper
read in parts: the note template's own system and user prompts, the first two pages of the paper as the full
parse writes them to `paper.md`, and, of the note's fields, only `identity` (the note request asks for the
other fields too; only this one bears on identity, and 310 whole notes are not needed to measure it).

The answers are kept in a JSON-lines file (`--model-reads`, one line a paper: sha256, the hash of the request
and the `identity` answered), so the benchmark replays them without a model; `--model-url` asks an
OpenAI-compatible endpoint for the papers the file lacks and appends its answers. A paper the model gave no
answer for is scored on the parse alone, as `add` keeps the parse when the analysis fails; the report says how
many were read by the model. A recorded read whose request has changed (a new parser, a new prompt) is still
used and counted as stale.

The key of this system is the key `papervault rekey` gives the paper once the model has read its authors
(`status` asks for that rekey); the key `add` made before the analysis is the header reader's.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import pickle
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pymupdf

from papervault.agents.openai import OpenAIBackend
from papervault.agents.paperdoc import PaperPart, read_paper
from papervault.config import OpenAISettings
from papervault.identity_read import answer_title, read_title, settle
from papervault.ids import key_base
from papervault.ingest_records import key_confident
from papervault.models import PaperMeta
from papervault.note_analysis import build_task, load_template, title_task
from papervault.parse.pdf import parse_pdf
from papervault.parse.version import PARSER

PAGES = 2               # what `identity_read.first_pages` weighs, and what the model is shown


def _first_pages_markdown(path: str) -> tuple[str, int]:
    """`paper.md` of the PDF's first PAGES pages, as the full parse writes it, and the PDF's page count."""
    with pymupdf.open(path) as doc:
        total = doc.page_count
        with tempfile.TemporaryDirectory() as tmp:
            head = pymupdf.open()
            head.insert_pdf(doc, from_page=0, to_page=min(PAGES, total) - 1)
            cut = Path(tmp) / Path(path).name
            head.save(cut)
            head.close()
            return parse_pdf(cut).markdown, total


def _one(job: tuple[str, str, Path | None]) -> tuple[str, str, int, str | None]:
    path, sha, cache = job
    kept = cache / f"{sha}-{PARSER.replace('/', '-')}-p{PAGES}.pickle" if cache else None
    if kept and kept.is_file():
        return (path, *pickle.loads(kept.read_bytes()), None)
    try:
        text, total = _first_pages_markdown(path)
    except Exception as exc:  # one unreadable PDF never stops the run: the model gets no request for it
        return path, "", 0, f"{type(exc).__name__}: {exc}"
    if kept:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_bytes(pickle.dumps((text, total)))
    return path, text, total, None


def first_pages(labs: dict[str, dict], cache: Path | None, workers: int = 2) -> dict[str, tuple[str, int]]:
    """The first pages' markdown and page count of every labelled PDF (parsed in `workers` processes)."""
    jobs = [(p, lab["sha256"], cache) for p, lab in sorted(labs.items())]
    out: dict[str, tuple[str, int]] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for i, (path, text, total, err) in enumerate(pool.map(_one, jobs), 1):
            out[path] = (text, total)
            if err:
                print(f"  first pages of {Path(path).name}: {err}", file=sys.stderr)
            if i % 25 == 0 or i == len(jobs):
                print(f"  first pages parsed: {i}/{len(jobs)}", file=sys.stderr)
    return out


def _template():
    tmpl = load_template(SimpleNamespace(root=Path(tempfile.gettempdir()) / "papervault-bench-vault"))
    props = tmpl.schema["properties"]
    tmpl.schema = {"type": "object", "$defs": tmpl.schema.get("$defs", {}),
                   "properties": {"identity": props["identity"]}, "required": ["identity"]}
    return tmpl


def meta_of(reading: dict, path: str) -> PaperMeta:
    """The note's metadata as `add` leaves it from the header reader's reading."""
    prov = {"title": "layout", "title_confidence": reading.get("confidence") or "high"}
    if reading.get("authors"):
        prov["authors"] = "layout"
    if reading.get("year"):
        prov["year"] = "layout"
    if reading.get("venue"):
        prov["venue"] = "layout"
    title = reading.get("title") or Path(path).stem
    return PaperMeta(id=key_base(reading.get("authors") or [], reading.get("year"), title,
                                 reading.get("key_confident", True)), title=title,
                     authors=list(reading.get("authors") or []), year=reading.get("year"),
                     venue=reading.get("venue"), provenance=prov)


def task_for(tmpl, meta: PaperMeta, text: str, total: int):
    """The first part's analysis task, with `identity` the only field asked."""
    doc = read_paper(text)
    doc.pages = max(doc.pages, total)              # the prompt gives the paper's length, not the part's
    part = PaperPart(index=1, count=1 if total <= PAGES else 2, first=1, last=min(PAGES, total), text=text)
    return build_task(None, meta, text, doc, tmpl, pdir=Path(tempfile.gettempdir()), reads_files=False, part=part)


def request_hash(backend: OpenAIBackend, task) -> str:
    return hashlib.sha256(backend.material(task).encode("utf-8")).hexdigest()[:16]


def load_reads(path: Path, kind: str = "read") -> dict[str, dict]:
    """The recorded answers of one kind, by the PDF's sha256: "read" (the first-page read) or "title" (the
    question `settle` left open, `note_analysis.title_task`)."""
    out: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("kind", "read") == kind:
                    out[row["sha256"]] = row
    return out


async def _ask_all(backend: OpenAIBackend, todo: list[tuple[str, object, str]], reads_file: Path,
                   concurrency: int, kind: str = "read") -> dict[str, dict]:
    slots = asyncio.Semaphore(concurrency)
    got: dict[str, dict] = {}

    async def one(sha: str, task, rhash: str) -> None:
        async with slots:
            try:
                answer = await backend.arun(task)
            except Exception as exc:  # a failed read scores as the parse alone, as in `add`
                print(f"  model read failed for {sha[:12]}: {exc}", file=sys.stderr)
                return
        row = {"sha256": sha, "request": rhash, **({"kind": kind, "answer": answer.data} if kind != "read" else
                                                    {"identity": answer.data.get("identity")})}
        got[sha] = row
        with reads_file.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"  model answers ({kind}): {len(got)}/{len(todo)}", file=sys.stderr)

    await asyncio.gather(*(one(*job) for job in todo))
    return got


def run_model(labs: dict[str, dict], readings: dict[str, dict], args) -> tuple[dict[str, dict], dict]:
    """The header reader's readings `readings` settled against the model's first-page reads; and counts."""
    pages = first_pages(labs, args.cache / "first-pages" if args.cache else None)
    tmpl = _template()
    backend = OpenAIBackend(OpenAISettings(base_url=args.model_url or "http://127.0.0.1:9/v1", model=args.model_name),
                            retries=2, timeout=args.model_timeout, concurrency=args.model_concurrency)
    reads = load_reads(args.model_reads)
    tasks = {}
    for p, lab in labs.items():
        text, total = pages[p]
        if text:
            tasks[p] = task_for(tmpl, meta_of(readings[p], p), text, total)
    hashes = {p: request_hash(backend, t) for p, t in tasks.items()}
    todo = [(labs[p]["sha256"], t, hashes[p]) for p, t in sorted(tasks.items()) if labs[p]["sha256"] not in reads]
    if todo and args.model_url:
        args.model_reads.parent.mkdir(parents=True, exist_ok=True)
        reads.update(asyncio.run(_ask_all(backend, todo, args.model_reads, args.model_concurrency)))
    settled = {}
    counts = {"read_by_model": 0, "stale": 0, "no_read": 0, "taken": {}, "title_asked": 0, "title_answered": 0,
              "title_stale": 0}
    for p, lab in labs.items():
        meta = meta_of(readings[p], p)
        row = reads.get(lab["sha256"])
        parse = (meta.title, dict(meta.provenance), read_title(row.get("identity")) if row else None)
        record = settle(meta, row.get("identity"), pages[p][0]) if row and p in tasks else None
        settled[p] = (meta, record, *parse)
        if row and p in tasks:
            counts["read_by_model"] += 1
            counts["stale"] += row.get("request") != hashes[p]
        else:
            counts["no_read"] += 1
    _ask_titles(settled, labs, pages, backend, args, counts)
    results: dict[str, dict] = {}
    for p, (meta, record, *_) in settled.items():
        for name in (record or {}).get("model", []):
            counts["taken"][name] = counts["taken"].get(name, 0) + 1
        confident = key_confident(meta.provenance, SimpleNamespace(provenance=meta.provenance, authors=meta.authors))
        results[p] = {"title": meta.title, "authors": meta.authors, "year": meta.year, "venue": meta.venue,
                      "key_confident": confident, "identity": record}
    return results, counts


def _ask_titles(settled: dict[str, tuple], labs: dict[str, dict], pages: dict[str, tuple[str, int]],
                backend: OpenAIBackend, args, counts: dict) -> None:
    """The question `settle` leaves open when the page does not decide the title (`note_analysis.title_task`),
    asked as the analysis asks it, its recorded answer (kind "title" in the reads file) applied as `add` applies
    it: `settled[p]` is updated in place."""
    asks = {p: title_task(meta, parse_title, model_title, pages[p][0])
            for p, (meta, record, parse_title, _, model_title) in settled.items()
            if record and "title" in record.get("uncertain", []) and parse_title and model_title}
    hashes = {p: request_hash(backend, t) for p, t in asks.items()}
    answers = load_reads(args.model_reads, "title")
    todo = [(labs[p]["sha256"], t, hashes[p]) for p, t in sorted(asks.items()) if labs[p]["sha256"] not in answers]
    if todo and args.model_url:
        answers.update(asyncio.run(_ask_all(backend, todo, args.model_reads, args.model_concurrency, kind="title")))
    counts["title_asked"] = len(asks)
    for p in asks:
        row = answers.get(labs[p]["sha256"])
        if not row:
            continue
        meta, record, parse_title, parse_prov, model_title = settled[p]
        counts["title_answered"] += 1
        counts["title_stale"] += row.get("request") != hashes[p]
        record = answer_title(meta, record, (row.get("answer") or {}).get("title"), parse_title=parse_title,
                              parse_provenance=parse_prov, model_title=model_title, fulltext=pages[p][0])
        settled[p] = (meta, record, parse_title, parse_prov, model_title)
