"""`papervault sync` following arXiv: a saved query's new matches land in the inbox (ranked, with reasons) and
are added only when accepted; a new version of a vault paper is fetched, parsed and summarised, the version a
person read kept, and a survey citing the old version flagged with the quotes that moved or vanished."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pymupdf
import pytest

from papervault.errors import InputError

from support_arxiv import Catalog, LoopbackServer, Paper

BODY = "Leases give a server the right to answer reads for a bounded time without asking its peers. " * 4
QUOTE = "A lease of ten seconds keeps reads local on every replica we measured."


def paper_pdf(title: str, sections: list[tuple[str, list[str]]], extra_pages: int = 0) -> bytes:
    """A real PDF: a bold title, bold numbered headings and body paragraphs, a new page when one is full."""
    doc = pymupdf.open()
    page, y = doc.new_page(), 80
    page.insert_text((72, y), title, fontsize=18, fontname="hebo")
    page.insert_text((72, y + 30), "Ada Lovelace", fontsize=11)
    y += 60
    for head, paras in sections:
        if y > 600:
            page, y = doc.new_page(), 80
        page.insert_text((72, y), head, fontsize=13, fontname="hebo")
        y += 22
        for text in paras:
            page.insert_textbox(pymupdf.Rect(72, y, 540, y + 90), text, fontsize=10, fontname="helv")
            y += 100
    for _ in range(extra_pages):
        doc.new_page().insert_textbox(pymupdf.Rect(72, 80, 540, 300), "Appendix material. " * 20, fontsize=10)
    data = doc.tobytes()
    doc.close()
    return data


V1 = [("Abstract", ["We study leases for consistent reads in replicated storage."]), ("1 Introduction", [BODY]),
      ("2 Design", [BODY, BODY]), ("3 Evaluation", [QUOTE + " " + BODY])]
V2 = [("Abstract", ["We study leases and clock bounds for consistent reads in geo-replicated storage."]),
      ("1 Introduction", [BODY]), ("2 Design", [BODY, BODY]), ("3 Clock Bounds", [BODY]),
      ("4 Evaluation", [BODY]), ("5 Related Work", [BODY])]


def _follow(ws: Path, **sync) -> None:
    lines = ["", "[sync]"] + [f"{k} = {json.dumps(v)}" for k, v in sync.items()]
    with open(ws / "papervault.toml", "a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")


def _json(cli_run, *args) -> dict:
    return json.loads(cli_run([*args, "--json"]).output)


def _frontmatter(path: Path) -> dict:
    import yaml

    return yaml.safe_load(path.read_text(encoding="utf-8").split("---", 2)[1])


def test_inbox_then_new_version_flags_the_survey(tmp_path, workspace_env, monkeypatch, cli_run):
    ws = workspace_env
    lease = Paper("2401.00001", "Leases for Consistent Reads", "We study leases for consistent reads in replicated "
                  "storage.", ["Ada Lovelace"], pdfs={1: paper_pdf("Leases for Consistent Reads", V1)})
    geo = Paper("2401.00002", "Leases in Geo-Replicated Storage", "Read leases across data centres and their "
                "clock bounds.", ["Grace Hopper"], published="2025-03-01T00:00:00Z",
                pdfs={1: paper_pdf("Leases in Geo-Replicated Storage", V1[:2])})
    other = Paper("2401.00003", "Sorting Networks", "Comparator networks for sorting.", ["Alan Turing"])
    with LoopbackServer(Catalog()) as srv:
        srv.catalog.add(lease, geo, other)
        srv.settings_env(monkeypatch)
        cli_run(["init"])
        _follow(ws, arxiv=["leases"], arxiv_versions=True)

        # A pass: the query's matches go to the inbox, nothing is added to the vault.
        first = _json(cli_run, "sync", "--no-index")
        assert first["added"] == [] and not list((ws / "vault" / "papers").glob("*/note.md"))
        assert sorted(e["id"] for e in first["inbox"]) == ["2401.00001", "2401.00002"]
        inbox = _json(cli_run, "inbox")["items"]
        assert [e["id"] for e in inbox] == sorted([e["id"] for e in inbox], key=lambda i: -next(
            x["score"] for x in inbox if x["id"] == i))     # best first
        assert all("matches the saved query 'leases'" in e["reason"] for e in inbox)
        assert "2401.00003" not in {e["id"] for e in inbox}
        assert _json(cli_run, "sync", "--no-index")["inbox"] == []      # not offered twice

        # Accepting one adds it fully, at the version arXiv lists.
        accepted = _json(cli_run, "inbox", "accept", "2401.00001", "--no-index")
        pid = accepted["paper"]
        assert accepted["version"] == 1
        pdir = ws / "vault" / "papers" / pid
        assert "## 3 Evaluation" in (pdir / "paper.md").read_text(encoding="utf-8")
        assert _frontmatter(pdir / "note.md")["arxiv_version"] == 1
        assert [e["id"] for e in _json(cli_run, "inbox")["items"]] == ["2401.00002"]
        with pytest.raises(InputError, match="not in the inbox"):
            cli_run(["inbox", "accept", "2401.09999"])

        # A survey cites v1, quoting the evaluation on its page (as the survey stages write it).
        v1_text = (pdir / "paper.md").read_text(encoding="utf-8")
        page = int(v1_text.split("## 3 Evaluation")[0].rsplit('<a id="page-', 1)[1].split('"')[0])
        sdir = ws / "vault" / "surveys" / "leases"
        sdir.mkdir(parents=True)
        (sdir / "survey.md").write_text(
            f"# Leases: a survey\n\n- **Lovelace**: \u201c{QUOTE}\u201d [@{pid}] ([p. {page}](../../papers/{pid}/"
            f"paper.md#page-{page}))\n- **Lovelace**: \u201c{BODY.split('. ')[0]}.\u201d [@{pid}] ([p. 1]"
            f"(../../papers/{pid}/paper.md#page-1))\n", encoding="utf-8")
        from papervault.app.versions import pin_versions
        from papervault.vault.store import Vault

        refs = pin_versions(Vault(ws / "vault"), [{"id": pid, "type": "article", "number": "arXiv:2401.00001"}])
        assert refs[0]["version"] == "v1"
        (sdir / "references.json").write_text(json.dumps(refs), encoding="utf-8")
        subprocess.run(["git", "-C", str(ws / "vault"), "add", "surveys"], check=True)
        subprocess.run(["git", "-C", str(ws / "vault"), "commit", "-qm", "survey"], check=True)

        # arXiv publishes v2: new sections, a new abstract, more pages, the quoted passage gone.
        lease.version = 2
        lease.abstract = "We study leases and clock bounds for consistent reads in geo-replicated storage."
        lease.pdfs[2] = paper_pdf("Leases for Consistent Reads", V2, extra_pages=1)
        second = _json(cli_run, "sync", "--no-index")
        upd = [e for e in second["updated"] if e["source"] == "arxiv_versions"]
        assert len(upd) == 1 and upd[0]["paper"] == pid and upd[0]["version"] == {"from": 1, "to": 2}
        summary = upd[0]["summary"]
        assert any(s.startswith("sections added:") and "Clock Bounds" in s and "Related Work" in s for s in summary)
        assert "abstract changed" in summary
        assert any(s.startswith("pages: ") for s in summary), summary
        assert not any(s.startswith("sections removed") for s in summary)      # renumbered, not removed

        # The version a person read stays, the note says which version it describes, with the history.
        assert (pdir / "paper.v1.md").read_text(encoding="utf-8") == v1_text
        assert "## 5 Related Work" in (pdir / "paper.md").read_text(encoding="utf-8")
        fm = _frontmatter(pdir / "note.md")
        assert fm["arxiv_version"] == 2 and fm["note_version"] == 2
        assert fm["arxiv_history"][0]["from"] == 1 and fm["arxiv_history"][0]["kept"] == "paper.v1.md"
        assert fm["arxiv_history"][0]["summary"] == summary
        log = subprocess.run(["git", "-C", str(ws / "vault"), "status", "--porcelain"], capture_output=True,
                             text=True).stdout
        assert log.strip() == ""        # committed

        # The survey citing v1 is flagged, its quote reported as vanished.
        stale = second["stale_surveys"]
        assert [(s["survey"], s["paper"], s["cited"], s["now"]) for s in stale] == [("leases", pid, 1, 2)]
        assert [q["status"] for q in stale[0]["quotes"]] == ["vanished"]
        assert stale[0]["quotes"][0]["page"] == page

        changed = _json(cli_run, "changes", "--since", "1d")
        assert [(v["id"], v["version"]) for v in changed["versions"]] == [(pid, {"from": 1, "to": 2})]
        assert [s["survey"] for s in changed["stale_surveys"]] == ["leases"]
        assert [e["id"] for e in changed["inbox"]] == ["2401.00002"]
        text = cli_run(["changes", "--since", "1d"]).output
        assert "v1 -> v2" in text and "leases" in text

        # Nothing new: a pass changes nothing.
        third = _json(cli_run, "sync", "--no-index")
        assert (third["updated"], third["inbox"], third["added"]) == ([], [], [])

        # The site's "What's new" page lists the week's changes.
        cli_run(["site", "build"])
        page = (ws / ".papervault" / "site-src" / "whatsnew.md").read_text(encoding="utf-8")
        assert "new version" in page and "v1 -&gt; v2" in page and "Leases for Consistent Reads" in page
        assert "in the inbox" in page and "Leases in Geo-Replicated Storage" in page
        html = (ws / "site" / "whatsnew.html").read_text(encoding="utf-8")
        assert "What&#39;s new" in html or "What's new" in html


def test_versions_cost_follows_the_changes(tmp_path, workspace_env, monkeypatch, cli_run):
    """The versions pass asks arXiv about each paper at most once per `versions_every`, 50 ids a request, and
    reads no note of an unchanged vault: a second pass asks nothing; a new paper is asked about alone; with the
    interval elapsed every paper is asked again in one request."""
    ws = workspace_env
    papers = [Paper(f"2402.{n:05d}", f"Paper number {n} on gossip", "Gossip protocols.", ["Ada Lovelace"])
              for n in range(1, 6)]
    with LoopbackServer(Catalog()) as srv:
        srv.catalog.add(*papers)
        srv.settings_env(monkeypatch)
        cli_run(["init"])
        _follow(ws, arxiv_versions=True, versions_every="1d")
        lib = tmp_path / "lib.json"
        lib.write_text(json.dumps([{"id": f"p{n}", "type": "article", "title": p.title, "URL":
                                    f"https://arxiv.org/abs/{p.arxiv}"} for n, p in enumerate(papers[:4])]))
        cli_run(["add", str(lib), "-q"])

        def api_calls() -> int:
            return sum("/api/query" in path for _, path in srv.catalog.requests)

        before = api_calls()
        first = _json(cli_run, "sync", "--no-index")
        cost = first["costs"]["arxiv_versions"]
        assert (cost["arxiv_papers"], cost["asked"], cost["requests"]) == (4, 4, 1)
        assert api_calls() - before == 1

        before = api_calls()
        second = _json(cli_run, "sync", "--no-index")
        assert second["costs"]["arxiv_versions"] == {"arxiv_papers": 4, "notes_read": 0, "asked": 0, "requests": 0}
        assert api_calls() == before and second["sources"][0]["status"] == "unchanged"

        lib.write_text(json.dumps([{"id": "p5", "type": "article", "title": papers[4].title,
                                    "URL": f"https://arxiv.org/abs/{papers[4].arxiv}"}]))
        cli_run(["add", str(lib), "-q"])
        third = _json(cli_run, "sync", "--no-index")
        cost = third["costs"]["arxiv_versions"]
        assert (cost["arxiv_papers"], cost["notes_read"], cost["asked"]) == (5, 1, 1)

        cursor = ws / ".papervault" / "sync" / "arxiv-versions.json"
        data = json.loads(cursor.read_text())
        data["checked"] = {p: t - 2 * 86400 for p, t in data["checked"].items()}    # a day and more later
        cursor.write_text(json.dumps(data))
        papers[0].version = 2
        before = api_calls()
        fourth = _json(cli_run, "sync", "--no-index")
        cost = fourth["costs"]["arxiv_versions"]
        assert (cost["asked"], cost["requests"]) == (5, 1) and api_calls() - before == 1
        assert [e["version"] for e in fourth["updated"]] == [{"from": 1, "to": 2}]
