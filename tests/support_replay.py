"""Model answers for whole surveys: a real model's recorded answers replayed, and a "schema robot".

Both are responders for the loopback servers of `support_llm` (`ChatServer` for the `openai` backend,
`MessagesServer` for the `claude` backend's real CLI), so one recording drives either backend.

A **recording** (`tests/data/recorded/<name>.jsonl.gz`) holds a real model's exchanges of one survey run: each
line the request body as the endpoint received it and the model's answer text. Replay finds an answer by the
task's *kind* (what the schema asks for: a selection review, a paper's note, the correlation, the outline, a
section) and *key* (the paper, the topic, the section title, the candidate), never by the prompt's exact text,
so a prompt edit does not void every recording. A request the recording cannot answer is recorded as a miss
(and answered with an HTTP 500, which the backend reports as a failed task): tests assert there were none.

The **schema robot** answers every task of every stage with content that is valid against the task's schema
and built from the request (ids and pages it names, sentences it quotes), so no stage can crash unnoticed for
either backend, whatever the prompts ask.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
from pathlib import Path
from typing import Any

from support_llm import STRUCTURED_TOOL, Turn, all_text, tool_names

DATA = Path(__file__).parent / "data" / "recorded"


# --- reading a request, whichever backend sent it ------------------------------------------------------

def request_text(req: dict) -> str:
    """Everything the model was told: an OpenAI body's messages, or an Anthropic body's system and turns."""
    if "messages" in req and req.get("messages") and isinstance(req["messages"][0].get("content"), str) \
            and req["messages"][0].get("role") == "system":
        return "\n".join(m.get("content") or "" for m in req["messages"] if isinstance(m.get("content"), str))
    return all_text(req)


def request_schema(req: dict) -> dict:
    """The answer's JSON schema: `response_format` (openai), the StructuredOutput tool's input (claude), or the
    schema the prompt states (an endpoint without response_format)."""
    rf = req.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return rf["json_schema"].get("schema") or {}
    for t in req.get("tools") or []:
        if t.get("name") == STRUCTURED_TOOL:
            return t.get("input_schema") or {}
    text = request_text(req)
    at = text.rfind("matches this JSON schema")
    if at >= 0:
        start = text.find("{", at)
        try:
            return json.loads(text[start:])
        except ValueError:
            pass
    return {}


def kind_of(req: dict) -> str:
    """What the task asks for, from the shape of its schema (the same for both backends)."""
    props = set((request_schema(req).get("properties") or {}))
    if "papers" in props:
        return "review"
    if "sections" in props:
        return "outline"
    if "clusters" in props:
        return "correlation"
    if "markdown" in props:
        return "section"
    if {"summary", "method"} & props or "key_results" in props:
        return "note"
    if props == {"title"}:
        return "title"                 # which of two readings is the title (note_analysis.title_task)
    return "other:" + ",".join(sorted(props))


def _first(pattern: str, text: str, flags: int = 0) -> str:
    m = re.search(pattern, text, flags)
    return m.group(1).strip() if m else ""


def key_of(kind: str, text: str) -> str:
    """What the task is about: the paper, the section, the topic (a review is answered per candidate)."""
    if kind == "note":
        paper = _first(r"paper `([^`]+)`", text)
        if re.search(r"was read in \d+ parts\. Below is what each part", text):
            return f"{paper}#merge"              # the merge of a long paper's parts: summary and method
        count, part = _first(r"is read in (\d+) parts", text), _first(r"holds part (\d+)", text)
        return f"{paper}#part {part} of {count}" if part and count else paper
    if kind == "section":     # "Conclusion" is a section of many surveys: the topic tells them apart
        topic = _first(r'^Topic(?: of the survey)?: "?(.+?)"?\s*$', text, re.M)
        title = _first(r'Write the section "(.+?)"', text)
        return f"{topic}#{title}"
    if kind == "title":
        return _first(r"^(A: .+)$", text, re.M) + " | " + _first(r"^(B: .+)$", text, re.M)
    if kind in ("correlation", "outline", "review"):
        return _first(r'^Topic(?: of the survey)?: "?(.+?)"?\s*$', text, re.M)
    return ""


def candidates(text: str) -> list[dict]:
    """The candidate records a selection review shows, one JSON object per line."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith('{"id"'):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


