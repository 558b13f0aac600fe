"""Options and output helpers shared by the CLI commands."""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Callable

import click

from papervault.workspace import Workspace
from papervault.wording import plural  # noqa: F401 - the commands import it from here


def either(names: tuple[str, ...] | list[str]) -> str:
    """`a, b or c`."""
    names = list(names)
    return " or ".join(filter(None, [", ".join(names[:-1]), names[-1] if names else ""]))


class RegisteredChoice(click.Choice):
    """The names a registry (`papervault.registry`) holds when the command line is read, built-ins and plugins
    alike: the choices, the `[a|b|c]` of `--help`, and the error for a name that is not one."""

    def __init__(self, registry: Any):
        self.registry = registry
        super().__init__((), case_sensitive=True)

    @property
    def choices(self) -> tuple[str, ...]:
        return self.registry.names()

    @choices.setter
    def choices(self, value: Any) -> None:      # click.Choice sets it in __init__; the registry is the source
        pass


class RegisteredOption(click.Option):
    """An option whose help names the registry's current choices: `help` is `describe(names)` when asked."""

    def __init__(self, *args: Any, describe: Callable[[str], str], **kwargs: Any):
        self.describe = describe
        super().__init__(*args, **kwargs)

    @property
    def help(self) -> str:
        return self.describe(either(self.type.choices))

    @help.setter
    def help(self, value: Any) -> None:       # click.Option sets it in __init__; `describe` is the source
        pass


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
    from papervault.app.ids import resolve_ids  # deferred: not at CLI start-up

    refs = resolve_ids(ws, list(given))
    for ref in {r.given: r for r in refs if r.renamed}.values():
        click.echo(f"note: {ref.notice()}", err=True)
    return [r.id for r in refs]


def paper_id(ws: Workspace, given: str) -> str:
    """One paper id resolved as `paper_ids` does."""
    return paper_ids(ws, [given])[0]


# Every terminal control a text may carry: CSI (`ESC [ ... m`, colours, cursor moves), OSC (`ESC ] 52 ; c ; ...`
# clipboard writes, `ESC ] 8 ;; url` hyperlinks, window titles) and the other string controls (DCS, SOS, PM, APC)
# with their payload up to their terminator (or the end of the line), any other ESC sequence, their 8-bit C1
# forms (0x9B CSI, 0x9D OSC, ...), and every other C0 or C1 control character and DEL. Tab and newline stay.
# Then the invisible format characters (Unicode category Cf) that change what a line seems to say without being
# seen: the bidi overrides, embeddings and isolates (U+202A-U+202E, U+2066-U+2069) and marks (U+200E, U+200F,
# U+061C) that make `txt.exe` of `exe.txt`, zero-width spaces and joiners of words, invisible operators, the BOM,
# interlinear annotations and the tag characters (U+E0000-U+E007F, text no one sees). ZWNJ and ZWJ (U+200C,
# U+200D) stay: Persian, Indic scripts and emoji sequences need them, and they reorder nothing.
_INVISIBLE_FORMAT = ("\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b\u200e\u200f"
                     "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
                     "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f")
_TERMINAL_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f" + _INVISIBLE_FORMAT + "]")


def terminal_text(text: str) -> str:
    """`text` without any terminal control sequence, control character (tabs and newlines kept) or invisible
    format character: what every command prints passes through it (`TerminalText`), so a title from a paper, a
    BibTeX file or a shared vault cannot write the clipboard, plant a hyperlink, retitle the window, move the
    cursor, or show its words in another order than they are (bidi overrides) or hide some of them."""
    return _TERMINAL_CONTROL.sub("", text)


class TerminalText:
    """A text stream (stdout, stderr) that writes what it is given through `terminal_text`. Bytes written to
    its `buffer` (the MCP server's JSON-RPC, a file streamed out) pass as they are; `--json` output is JSON, whose
    strings escape C0 controls, and only loses raw C1 controls and invisible format characters."""

    def __init__(self, stream):
        self.unfiltered = stream

    def write(self, text):
        return self.unfiltered.write(terminal_text(text) if isinstance(text, str) else text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self.unfiltered, name)


def filter_terminal_output() -> None:
    """Make stdout and stderr `TerminalText` for the rest of the command (the CLI group calls it first)."""
    if sys.stdout is not None and not isinstance(sys.stdout, TerminalText):
        sys.stdout = TerminalText(sys.stdout)
    if sys.stderr is not None and not isinstance(sys.stderr, TerminalText):
        sys.stderr = TerminalText(sys.stderr)


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
        err = getattr(sys.stderr, "unfiltered", sys.stderr)    # its own carriage return rewrites the line
        err.write("\r" + terminal_text(line).ljust(len(self._last)))
        err.flush()
        self._last = line

    def close(self) -> None:
        if self.enabled and self._last:
            sys.stderr.write("\n")
            sys.stderr.flush()
            self._last = ""
