"""`papervault sync`: a Zotero library and a watched folder followed across passes (new, changed, gone), the
cursors that make an unchanged pass report nothing, notes a person edited kept, and `papervault changes`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from support_arxiv import make_pdf
from support_zotero import SHARED_ZOTERO, ZoteroBuilder

needs_zotero = pytest.mark.skipif(not (SHARED_ZOTERO / "userdata.sql").is_file(), reason="needs ../shared/zotero")


def _follow(ws: Path, **sync) -> None:
    lines = ["", "[sync]"] + [f"{k} = {json.dumps(v)}" for k, v in sync.items()]
    with open(ws / "papervault.toml", "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _sync(cli_run, *extra, check=True) -> dict:
    result = cli_run(["sync", "--json", *extra], check=check)
    return json.loads(result.output)


def _by_item(entries: list[dict]) -> dict[str, dict]:
    return {e["item"]: e for e in entries}


def _meta(ws: Path, pid: str):
    from papervault.vault.store import Vault

    return Vault(ws / "vault").read_note(pid)


def _set_title(db: sqlite3.Connection, iid: int, title: str, when: str, version: int) -> None:
    """What Zotero does on an edit: a new value row, the item's data pointed at it, its dateModified and version."""
    vid = db.execute("SELECT COALESCE(MAX(valueID), 0) + 1 FROM itemDataValues").fetchone()[0]
    db.execute("INSERT INTO itemDataValues (valueID, value) VALUES (?, ?)", (vid, title))
    db.execute("UPDATE itemData SET valueID = ? WHERE itemID = ? AND fieldID = "
               "(SELECT fieldID FROM fields WHERE fieldName = 'title')", (vid, iid))
    db.execute("UPDATE items SET dateModified = ?, clientDateModified = ?, version = ? WHERE itemID = ?",
               (when, when, version, iid))


@needs_zotero
def test_zotero_library_changed_between_passes(tmp_path, workspace_env, cli_run):
    ws = workspace_env
    cli_run(["init"])
    z = ZoteroBuilder(tmp_path / "Zotero")
    a, _ = z.item(title="Consensus in the Presence of Partial Synchrony", authors=[("Cynthia", "Dwork")],
                  date="1988", DOI="10.1145/42282.42283", tags=["consensus"])
    att, _ = z.stored_pdf(a, "dwork.pdf", make_pdf("Consensus in the Presence of Partial Synchrony",
                                                    authors="Cynthia Dwork", body="Partial synchrony model."))
    b, key_b = z.item(title="Impossibility of Distributed Consensus with One Faulty Process",
                      authors=[("Michael", "Fischer")], date="1985", DOI="10.1145/3149.214121")
    c, key_c = z.item(title="The Byzantine Generals Problem", authors=[("Leslie", "Lamport")], date="1982",
                      DOI="10.1145/357172.357176")
    e, key_e = z.item(title="Paxos Made Simple", authors=[("Leslie", "Lamport")], date="2001")
    z.db.commit()
    _follow(ws, zotero=str(tmp_path / "Zotero"))

    first = _sync(cli_run, "--no-index")
    assert sorted(x["item"] for x in first["added"]) == sorted([key_b, key_c, key_e, z.db.execute(
        "SELECT key FROM items WHERE itemID = ?", (a,)).fetchone()[0]])
    assert first["sources"][0]["status"] == "changed"
    papers = {x["item"]: x["paper"] for x in first["added"]}
    assert (ws / "vault" / "papers" / papers[key_c] / "note.md").is_file()
    assert json.loads((ws / ".papervault" / "sync" / "zotero.json").read_text())["items"][key_b]["paper"] == papers[key_b]

    again = _sync(cli_run, "--no-index")
    assert (again["added"], again["updated"], again["marked"]) == ([], [], [])
    assert again["sources"][0]["status"] == "unchanged"

    # A person edits two notes in the vault: B's body (a line of their own) and E's title (its frontmatter).
    note_b = ws / "vault" / "papers" / papers[key_b] / "note.md"
    note_b.write_text(note_b.read_text(encoding="utf-8") + "\nMy own reading: the FLP result.\n", encoding="utf-8")
    from papervault.vault.store import Vault

    Vault(ws / "vault").update_meta(papers[key_e], title="Paxos Made Simple (my copy)")

    # Zotero changes: a new item, B's and E's titles edited, C in the trash, a new child note on A.
    d, key_d = z.item(title="Viewstamped Replication Revisited", authors=[("Barbara", "Liskov")], date="2012")
    _set_title(z.db, b, "Impossibility of Distributed Consensus with One Faulty Process (JACM)",
               "2024-02-01 09:00:00", 5)
    _set_title(z.db, e, "Paxos Made Simple, revised", "2024-02-01 09:00:00", 5)
    z.trash(c)
    z.note(a, "<p>Compare with <b>FLP</b>.</p>")
    z.db.commit()

    third = _sync(cli_run, "--no-index")
    assert [x["item"] for x in third["added"]] == [key_d]
    updated = _by_item(third["updated"])
    assert updated[key_b]["fields"] == ["title"]
    key_a = next(k for k in papers if k not in (key_b, key_c, key_e))
    assert updated[key_a]["fields"] == ["reader notes"]
    marked = _by_item(third["marked"])
    assert marked[key_c]["reason"] == "moved to Zotero's trash"
    skipped = _by_item([s for s in third["skipped"] if s.get("item")])
    assert "title edited in the vault" in skipped[key_e]["reason"]

    meta_b, body_b = _meta(ws, papers[key_b])
    assert meta_b.title == "Impossibility of Distributed Consensus with One Faulty Process (JACM)"
    assert "My own reading: the FLP result." in body_b          # the person's body is never rewritten
    meta_e, _ = _meta(ws, papers[key_e])
    assert meta_e.title == "Paxos Made Simple (my copy)"        # their title stays
    meta_c, _ = _meta(ws, papers[key_c])                        # marked, not deleted
    assert meta_c.left_source["reason"] == "moved to Zotero's trash"
    reader = (ws / "vault" / "papers" / papers[key_a] / "reader-notes.md").read_text(encoding="utf-8")
    assert "Compare with **FLP**." in reader

    fourth = _sync(cli_run, "--no-index")
    assert (fourth["added"], fourth["updated"], fourth["marked"]) == ([], [], [])

    changes = json.loads(cli_run(["changes", "--since", "1d", "--json"]).output)
    assert {x["id"] for x in changes["added"]} == set(papers.values()) | {third["added"][0]["paper"]}
    assert papers[key_c] in {x["id"] for x in changes["marked"]}
    text = cli_run(["changes", "--since", "1d"]).output
    assert "marked" in text and papers[key_c] in text
    z.close()


