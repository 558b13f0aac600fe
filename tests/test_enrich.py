"""`papervault enrich` against loopback servers that speak Crossref's and OpenAlex's /works formats and the
arXiv Atom API: found, not found, rate-limited, offline; the user's own metadata is never replaced."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from papervault.errors import SourceError
from papervault.ingest import add
from papervault.sources.enrich import enrich
from papervault.workspace import Workspace
from support_arxiv import LoopbackServer, Paper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from identity_pdfs import make  # noqa: E402

DOI = "10.1145/1234567.1234568"
RETRACTED = "10.5555/retracted.2020"
HOSTILE = "10.5555/hostile.2020"
HOSTILE_CROSSREF = "10.5555/hostile.crossref"

CROSSREF = {
    DOI: {"DOI": DOI, "title": ["Grounding in <i>Communication</i>"], "type": "book-chapter",
          "author": [{"given": "Herbert H.", "family": "Clark"}, {"given": "Susan E.", "family": "Brennan"}],
          "issued": {"date-parts": [[1991, 1, 1]]}, "container-title": ["Perspectives on Socially Shared Cognition"],
          "page": "127-149", "volume": "13", "publisher": "American Psychological Association",
          "ISBN": ["978-1-55798-121-9"],
          "abstract": "<jats:title>Abstract</jats:title><jats:p>Conversation is a joint activity in which "
                      "partners establish mutual understanding through <jats:italic>grounding</jats:italic>."
                      "</jats:p>"},
    RETRACTED: {"DOI": RETRACTED, "title": ["Learning Sparse Codes for Time Series"],
                "author": [{"given": "Maria", "family": "Gonzalez"}], "issued": {"date-parts": [[2020]]},
                "container-title": ["Journal of Examples"],
                "updated-by": [{"DOI": "10.5555/notice", "type": "retraction", "label": "Retraction"}]},
    HOSTILE_CROSSREF: {"DOI": HOSTILE_CROSSREF, "title": ["Hostile Crossref " + "c" * 2_000_000],   # a 2 MB title
                       "author": [{"given": "Cy", "family": "C" * 1_000_000}, {"given": {"x": 1}, "family": "Roe"},
                                  "x", 7], "issued": {"date-parts": [["2021"]]}, "container-title": {"a": "b"},
                       "volume": {"x": "y" * 1000}, "issue": 7, "page": ["1-2"], "publisher": [{"p": 1}],
                       "abstract": ["not", "text"]},
}


class _Handler(BaseHTTPRequestHandler):
    seen: list = []
    limited: set = set()        # paths answered 429 once before they succeed

    def log_message(self, *a):
        pass

    def _send(self, code: int, data: dict | None = None, headers: dict | None = None) -> None:
        body = json.dumps(data or {}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        path = unquote(url.path)
        self.seen.append(path)
        if path in self.limited:
            self.limited.discard(path)
            return self._send(429, {"message": "rate limited"}, {"Retry-After": "0"})
        if path.startswith("/crossref/works/"):
            doi = path[len("/crossref/works/"):].lower()
            if doi in CROSSREF:
                return self._send(200, {"status": "ok", "message-type": "work", "message": CROSSREF[doi]})
            return self._send(404, {"status": "error", "message": "Resource not found."})
        if path == "/crossref/works":
            q = parse_qs(url.query).get("query.bibliographic", [""])[0].lower()
            items = [m for m in CROSSREF.values() if m["title"][0].split("<")[0].lower().strip() in q]
            return self._send(200, {"status": "ok", "message-type": "work-list",
                                    "message": {"total-results": len(items), "items": items}})
        if path.startswith("/openalex/works/doi:"):
            doi = path[len("/openalex/works/doi:"):].lower()
            if doi == RETRACTED:
                words = "We learn sparse codes that represent time series with few atoms <script>x</script>".split()
                index = {}
                for k, w in enumerate(words):
                    index.setdefault(w, []).append(k)
                index["never"] = [10**12, -5, "7"]          # positions no abstract has: dropped
                return self._send(200, {"id": "https://openalex.org/W1", "doi": f"https://doi.org/{doi}",
                                        "display_name": "Learning Sparse Codes for Time Series",
                                        "publication_year": 2020, "is_retracted": True, "authorships": [],
                                        "abstract_inverted_index": index})
            if doi == HOSTILE:         # a hostile answer: a 1 MB author, a dict for a volume, odd types
                return self._send(200, {"doi": f"https://doi.org/{doi}", "display_name": "Hostile Answers",
                                        "publication_year": "2020", "authorships": [
                                            {"author": {"display_name": "B" * 1_000_000}},
                                            {"author": {"display_name": "Ada Lovelace"}}, {"author": "x"}, 7],
                                        "biblio": {"volume": {"x": "y" * 1000}, "issue": 7, "first_page": [1]}})
            return self._send(404, {"error": "not found"})
        self._send(404)


@pytest.fixture
def services(monkeypatch):
    handler = type("H", (_Handler,), {"seen": [], "limited": set()})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    monkeypatch.setenv("PAPERVAULT_SOURCES_ONLINE", "true")
    monkeypatch.setenv("PAPERVAULT_SOURCES_CROSSREF_URL", f"{url}/crossref")
    monkeypatch.setenv("PAPERVAULT_SOURCES_OPENALEX_URL", f"{url}/openalex")
    monkeypatch.setenv("PAPERVAULT_SOURCES_ENRICH_DELAY", "0")
    monkeypatch.setenv("PAPERVAULT_SOURCES_RETRIES", "3")
    monkeypatch.setenv("PAPERVAULT_SOURCES_TIMEOUT", "5")
    yield handler
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def ws(tmp_path, services):
    return Workspace.init(tmp_path / "ws")[0]   # after `services`: its settings see the loopback URLs


def test_found_by_title_search_and_by_doi_with_a_rate_limit(ws, tmp_path, services):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    make("running-head", folder)                 # no identifier printed: found by a title search
    make("arxiv-stamp", folder)
    make("banner", folder)                       # not known to any service
    assert sorted(add(ws, [str(folder)]).added) == ["clark1991grounding", "feigenbaum1985secure",
                                                    "gonzalez2019learning"]
    ws.vault.update_meta("gonzalez2019learning", doi=RETRACTED, arxiv=None)
    services.limited.add(f"/crossref/works/{RETRACTED}")     # 429 first: retried, then answered

    report = enrich(ws)
    assert report["failed"] == {}
    assert report["not_found"] == ["feigenbaum1985secure"]
    clark = ws.vault.read_meta("clark1991grounding")
    assert clark.title == "Grounding in Communication" and clark.doi == DOI
    assert clark.authors == ["Herbert H. Clark", "Susan E. Brennan"] and clark.year == 1991
    assert clark.venue == "Perspectives on Socially Shared Cognition"
    assert clark.provenance["authors"] == "doi" and clark.provenance["venue"] == "doi"
    assert clark.bib["pages"] == "127--149" and clark.bib["publisher"] == "American Psychological Association"
    g = ws.vault.read_meta("gonzalez2019learning")
    assert g.retracted is True and g.year == 2020 and g.venue == "Journal of Examples"
    assert [p for p in services.seen if p == f"/crossref/works/{RETRACTED}"] == [f"/crossref/works/{RETRACTED}"] * 2
    assert ws.vault.is_clean() and ws.vault.history(limit=1)[0]["message"].startswith("enrich: 2 papers")


def test_a_paper_without_an_abstract_gets_the_services_and_search_finds_it(ws, tmp_path, services, cli_run):
    """A record known by its title alone (here: its abstract removed) gets Crossref's abstract as text, or
    OpenAlex's inverted index read back; an abstract the paper has is kept; the index then reads it."""
    folder = tmp_path / "pdfs"
    folder.mkdir()
    make("running-head", folder)
    make("arxiv-stamp", folder)
    add(ws, [str(folder)])
    ws.vault.update_meta("gonzalez2019learning", doi=RETRACTED, arxiv=None)
    kept = ws.vault.read_meta("gonzalez2019learning").abstract
    ws.vault.update_meta("clark1991grounding", abstract=None)
    ws.vault.commit("test: a title-only record")
    report = enrich(ws)
    clark = ws.vault.read_meta("clark1991grounding")
    assert clark.abstract == ("Conversation is a joint activity in which partners establish mutual understanding "
                              "through grounding."), clark.abstract
    assert clark.provenance["abstract"] == "crossref" and "abstract" in report["enriched"]["clark1991grounding"]
    g = ws.vault.read_meta("gonzalez2019learning")
    assert g.abstract == kept and "abstract" not in report["enriched"].get("gonzalez2019learning", [])

    # the inverted index, when Crossref has none: words in order, impossible positions dropped, tags gone
    ws.vault.update_meta("gonzalez2019learning", abstract=None)
    ws.vault.commit("test: no abstract")
    enrich(ws, ["gonzalez2019learning"])
    g = ws.vault.read_meta("gonzalez2019learning")
    assert g.abstract == "We learn sparse codes that represent time series with few atoms x", g.abstract
    assert g.provenance["abstract"] == "openalex"

    cli_run(["index", "-q", "--workspace", ws.root])
    hits = json.loads(cli_run(["search", "joint activity mutual understanding", "--json", "--workspace",
                               ws.root]).stdout)
    got = hits["hits"] if isinstance(hits, dict) else hits
    assert got and got[0]["paper_id"] == "clark1991grounding", got[:2]


