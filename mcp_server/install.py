"""Register the server with MCP clients: Claude Code (`.mcp.json` in the workspace, or `~/.claude.json` for
every folder with `--scope user`), Codex (`~/.codex/config.toml`).

Both files belong to the user and may hold other servers: only the `papervault` entry is replaced, the rest of
the file is kept as it was (for TOML, byte for byte outside our table), and a file we cannot read is left alone.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from papervault.errors import PapervaultError
from papervault.index.embed import workspace_embed_settings
from papervault.vault.store import atomic_write
from papervault.workspace import Workspace

NAME = "papervault"
CLIENTS = ("claude-code", "codex")


class InstallError(PapervaultError):
    """A client configuration file could not be updated."""


def server_command(ws: Workspace, *, allow_write: bool = False) -> tuple[str, list[str]]:
    """The command a client runs to start this workspace's server: this installation's own `papervault`."""
    script = Path(sys.executable).parent / "papervault"
    # the console script of the same environment; else the interpreter itself (works without the script)
    command, args = (str(script), []) if script.is_file() else (sys.executable, ["-m", "papervault"])
    args += ["mcp", "serve", "--workspace", str(ws.root)]
    if allow_write:
        args.append("--allow-write")
    return command, args


def record_model(ws: Workspace) -> dict[str, Any]:
    """Record in papervault.toml the embedding model the server must load (the one the index was built with,
    or the one this shell's settings give), so a server that the client starts without this shell's
    environment loads the same model. Returns what was written."""
    s = workspace_embed_settings(ws)
    return ws.record_embed(model=s.model, model_path=s.model_path)


SCOPES = ("project", "user")


def claude_user_config() -> Path:
    """Claude Code's own configuration file, where `claude mcp add --scope user` registers a server."""
    return Path.home() / ".claude.json"


def install_claude_code(ws: Workspace, *, allow_write: bool = False, name: str = NAME,
                        scope: str = "project") -> dict[str, Any]:
    """Write or merge the server's entry: `scope="project"` in `<workspace>/.mcp.json` (Claude Code started in
    the workspace folder), `scope="user"` in the top-level `mcpServers` of `~/.claude.json` (every folder,
    as `claude mcp add --scope user` does). Every other key of either file is kept as it was."""
    if scope not in SCOPES:
        raise InstallError(f"unknown scope {scope!r}", fix=f"use --scope {' or --scope '.join(SCOPES)}")
    path = ws.root / ".mcp.json" if scope == "project" else claude_user_config()
    mode = path.stat().st_mode & 0o777 if path.exists() else (0o600 if scope == "user" else None)
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8") or "{}")
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InstallError(f"{path} is not valid JSON ({exc})", fix="fix or remove the file, then run again") from None
        if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
            raise InstallError(f"{path} has no mcpServers object", fix="fix the file, then run again")
    command, args = server_command(ws, allow_write=allow_write)
    recorded = record_model(ws)
    entry = {"type": "stdio", "command": command, "args": args, "env": {}}
    servers = data.setdefault("mcpServers", {})
    replaced = name in servers
    servers[name] = entry
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    if mode is not None:
        os.chmod(path, mode)     # ~/.claude.json is private to its user: it stays so
    return {"client": "claude-code", "scope": scope, "path": str(path), "name": name, "server": entry,
            "replaced": replaced, "recorded": recorded}


def codex_config_path() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex") / "config.toml"


def _toml_str(value: str) -> str:
    # JSON's string escapes are valid TOML basic-string escapes
    return json.dumps(value, ensure_ascii=False)


def _drop_table(text: str, name: str) -> str:
    """Remove `[mcp_servers.<name>]` and its sub-tables from TOML text, leaving every other line as it was."""
    own = re.compile(r"^\s*\[\s*mcp_servers\s*\.\s*(?:\"%s\"|%s)\s*(?:\..*)?\]\s*(?:#.*)?$" % (re.escape(name), re.escape(name)))
    header = re.compile(r"^\s*\[")
    out, skipping = [], False
    for line in text.splitlines(keepends=True):
        if header.match(line):
            skipping = bool(own.match(line))
        if not skipping:
            out.append(line)
    return "".join(out)


def install_codex(ws: Workspace, *, allow_write: bool = False, name: str = NAME,
                  path: Path | None = None) -> dict[str, Any]:
    """Write or merge the `[mcp_servers.<name>]` table of Codex's config.toml."""
    path = path or codex_config_path()
    text = ""
    before: dict[str, Any] = {}
    if path.exists():
        text = path.read_text(encoding="utf-8")
        try:
            before = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InstallError(f"{path} is not valid TOML ({exc})", fix="fix the file, then run again") from None
    replaced = name in (before.get("mcp_servers") or {})
    kept = _drop_table(text, name)
    command, args = server_command(ws, allow_write=allow_write)
    recorded = record_model(ws)
    block = (f"[mcp_servers.{name}]\n"
             f"command = {_toml_str(command)}\n"
             f"args = [{', '.join(_toml_str(a) for a in args)}]\n")
    new = kept.rstrip("\n") + ("\n\n" if kept.strip() else "") + block
    after = tomllib.loads(new)
    # what was there for other servers and settings must be exactly what is there now
    expect = {k: v for k, v in before.items() if k != "mcp_servers"}
    expect_servers = {k: v for k, v in (before.get("mcp_servers") or {}).items() if k != name}
    got = {k: v for k, v in after.items() if k != "mcp_servers"}
    got_servers = {k: v for k, v in after["mcp_servers"].items() if k != name}
    if got != expect or got_servers != expect_servers:
        raise InstallError(f"{path} defines mcp_servers.{name} in a form papervault cannot replace safely",
                           fix=f"remove the {name} entry by hand, then run again")
    atomic_write(path, new)
    return {"client": "codex", "path": str(path), "name": name,
            "server": {"command": command, "args": args}, "replaced": replaced, "recorded": recorded}


def install(client: str, ws: Workspace, *, allow_write: bool = False, scope: str = "project") -> dict[str, Any]:
    if client == "claude-code":
        return install_claude_code(ws, allow_write=allow_write, scope=scope)
    if client == "codex":
        return install_codex(ws, allow_write=allow_write)
    raise InstallError(f"unknown client {client!r}", fix=f"use one of {', '.join(CLIENTS)}")