def test_watched_folder_gains_changes_and_loses_files(tmp_path, workspace_env, cli_run, monkeypatch):
    monkeypatch.setenv("PAPERVAULT_INDEX_BACKGROUND_FILL", "false")    # the index is complete when sync returns
    ws = workspace_env
    cli_run(["init"])
    inbox = tmp_path / "Papers"
    (inbox / "sub").mkdir(parents=True)
    (inbox / "raft.pdf").write_bytes(make_pdf("In Search of an Understandable Consensus Algorithm",
                                              authors="Diego Ongaro", body="Raft separates leader election."))
    (inbox / "sub" / "zab.pdf").write_bytes(make_pdf("Zab High-performance Broadcast for Primary-backup Systems",
                                                     authors="Flavio Junqueira", body="Zab is an atomic broadcast."))
    _follow(ws, folders=[str(inbox)])

    first = _sync(cli_run)
    assert sorted(x["item"] for x in first["added"]) == ["raft.pdf", "sub/zab.pdf"]
    assert first["index"] and "error" not in first["index"]
    hits = json.loads(cli_run(["search", "leader election", "--json"]).output)
    assert hits and hits[0]["paper_id"] == _by_item(first["added"])["raft.pdf"]["paper"]

    assert _sync(cli_run)["added"] == []
    second = _sync(cli_run)
    assert (second["added"], second["updated"], second["marked"], second["index"]) == ([], [], [], None)

    raft = _by_item(first["added"])["raft.pdf"]["paper"]
    zab = _by_item(first["added"])["sub/zab.pdf"]["paper"]
    (inbox / "chubby.pdf").write_bytes(make_pdf("The Chubby Lock Service for Loosely-coupled Distributed Systems",
                                                authors="Mike Burrows", body="Chubby is a lock service."))
    (inbox / "raft.pdf").write_bytes(make_pdf("In Search of an Understandable Consensus Algorithm",
                                              authors="Diego Ongaro", pages=2,
                                              body="Raft separates leader election, log replication, safety."))
    (inbox / "sub" / "zab.pdf").unlink()

    third = _sync(cli_run)
    assert [x["item"] for x in third["added"]] == ["chubby.pdf"]
    assert _by_item(third["updated"])["raft.pdf"]["paper"] == raft
    assert _by_item(third["marked"])["sub/zab.pdf"]["paper"] == zab
    assert _meta(ws, raft)[0].pages == 2
    assert _meta(ws, zab)[0].left_source["reason"] == "file removed from the watched folder"
    assert (ws / "vault" / "papers" / zab / "paper.md").is_file()
    hits = json.loads(cli_run(["search", "lock service", "--json"]).output)
    assert hits[0]["paper_id"] == _by_item(third["added"])["chubby.pdf"]["paper"]

    fourth = _sync(cli_run)
    assert (fourth["added"], fourth["updated"], fourth["marked"]) == ([], [], [])
    out = cli_run(["sync"]).output
    assert "added 0, updated 0, marked 0" in out


