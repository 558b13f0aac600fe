"""Zotero libraries built with Zotero's real schema: item types, trash, attachments, notes, annotations, locks."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from papervault.errors import SourceError
from papervault.models import SourceRecord
from papervault.sources.problems import SourceProblem
from papervault.sources.zotero import base_attachment_dir, html_to_markdown, read_library
from support_arxiv import make_pdf
from support_zotero import SHARED_ZOTERO, ZoteroBuilder

pytestmark = pytest.mark.skipif(not (SHARED_ZOTERO / "userdata.sql").is_file(), reason="needs ../shared/zotero")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    root = tmp_path_factory.mktemp("zot")
    base = root / "Papers"
    (base / "ml").mkdir(parents=True)
    (base / "ml" / "linked.pdf").write_bytes(make_pdf("Linked Paper"))
    absolute = root / "elsewhere" / "abs.pdf"
    absolute.parent.mkdir()
    absolute.write_bytes(make_pdf("Absolute Paper"))
    z = ZoteroBuilder(root / "Zotero")
    z.collection("Distributed")
    z.collection("Consensus", parent="Distributed")
    # 1: a journal article with main text + supplement (supplement sorts first by name and is added first)
    a, akey = z.item("journalArticle", authors=[("Leslie", "Lamport")], title="Paxos Made Simple", date="2001-12-00 December 2001",
                     DOI="10.1145/568425.568433", publicationTitle="ACM SIGACT News", url="https://example.org/paxos",
                     abstractNote="The Paxos algorithm, when presented in plain English, is very simple.",
                     extra="Citation Key: lamport2001paxos", tags=["consensus", "classic"], collections=["Consensus"],
                     date_added="2023-05-01 09:00:00")
    supp, _ = z.stored_pdf(a, "A_supplementary_information.pdf", make_pdf("Supplement", pages=6), title="Supplement")
    main, _ = z.stored_pdf(a, "Lamport - Paxos.pdf", make_pdf("Paxos Made Simple", pages=3), title="Full Text PDF")
    z.note(a, "<h1>My summary</h1><p>Paxos is <b>simple</b>, see <a href='https://x.org'>this</a>.</p><ul><li>one</li></ul>")
    z.annotation(main, "the algorithm is very simple", "really?", "1", sort="00000|000100|00010")
    z.annotation(main, None, "check proof", "3", kind=2, sort="00002|000100|00010")
    # 2: a preprint with the arXiv id in archiveID, a linked `attachments:` PDF
    b, _ = z.item("preprint", authors=[("", "OpenAI")], title="A Preprint About Learning", date="2023-03-15 2023-03-15",
                  archiveID="arXiv:2303.08774", collections=["Distributed"], date_added="2024-06-01 12:00:00")
    z.linked_pdf(b, "attachments:ml/linked.pdf")
    # 3: a book (not an article) with an absolute linked PDF and arXiv in Extra
    c, _ = z.item("book", authors=[("Donald E.", "Knuth")], title="The Art of Computer Programming", date="1968",
                  publisher="Addison-Wesley", extra="arXiv: 1234.56789v2")
    z.linked_pdf(c, str(absolute))
    # 4: a thesis whose stored PDF is missing
    d, _ = z.item("thesis", authors=[("Ada", "Lovelace")], title="Notes on the Analytical Engine", university="London",
                  date="1843")
    z.stored_pdf(d, "gone.pdf", None)
    # 5: in the trash; 6: a regular item whose only PDF is in the trash
    e, _ = z.item("journalArticle", title="Deleted Paper")
    z.trash(e)
    f, _ = z.item("report", title="Report With Trashed PDF", date="2020")
    fp, _ = z.stored_pdf(f, "trashed.pdf", make_pdf("Trashed"))
    z.trash(fp)
    # 7: a standalone PDF (no parent item)
    z.stored_pdf(None, "standalone.pdf", make_pdf("Standalone"), title="Standalone Scan")
    data_dir = z.close()
    return {"dir": data_dir, "base": base, "root": root, "paxos_key": akey}


def _records(items) -> dict[str, SourceRecord]:
    out = {}
    for r in items:
        assert isinstance(r, SourceRecord), r
        out[r.title] = r
    return out


def test_reads_every_regular_item_not_the_trash(library):
    recs = _records(read_library(library["dir"], base_dir=library["base"]))
    assert set(recs) == {"Paxos Made Simple", "A Preprint About Learning", "The Art of Computer Programming",
                         "Notes on the Analytical Engine", "Report With Trashed PDF", "Standalone Scan"}
    p = recs["Paxos Made Simple"]
    assert p.origin == "zotero" and p.source == f"zotero://select/library/items/{library['paxos_key']}"
    assert (p.authors, p.year, p.venue, p.doi, p.key) == (["Leslie Lamport"], 2001, "ACM SIGACT News",
                                                         "10.1145/568425.568433", "lamport2001paxos")
    assert p.abstract.startswith("The Paxos algorithm") and p.url == "https://example.org/paxos"
    assert p.tags == ["classic", "consensus"] and p.collections == ["Consensus"]
    assert recs["A Preprint About Learning"].arxiv == "2303.08774"
    assert recs["A Preprint About Learning"].authors == ["OpenAI"]
    assert recs["The Art of Computer Programming"].arxiv == "1234.56789"
    assert recs["The Art of Computer Programming"].venue == "Addison-Wesley"
    assert recs["Report With Trashed PDF"].pdfs == []


def test_attachments_stored_linked_missing_and_main_text_first(library):
    recs = _records(read_library(library["dir"], base_dir=library["base"]))
    paxos = recs["Paxos Made Simple"]
    assert len(paxos.pdfs) == 2
    assert paxos.pdfs[0].endswith("Lamport - Paxos.pdf")        # not the supplement, though it has more pages
    assert "supplementary" in paxos.pdfs[1]
    assert recs["A Preprint About Learning"].pdfs == [str(library["base"] / "ml" / "linked.pdf")]
    assert recs["The Art of Computer Programming"].pdfs[0].endswith("abs.pdf")
    thesis = recs["Notes on the Analytical Engine"]
    assert thesis.pdfs == [] and "missing" in thesis.warnings[0] and "gone.pdf" in thesis.warnings[0]
    assert recs["Standalone Scan"].pdfs[0].endswith("standalone.pdf")


def test_linked_base_directory_from_prefs(library, tmp_path):
    prefs = library["dir"] / "prefs.js"
    prefs.write_text(f'user_pref("extensions.zotero.baseAttachmentPath", "{library["base"]}");\n')
    try:
        assert base_attachment_dir(library["dir"]) == library["base"]
        recs = _records(read_library(library["dir"]))
        assert recs["A Preprint About Learning"].pdfs[0].endswith("linked.pdf")
    finally:
        prefs.unlink()
    recs = _records(read_library(library["dir"]))      # no base directory known: reported, not fatal
    pre = recs["A Preprint About Learning"]
    assert pre.pdfs == [] and "missing" in pre.warnings[0]


def test_notes_and_annotations_become_reader_notes(library):
    paxos = _records(read_library(library["dir"], base_dir=library["base"]))["Paxos Made Simple"]
    notes = "\n\n".join(paxos.reader_notes)
    assert "### My summary" in notes and "Paxos is **simple**, see [this](https://x.org)." in notes
    assert "- one" in notes
    assert "> the algorithm is very simple (p. 1)\nreally?" in notes
    assert "check proof (p. 3)" in notes
    assert notes.index("very simple") < notes.index("check proof")


def test_collection_and_since_filters(library):
    titles = lambda it: sorted(r.title for r in it)  # noqa: E731
    # the parent collection includes its sub-collection
    assert titles(read_library(library["dir"], collection="Distributed")) == ["A Preprint About Learning", "Paxos Made Simple"]
    assert titles(read_library(library["dir"], collection="distributed/consensus")) == ["Paxos Made Simple"]
    assert titles(read_library(library["dir"], since="2024-03-01")) == ["A Preprint About Learning"]
    with pytest.raises(SourceError, match="no Zotero collection named 'Nope'.*Consensus"):
        list(read_library(library["dir"], collection="Nope"))
    with pytest.raises(SourceError, match="YYYY-MM-DD"):
        list(read_library(library["dir"], since="last tuesday"))


def test_reads_while_zotero_holds_the_database_locked(tmp_path):
    z = ZoteroBuilder(tmp_path / "Zotero")
    z.item("journalArticle", title="Before The Lock")
    data_dir = z.close()
    # Zotero runs in WAL mode with an exclusive lock; a change is in the -wal file, not yet in zotero.sqlite
    live = sqlite3.connect(data_dir / "zotero.sqlite")
    live.execute("PRAGMA journal_mode=WAL")
    live.execute("PRAGMA wal_autocheckpoint=0")
    live.execute("PRAGMA locking_mode=EXCLUSIVE")
    live.execute("INSERT INTO items (itemID, itemTypeID, libraryID, key) VALUES (99, 1, 1, 'WALITEM1')")
    live.execute("INSERT INTO itemDataValues (valueID, value) VALUES (99, 'Only In The WAL')")
    live.execute("INSERT INTO itemData (itemID, fieldID, valueID) VALUES (99, 1, 99)")
    live.commit()
    live.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(sqlite3.OperationalError):     # a direct reader is locked out ...
            sqlite3.connect(data_dir / "zotero.sqlite", timeout=0.1).execute("SELECT count(*) FROM items").fetchone()
        assert (data_dir / "zotero.sqlite-wal").stat().st_size > 0
        before = (data_dir / "zotero.sqlite").read_bytes()
        titles = sorted(r.title for r in read_library(data_dir))   # ... papervault reads a copy
        assert titles == ["Before The Lock", "Only In The WAL"]
        assert (data_dir / "zotero.sqlite").read_bytes() == before   # never written
    finally:
        live.rollback()
        live.close()


def test_unexpected_or_unreadable_databases(tmp_path):
    with pytest.raises(SourceError, match="no Zotero data directory"):
        list(read_library(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SourceError, match="no zotero.sqlite"):
        list(read_library(tmp_path / "empty"))
    odd = tmp_path / "odd"
    odd.mkdir()
    sqlite3.connect(odd / "zotero.sqlite").execute("CREATE TABLE items (itemID INTEGER)").connection.commit()
    with pytest.raises(SourceError, match="not a Zotero database \\(missing tables: itemTypes"):
        list(read_library(odd))
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "zotero.sqlite").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(SourceError, match="not a readable SQLite database"):
        list(read_library(junk))


def test_resolver_reports_zotero_problems_without_stopping(tmp_path):
    from papervault.config import Settings
    from papervault.sources.resolve import records_from_inputs

    items = list(records_from_inputs([], Settings(), zotero=str(tmp_path / "nowhere")))
    assert len(items) == 1 and isinstance(items[0], SourceProblem) and "no Zotero data directory" in str(items[0])


def test_html_to_markdown_plain_text():
    assert html_to_markdown("a &amp; b") == "a & b"
    assert html_to_markdown("<p>x<br>y</p>") == "x\ny"


# A Zotero 7 note as its editor writes it: highlights and citations in spans with data attributes.
ZOTERO7_NOTE = (
    '<div data-schema-version="9"><h1>Reading notes</h1>'
    '<p><span class="highlight" data-annotation="%7B%22pageLabel%22%3A%223%22%7D">“The log is the truth.”</span> '
    '<span class="citation" data-citation="%7B%7D">(<span class="citation-item">Kreps, 2013, p. 3</span>)</span></p>'
    '<p>Compare <strong>Kafka</strong> with <em>Bookkeeper</em>; see <a href="https://example.org/log">the post</a> '
    'and <a href="zotero://select/library/items/ABCD1234">the item</a>.</p>'
    '<h2>Questions</h2><ul><li>Does <code>acks=all</code> wait?<ul><li>nested</li></ul></li></ul>'
    '<blockquote><p>A quoted passage.</p></blockquote>'
    '<table><tr><th>metric</th><th>value</th></tr><tr><td>latency</td><td>2 ms</td></tr></table>'
    '<p>one<br>two</p></div>')

HOSTILE_NOTE = (
    '<script>alert("script")</script><style>body {}</style>'
    '<p onclick="alert(1)" style="color: red">text &lt;img src=x onerror=alert(2)&gt; and '
    '[md link](javascript:alert(3)) and ![md image](https://beacon.example/md.png) and *stars* and a_b</p>'
    '<p><img src="https://beacon.example/raw.png" alt="raw"> <a href="javascript:alert(4)">js</a> '
    '<a href="data:text/html,x">data</a> <a href="https://ok.example/a b)c" title="t">ok</a> '
    '<a href="https://x.example/&quot;onmouseover=&quot;alert(5)">q</a></p>'
    '<svg onload="alert(6)"><image href="https://beacon.example/svg.png"/></svg>'
    '<iframe src="https://beacon.example/frame"></iframe>'
    '<pre>```\nfenced &lt;b&gt;\n```</pre>')


def test_zotero_notes_become_safe_markdown(tmp_path, workspace_env, cli_run):
    """A note as Zotero 7 writes it keeps its structure; a hostile one keeps its text and nothing else: no tag or
    attribute, no script or style content, links only to http(s) and zotero://, no image, Markdown shown as text.
    Through `papervault add --zotero`, into the paper's reader-notes.md."""
    z = ZoteroBuilder(tmp_path / "Zotero")
    item, _ = z.item(title="The Log What Every Software Engineer Should Know", authors=[("Jay", "Kreps")],
                     date="2013")
    z.note(item, ZOTERO7_NOTE)
    z.note(item, HOSTILE_NOTE)
    att, _ = z.stored_pdf(item, "log.pdf", make_pdf("The Log What Every Software Engineer Should Know"))
    z.annotation(att, "<img src=https://beacon.example/ann.png> [x](javascript:alert(7))", "**mine**", "4")
    z.close()
    cli_run(["init"])
    cli_run(["add", "--zotero", str(tmp_path / "Zotero"), "-q"])
    (reader,) = (workspace_env / "vault" / "papers").glob("*/reader-notes.md")
    text = reader.read_text(encoding="utf-8")

    assert "### Reading notes" in text and "#### Questions" in text
    assert "“The log is the truth.” (Kreps, 2013, p. 3)" in text
    assert ("Compare **Kafka** with *Bookkeeper*; see [the post](https://example.org/log) and "
            "[the item](zotero://select/library/items/ABCD1234).") in text
    assert "- Does `acks=all` wait?\n  - nested" in text
    assert "> A quoted passage." in text
    assert "| metric | value |\n| --- | --- |\n| latency | 2 ms |" in text
    assert "one\ntwo" in text

    outside_code = re.sub(r"(?s)````.*?````", "", text)
    assert "<" not in outside_code.replace("&lt;", "")           # no tag, so no attribute either
    assert "alert(\"script\")" not in text and "body {}" not in text and "alert(6)" not in text
    assert "text &lt;img src=x onerror=alert(2)&gt; and" in text
    assert r"\[md link\](javascript:alert(3)) and !\[md image\](https://beacon.example/md.png)" in text
    assert r"\*stars\* and a\_b" in text
    assert "beacon.example/raw.png" not in text and "svg.png" not in text and "frame" not in text
    links = re.findall(r"(?<!\\)\[[^\]]*\]\(([^)]*)\)", text)
    assert links and all(re.match(r"(https?|zotero)://", u) for u in links), links
    assert "js data [ok](" in text                                # the bad links keep their text
    assert "[ok](https://ok.example/a%20b%29c)" in text and "title" not in text
    assert "[q](https://x.example/%22onmouseover=%22alert%285%29)" in text
    assert "````\n```\nfenced <b>\n```\n````" in text         # code stays code: a longer fence around it
    assert r"> &lt;img src=https://beacon.example/ann.png&gt; \[x\](javascript:alert(7)) (p. 4)" in text
    assert r"\*\*mine\*\*" in text


def test_note_conversion_keeps_plain_text_plain():
    assert html_to_markdown("a &amp; b &lt;i&gt;") == "a & b &lt;i&gt;"
    assert html_to_markdown("<p>a</p><p></p><p>b</p>") == "a\n\nb"