def test_the_users_metadata_is_never_replaced(ws, tmp_path, services):
    folder = tmp_path / "lib"
    folder.mkdir()
    make("running-head", folder)
    (folder / "refs.bib").write_text(
        "@incollection{clark1991,\n  author = {Clark, Herbert H.},\n  title = {Grounding in Communication},\n"
        f"  year = {{1992}},\n  doi = {{{DOI}}},\n  file = {{running-head.pdf}}\n}}\n", encoding="utf-8")
    assert add(ws, [str(folder / "refs.bib")]).added == ["clark1991"]
    report = enrich(ws, ["clark1991"])
    meta = ws.vault.read_meta("clark1991")
    # The entry's authors and year stay (the user's library); the venue it left out is filled.
    assert meta.authors == ["Herbert H. Clark"] and meta.year == 1992 and meta.provenance["year"] == "bibtex"
    assert meta.venue == "Perspectives on Socially Shared Cognition" and report["enriched"]["clark1991"]


def test_not_found_failed_and_offline(ws, tmp_path, services, monkeypatch):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    make("banner", folder)
    add(ws, [str(folder)])
    ws.vault.update_meta("feigenbaum1985secure", doi="10.9999/unknown")
    assert enrich(ws)["not_found"] == ["feigenbaum1985secure"]

    # A service that keeps refusing: the paper is reported as failed, nothing is changed.
    monkeypatch.setenv("PAPERVAULT_SOURCES_CROSSREF_URL", "http://127.0.0.1:9/crossref")
    monkeypatch.setenv("PAPERVAULT_SOURCES_RETRIES", "1")
    ws = Workspace(ws.root)
    report = enrich(ws)
    assert "feigenbaum1985secure" in report["failed"] and "connection failed" in report["failed"]["feigenbaum1985secure"]

    # Offline (the default): it fails at once, before any request.
    monkeypatch.setenv("PAPERVAULT_SOURCES_ONLINE", "false")
    ws = Workspace(ws.root)
    before = len(services.seen)
    t = time.perf_counter()
    with pytest.raises(SourceError, match="online enrichment is off"):
        enrich(ws)
    assert time.perf_counter() - t < 0.5 and len(services.seen) == before