def test_a_failing_source_is_reported_and_the_others_go_on(tmp_path, workspace_env, cli_run):
    ws = workspace_env
    cli_run(["init"])
    broken = tmp_path / "Zotero"
    broken.mkdir()
    (broken / "zotero.sqlite").write_bytes(b"not a database at all" * 100)
    folder = tmp_path / "Papers"
    folder.mkdir()
    (folder / "one.pdf").write_bytes(make_pdf("Time Clocks and the Ordering of Events", authors="Leslie Lamport"))
    _follow(ws, zotero=str(broken), folders=[str(folder)])

    out = _sync(cli_run, "--no-index")
    status = {s["source"]: s for s in out["sources"]}
    assert status["zotero"]["status"] == "failed" and "not a readable SQLite database" in status["zotero"]["error"]
    assert status[f"folder:{folder}"]["status"] == "changed"
    assert [x["item"] for x in out["added"]] == ["one.pdf"]

    result = cli_run(["sync", "--no-index"], check=False)
    assert result.exit_code == 0 and "error: zotero:" in result.output


def test_no_source_followed_and_bad_since_are_one_line_errors(workspace_env, cli_run, capsys):
    cli_run(["init"])
    from papervault.cli import main

    for argv, said in ((["sync"], "error: papervault.toml follows no source"),
                       (["changes", "--since", "yesterday"], "error: --since 'yesterday' is neither")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code != 0
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


# --- on a schedule, as Prefect does it ------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


def test_prefect_yaml_sync_deployment_is_valid():
    """The `sync` deployment of prefect.yaml: its entrypoint loads the flow, its parameters fit the flow's
    signature, its schedule is an interval Prefect accepts, and it runs one pass at a time."""
    import datetime as dt

    import yaml
    from prefect.client.schemas.schedules import IntervalSchedule
    from prefect.flows import load_flow_from_entrypoint

    doc = yaml.safe_load((ROOT / "prefect.yaml").read_text(encoding="utf-8"))
    dep = next(d for d in doc["deployments"] if d["name"] == "sync")
    path, name = dep["entrypoint"].split(":")
    flow = load_flow_from_entrypoint(str(ROOT / path) + ":" + name)
    assert flow.name == "sync"
    flow.validate_parameters({**dep.get("parameters", {}), "workspace": "/tmp/ws"})
    (schedule,) = dep["schedules"]
    assert IntervalSchedule(interval=dt.timedelta(seconds=schedule["interval"])).interval == dt.timedelta(hours=1)
    assert dep["concurrency_limit"] == 1 and dep["work_pool"]["name"] == "papervault"


def test_every_parses_and_builds_the_served_deployment(workspace_env, cli_run, capsys):
    import datetime as dt

    from flows.sync import parse_interval, served_deployment
    from papervault.cli import main

    assert parse_interval("1h") == dt.timedelta(hours=1)
    assert parse_interval("30m") == dt.timedelta(minutes=30)
    assert parse_interval("2d") == dt.timedelta(days=2)
    dep = served_deployment(str(workspace_env), parse_interval("1h"))
    assert dep.name == "sync-every" and dep.parameters == {"workspace": str(workspace_env), "index": True}
    (schedule,) = dep.schedules
    assert schedule.schedule.interval == dt.timedelta(hours=1)

    cli_run(["init"])
    for every, said in (("hourly", "is not an interval"), ("10s", "shorter than a minute")):
        with pytest.raises(SystemExit):
            main(["sync", "--every", every])
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit):         # nothing followed: said before any server starts
        main(["sync", "--every", "1h"])
    assert "follows no source" in capsys.readouterr().err


