"""Loopback model servers for tests: an Anthropic Messages API and an OpenAI chat-completions API on 127.0.0.1.

Both speak the real wire protocol (the Messages API streams server-sent events), so the real `claude` CLI
bundled with claude-agent-sdk and our httpx client talk to them unchanged. A test scripts what the "model"
answers with a `responder`: a function from the request (parsed JSON) to a `Turn`, or a list of `Turn`s
served in order. Every request is recorded (`server.requests`) and the peak number of requests in flight
is tracked (`server.max_in_flight`), so tests can assert what the model was offered and how many sessions
ran at once.

    with MessagesServer(lambda req: Turn.structured({"summary": []})) as srv:
        env = srv.claude_env()          # ANTHROPIC_BASE_URL=http://127.0.0.1:PORT, key, no telemetry

Used by the agents, survey and MCP tests.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

STRUCTURED_TOOL = "StructuredOutput"


@dataclass
class Turn:
    """One scripted model reply.

    kind: "structured" (a tool_use of StructuredOutput with `data`), "tool" (a tool_use of `tool` with
    `data` as input), "text" (plain text), "empty" (HTTP 200 with an empty body), "status" (an HTTP error
    `status` with an API error body), "raw" (`text` written verbatim as the body).
    """

    kind: str = "text"
    data: Any = None
    text: str = ""
    tool: str = ""
    delay: float = 0.0
    status: int = 200
    retry_after: str | None = None      # with kind "status": the Retry-After header
    input_tokens: int = 100
    output_tokens: int = 50

    @classmethod
    def structured(cls, data: Any, **kw) -> "Turn":
        return cls(kind="structured", data=data, **kw)

    @classmethod
    def tool_use(cls, tool: str, data: dict, **kw) -> "Turn":
        return cls(kind="tool", tool=tool, data=data, **kw)

    @classmethod
    def say(cls, text: str, **kw) -> "Turn":
        return cls(kind="text", text=text, **kw)

    @classmethod
    def empty(cls, **kw) -> "Turn":
        return cls(kind="empty", **kw)

    @classmethod
    def error(cls, status: int, **kw) -> "Turn":
        return cls(kind="status", status=status, **kw)

    @classmethod
    def raw(cls, body: str, **kw) -> "Turn":
        return cls(kind="raw", text=body, **kw)


Responder = Callable[[dict], Turn] | Iterable[Turn]


def _as_callable(responder: Responder) -> Callable[[dict], Turn]:
    if callable(responder):
        return responder
    queue = list(responder)
    lock = threading.Lock()

    def next_turn(_req: dict) -> Turn:
        with lock:
            return queue.pop(0) if queue else Turn.say("(script exhausted)")
    return next_turn


# --- helpers to read an Anthropic request ---------------------------------------------------------

def tool_names(req: dict) -> list[str]:
    return [t.get("name", "") for t in req.get("tools") or []]


def system_text(req: dict) -> str:
    sys = req.get("system")
    if isinstance(sys, list):
        return "\n".join(b.get("text", "") for b in sys if isinstance(b, dict))
    return sys or ""


def last_user_blocks(req: dict) -> list[dict]:
    msgs = req.get("messages") or []
    for msg in reversed(msgs):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, str):
                return [{"type": "text", "text": content}]
            return list(content or [])
    return []


def all_text(req: dict) -> str:
    """Every text and tool result in the conversation, for matching on content."""
    out = [system_text(req)]
    for msg in req.get("messages") or []:
        content = msg.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        for b in content or []:
            if b.get("type") == "text":
                out.append(b.get("text", ""))
            elif b.get("type") == "tool_result":
                c = b.get("content")
                out.append(c if isinstance(c, str) else json.dumps(c))
    return "\n".join(out)


def answered_structured(req: dict) -> bool:
    """True when the last user turn carries the result of our StructuredOutput call: time to end the turn."""
    msgs = req.get("messages") or []
    ids = set()
    for msg in msgs:
        if msg.get("role") == "assistant" and isinstance(msg.get("content"), list):
            ids |= {b.get("id") for b in msg["content"] if b.get("type") == "tool_use" and b.get("name") == STRUCTURED_TOOL}
    return any(b.get("type") == "tool_result" and b.get("tool_use_id") in ids for b in last_user_blocks(req))


def is_main_request(req: dict) -> bool:
    """The CLI's side requests (titles, quota probes) offer no StructuredOutput tool; the session's do."""
    return STRUCTURED_TOOL in tool_names(req)


# --- the servers ---------------------------------------------------------------------------------

class _Server:
    def __init__(self, responder: Responder):
        self.respond = _as_callable(responder)
        self.requests: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.httpd: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self.httpd is not None
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def _enter(self, req: dict):
        with self._lock:
            self.requests.append(req)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self):
        with self._lock:
            self.in_flight -= 1

    def start(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                server.handle_get(self)

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    req = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    req = {}
                req["_path"] = self.path
                server.handle_post(self, req)

        class Quiet(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # a client that gives up (a timed-out session) breaks the pipe: expected, not worth a traceback
                import sys
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)

        self.httpd = Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @staticmethod
    def send_json(h: BaseHTTPRequestHandler, status: int, body: Any, headers: dict | None = None):
        data = json.dumps(body).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    @staticmethod
    def send_raw(h: BaseHTTPRequestHandler, status: int, body: str, ctype: str = "application/json"):
        data = body.encode()
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def handle_get(self, h: BaseHTTPRequestHandler):
        self.send_json(h, 200, {"data": [], "object": "list"})


class MessagesServer(_Server):
    """An Anthropic Messages API (`POST /v1/messages`, streamed or not) answering from a script.

    Requests that are not part of a session (no StructuredOutput tool offered: the CLI's title or quota
    probes) get a short text reply and are not passed to the responder. After a StructuredOutput tool_use,
    the CLI sends its tool_result; the server then ends the turn with a short text, also without asking the
    responder. So a responder sees exactly the session's "what next?" requests.
    """

    model = "claude-test"

    def claude_env(self) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": "test",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}

    @property
    def session_requests(self) -> list[dict]:
        return [r for r in self.requests if is_main_request(r)]

    def handle_post(self, h: BaseHTTPRequestHandler, req: dict):
        path = req.get("_path", "")
        if "count_tokens" in path:
            return self.send_json(h, 200, {"input_tokens": 100})
        if "/messages" not in path:
            return self.send_json(h, 404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
        self._enter(req)
        try:
            if not is_main_request(req):
                turn = Turn.say("ok")
            elif answered_structured(req):
                turn = Turn.say("Done.")
            else:
                turn = self.respond(req)
            if turn.delay:
                time.sleep(turn.delay)
            self._reply(h, req, turn)
        finally:
            self._leave()

    def _reply(self, h: BaseHTTPRequestHandler, req: dict, turn: Turn):
        if turn.kind == "empty":
            return self.send_raw(h, 200, "", "text/event-stream" if req.get("stream") else "application/json")
        if turn.kind == "raw":
            return self.send_raw(h, 200, turn.text, "text/event-stream" if req.get("stream") else "application/json")
        if turn.kind == "status":
            return self.send_json(h, turn.status, {"type": "error", "error": {
                "type": "overloaded_error" if turn.status == 529 else "api_error", "message": f"scripted {turn.status}"}})
        if turn.kind in ("structured", "tool"):
            block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}",
                     "name": STRUCTURED_TOOL if turn.kind == "structured" else turn.tool, "input": turn.data}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": turn.text}
            stop = "end_turn"
        message = {"id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant",
                   "model": req.get("model") or self.model, "content": [block], "stop_reason": stop,
                   "stop_sequence": None,
                   "usage": {"input_tokens": turn.input_tokens, "output_tokens": turn.output_tokens}}
        if not req.get("stream"):
            return self.send_json(h, 200, message)
        events = [("message_start", {"type": "message_start", "message": {**message, "content": [], "stop_reason": None,
                                                                        "usage": {"input_tokens": turn.input_tokens, "output_tokens": 1}}})]
        if block["type"] == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                                   "content_block": {**block, "input": {}}}))
            payload = json.dumps(block["input"])
            for i in range(0, len(payload), 400):
                events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                       "delta": {"type": "input_json_delta", "partial_json": payload[i:i + 400]}}))
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": turn.output_tokens}}))
        events.append(("message_stop", {"type": "message_stop"}))
        body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)


class ChatServer(_Server):
    """An OpenAI-compatible chat-completions API (`POST /v1/chat/completions`) answering from a script.

    A "structured" turn answers with `data` as JSON text in the message content; "text" with `text`;
    "empty" with an empty 200 body; "raw" with `text` verbatim; "status" with an HTTP error.
    """

    model = "local-test"

    def handle_post(self, h: BaseHTTPRequestHandler, req: dict):
        if not req.get("_path", "").rstrip("/").endswith("/chat/completions"):
            return self.send_json(h, 404, {"error": {"message": "not found"}})
        self._enter(req)
        try:
            turn = self.respond(req)
            if turn.delay:
                time.sleep(turn.delay)
            if turn.kind == "empty":
                return self.send_raw(h, 200, "")
            if turn.kind == "raw":
                return self.send_raw(h, 200, turn.text)
            if turn.kind == "status":
                return self.send_json(h, turn.status, {"error": {"message": f"scripted {turn.status}", "type": "server_error"}},
                                      {"Retry-After": turn.retry_after} if turn.retry_after is not None else None)
            content = json.dumps(turn.data) if turn.kind == "structured" else turn.text
            self.send_json(h, 200, {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": int(time.time()),
                "model": req.get("model") or self.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": turn.input_tokens, "completion_tokens": turn.output_tokens,
                          "total_tokens": turn.input_tokens + turn.output_tokens},
            })
        finally:
            self._leave()


# --- a small paper for model tests -----------------------------------------------------------------

SAMPLE_PAPER = """\
<a id="page-1"></a>