def test_arxiv_id_resolved_through_the_arxiv_api(ws, tmp_path, services, monkeypatch):
    with LoopbackServer() as srv:
        srv.catalog.add(Paper("1902.01234", "Learning Sparse Codes for Time Series", "We learn codes.",
                              ["Maria Gonzalez", "Wei Zhang", "Peter M. Olsen", "Ann Smith"],
                              published="2019-02-03T00:00:00Z"))
        srv.settings_env(monkeypatch)
        ws = Workspace(ws.root)
        folder = tmp_path / "pdfs"
        folder.mkdir()
        make("arxiv-stamp", folder)
        assert add(ws, [str(folder)]).added == ["gonzalez2019learning"]
        report = enrich(ws)
    meta = ws.vault.read_meta("gonzalez2019learning")
    assert report["enriched"]["gonzalez2019learning"] == ["title confirmed", "authors"]
    assert meta.authors[-1] == "Ann Smith" and meta.provenance["authors"] == "arxiv"


def test_an_offline_add_never_asks_the_network(tmp_path, services, monkeypatch):
    monkeypatch.setenv("PAPERVAULT_SOURCES_ONLINE", "false")
    monkeypatch.setenv("PAPERVAULT_SOURCES_ENRICH_ON_ADD", "true")
    ws = Workspace.init(tmp_path / "offline")[0]
    folder = tmp_path / "pdfs"
    folder.mkdir()
    make("running-head", folder)
    assert add(ws, [str(folder)]).added == ["clark1991grounding"]
    assert services.seen == [] and ws.vault.read_meta("clark1991grounding").provenance["title"] == "layout"

    # Online, with enrich_on_add: the new paper is resolved during add.
    monkeypatch.setenv("PAPERVAULT_SOURCES_ONLINE", "true")
    ws = Workspace.init(tmp_path / "online")[0]
    assert add(ws, [str(folder)]).added == ["clark1991grounding"]
    meta = ws.vault.read_meta("clark1991grounding")
    assert meta.doi == DOI and meta.provenance["doi"] == "doi" and ws.vault.is_clean()


