"""An import error in papervault's own code is a bug: the command line stops on it rather than starting without
the command whose module failed."""

from __future__ import annotations

import importlib
import sys

import pytest

from papervault.cli import COMMANDS


def test_every_command_module_is_on_the_command_line(cli_run):
    out = cli_run(["--help"]).output
    names = {getattr(importlib.import_module(module), attr).name for module, attr in COMMANDS}
    assert len(names) == len(COMMANDS)
    for name in names:
        assert f"  {name} " in out or f"  {name}\n" in out, (name, out)


def test_a_command_module_that_fails_to_import_stops_the_cli(monkeypatch):
    # The module cannot be imported (None in sys.modules halts its import with ModuleNotFoundError naming it):
    # exactly the case the command line used to pass over, starting without `open`.
    monkeypatch.setitem(sys.modules, "papervault.commands.openpdf", None)
    monkeypatch.delitem(sys.modules, "papervault.cli")
    with pytest.raises(ModuleNotFoundError, match="papervault.commands.openpdf"):
        importlib.import_module("papervault.cli")


def test_an_add_without_the_sources_package_fails_instead_of_reading_pdfs_only(monkeypatch, tmp_path, cli_run):
    ws = tmp_path / "ws"
    cli_run(["init", ws])
    monkeypatch.setitem(sys.modules, "papervault.sources.resolve", None)
    with pytest.raises(ModuleNotFoundError, match="papervault.sources.resolve"):
        cli_run(["add", tmp_path, "--workspace", ws], check=False)
