"""The one interface every LLM step goes through: a task in, a validated answer out.

A backend implements `ask` (one attempt, raw text or data back). `Backend.arun` wraps it with what every
backend needs the same way: schema validation, retries with backoff for empty or invalid answers (after the
server's Retry-After when it sends one; `papervault.retrying`), quarantine of the raw output, a circuit
breaker, a JSONL run log with token use and cost, a cost ceiling, and an answer cache (`AnswerCache`): a task
asked before with the same backend, model, kind, prompts, schema and files gets the valid answer it got then.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import json
import os
import re
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from papervault.errors import BackendError
from papervault.retrying import RetryLater, async_retrying


@dataclass
class Task:
    """What a backend is asked to do.

    `kind` names the question ("paper-note"); the extractive backend dispatches on it. `files` maps a name
    inside the session folder ("paper.md", "figures/fig-1.png") to the file on disk: the only files a model
    may read. `inputs` carries the same material as plain data for backends that do not read prompts.
    """

    kind: str
    system: str
    prompt: str
    schema: dict[str, Any]
    files: dict[str, Path] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    key: str = ""                     # what the task is about (a paper id), for logs and quarantine
    fresh: bool = False               # ask the model even when the answer cache holds an answer (it replaces it)


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    turns: int = 0

    def add(self, other: "Usage") -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cost_usd += other.cost_usd
        self.turns += other.turns


@dataclass
class Reply:
    """One attempt's raw result: `data` when the backend already holds parsed JSON, else `text` to parse."""

    text: str = ""
    data: Any = None
    usage: Usage = field(default_factory=Usage)
    model: str | None = None


@dataclass
class Answer:
    data: dict[str, Any]
    backend: str
    model: str
    usage: Usage
    attempts: int = 1
    seconds: float = 0.0
    raw: str = ""


class InvalidAnswer(Exception):
    """An attempt returned something unusable (empty, not JSON, against the schema); worth retrying."""

    def __init__(self, reason: str, raw: str = "", usage: "Usage | None" = None):
        super().__init__(reason)
        self.raw = raw
        self.usage = usage


class BreakerOpen(BackendError):
    """The backend failed too often in a row; later tasks fail fast instead of burning through a batch."""


class CostCeiling(BackendError):
    """The run's recorded cost passed `agents.max_cost_usd`."""


def parse_json(text: str) -> Any:
    """Parse a model's JSON answer, tolerating a Markdown code fence or prose around one object."""
    text = (text or "").strip()
    if not text:
        raise InvalidAnswer("empty answer", text)
    fence = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.S)
    candidates = [text] + ([fence.group(1)] if fence else [])
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for cand in candidates:
        try:
            return json.loads(cand)
        except json.JSONDecodeError:
            continue
    raise InvalidAnswer("answer is not JSON", text)


def wire_schema(schema: Any) -> Any:
    """The schema as sent to a model: our own annotations (`x-...`, `$comment`) removed.

    The claude CLI compiles the schema in strict mode and refuses keywords it does not know.
    """
    if isinstance(schema, dict):
        return {k: wire_schema(v) for k, v in schema.items()
                if not (isinstance(k, str) and (k.startswith("x-") or k == "$comment"))}
    if isinstance(schema, list):
        return [wire_schema(v) for v in schema]
    return schema


