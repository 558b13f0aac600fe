"""`mcp`: serve the vault to agents over MCP (stdio or HTTP), and register it with Claude Code or Codex."""

from __future__ import annotations

import click

from papervault.commands.common import emit_json, json_option, open_workspace, workspace_option


def serve_options(f):
    for opt in reversed([
        click.option("--allow-write", is_flag=True, help="Also offer add_paper, add_repo and delete_paper."),
        click.option("--http", "http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 instead of stdio."),
        click.option("--port", type=int, default=8765, show_default=True, help="With --http: the port."),
        click.option("--token", envvar="PAPERVAULT_MCP_TOKEN", metavar="TOKEN",
                     help="With --http: the bearer token clients must send (default: $PAPERVAULT_MCP_TOKEN, "
                          "else a new one, printed)."),
        workspace_option,
    ]):
        f = opt(f)
    return f


def _serve(workspace, allow_write, http, port, token) -> None:
    # the MCP server is imported only here: the library and the other commands never need it
    from mcp_server.server import build_server

    ws = open_workspace(workspace)
    server = build_server(ws, allow_write=allow_write)
    if not http:
        server.run("stdio")
        return
    from mcp_server.http import eprint, new_token, serve_http  # deferred: not at CLI start-up

    generated = not token
    token = token or new_token()
    # stdout stays clean for scripts; the address and a generated token go to stderr
    def announce(url: str) -> None:
        eprint(f"papervault MCP server for {ws.root} at {url}" + (" (write tools on)" if allow_write else ""))
        if generated:
            eprint(f"bearer token: {token}")

    serve_http(server, token=token, port=port, announce=announce)


@click.group(invoke_without_command=True)
@serve_options
@click.pass_context
def mcp(ctx, workspace, allow_write, http, port, token):
    """Serve the vault to agents over MCP (stdio by default; `mcp install` registers it with a client)."""
    if ctx.invoked_subcommand is None:
        _serve(workspace, allow_write, http, port, token)


def _group_workspace(ctx, workspace):
    """`papervault mcp --workspace X install ...`: a folder given to the group counts for its subcommands."""
    parent = ctx.parent
    if parent is not None and parent.get_parameter_source("workspace") == click.core.ParameterSource.COMMANDLINE:
        if ctx.get_parameter_source("workspace") != click.core.ParameterSource.COMMANDLINE:
            return parent.params["workspace"]
    return workspace


@mcp.command()
@serve_options
@click.pass_context
def serve(ctx, workspace, allow_write, http, port, token):
    """Run the MCP server: search, read and browse the vault; writes only with --allow-write."""
    _serve(_group_workspace(ctx, workspace), allow_write, http, port, token)


@mcp.command()
@click.argument("client", type=click.Choice(["claude-code", "codex"]))
@click.option("--allow-write", is_flag=True, help="Register the server with its write tools.")
@click.option("--scope", type=click.Choice(["project", "user"]), default="project", show_default=True,
              help="claude-code: project = .mcp.json in the workspace (Claude Code started there); "
                   "user = ~/.claude.json (Claude Code started in any folder, e.g. your code repositories).")
@workspace_option
@json_option
@click.pass_context
def install(ctx, client, allow_write, scope, workspace, as_json):
    """Register this workspace's server with Claude Code (.mcp.json, or ~/.claude.json with --scope user) or
    Codex (~/.codex/config.toml)."""
    from mcp_server.install import install as run_install  # deferred: not at CLI start-up

    ws = open_workspace(_group_workspace(ctx, workspace))
    result = run_install(client, ws, allow_write=allow_write, scope=scope)
    if as_json:
        emit_json(result)
        return
    verb = "Updated" if result["replaced"] else "Added"
    click.echo(f"{verb} MCP server '{result['name']}' in {result['path']}")
    if client == "claude-code" and scope == "user":
        click.echo("Claude Code loads it in every folder on its next start (`claude mcp list` shows it).")
    elif client == "claude-code":
        click.echo("Claude Code loads it when started in the workspace folder (approve it when asked); "
                   "use --scope user to have it in every folder.")
    else:
        click.echo("Codex loads it on its next start.")
