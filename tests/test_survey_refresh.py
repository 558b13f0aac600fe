"""`papervault survey --refresh SLUG`: what a survey's selection.md would get now (papers entering and leaving,
with reasons), nothing written until `--run`; and a sync pass that brings papers on a survey's topic flags it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support_arxiv import make_pdf

ON_TOPIC = [
    ("raft.pdf", "Raft Consensus with Leader Election", "Raft elects a leader and replicates the log. Leader election "
     "uses randomized timeouts; log replication commits entries on a majority of the consensus group."),
    ("paxos.pdf", "Paxos Consensus for Replicated Logs", "Paxos reaches consensus on each log entry; a leader "
     "drives replication, and leader election picks a distinguished proposer for the consensus group."),
    ("zab.pdf", "Zab Atomic Broadcast and Leader Election", "Zab elects a leader that orders updates; consensus on "
     "the replicated log survives crashes after leader election by a majority of the group."),
]
OFF_TOPIC = [
    ("bread.pdf", "Sourdough Bread Fermentation", "Wild yeast and lactic bacteria leaven the dough overnight."),
    ("stars.pdf", "Spectra of Variable Stars", "Cepheid variables pulsate with periods tied to their luminosity."),
    ("soil.pdf", "Soil Moisture in Vineyards", "Irrigation schedules change the grape's sugar content."),
]
# Its title carries markup, as a shared PDF's may: the site shows it as text.
NEW = ("viewstamped.pdf", "Viewstamped Replication <img src=x onerror=alert(1)> Consensus and Leader Election",
       "Viewstamped replication elects a leader in each view; consensus on the replicated log and leader election by "
       "a majority group.")


def _write(folder: Path, name: str, title: str, body: str) -> None:
    (folder / name).write_bytes(make_pdf(title, authors="Ann Author", body=body))


def test_refresh_shows_entering_papers_and_runs_on_request(tmp_path, workspace_env, cli_run, monkeypatch):
    monkeypatch.setenv("PAPERVAULT_INDEX_BACKGROUND_FILL", "false")
    ws = workspace_env
    cli_run(["init"])
    folder = tmp_path / "Papers"
    folder.mkdir()
    for name, title, body in ON_TOPIC + OFF_TOPIC:
        _write(folder, name, title, body)
    with open(ws / "papervault.toml", "a", encoding="utf-8") as fh:
        fh.write(f'\n[sync]\nfolders = ["{folder}"]\n')
    first = json.loads(cli_run(["sync", "--json"]).output)
    by_file = {e["item"]: e["paper"] for e in first["added"]}
    topic = "consensus leader election replicated log"
    cli_run(["survey", topic, "--slug", "consensus", "--select-only"])
    selection = ws / "vault" / "surveys" / "consensus" / "selection.md"
    before = selection.read_text(encoding="utf-8")
    chosen = {by_file[n] for n, _, _ in ON_TOPIC}
    assert all(f"@{pid}" in before for pid in chosen)

    nothing = json.loads(cli_run(["survey", "--refresh", "consensus", "--json"]).output)
    assert (nothing["entering"], nothing["leaving"]) == ([], [])
    assert nothing["topic"] == topic and nothing["now"] == nothing["would"]

    # A new paper on the topic arrives: the pass flags the survey, the refresh shows why it would enter.
    _write(folder, *NEW)
    second = json.loads(cli_run(["sync", "--json"]).output)
    new_pid = second["added"][0]["paper"]
    (flag,) = second["surveys_gained"]
    assert flag["survey"] == "consensus" and [e["id"] for e in flag["entering"]] == [new_pid]
    assert "papervault survey --refresh consensus" in flag["reason"]
    changes = json.loads(cli_run(["changes", "--since", "1d", "--json"]).output)
    assert [g["survey"] for g in changes["surveys_gained"]] == ["consensus"]

    # The site's "What's new" page says so too, the paper's title as text, the survey's page linked.
    survey_md = selection.parent / "survey.md"
    survey_md.write_text("---\ntitle: Consensus <em>protocols</em>\n---\n\n# Consensus protocols\n", encoding="utf-8")
    cli_run(["site", "build"])
    survey_md.unlink()
    page = (ws / ".papervault" / "site-src" / "whatsnew.md").read_text(encoding="utf-8")
    (row,) = [line for line in page.splitlines() if "survey gained papers" in line]
    assert "[Consensus &lt;em&gt;protocols&lt;/em&gt;](surveys/consensus/survey.md)" in row
    assert "1 new paper(s) on consensus leader election replicated log" in row
    assert "Viewstamped Replication &lt;img src=x onerror=alert(1)&gt;" in row
    assert row.endswith("papervault survey --refresh consensus")
    html = (ws / "site" / "whatsnew.html").read_text(encoding="utf-8")
    assert "survey gained papers" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<img src=x" not in html and "<img src=x" not in page and "<em>protocols" not in html
    assert 'href="surveys/consensus/survey.html"' in html or 'href="surveys/consensus/survey/"' in html

    diff = json.loads(cli_run(["survey", "--refresh", "consensus", "--json"]).output)
    assert [e["id"] for e in diff["entering"]] == [new_pid] and diff["leaving"] == []
    assert diff["entering"][0]["reason"] and diff["would"] == diff["now"] + 1
    assert selection.read_text(encoding="utf-8") == before          # a preview writes nothing
    text = cli_run(["survey", "--refresh", "consensus"]).output
    assert f"+ {new_pid}" in text and "--refresh consensus --run" in text

    # On request it runs again (here stage 1 alone): the new paper is in selection.md.
    cli_run(["survey", "--refresh", "consensus", "--run", "--select-only"])
    assert f"[x] @{new_pid}" in selection.read_text(encoding="utf-8")
    again = json.loads(cli_run(["survey", "--refresh", "consensus", "--json"]).output)
    assert (again["entering"], again["leaving"]) == ([], [])


def test_refresh_of_an_unknown_survey_is_one_line(workspace_env, cli_run, capsys):
    cli_run(["init"])
    from papervault.cli import main

    with pytest.raises(SystemExit):
        main(["survey", "--refresh", "nope"])
    err = capsys.readouterr().err
    assert "no survey 'nope'" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