def test_enrich_rewrites_the_notes_head_unless_a_person_edited_it(ws, tmp_path, services):
    """`papervault enrich` corrects the record, and the note's own head (title, Authors, Published) that `show`,
    MCP and the index read says the same; a note whose body a person edited keeps its body."""
    from click.testing import CliRunner

    from papervault.cli import cli

    folder = tmp_path / "pdfs"
    folder.mkdir()
    make("running-head", folder)                 # found by a title search: authors, venue and year change
    make("arxiv-stamp", folder)
    assert sorted(add(ws, [str(folder)]).added) == ["clark1991grounding", "gonzalez2019learning"]
    ws.vault.update_meta("gonzalez2019learning", doi=RETRACTED, arxiv=None)
    note = ws.vault.note_path("gonzalez2019learning")
    note.write_text(note.read_text(encoding="utf-8") + "\nMy own reading.\n", encoding="utf-8")
    ws.vault.commit("my edit")
    before = ws.vault.read_note("clark1991grounding")[1]
    mine = ws.vault.read_note("gonzalez2019learning")[1]
    assert "Perspectives on Socially Shared Cognition" not in before

    res = CliRunner().invoke(cli, ["enrich", "-w", str(ws.root)])
    assert res.exit_code == 0, (res.output, res.exception)
    assert "2 enriched, 0 unchanged, 0 not found, 0 failed" in res.output
    body = ws.vault.read_note("clark1991grounding")[1]
    assert body.lstrip().startswith("# Grounding in Communication\n"), body[:300]
    assert "**Authors:** Herbert H. Clark, Susan E. Brennan  \n" in body
    assert "**Published:** Perspectives on Socially Shared Cognition, 1991  \n" in body
    assert body.count("**Authors:**") == body.count("**Published:**") == 1
    assert body.split("## ", 1)[1] == before.split("## ", 1)[1]          # the rest of the note is kept
    assert not ws.vault.is_edited("clark1991grounding") and ws.vault.is_clean()
    shown = CliRunner().invoke(cli, ["show", "clark1991grounding", "-w", str(ws.root)]).output
    assert "**Published:** Perspectives on Socially Shared Cognition, 1991" in shown
    # the hand-edited note: its record is corrected, its body is as the person left it, no note.new.md
    assert ws.vault.read_note("gonzalez2019learning")[1] == mine
    assert ws.vault.read_meta("gonzalez2019learning").venue == "Journal of Examples"
    assert not (note.parent / "note.new.md").exists()


