"""No text a command prints reaches the terminal with a control sequence in it: a title from a shared vault
holding an OSC 52 clipboard write, an OSC 8 hyperlink, a window title, CSI colours and cursor moves, their 8-bit
C1 forms and bare control characters prints as its visible text; `--json` stays JSON."""

from __future__ import annotations

import json
import re

from papervault.workspace import Workspace
from support_index import add_paper

HOSTILE = ("Lease\x1b]52;c;cm0gLXJmIH4=\x07s for \x1b]8;;https://evil.example/\x1b\\Replicated\x1b]8;;\x1b\\ Logs"
           "\x1b]0;pwned\x07\x1b[2J\x1b[31m!\x1b[0m\x9b2J\x9d52;c;eA==\x9c\x1bP+q\x1b\\\x1b7\r\x08\x7f\x85 (2020)")
VISIBLE = "Leases for Replicated Logs! (2020)"
# what a terminal would act on: ESC, the C1 controls, BEL, CR, backspace, DEL, and any other C0 but \t and \n
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def test_no_command_prints_a_control_sequence(tmp_path, cli_run):
    ws, _ = Workspace.init(tmp_path / "ws")
    add_paper(ws.vault, "doe2020leases", title=HOSTILE, year=2020, authors=["Doe\x1b]52;c;eA==\x07, Jane"],
              venue="OSDI\x9b31m", fulltext="<a id=\"page-1\"></a>\n\n# Leases\n\nBody.\n")
    w = ["--workspace", ws.root]
    for args in (["list"], ["show", "doe2020leases"], ["status"]):
        res = cli_run([*args, *w], check=False)
        assert not CONTROL.search(res.stdout), (args, res.stdout)
        assert not CONTROL.search(res.stderr), (args, res.stderr)
    listed = cli_run(["list", *w]).stdout
    assert "doe2020leases" in listed and "Leases for Replicated Log" in listed, listed   # `list` cuts titles
    assert listed.count("\n") == 2                           # the layout's own newlines stay, and only they
    shown = cli_run(["show", "doe2020leases", *w]).stdout
    assert "Replicated Logs!" in shown, shown

    # --json is JSON: C0 controls are escaped by json, the text is the note's
    data = json.loads(cli_run(["list", "--json", *w]).stdout)
    [paper] = [p for p in data if p["id"] == "doe2020leases"]
    assert "Replicated" in paper["title"] and "\x1b" not in json.dumps(paper, ensure_ascii=False).replace(
        "\\u001b", "")


def test_bidi_overrides_and_invisible_format_characters_are_stripped(tmp_path, cli_run):
    """A right-to-left override (U+202E) prints `gnidaer` as `reading`, so a title can say what it does not
    hold; isolates, zero-width spaces and tag characters reorder or hide words. None of them reaches the terminal; the letters of
    right-to-left scripts and the joiners Persian and emoji need stay."""
    import unicodedata

    from papervault.commands.common import terminal_text

    spoof = ("Safe \u202egnidaer\u202c Title \u2066hidden\u2069 \u202a\u202b\u202d \u200eLRM\u200f\u061c "
             "zero\u200bwidth\u2060join\ufeff\u00ad \U000e0069\U000e0067\U000e006eore this\U000e007f "
             "\u0645\u06cc\u200c\u0634\u0648\u062f \U0001f469\u200d\U0001f52c (2021)")
    ws, _ = Workspace.init(tmp_path / "ws")
    add_paper(ws.vault, "roe2021safe", title=spoof, year=2021, authors=["Roe\u202e, Ann"], venue="NSDI\u2067",
              fulltext="<a id=\"page-1\"></a>\n\n# Safe\n\nBody.\n")
    w = ["--workspace", ws.root]
    invisible = re.compile("[\u202a-\u202e\u2066-\u2069\u200b\u200e\u200f\u061c\u2060\ufeff\u00ad"
                           "\U000e0000-\U000e007f]")
    for args in (["list"], ["show", "roe2021safe"], ["list", "--json"]):
        res = cli_run([*args, *w])
        assert not invisible.search(res.stdout), (args, ascii(res.stdout))
    shown = cli_run(["show", "roe2021safe", *w]).stdout
    assert "Safe gnidaer Title hidden" in shown and "zerowidthjoin" in shown and "ore this" in shown, shown
    assert "\u0645\u06cc\u200c\u0634\u0648\u062f" in shown and "\U0001f469\u200d\U0001f52c" in shown, ascii(shown)

    # the rule is the whole of Unicode's format category, but ZWNJ and ZWJ
    cf = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    kept = {ch for ch in cf if terminal_text(f"a{ch}b") != "ab"}
    assert kept == {"\u200c", "\u200d"}, sorted(map(ascii, kept))