def validate(data: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """Check an answer against its JSON schema; the first error becomes the reason."""
    if not isinstance(data, dict):
        raise InvalidAnswer(f"answer is a {type(data).__name__}, not an object", json.dumps(data, default=str))
    try:
        jsonschema.validate(data, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise InvalidAnswer(f"answer does not match the schema at {where}: {exc.message[:200]}",
                            json.dumps(data, default=str)) from None
    return data


class AnswerCache:
    """Valid answers of model tasks on disk (`.papervault/cache/answers/`), one JSON file per task key.

    The key hashes what the model is shown and who answers: the backend, the model, the task's kind, system
    prompt, prompt, schema, the content of every file it may read and whatever else the backend sends
    (`Backend.material`: the messages with the paper's text for `openai`). A task whose key is stored is not asked again; only answers
    that passed the schema are stored, and a stored answer is checked against the schema again when read.
    """

    def __init__(self, root: Path):
        self.root = root

    @staticmethod
    def key(backend: str, model: str, task: Task, material: str = "") -> str:
        """The task's key; `material` is what else of the task reaches the model (`Backend.material`)."""
        h = hashlib.sha256()
        files = {}
        for name, path in sorted(task.files.items()):
            try:
                files[name] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                files[name] = "-"
        for part in (backend, model, task.kind, task.system, task.prompt,
                     json.dumps(wire_schema(task.schema), sort_keys=True),
                     json.dumps(files, sort_keys=True), material):
            h.update(part.encode("utf-8", "replace"))
            h.update(b"\0")
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, schema: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
        """(the stored answer, the model that gave it), or None."""
        path = self._path(key)
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            return validate(stored["data"], schema), str(stored.get("model") or "")
        except (OSError, ValueError, KeyError, TypeError, InvalidAnswer):
            return None               # absent, unreadable or no longer valid: ask the model

    def put(self, key: str, data: dict[str, Any], *, kind: str, model: str) -> None:
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:6]}")
            tmp.write_text(json.dumps({"kind": kind, "model": model, "data": data}, default=str), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass                      # a cache that cannot be written only costs a request next time


class RunLog:
    """Token use and cost of one run, appended as JSONL to `.papervault/runs/<run>.jsonl`."""

    def __init__(self, runs_dir: Path | None, run_id: str | None = None, max_cost_usd: float | None = None):
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
        self.run_id = run_id or f"{stamp}-{uuid.uuid4().hex[:6]}"
        self.path = runs_dir / f"{self.run_id}.jsonl" if runs_dir else None
        self.max_cost_usd = max_cost_usd
        self.total = Usage()
        self._lock = threading.Lock()

    def record(self, **entry: Any) -> None:
        # the process that asked: the writer, or a task runner's worker (the ingest flow analyses on workers)
        entry = {"time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "run": self.run_id,
                 "pid": os.getpid(), **entry}
        with self._lock:
            usage = entry.get("usage")
            if isinstance(usage, dict):
                self.total.add(Usage(**usage))
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry, default=str) + "\n")

    def check_ceiling(self) -> None:
        if self.max_cost_usd is not None and self.total.cost_usd >= self.max_cost_usd:
            raise CostCeiling(f"this run has cost ${self.total.cost_usd:.4f}, over the ceiling of ${self.max_cost_usd:.2f}",
                              fix="raise [agents] max_cost_usd, or continue later: finished notes are kept")


class Breaker:
    """Opens after `threshold` consecutive failed tasks; one success closes it."""

    def __init__(self, threshold: int):
        self.threshold = max(1, threshold)
        self.failures = 0

    @property
    def open(self) -> bool:
        return self.failures >= self.threshold

    def success(self) -> None:
        self.failures = 0

    def failure(self) -> None:
        self.failures += 1


