"""The `claude` backend: one Claude Agent SDK session per task, read-only, in a folder holding only its files.

Paper text is untrusted input. The session is boxed in three ways: the model is offered only Read, Grep
and Glob (no shell, no writes, no web); a PreToolUse hook denies any path outside the session folder; and
the session's folder is a fresh temporary copy of the task's files, so even a permitted read sees nothing
else. The answer is requested as structured output (the CLI offers the model a `StructuredOutput` tool)
and comes back as `ResultMessage.structured_output`, then validated by `Backend.arun`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from papervault.agents.base import Backend, InvalidAnswer, Reply, Task, Usage, wire_schema
from papervault.config import ClaudeSettings
from papervault.errors import BackendError

READ_ONLY_TOOLS = ["Read", "Grep", "Glob"]
# Named as well as left out, so a CLI whose defaults change still cannot offer them.
DENIED_TOOLS = ["Bash", "BashOutput", "KillShell", "Write", "Edit", "MultiEdit", "NotebookEdit", "WebFetch",
                "WebSearch", "Task", "Agent", "TodoWrite", "Skill", "SlashCommand", "ExitPlanMode"]
CREDENTIAL_VARS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                   "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")


def _fatal(message: str, fix: str) -> BackendError:
    err = BackendError(message, fix=fix)
    err.retryable = False  # type: ignore[attr-defined]
    return err


def _inside(root: Path, value: str | None) -> bool:
    if not value:
        return True
    p = Path(value)
    p = (p if p.is_absolute() else root / p).resolve()
    return p == root or root in p.parents


def _path_guard(root: Path):
    """A PreToolUse hook: deny Read/Grep/Glob on anything outside the session folder."""
    root = root.resolve()

    async def guard(hook_input: dict[str, Any], tool_use_id: str | None, context: Any) -> dict[str, Any]:
        tool = hook_input.get("tool_name", "")
        args = hook_input.get("tool_input") or {}
        if tool not in READ_ONLY_TOOLS and tool != "StructuredOutput":
            reason = f"{tool} is not available: this session may only read the paper"
        elif all(_inside(root, args.get(k)) for k in ("file_path", "path", "notebook_path")):
            return {}
        else:
            reason = "only files in the session folder (the paper and its figures) may be read"
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": reason}}
    return guard


class ClaudeBackend(Backend):
    name = "claude"

    def __init__(self, settings: ClaudeSettings, **kw):
        super().__init__(**kw)
        self.settings = settings
        self.model = settings.model or "default"

    @property
    def configured_model(self) -> str | None:
        return self.settings.model

    def _check_credentials(self, env: dict[str, str]) -> None:
        if any(env.get(v) or os.environ.get(v) for v in CREDENTIAL_VARS):
            return
        home = Path(env.get("HOME") or os.environ.get("HOME") or "~").expanduser()
        if (home / ".claude" / ".credentials.json").is_file():
            return
        raise _fatal("no Claude credentials: ANTHROPIC_API_KEY is not set and `claude login` has not been run",
                     "export ANTHROPIC_API_KEY=... (or run `claude login`), or use the extractive backend")

    def options(self, task: Task, cwd: Path, stderr: list[str]):
        from claude_agent_sdk import ClaudeAgentOptions, HookMatcher  # deferred: the SDK takes ~0.35 s to import

        s = self.settings
        return ClaudeAgentOptions(
            tools=list(READ_ONLY_TOOLS),
            allowed_tools=list(READ_ONLY_TOOLS),
            disallowed_tools=list(DENIED_TOOLS),
            permission_mode="dontAsk",            # anything not pre-approved is denied, never prompted
            system_prompt=task.system,
            output_format={"type": "json_schema", "schema": wire_schema(task.schema)},
            cwd=str(cwd),
            max_turns=s.max_turns,
            model=s.model,
            cli_path=s.cli_path,
            setting_sources=[],                   # no user/project settings, CLAUDE.md or hooks leak in
            strict_mcp_config=True,               # and no MCP servers from the user's configuration
            hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[_path_guard(cwd)])]},
            stderr=stderr.append,
            max_budget_usd=s.max_budget_usd,
        )

    def material(self, task: Task) -> str:
        """Nothing beyond the prompts, schema and files: a session sees no other part of the task."""
        return ""

    async def ask(self, task: Task) -> Reply:
        try:
            from claude_agent_sdk import CLINotFoundError, ClaudeSDKError, ResultMessage, query  # deferred: as above
        except ImportError:  # pragma: no cover - a dependency of papervault
            raise _fatal("the Claude Agent SDK is not installed", "pip install claude-agent-sdk") from None
        self._check_credentials({})
        cwd = Path(tempfile.mkdtemp(prefix="papervault-session-"))
        stderr: list[str] = []
        try:
            for name, src in task.files.items():
                dest = (cwd / name).resolve()
                if cwd.resolve() not in dest.parents:
                    continue  # a file name that climbs out is dropped, not followed
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)
            result = None
            async for message in query(prompt=task.prompt, options=self.options(task, cwd, stderr)):
                if isinstance(message, ResultMessage):
                    result = message
        except CLINotFoundError:
            raise _fatal("the claude CLI was not found", "reinstall claude-agent-sdk or set [claude] cli_path") from None
        except ClaudeSDKError as exc:
            err = BackendError(f"claude session failed: {exc}".strip()[:500], fix="see the run log and quarantine")
            err.raw = "\n".join(stderr)[-4000:]  # type: ignore[attr-defined]
            raise err from None
        finally:
            shutil.rmtree(cwd, ignore_errors=True)
        if result is None:
            raise InvalidAnswer("the session ended without a result", "\n".join(stderr)[-4000:])
        u = result.usage or {}
        usage = Usage(input_tokens=int(u.get("input_tokens") or 0) + int(u.get("cache_read_input_tokens") or 0)
                      + int(u.get("cache_creation_input_tokens") or 0),
                      output_tokens=int(u.get("output_tokens") or 0),
                      cost_usd=float(result.total_cost_usd or 0.0), turns=result.num_turns or 0)
        # record the configured name when there is one (an alias like "sonnet" must still match next time),
        # else the model the CLI chose
        model = self.settings.model or next(iter(result.model_usage or {}), None) or self.model
        if result.is_error or result.structured_output is None:
            status = getattr(result, "api_error_status", None)
            detail = "; ".join(result.errors or []) or (result.result or "") or result.subtype
            if status in (401, 403):
                raise _fatal(f"the Claude API refused the credentials ({status})", "check ANTHROPIC_API_KEY")
            exc = InvalidAnswer(f"no structured answer ({result.subtype}{f', HTTP {status}' if status else ''}): {detail[:200]}",
                                result.result or "\n".join(stderr)[-4000:], usage)
            raise exc
        return Reply(data=result.structured_output, text="", usage=usage, model=model)
