"""What feeds and state files bring is bounded and typed at the boundary, for every source alike: an arXiv
entry with a megabytes-long title or author, an answer larger than any metadata answer, hand-made inbox keys
that are not arXiv ids, `changes --since` far in the past or the future."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from papervault.errors import InputError

from support_arxiv import Catalog, LoopbackServer, Paper


def _follow(ws: Path, **sync) -> None:
    lines = ["", "[sync]"] + [f"{k} = {json.dumps(v)}" for k, v in sync.items()]
    with open(ws / "papervault.toml", "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def test_a_feed_s_huge_fields_and_bodies_are_bounded(tmp_path, workspace_env, monkeypatch, cli_run):
    ws = workspace_env
    huge = Paper("2401.00001", "Leases " + "lease " * 400_000, "Leases for reads. " * 200_000,
                 ["A" * 1_000_000, "Ada Lovelace"])             # a 2.4 MB title, a 3.6 MB abstract, a 1 MB author
    flood = Paper("2401.00002", "Sorting " + "x" * 9_000_000, "Comparator networks.", ["Alan Turing"])
    with LoopbackServer(Catalog()) as srv:
        srv.catalog.add(huge, flood)
        srv.settings_env(monkeypatch)
        cli_run(["init"])
        _follow(ws, arxiv=["leases", "sorting"])
        out = json.loads(cli_run(["sync", "--json", "--no-index"]).output)
    status = {s["source"]: s for s in out["sources"]}
    assert status["arxiv:leases"]["status"] == "changed"
    assert status["arxiv:sorting"]["status"] == "failed" and "over the 8 MB limit" in status["arxiv:sorting"]["error"]
    (entry,) = json.loads(cli_run(["inbox", "--json"]).output)["items"]
    assert len(entry["title"]) <= 1_000 and entry["title"].startswith("Leases lease")
    assert entry["authors"][0] == "A" * 299 + "…" and entry["authors"][1] == "Ada Lovelace"
    sync = ws / ".papervault" / "sync"
    assert (sync / "inbox.json").stat().st_size < 20_000 and (sync / "log.jsonl").stat().st_size < 20_000


def test_hand_made_inbox_keys_are_not_arxiv_ids(tmp_path, workspace_env, monkeypatch, cli_run):
    ws = workspace_env
    with LoopbackServer(Catalog()) as srv:
        srv.settings_env(monkeypatch)
        cli_run(["init"])
        sync = ws / ".papervault" / "sync"
        sync.mkdir(parents=True)
        entry = {"title": {"x": 1}, "authors": "not a list", "score": "9", "reason": "r", "query": "q"}
        (sync / "inbox.json").write_text(json.dumps({"items": {
            "../../../../tmp/x": entry, "-x --upload-pack=touch /tmp/pwned": entry, "2401.00007": entry},
            "dismissed": ["../y"]}), encoding="utf-8")
        items = json.loads(cli_run(["inbox", "--json"]).output)["items"]
        assert [(e["id"], e["title"], e["authors"], e["score"]) for e in items] == [("2401.00007", None, [], 0.0)]
        for key in ("../../../../tmp/x", "-x --upload-pack=touch /tmp/pwned"):
            with pytest.raises(InputError, match="is not an arXiv id"):
                cli_run(["inbox", "accept", "--no-index", "--", key])
        assert srv.catalog.requests == []           # nothing was asked for, anywhere


@pytest.mark.parametrize("since, said", [("999999d", "before the year 1"), ("2100-01-01", "in the future")])
def test_changes_since_far_away_is_one_line(workspace_env, cli_run, capsys, since, said):
    from papervault.cli import main

    cli_run(["init"])
    with pytest.raises(SystemExit) as exc:
        main(["changes", "--since", since])
    assert exc.value.code != 0
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