class Backend:
    """Base of every backend. Subclasses set `name`, `model` and implement `ask` (one attempt)."""

    name = "base"
    model = ""
    #: whether answers are quotations from the paper only (the note says so)
    verbatim = False
    #: the longest paper text one request may carry (a longer paper is read in parts, see
    #: `papervault.note_analysis`); None when the backend reads the paper's files itself or takes any length
    max_input_chars: int | None = None

    def __init__(self, *, retries: int = 3, backoff: float = 1.0, breaker_failures: int = 5,
                 concurrency: int = 4, timeout: float = 600.0, state_dir: Path | None = None,
                 max_cost_usd: float | None = None, run_id: str | None = None, cache_dir: Path | None = None):
        self.retries = max(1, retries)
        self.backoff = backoff
        self.concurrency = max(1, concurrency)
        self.timeout = timeout
        self.state_dir = state_dir
        self.breaker = Breaker(breaker_failures)
        self.log = RunLog(state_dir / "runs" if state_dir else None, run_id, max_cost_usd)
        self.cache = AnswerCache(cache_dir) if cache_dir is not None else None
        self._slots: dict[int, asyncio.Semaphore] = {}

    def _slot(self) -> asyncio.Semaphore:
        """At most `concurrency` tasks talk to the backend at once (per event loop: `run` makes a new loop)."""
        loop = id(asyncio.get_running_loop())
        if loop not in self._slots:
            self._slots = {loop: asyncio.Semaphore(self.concurrency)}
        return self._slots[loop]

    @property
    def label(self) -> str:
        """"<backend>/<model>": what a note records as its analyser."""
        return f"{self.name}/{self.model}" if self.model else self.name

    @property
    def configured_model(self) -> str | None:
        """The model the settings ask for; None when the backend picks its default (then any model matches)."""
        return self.model or None

    def made(self, analyser: str | None) -> bool:
        """True when an artefact recorded as made by `analyser` ("claude/claude-x") came from this backend."""
        if not analyser:
            return False
        name, _, model = analyser.partition("/")
        want = self.configured_model
        return name == self.name and (want is None or model == want)

    def material(self, task: Task) -> str:
        """What of `task`, beyond its prompts, schema and files, reaches the model (part of its answer-cache
        key); by default its plain-data inputs, which a backend may read in place of the prompts."""
        return json.dumps(task.inputs, sort_keys=True, default=str)

    async def ask(self, task: Task) -> Reply:  # pragma: no cover - abstract
        raise NotImplementedError

    def run(self, task: Task) -> Answer:
        """Synchronous `arun`, for callers without an event loop."""
        return asyncio.run(self.arun(task))

    async def arun(self, task: Task) -> Answer:
        """Ask until a valid answer arrives; quarantine and raise `BackendError` when none does."""
        if self.breaker.open:
            raise BreakerOpen(f"{self.label} failed {self.breaker.failures} times in a row; not asking it about {task.key or task.kind}",
                              fix="check the backend (server up? key valid? model name?) and run again")
        started = time.monotonic()
        key = AnswerCache.key(self.name, self.model, task, self.material(task)) if self.cache is not None else ""
        cached = self.cache.get(key, task.schema) if self.cache is not None and not task.fresh else None
        if cached is not None:
            data, model = cached
            model = model or self.model
            self.log.record(kind=task.kind, key=task.key, backend=self.name, model=model, ok=True, cached=True,
                            attempts=0, seconds=round(time.monotonic() - started, 3), usage=asdict(Usage()))
            return Answer(data=data, backend=self.name, model=model, usage=Usage(), attempts=0,
                          seconds=time.monotonic() - started, raw=json.dumps(data, default=str))
        self.log.check_ceiling()
        usage = Usage()
        failures: list[tuple[str, str]] = []
        fatal: BackendError | None = None
        try:
            async for attempt in async_retrying(self.retries, self.backoff):
                with attempt:
                    reply, data = await self._attempt(task, usage, failures)
        except RetryLater:
            pass
        except BackendError as exc:
            fatal = exc          # a wrong key or a missing CLI: retrying cannot help
        else:
            attempts = len(failures) + 1
            self.breaker.success()
            answer = Answer(data=data, backend=self.name, model=reply.model or self.model, usage=usage,
                            attempts=attempts, seconds=time.monotonic() - started,
                            raw=reply.text or json.dumps(data, default=str))
            self.log.record(kind=task.kind, key=task.key, backend=self.name, model=answer.model, ok=True,
                            attempts=attempts, seconds=round(answer.seconds, 3), usage=asdict(usage))
            if self.cache is not None:
                self.cache.put(key, data, kind=task.kind, model=answer.model)
            return answer
        attempts = len(failures)
        self.breaker.failure()
        where = self.quarantine(task, failures)
        self.log.record(kind=task.kind, key=task.key, backend=self.name, model=self.model, ok=False,
                        attempts=attempts, seconds=round(time.monotonic() - started, 3), usage=asdict(usage),
                        error=failures[-1][0] if failures else "", quarantine=str(where) if where else None)
        if fatal is not None:
            raise fatal
        reason = failures[-1][0] if failures else "no answer"
        raise BackendError(f"{self.label} gave no usable answer for {task.key or task.kind} after {attempts} attempt(s): {reason}",
                           fix=f"see the raw output in {where}" if where else "check the backend and run again")

    async def _attempt(self, task: Task, usage: Usage, failures: list[tuple[str, str]]) -> tuple[Reply, Any]:
        """One attempt: the reply and its validated data; `RetryLater` (the failure noted in `failures`) when
        another attempt may do better, the backend's error itself when it is not `retryable`."""
        try:
            async with self._slot():
                reply = await asyncio.wait_for(self.ask(task), timeout=self.timeout)
            usage.add(reply.usage)
            data = reply.data if reply.data is not None else parse_json(reply.text)
            return reply, validate(data, task.schema)
        except InvalidAnswer as exc:
            if exc.usage is not None:
                usage.add(exc.usage)
            failures.append((str(exc), exc.raw))
            raise RetryLater(str(exc)) from None
        except asyncio.TimeoutError:
            failures.append((f"no answer within {self.timeout:g} s", ""))
            raise RetryLater(failures[-1][0]) from None
        except BackendError as exc:
            failures.append((str(exc), getattr(exc, "raw", "")))
            if not getattr(exc, "retryable", True):
                raise
            raise RetryLater(str(exc), after=getattr(exc, "retry_after", None)) from None

    def quarantine(self, task: Task, failures: list[tuple[str, str]]) -> Path | None:
        """Keep every failed attempt's raw output for inspection under `.papervault/quarantine/`."""
        if self.state_dir is None:
            return None
        stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", task.key or task.kind)[:80]
        path = self.state_dir / "quarantine" / f"{safe}-{self.name}-{stamp}-{uuid.uuid4().hex[:4]}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"key": task.key, "kind": task.kind, "backend": self.name, "model": self.model,
                  "attempts": [{"error": e, "raw": r} for e, r in failures],
                  "prompt": task.prompt, "schema": task.schema}
        path.write_text(json.dumps(record, indent=2, default=str), encoding="utf-8")
        return path
