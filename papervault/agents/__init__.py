"""LLM backends behind one small interface (`Task` in, validated `Answer` out); prompts are templates.

Backends: `extractive` (no model, quotations only), `claude` (Claude Agent SDK, one read-only session per
task), `openai` (any OpenAI-compatible chat-completions endpoint). `get_backend` builds one from settings.
"""

from __future__ import annotations

from pathlib import Path

from papervault.agents.base import Answer, Backend, BreakerOpen, CostCeiling, Reply, Task, Usage
from papervault.config import Settings
from papervault.errors import BackendError

BACKENDS = ("extractive", "claude", "openai")

__all__ = ["Answer", "Backend", "BreakerOpen", "CostCeiling", "Reply", "Task", "Usage", "BACKENDS", "get_backend"]


def get_backend(name: str | None, settings: Settings, *, state_dir: Path | None = None,
                run_id: str | None = None) -> Backend:
    """The backend called `name` (default: `[agents] backend`), configured from `settings`.

    `state_dir` is the workspace's `.papervault/` (run logs and quarantine); by default the one of the
    current workspace (`PAPERVAULT_WORKSPACE` or the nearest `papervault.toml`).
    """
    name = (name or settings.agents.backend or "extractive").strip().lower()
    if state_dir is None:
        from papervault.workspace import Workspace

        state_dir = Workspace.resolve().state_dir
    a = settings.agents
    common = dict(retries=a.retries, backoff=a.backoff, breaker_failures=a.breaker_failures,
                  concurrency=a.concurrency, timeout=a.timeout, state_dir=state_dir,
                  max_cost_usd=a.max_cost_usd, run_id=run_id)
    if name == "extractive":
        from papervault.agents.extractive import ExtractiveBackend

        return ExtractiveBackend(**common)
    if name == "claude":
        from papervault.agents.claude import ClaudeBackend

        return ClaudeBackend(settings.claude, **common)
    if name == "openai":
        from papervault.agents.openai import OpenAIBackend

        return OpenAIBackend(settings.openai, **common)
    raise BackendError(f"unknown backend {name!r}", fix=f"use one of {', '.join(BACKENDS)} ([agents] backend)")