# --- a recording ---------------------------------------------------------------------------------------

def load(name: str | Path) -> list[dict]:
    """The exchanges of a recording (a name under tests/data/recorded/, or a path): dicts with `request` (the
    body) and `answer` (the model's text)."""
    path = name if isinstance(name, Path) else DATA / f"{name}.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def save(name: str | Path, exchanges: list[dict]) -> Path:
    path = name if isinstance(name, Path) else DATA / f"{name}.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as fh:
        for ex in exchanges:
            fh.write(json.dumps(ex, ensure_ascii=False) + "\n")
    return path


class Replay:
    """A responder that answers from one or more recordings by (kind, key); misses are kept in `misses`."""

    def __init__(self, *names: str | Path):
        self.answers: dict[tuple[str, str], Any] = {}
        self.verdicts: dict[tuple[str, str], dict] = {}     # review answers, per topic and candidate id
        for name in names:
            for ex in load(name):
                req, data = ex["request"], json.loads(ex["answer"])
                kind = kind_of(req)
                text = request_text(req)
                if kind == "review":
                    topic = key_of(kind, text)
                    for v in data.get("papers") or []:
                        if isinstance(v, dict) and v.get("id"):
                            self.verdicts.setdefault((topic, v["id"]), v)
                    continue
                self.answers.setdefault((kind, key_of(kind, text)), data)
        self.asked: list[tuple[str, str]] = []
        self.misses: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def answer(self, req: dict) -> Any:
        kind, text = kind_of(req), request_text(req)
        key = key_of(kind, text)
        with self._lock:
            self.asked.append((kind, key))
        if kind == "review":
            shown = [c["id"] for c in candidates(text)]
            got = [self.verdicts[(key, i)] for i in shown if (key, i) in self.verdicts]
            if got:
                return {"papers": got}
        elif (kind, key) in self.answers:
            return self.answers[(kind, key)]
        elif kind == "note" and "#" in key and (kind, key.split("#")[0]) in self.answers:
            return self.answers[(kind, key.split("#")[0])]
        with self._lock:
            self.misses.append((kind, key))
        return None

    def __call__(self, req: dict) -> Turn:
        data = self.answer(req)
        return Turn.error(500) if data is None else Turn.structured(data)


def from_queue_dir(folder: Path) -> list[dict]:
    """The exchanges in a folder of `req-N.json` request bodies and `ans-N.json` answers (a loopback queue
    server's files), in order, answered ones only."""
    out = []
    for req in sorted(folder.glob("req-*.json"), key=lambda p: int(p.stem.split("-")[1])):
        ans = folder / f"ans-{req.stem.split('-')[1]}.json"
        if ans.is_file():
            out.append({"n": int(req.stem.split("-")[1]), "request": json.loads(req.read_text(encoding="utf-8")),
                        "answer": ans.read_text(encoding="utf-8")})
    return out


# --- the schema robot ----------------------------------------------------------------------------------

ID_PATTERNS = (r"\[@([A-Za-z][\w.:-]*[\w])", r'"id":\s*"([^"]+)"', r"paper `([^`]+)`", r"^- ([A-Za-z][\w.-]*\w): ")


