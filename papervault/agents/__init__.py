"""LLM backends behind one small interface (`Task` in, validated `Answer` out); prompts are templates.

Backends register in one registry (`papervault.registry.BACKENDS`, the entry-point group `papervault.backends`)
with what they can do (`Capabilities`): callers ask `capabilities(name)` ("does it write prose?") instead of
comparing names. The built-in ones, `extractive` (no model, quotations only), `claude` (Claude Agent SDK, one
read-only session per task) and `openai` (any OpenAI-compatible chat-completions endpoint), are entry points of
papervault's own pyproject.toml, as another package's backend would be; `register` adds one in-process.
`get_backend` builds one from settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from papervault.agents.base import Answer, Backend, BreakerOpen, CostCeiling, Reply, Task, Usage
from papervault.config import Settings
from papervault.errors import BackendError
from papervault.registry import BACKENDS as REGISTRY
from papervault.workspace import Workspace

__all__ = ["Answer", "Backend", "BreakerOpen", "CostCeiling", "Reply", "Task", "Usage", "BACKENDS",
           "BackendSpec", "Capabilities", "backend_names", "capabilities", "get_backend", "register", "registered"]


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do; the survey and the analyser decide on these, never on a backend's name."""

    writes_prose: bool = False     # composes text of its own (else: only quotes the papers)
    takes_schema: bool = False     # answers in JSON that follows a schema given with the task
    uses_model: bool = False       # calls a language model (costs, credentials, network)
    reads_files: bool = False      # can open the paper's files itself (page images, figures)


@dataclass(frozen=True)
class BackendSpec:
    name: str
    factory: Callable[..., Backend]       # (settings, **common) -> Backend
    capabilities: Capabilities
    description: str = ""


def register(name: str, factory: Callable[..., Backend], capabilities: Capabilities, description: str = "") -> None:
    """Add a backend in-process: `factory(settings, **common)` builds it; `capabilities` say what it can do.
    (A package adds one for good with an entry point in the group `papervault.backends`; see
    `papervault.registry`.)"""
    REGISTRY.register(name, BackendSpec(name.strip().lower(), factory, capabilities, description))


def registered() -> dict[str, BackendSpec]:
    return REGISTRY.items()


def backend_names() -> tuple[str, ...]:
    """The name of every registered backend, built-ins first, without importing any."""
    return REGISTRY.names()


def _spec(name: str | None) -> BackendSpec:
    key = (name or "extractive").strip().lower()
    try:
        return REGISTRY.get(key)
    except KeyError:
        raise BackendError(f"unknown backend {name!r}",
                           fix=f"use one of {', '.join(backend_names())} ([agents] backend)") from None


def capabilities(backend: str | Backend | None) -> Capabilities:
    """What the backend called `backend` (or that backend object) can do."""
    if isinstance(backend, Backend):
        return _spec(backend.name).capabilities
    return _spec(backend).capabilities


def _extractive(settings: Settings, **common: Any) -> Backend:
    from papervault.agents.extractive import ExtractiveBackend  # deferred: a backend loads only when chosen

    return ExtractiveBackend(**common)


def _claude(settings: Settings, **common: Any) -> Backend:
    from papervault.agents.claude import ClaudeBackend  # deferred: as above

    return ClaudeBackend(settings.claude, **common)


def _openai(settings: Settings, **common: Any) -> Backend:
    from papervault.agents.openai import OpenAIBackend  # deferred: as above (httpx, ~50 ms)

    return OpenAIBackend(settings.openai, **common)


# The built-in backends, named by the entry points `papervault.backends` in pyproject.toml.
EXTRACTIVE = BackendSpec("extractive", _extractive, Capabilities(takes_schema=True),
                         "no model: quotations, tables and figures of the paper itself")
CLAUDE = BackendSpec("claude", _claude,
                     Capabilities(writes_prose=True, takes_schema=True, uses_model=True, reads_files=True),
                     "Claude Agent SDK, one read-only session per task")
OPENAI = BackendSpec("openai", _openai, Capabilities(writes_prose=True, takes_schema=True, uses_model=True),
                     "any OpenAI-compatible chat-completions endpoint")

#: the names of the built-in backends (the registry may hold more: `backend_names()`)
BACKENDS = (EXTRACTIVE.name, CLAUDE.name, OPENAI.name)


def get_backend(name: str | None, settings: Settings, *, state_dir: Path | None = None,
                run_id: str | None = None) -> Backend:
    """The backend called `name` (default: `[agents] backend`), configured from `settings`.

    `state_dir` is the workspace's `.papervault/` (run logs, quarantine and, for a backend that calls a model,
    the answer cache in `cache/answers/` unless `[agents] answer_cache` is off); by default the one of the
    current workspace (`PAPERVAULT_WORKSPACE` or the nearest `papervault.toml`).
    """
    spec = _spec(name or settings.agents.backend or "extractive")
    if state_dir is None:
        state_dir = Workspace.resolve().state_dir
    a = settings.agents
    # a model's valid answers are kept by what it was asked, so an unchanged task is not asked again
    cache_dir = state_dir / "cache" / "answers" if spec.capabilities.uses_model and a.answer_cache else None
    common = dict(retries=a.retries, backoff=a.backoff, breaker_failures=a.breaker_failures,
                  concurrency=a.concurrency, timeout=a.timeout, state_dir=state_dir,
                  max_cost_usd=a.max_cost_usd, run_id=run_id, cache_dir=cache_dir)
    return spec.factory(settings, **common)