def test_enrich_doubtful_asks_only_about_low_confidence_identities(ws, tmp_path, services, cli_run, monkeypatch):
    """`enrich --doubtful` resolves the papers `status` lists as low-confidence and asks about no other paper;
    once resolved, nothing is doubted any more."""
    import pymupdf

    from identity_pdfs import BODY

    doc = pymupdf.open()                        # a large line with nothing to back it: a low-confidence title
    page = doc.new_page()
    page.insert_text((72, 100), "Notes on Replicated Logs", fontsize=18, fontname="tibo")
    for i, y in zip(range(0, len(BODY), 90), range(140, 800, 13)):
        page.insert_text((72, y), BODY[i:i + 90], fontsize=10, fontname="tiro")
    folder = tmp_path / "pdfs"
    folder.mkdir()
    doc.save(folder / "scan0001.pdf")
    doc.close()
    make("running-head", folder)                # a sure title that a title search would also find
    monkeypatch.setitem(CROSSREF, "10.5555/logs", {
        "DOI": "10.5555/logs", "title": ["Notes on Replicated Logs"], "issued": {"date-parts": [[1994]]},
        "author": [{"given": "Ann", "family": "Roe"}], "container-title": ["Operating Systems Review"]})
    w = ["--workspace", str(ws.root)]
    added = json.loads(cli_run(["add", str(folder), "--json", *w]).stdout)["added"]
    [weak] = [d["id"] for d in json.loads(cli_run(["status", "--json", *w]).stdout)["low_confidence"]]
    assert weak in added and weak.startswith("notes")       # no author: a short form of the title

    services.seen.clear()
    report = json.loads(cli_run(["enrich", "--doubtful", "--json", *w]).stdout)
    assert set(report["enriched"]) == {weak} and {"authors", "doi"} <= set(report["enriched"][weak])
    # one title search, for that paper alone, and OpenAlex for the abstract and retraction Crossref lacks
    assert services.seen[0] == "/crossref/works" and all(p.endswith(("/crossref/works", "doi:10.5555/logs"))
                                                         for p in services.seen), services.seen
    assert len(services.seen) == 2
    meta = ws.vault.read_meta(weak)
    assert meta.authors == ["Ann Roe"] and meta.doi == "10.5555/logs" and meta.provenance["authors"] == "doi"
    assert "title confirmed" in report["enriched"][weak] and report["rekey"] == {weak: "roe1994notes"}
    assert json.loads(cli_run(["status", "--json", *w]).stdout)["low_confidence"] == []
    assert "no paper has a low-confidence" in cli_run(["enrich", "--doubtful", *w]).stdout
    bad = cli_run(["enrich", weak, "--doubtful", *w], check=False)
    assert bad.exit_code == 2 and "not both" in bad.output


def test_a_service_s_values_are_typed_and_bounded(ws, tmp_path, services):
    """OpenAlex's answer is held to the bounds and types of an import: a 1 MB author is cut to 300 characters,
    a dict is no volume, a number is an issue."""
    bib = tmp_path / "hostile.bib"
    bib.write_text("@article{hostile, title = {Hostile Answers}, doi = {%s}}\n" % HOSTILE, encoding="utf-8")
    add(ws, [str(bib)])
    assert enrich(ws)["enriched"]["hostile"]
    meta = ws.vault.read_meta("hostile")
    assert meta.authors == ["B" * 299 + "…", "Ada Lovelace"]
    assert "volume" not in meta.bib and meta.bib["number"] == "7" and "pages" not in meta.bib
    assert ws.vault.note_path("hostile").stat().st_size < 20_000

    # Crossref's answer too: a 2 MB title (the record's own title is the user's: not replaced, but the answer is
    # read bounded), a 1 MB author, a dict for a given name, a venue, a volume or a publisher is no value
    bib.write_text("@article{crossrefd, title = {Hostile Crossref}, doi = {%s}}\n" % HOSTILE_CROSSREF, encoding="utf-8")
    add(ws, [str(bib)])
    assert enrich(ws, ["crossrefd"])["enriched"]["crossrefd"]
    meta = ws.vault.read_meta("crossrefd")
    assert meta.authors == ["Cy " + "C" * 296 + "…", "Roe"] and meta.year == 2021
    assert meta.venue is None and meta.abstract is None
    assert "volume" not in meta.bib and "publisher" not in meta.bib and meta.bib["number"] == "7"
    assert meta.bib["pages"] == "1--2"
    assert ws.vault.note_path("crossrefd").stat().st_size < 20_000