class SchemaRobot:
    """A responder whose every answer is valid against the task's schema, built from what the request names:
    the paper ids (every candidate of a review, every paper of an outline), pages the text anchors, and a
    sentence the request quotes, cited as the survey asks ([@id, p. N]). `kinds` counts what it was asked."""

    def __init__(self):
        self.kinds: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, req: dict) -> Turn:
        kind = kind_of(req)
        with self._lock:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
        return Turn.structured(self.instance(req))

    def instance(self, req: dict) -> Any:
        text = request_text(req)
        schema = request_schema(req)
        ids: list[str] = []
        for pat in ID_PATTERNS:
            ids += [m for m in re.findall(pat, text, re.M) if m not in ids and m != "id"]
        pages = [int(p) for p in re.findall(r'id="page-(\d+)"', text)] or \
                [int(p) for p in re.findall(r"\bp\. (\d+)\b", text)] or [1]
        sentence = next((s.strip() for s in re.findall(r"[A-Z][^.\n]{40,200}\.", text)
                         if "JSON" not in s and "[@" not in s), "The paper describes its method.")
        cands = [c["id"] for c in candidates(text)]
        ctx = {"ids": ids or ["unknown"], "pages": pages, "sentence": sentence, "candidates": cands,
               "defs": schema.get("$defs") or schema.get("definitions") or {}}
        return self._make(schema, ctx, name="")

    def _make(self, schema: dict, ctx: dict, name: str) -> Any:
        if "$ref" in schema:
            return self._make(ctx["defs"].get(schema["$ref"].split("/")[-1], {}), ctx, name)
        for alt in ("anyOf", "oneOf"):
            if alt in schema:
                opts = [o for o in schema[alt] if o.get("type") != "null"] or schema[alt]
                return self._make(opts[0], ctx, name)
        if "enum" in schema:
            return schema["enum"][0]
        typ = schema.get("type", "object")
        if isinstance(typ, list):
            typ = next((t for t in typ if t != "null"), "string")
        pid, page = ctx["ids"][0], ctx["pages"][len(ctx["pages"]) // 2]
        if typ == "object":
            props = schema.get("properties") or {}
            return {k: self._make(v, ctx, k) for k, v in props.items()}
        if typ == "array":
            item = schema.get("items") or {"type": "string"}
            if name == "papers" and ctx["candidates"]:
                # a review: a verdict for every candidate shown, the first judged core
                return [{**self._make(item, ctx, "papers"), "id": c, **({"verdict": "core"} if i == 0 else {})}
                        for i, c in enumerate(ctx["candidates"])]
            if (item.get("type") == "string" and "enum" not in item) and name in ("paper_ids", "cites", "papers"):
                return list(ctx["ids"])
            n = max(int(schema.get("minItems") or 0), 2 if name in ("sections", "clusters") else 1)
            out = []
            for i in range(n):
                v = self._make(item, {**ctx, "ids": ctx["ids"][i:] + ctx["ids"][:i]}, name)
                if isinstance(v, dict) and "title" in v and name == "sections":
                    v["title"] = f"{v['title']} {i + 1}"
                out.append(v)
            return out
        if typ == "integer":
            return max(int(schema.get("minimum") or 0), page if name == "page" else 1)
        if typ == "number":
            return float(max(schema.get("minimum") or 0, 1))
        if typ == "boolean":
            return False
        # strings: ids where an id is asked, a cited sentence where prose is
        if name in ("id", "paper", "paper_id", "about", "source_id"):
            return pid
        if name in ("number",):
            return "1"
        if name in ("markdown", "text", "summary", "why", "purpose", "method", "label", "title", "setting",
                    "metric", "value", "source", "section", "caption"):
            if name in ("markdown", "text"):
                return f"{ctx['sentence']} [@{pid}, p. {page}]"
            return ctx["sentence"][:120]
        return ctx["sentence"][:80]


def uses_structured_tool(req: dict) -> bool:
    return STRUCTURED_TOOL in tool_names(req)


if __name__ == "__main__":     # python tests/support_replay.py FOLDER NAME: a folder of exchanges -> a recording
    import sys

    folder, name = Path(sys.argv[1]), sys.argv[2]
    name = Path(name) if name.endswith(".jsonl.gz") else name
    exchanges = from_queue_dir(folder)
    for ex in exchanges:
        kind = kind_of(ex["request"])
        print(ex["n"], kind, key_of(kind, request_text(ex["request"]))[:70])
    print(save(name, exchanges))