def test_the_sync_flow_runs_a_pass(tmp_path, workspace_env, cli_run):
    """The flow the deployment and `--every` run: the same pass, its report as the run's result."""
    from flows.sync import sync as sync_flow

    cli_run(["init"])
    folder = tmp_path / "Papers"
    folder.mkdir()
    (folder / "one.pdf").write_bytes(make_pdf("Time Clocks and the Ordering of Events", authors="Leslie Lamport"))
    _follow(workspace_env, folders=[str(folder)])
    first = sync_flow(workspace=str(workspace_env), index=False)
    assert [x["item"] for x in first["added"]] == ["one.pdf"]
    second = sync_flow(workspace=str(workspace_env), index=False)
    assert (second["added"], second["updated"], second["marked"]) == ([], [], [])


@needs_zotero
def test_a_replaced_zotero_pdf_is_parsed_again_and_edits_are_kept(tmp_path, workspace_env, cli_run, monkeypatch):
    """A Zotero attachment replaced twice: once as Zotero does it (the attachment's file and its row's version
    and dateModified), once by the file alone (the database untouched). Each time the paper is parsed again, its
    full text and the index follow; the note a person edited (a section of their own) and their reader notes are
    kept, the new note goes beside it as note.new.md; a note nobody edited is rewritten."""
    monkeypatch.setenv("PAPERVAULT_INDEX_BACKGROUND_FILL", "false")    # the index is complete when sync returns
    ws = workspace_env
    cli_run(["init"])
    z = ZoteroBuilder(tmp_path / "Zotero")
    a, key_a = z.item(title="Chain Replication for Supporting High Throughput", authors=[("Robbert", "van Renesse")],
                      date="2004")
    att_a, att_key_a = z.stored_pdf(a, "chain.pdf", make_pdf(
        "Chain Replication for Supporting High Throughput", authors="Robbert van Renesse",
        body="Servers are arranged in a chain."))
    b, key_b = z.item(title="Dynamo Amazons Highly Available Key-value Store", authors=[("Giuseppe", "DeCandia")],
                      date="2007")
    att_b, att_key_b = z.stored_pdf(b, "dynamo.pdf", make_pdf(
        "Dynamo Amazons Highly Available Key-value Store", authors="Giuseppe DeCandia",
        body="Dynamo uses consistent hashing."))
    z.note(a, "<p>Read for the reading group.</p>")
    z.db.commit()
    _follow(ws, zotero=str(tmp_path / "Zotero"))
    first = _sync(cli_run)
    papers = {x["item"]: x["paper"] for x in first["added"]}
    pa, pb = papers[key_a], papers[key_b]
    pdir_a = ws / "vault" / "papers" / pa

    # A person writes a section of their own in A's note and a line in its reader notes.
    note_a = pdir_a / "note.md"
    note_a.write_text(note_a.read_text(encoding="utf-8") + "\n## My reading\n\nCompare with CRAQ.\n",
                      encoding="utf-8")
    (pdir_a / "reader-notes.md").write_text((pdir_a / "reader-notes.md").read_text(encoding="utf-8")
                                            + "\nMy own line.\n", encoding="utf-8")
    assert _sync(cli_run)["updated"] == []

    # B replaced as Zotero does: new bytes in storage/, the attachment's version and dateModified moved.
    (tmp_path / "Zotero" / "storage" / att_key_b / "dynamo.pdf").write_bytes(make_pdf(
        "Dynamo Amazons Highly Available Key-value Store", authors="Giuseppe DeCandia", pages=2,
        body="Dynamo uses vector clocks with sloppy quorums and hinted handoff."))
    z.db.execute("UPDATE items SET version = 9, dateModified = '2024-03-01 10:00:00' WHERE itemID = ?", (att_b,))
    z.db.commit()
    second = _sync(cli_run)
    upd = _by_item(second["updated"])
    assert set(upd) == {key_b} and upd[key_b]["fields"] == ["full text"] and upd[key_b]["paper"] == pb
    assert "replaced" in upd[key_b]["reason"]
    assert "hinted handoff" in (ws / "vault" / "papers" / pb / "paper.md").read_text(encoding="utf-8")
    assert _meta(ws, pb)[0].pages == 2
    assert not (ws / "vault" / "papers" / pb / "note.new.md").exists()     # nobody edited it: rewritten
    hits = json.loads(cli_run(["search", "sloppy quorums hinted handoff", "--json"]).output)
    assert hits and hits[0]["paper_id"] == pb

    # A's file replaced alone (Zotero's database untouched: its stat says nothing changed).
    (tmp_path / "Zotero" / "storage" / att_key_a / "chain.pdf").write_bytes(make_pdf(
        "Chain Replication for Supporting High Throughput", authors="Robbert van Renesse", pages=3,
        body="The tail answers queries; the head orders updates."))
    third = _sync(cli_run)
    upd = _by_item(third["updated"])
    assert set(upd) == {key_a} and "kept" in upd[key_a]["reason"]
    assert third["sources"][0]["status"] == "changed"
    assert "The tail answers queries" in (pdir_a / "paper.md").read_text(encoding="utf-8")
    meta_a, body_a = _meta(ws, pa)
    assert meta_a.pages == 3 and meta_a.sources == [s for s in meta_a.sources if not s.endswith(".pdf")]
    assert "## My reading" in body_a and "Compare with CRAQ." in body_a       # their section is never rewritten
    assert (pdir_a / "note.new.md").is_file()
    reader = (pdir_a / "reader-notes.md").read_text(encoding="utf-8")
    assert "My own line." in reader and reader.count("Read for the reading group.") == 1
    hits = json.loads(cli_run(["search", "tail answers queries head orders updates", "--json"]).output)
    assert hits and hits[0]["paper_id"] == pa

    fourth = _sync(cli_run)
    assert (fourth["added"], fourth["updated"], fourth["marked"], fourth["index"]) == ([], [], [], None)
    z.close()