# Widgets at Scale

Jane Doe, Rob Roe

## Abstract

Widget placement is slow in large clusters. We present Gizmo, a widget scheduler that places widgets in constant time. On the WidgetBench benchmark Gizmo is 3.2× faster than Sprocket.

## 1 Introduction

Placing widgets is a hard problem because clusters are large. However, existing schedulers scan every node.
Our contributions are:

- We design Gizmo, a scheduler with constant-time placement.
- We evaluate Gizmo on the WidgetBench benchmark and show a 3.2× speedup over Sprocket.

<a id="page-2"></a>

## 2 Design

Gizmo keeps a sorted index of free capacity. Placement takes one lookup in the index.

![Figure 1: The architecture of Gizmo. Requests flow left to right.](figures/fig-1.png)

## 3 Evaluation

We compare Gizmo against Sprocket on the WidgetBench benchmark. Compared to Sprocket, Gizmo reduces latency by 69%. Figure 2 shows the latency over time.

Table 1: Placement latency and throughput on WidgetBench.

| System | Latency (ms) | Throughput |
|---|---|---|
| Gizmo | 1.2 | 830 |
| Sprocket | 3.9 | 250 |

![Figure 2: Latency over time.](figures/fig-2.png)

<a id="page-3"></a>

## 4 Conclusion

