"""The `papervault` command: a thin layer that opens the library, calls it, and prints (or prints JSON)."""

from __future__ import annotations

import importlib
import sys

import click

from papervault import __version__
from papervault.commands.common import filter_terminal_output
from papervault.errors import PapervaultError
from papervault.index.malloc import limit_arenas

# (module, attribute) of every command; each module is one command group, imported when the CLI starts. A module
# that fails to import stops the CLI with its traceback: an import error in papervault's own code is a bug.
COMMANDS = [
    ("papervault.commands.vaultcmds", "init"),
    ("papervault.commands.vaultcmds", "add"),
    ("papervault.commands.vaultcmds", "list_papers"),
    ("papervault.commands.vaultcmds", "show"),
    ("papervault.commands.openpdf", "open_pdf"),
    ("papervault.commands.edit", "edit"),
    ("papervault.commands.edit", "enrich"),
    ("papervault.commands.edit", "rekey"),
    ("papervault.commands.vaultcmds", "delete"),
    ("papervault.commands.export", "export"),
    ("papervault.commands.locate", "locate"),
    ("papervault.commands.graph", "graph"),
    ("papervault.commands.vaultcmds", "status"),
    ("papervault.commands.indexcmds", "index"),
    ("papervault.commands.indexcmds", "search"),
    ("papervault.commands.synccmd", "sync"),
    ("papervault.commands.synccmd", "changes"),
    ("papervault.commands.synccmd", "inbox"),
    ("papervault.commands.survey", "survey"),
    ("papervault.commands.site", "site"),
    ("papervault.commands.mcp", "mcp"),
    ("papervault.commands.review", "review"),
    ("papervault.commands.repo", "add_repo"),
    ("papervault.commands.doctor", "doctor"),
    ("papervault.commands.democmd", "demo"),
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="papervault")
def cli():
    """papervault: papers and their code, parsed once into a searchable, git-versioned research vault."""
    filter_terminal_output()    # no text a command prints carries a terminal control sequence


for _module, _attr in COMMANDS:
    cli.add_command(getattr(importlib.import_module(_module), _attr))


def main(argv: list[str] | None = None) -> None:
    """Entry point: typed errors become one line on stderr, without a traceback."""
    limit_arenas()   # before any command starts LanceDB's or ONNX Runtime's threads (index/malloc.py)
    try:
        cli.main(args=argv, standalone_mode=False)
    except PapervaultError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