@needs_zotero
def test_a_pass_catches_the_catalog_up_instead_of_rebuilding_it(tmp_path, workspace_env, cli_run):
    """The Zotero step's metadata commit (an edited title) moves the vault past `add`'s catalog; the folder step
    after it reads only that paper's note again (a catch-up), never every note (a rebuild), and its dedup already
    knows the new title: a PDF carrying it merges into that paper instead of becoming a new one."""
    ws = workspace_env
    cli_run(["init"])
    z = ZoteroBuilder(tmp_path / "Zotero")
    a, key_a = z.item(title="Time Clocks and the Ordering of Events", authors=[("Leslie", "Lamport")], date="1978")
    b, key_b = z.item(title="Distributed Snapshots", authors=[("Mani", "Chandy")], date="1985")
    z.db.commit()
    folder = tmp_path / "Papers"
    folder.mkdir()
    _follow(ws, zotero=str(tmp_path / "Zotero"), folders=[str(folder)])
    first = _sync(cli_run, "--no-index")
    papers = {x["item"]: x["paper"] for x in first["added"]}
    assert set(papers) == {key_a, key_b}

    new_title = "Distributed Snapshots Determining Global States of Distributed Systems"
    _set_title(z.db, b, new_title, "2024-02-01 09:00:00", 5)
    z.db.commit()
    (folder / "snapshots.pdf").write_bytes(make_pdf(new_title, authors="Mani Chandy", body="A global state."))
    second = _sync(cli_run, "--no-index")
    assert _by_item(second["updated"])[key_b]["fields"] == ["title"]
    merged = _by_item(second["updated"])["snapshots.pdf"]
    assert merged["paper"] == papers[key_b] and "merged" in merged["reason"]
    assert second["added"] == []
    steps = {s["source"]: s for s in second["sources"]}
    assert steps["zotero"]["catalog"]["rebuilds"] == 0
    assert steps[f"folder:{folder}"]["catalog"] == {"rebuilds": 0, "catch_ups": 1, "notes_read": 1}
    assert second["costs"]["catalog"] == {"rebuilds": 0, "catch_ups": 1, "notes_read": 1}

    third = _sync(cli_run, "--no-index")
    assert third["costs"]["catalog"] == {"rebuilds": 0, "catch_ups": 0, "notes_read": 0}
    z.close()
