"""What feeds, databases and state files bring is bounded and typed at the boundary, for every source alike: an
arXiv entry with a megabytes-long title or author, an answer larger than any metadata answer, a Zotero database's
long or mistyped values, a DOI resolver's hostile CSL-JSON, hand-made inbox keys that are not arXiv ids,
`changes --since` far in the past or the future. (Crossref and OpenAlex: tests/test_enrich.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from papervault.errors import InputError

from support_arxiv import Catalog, LoopbackServer, Paper
from support_zotero import SHARED_ZOTERO, ZoteroBuilder


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


@pytest.mark.skipif(not (SHARED_ZOTERO / "userdata.sql").is_file(), reason="needs ../shared/zotero")
def test_a_zotero_database_s_values_are_typed_and_bounded(tmp_path, workspace_env, cli_run):
    """A Zotero database's values are held to the bounds and types of an import, at a paper's first pass and at
    an update: a 240 KB title and a 100 KB author are cut, a BLOB or a number is no text, no tag or URL."""
    from papervault.vault.store import Vault

    ws = workspace_env
    cli_run(["init"])
    z = ZoteroBuilder(tmp_path / "Zotero")
    iid, _ = z.item(title="Chain Replication " + "chain " * 40_000, authors=[("Robbert", "R" * 100_000)],
                    date="2004", tags=["replication", "t" * 100_000])
    z.db.execute("INSERT INTO itemDataValues (valueID, value) VALUES (900, ?), (901, 12345)", (b"\x00\xff" * 1000,))
    z.db.executemany("INSERT INTO itemData (itemID, fieldID, valueID) VALUES (?, ?, ?)",
                     [(iid, z.field_id["abstractNote"], 900), (iid, z.field_id["url"], 901)])
    z.db.execute("INSERT INTO tags (tagID, name) VALUES (900, ?)", (b"\x01" * 10,))
    z.db.execute("INSERT INTO itemTags (itemID, tagID, type) VALUES (?, 900, 0)", (iid,))
    z.db.commit()
    _follow(ws, zotero=str(tmp_path / "Zotero"))
    out = json.loads(cli_run(["sync", "--json", "--no-index"]).output)
    assert len(out["added"]) == 1, out
    (added,) = out["added"]
    vault = Vault(ws / "vault")

    def bounded(title: str) -> None:
        meta = vault.read_meta(added["paper"])
        assert meta.title.startswith(title) and len(meta.title) <= 1_000
        assert meta.authors == ["Robbert " + "R" * 291 + "…"]
        assert meta.abstract is None and meta.url in (None, "12345")
        assert all(isinstance(t, str) and len(t) <= 200 for t in meta.tags) and "replication" in meta.tags
        assert vault.note_path(added["paper"]).stat().st_size < 20_000

    bounded("Chain Replication chain chain")
    z.db.execute("UPDATE itemDataValues SET value = ? WHERE valueID = (SELECT valueID FROM itemData WHERE "
                 "itemID = ? AND fieldID = ?)", ("Chain Replication Revisited " + "x" * 300_000, iid,
                                                 z.field_id["title"]))
    z.db.execute("UPDATE items SET dateModified = '2025-01-01 10:00:00', clientDateModified = '2025-01-01 10:00:00'")
    z.close()
    again = json.loads(cli_run(["sync", "--json", "--no-index"]).output)
    assert again["sources"][0]["status"] != "failed", again["sources"]
    bounded("Chain Replication Revisited xxx")


def test_a_doi_resolver_s_answer_is_typed_and_bounded(tmp_path, workspace_env, monkeypatch, cli_run):
    """`add DOI` holds the resolver's CSL-JSON to the bounds and types of an import: a 1 MB author and a 2 MB
    title are cut, a dict for a volume or a list for a link's URL is no value, and the paper is added."""
    from papervault.vault.store import Vault

    ws = workspace_env
    with LoopbackServer(Catalog()) as srv:
        srv.catalog.dois["10.5555/hostile.2020"] = {
            "type": "article-journal", "DOI": "10.5555/hostile.2020", "title": "Hostile Answers " + "h" * 2_000_000,
            "author": [{"family": "B" * 1_000_000, "given": "Bo"}, {"family": "Lovelace", "given": "Ada"},
                       {"family": {"x": "y"}, "given": "Cy"}, 7],
            "issued": {"date-parts": [["2020"]]}, "volume": {"x": "y" * 1000}, "issue": 7, "page": [1],
            "container-title": {"a": 1}, "abstract": {"jats": "not text"},
            "link": [{"content-type": "application/pdf", "URL": ["http://127.0.0.1:1/x.pdf"]}, "y", 3]}
        srv.settings_env(monkeypatch)
        monkeypatch.setenv("PAPERVAULT_SOURCES_ONLINE", "true")
        monkeypatch.setenv("PAPERVAULT_SOURCES_ENRICH_ON_ADD", "false")
        cli_run(["init"])
        out = json.loads(cli_run(["add", "--no-index", "--json", "10.5555/hostile.2020"]).output)
    (pid,) = out["added"]
    vault = Vault(ws / "vault")
    meta = vault.read_meta(pid)
    assert meta.title.startswith("Hostile Answers hhh") and len(meta.title) <= 1_000
    assert meta.authors == ["Bo " + "B" * 296 + "…", "Ada Lovelace", "Cy"]
    assert "volume" not in meta.bib and meta.venue is None and meta.abstract is None
    assert meta.doi == "10.5555/hostile.2020"
    assert vault.note_path(pid).stat().st_size < 20_000