Gizmo does not support heterogeneous widgets. Future work will extend it to widget migration. The code is available at https://github.com/example/gizmo.

## References

[1] A. Smith. Sprocket: scheduling widgets. 2019.
"""

SAMPLE_ANSWER = {
    "summary": [{"text": "Gizmo schedules widgets in constant time and beats Sprocket on WidgetBench.", "page": 1, "section": "Abstract"}],
    "problem": [{"text": "Existing schedulers scan every node.", "page": 1, "section": "1 Introduction"}],
    "contributions": [{"text": "Gizmo, a constant-time scheduler.", "page": 1, "section": "1 Introduction"}],
    "method": "Gizmo: a sorted index of free capacity",
    "method_details": [{"text": "A sorted index of free capacity makes placement one lookup.", "page": 2, "section": "2 Design"}],
    "datasets": ["WidgetBench"], "metrics": ["latency", "throughput"], "baselines": ["Sprocket"],
    "key_results": [{"setting": "Gizmo", "metric": "Latency (ms)", "value": "1.2", "page": 2, "source": "Table 1"}],
    "results": [{"text": "Latency drops by 69% against Sprocket.", "page": 2, "section": "3 Evaluation"}],
    "limitations": [{"text": "No heterogeneous widgets.", "page": 3, "section": "4 Conclusion"}],
    "code_urls": ["https://github.com/example/gizmo"], "reproducibility": [],
    "main_figures": [{"number": "1", "why": "the architecture", "page": 2}, {"number": "2", "why": "latency", "page": 2}],
    "open_questions": [{"text": "Widget migration.", "page": 3, "section": "4 Conclusion"}],
}


def make_paper_vault(root, paper_id: str = "doe2020widgets", text: str = SAMPLE_PAPER, **meta):
    """A vault under `root` holding one parsed paper (note with metadata, paper.md, two tiny figures)."""
    from papervault.models import PaperMeta
    from papervault.vault.store import Vault

    from pathlib import Path

    root = Path(root)
    vault = Vault(root / "vault") if (root / "vault" / ".git").is_dir() else Vault.create(root / "vault")
    fields = {"title": "Widgets at Scale", "authors": ["Jane Doe", "Rob Roe"], "year": 2020, "sha256": "a" * 64,
              "pages": 3, "status": "parsed", **meta}
    vault.write_note(PaperMeta(id=paper_id, **fields), f"# {fields['title']}\n")
    vault.fulltext_path(paper_id).write_text(text, encoding="utf-8")
    figs = vault.paper_dir(paper_id) / "figures"
    figs.mkdir(exist_ok=True)
    for name in ("fig-1.png", "fig-2.png"):
        (figs / name).write_bytes(b"\x89PNG\r\n\x1a\n")
    vault.commit(f"add: {paper_id}")
    return vault
