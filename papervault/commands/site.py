"""`site build`, `site serve`: publish the vault as a searchable static site (mkdocs-material or Zensical,
offline)."""

from __future__ import annotations

import click

from papervault.commands.common import (RegisteredChoice, RegisteredOption, emit_json, json_option, open_workspace,
                                       plural, workspace_option)
from papervault.registry import SITE_ENGINES


@click.group()
def site():
    """Build or preview the vault as a static site (site/)."""


@site.command("build")
@click.option("--strict", is_flag=True, help="Fail on any warning (broken link, missing figure).")
@click.option("--engine", cls=RegisteredOption, type=RegisteredChoice(SITE_ENGINES), default=None,
              describe=lambda names: f"What builds the pages: {names} (default: [site] engine in papervault.toml, "
                                     "else mkdocs).")
@workspace_option
@json_option
def build_cmd(strict, engine, workspace, as_json):
    """Build site/ from the vault: home, paper pages, full texts, surveys with linked citations, search."""
    # deferred: mkdocs and the library are kept out of the CLI's start-up
    from papervault.app.changes import changes
    from papervault.site.build import build_site

    ws = open_workspace(workspace)

    ws.require()
    result = build_site(ws, strict=strict, whats_new=changes(ws, "7d"), engine=engine)
    if as_json:
        emit_json(result)
        return
    for w in result["warnings"][:20]:
        click.echo(f"warning: {w}", err=True)
    if len(result["warnings"]) > 20:
        click.echo(f"... and {len(result['warnings']) - 20} more warnings", err=True)
    if result.get("unchanged"):
        click.echo(f"{result['site_dir']} is current: nothing changed since its last build "
                   f"({plural(result['pages'], 'page')}; checked in {result['seconds']:.1f} s)")
        return
    click.echo(f"Built {plural(result['pages'], 'page')} ({plural(result['papers'], 'paper')}, "
               f"{plural(result['surveys'], 'survey')}) "
               f"in {result['seconds']:.1f} s into {result['site_dir']}")


@site.command("serve")
@click.option("--port", type=int, default=8000, show_default=True, help="Port on 127.0.0.1.")
@click.option("--open", "open_browser", is_flag=True, help="Open the site in a browser.")
@workspace_option
def serve_cmd(port, open_browser, workspace):
    """Live preview on http://127.0.0.1:PORT/, rebuilt whenever the vault changes."""
    from papervault.site.build import serve_site  # deferred: mkdocs is not for CLI start-up

    ws = open_workspace(workspace)
    click.echo(f"Serving {ws.vault_dir} on http://127.0.0.1:{port}/ (Ctrl-C stops)", err=True)
    serve_site(ws, port=port, open_browser=open_browser)
