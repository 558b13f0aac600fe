"""Options and output helpers shared by the CLI commands."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable

import click

from papervault.workspace import Workspace
from papervault.wording import plural  # noqa: F401 - the commands import it from here


def workspace_option(f: Callable) -> Callable:
    return click.option("--workspace", "-w", "workspace", metavar="DIR", envvar="PAPERVAULT_WORKSPACE",
                        help="Workspace folder (default: $PAPERVAULT_WORKSPACE, else the nearest folder "
                             "with papervault.toml, else the current folder).")(f)


def json_option(f: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")(f)


def runner_options(f: Callable) -> Callable:
    """`--task-runner`, `--workers`, `--dask-address`: run `add`/`index` as the Prefect flow of flows/ingest.py
    (without --task-runner the command runs in this process, as on a laptop)."""
    f = click.option("--dask-address", metavar="ADDR",
                     help="With --task-runner dask: an existing Dask scheduler (tcp://host:8786).")(f)
    f = click.option("--workers", type=click.IntRange(1, 256),
                     help="With --task-runner: threads, or local Dask worker processes (default 4 / 2).")(f)
    return click.option("--task-runner", type=click.Choice(["thread", "dask"]), default=None,
                        help="Run as a Prefect flow, the per-paper work spread over threads or a Dask cluster.")(f)


def open_workspace(path: str | None, *, require: bool = True) -> Workspace:
    ws = Workspace.resolve(path)
    return ws.require() if require else ws


def paper_ids(ws: Workspace, given: list[str] | tuple[str, ...]) -> list[str]:
    """The current ids of the papers `given` (a former id left by `rekey` resolves to its paper, said once on
    stderr so `--json` output stays clean); unknown or ambiguous ids fail before anything is done."""
    from papervault.app.ids import resolve_ids

    refs = resolve_ids(ws, list(given))
    for ref in {r.given: r for r in refs if r.renamed}.values():
        click.echo(f"note: {ref.notice()}", err=True)
    return [r.id for r in refs]


def paper_id(ws: Workspace, given: str) -> str:
    """One paper id resolved as `paper_ids` does."""
    return paper_ids(ws, [given])[0]


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


class Progress:
    """A progress line on stderr when it is a terminal; silent otherwise or with --quiet."""

    def __init__(self, quiet: bool = False):
        self.enabled = not quiet and sys.stderr.isatty()
        self._last = ""

    def __call__(self, stage: str, done: int, total: int | None = None) -> None:
        if not self.enabled:
            return
        line = f"{stage}: {done}/{total}" if total else f"{stage}: {done}"
        sys.stderr.write("\r" + line.ljust(len(self._last)))
        sys.stderr.flush()
        self._last = line

    def close(self) -> None:
        if self.enabled and self._last:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._last = ""
