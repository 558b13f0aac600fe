"""Text layers that are still mostly non-words after the repair, through `papervault add`: the page is OCR'd and
the OCR text kept only when it has clearly more dictionary words; `papervault status` reports repaired and
OCR'd pages per paper and in total."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pymupdf
import pytest

from papervault.config import ParseSettings
from papervault.index.search import search
from papervault.index.store import PaperIndex
from papervault.ingest import add
from papervault.parse.batch import load_cached
from papervault.parse.words import dictionary_share
from papervault.workspace import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from identity_pdfs import make  # noqa: E402

# Real Latin (Cicero, De finibus 1.32-33): well printed, few English dictionary words. OCR reads it no better,
# so its text layer must stay, and after two such pages the rest of the PDF is not OCR'd.
LATIN = ("Sed ut perspiciatis unde omnis iste natus error sit voluptatem accusantium doloremque laudantium, totam "
         "rem aperiam, eaque ipsa quae ab illo inventore veritatis et quasi architecto beatae vitae dicta sunt "
         "explicabo. Nemo enim ipsam voluptatem quia voluptas sit aspernatur aut odit aut fugit, sed quia "
         "consequuntur magni dolores eos qui ratione voluptatem sequi nesciunt. Neque porro quisquam est, qui "
         "dolorem ipsum quia dolor sit amet, consectetur, adipisci velit, sed quia non numquam eius modi tempora "
         "incidunt ut labore et dolore magnam aliquam quaerat voluptatem.")
NON_WORD = "bennett1992replicated"


def _latin_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    for n in range(3):
        page = doc.new_page()
        page.insert_text((72, 90), f"Liber Primus, Caput {n + 1}", fontsize=15, fontname="tiro")
        page.insert_textbox(pymupdf.Rect(72, 110, 540, 700), LATIN + " " + LATIN, fontsize=11, fontname="tiro")
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def text_ws(tmp_path_factory):
    """One workspace with a PDF whose font maps every letter to another (the non-word-font style), a
    spaced-glyphs PDF the repair fixes, and a Latin text: added once, indexed."""
    root = tmp_path_factory.mktemp("text-layers")
    folder = root / "pdfs"
    folder.mkdir()
    make("non-word-font", folder)
    make("spaced-glyphs", folder)
    _latin_pdf(folder / "de-finibus.pdf")
    ws = Workspace.init(root / "ws")[0]
    report = add(ws, [str(folder)])
    assert not report.problems, report.problems
    PaperIndex(ws).sync()
    return ws, folder, report


def test_a_text_layer_of_non_words_is_replaced_by_ocr(text_ws):
    ws, folder, report = text_ws
    assert NON_WORD in report.added
    with pymupdf.open(folder / "non-word-font.pdf") as doc:
        layer = doc[0].get_text()
    # The text layer is junk that no glyph test catches: every glyph maps to a letter, vowels to vowels.
    assert layer.startswith("Siqmodevif Tvusehi") and dictionary_share([layer]) < 0.2

    meta = ws.vault.read_meta(NON_WORD)
    assert meta.title == "Replicated Storage under Network Partitions"
    assert meta.authors == ["Laura Bennett", "Daniel Frost"] and meta.year == 1992
    assert meta.ocr_pages == [1, 2] and meta.repaired_pages == []
    text = ws.vault.read_fulltext(NON_WORD)
    assert "Siqmodevif" not in text and "Fotvsocavif" not in text
    for phrase in ("storage systems must balance consistency", "replication protocols", "network partitions"):
        assert phrase in " ".join(text.split()), phrase
    assert dictionary_share([text]) > 0.85
    # Found by the words it is about.
    hits = search(ws, "replication protocols when the network partitions", limit=3)
    assert hits and hits[0].paper_id == NON_WORD


def test_ocr_is_kept_only_when_it_reads_more_words(text_ws):
    ws, folder, report = text_ws
    latin = next(pid for pid in report.added if ws.vault.read_meta(pid).title.startswith("Liber Primus"))
    meta = ws.vault.read_meta(latin)
    assert meta.ocr_pages == [] and meta.repaired_pages == []
    assert "perspiciatis unde omnis iste natus" in " ".join(ws.vault.read_fulltext(latin).split())
    # The parse (kept in the parse cache under the settings' key) says why: two pages tried, then no more.
    sha = meta.sha256
    parsed = load_cached(ws.parse_cache_dir, sha, ws.settings.parse)
    tried = [w for w in parsed.warnings if "dictionary words and OCR read" in w]
    assert [w.split(":")[0] for w in tried] == ["page 1", "page 2"], parsed.warnings
    assert tried[1].endswith("no further page of this PDF is OCR'd for that reason")
    # The setting that governs the fallback is part of the cache key: with it off, that parse is not reused.
    assert load_cached(ws.parse_cache_dir, sha, ParseSettings(ocr_min_word_share=0.0)) is None
    assert ParseSettings(ocr_min_word_share=0.0).cache_key() != ParseSettings().cache_key()
    assert ParseSettings(ocr=False, ocr_min_word_share=0.0).cache_key() == ParseSettings(ocr=False).cache_key()


def test_status_reports_repaired_and_ocr_pages(text_ws, cli_run):
    ws, _, _ = text_ws
    data = json.loads(cli_run(["status", "--json", "--workspace", ws.root]).stdout)
    tl = data["text_layers"]
    assert tl["papers"] == {NON_WORD: {"pages": 2, "repaired": [], "ocr": [1, 2]},
                            "robertson1994okapi": {"pages": 2, "repaired": [1], "ocr": []}}
    assert (tl["repaired_pages"], tl["papers_repaired"], tl["ocr_pages"], tl["papers_ocr"]) == (1, 1, 2, 1)

    out = cli_run(["status", "--workspace", ws.root]).stdout
    assert "text layers     1 repaired page in 1 paper, 2 OCR'd pages in 1 paper" in out
    assert f"  {NON_WORD}: OCR'd p. 1-2 (of 2 pages)" in out
    assert "  robertson1994okapi: repaired p. 1 (of 2 pages)" in out


def test_status_reads_the_page_lists_without_parsing_whole_notes(text_ws, cli_run, tmp_path):
    """`status` reads three fields of each note (frontmatter.fields); they must equal a full parse's, also in
    a hand-edited note that writes its lists in flow style."""
    from papervault.vault import frontmatter

    ws, _, _ = text_ws
    keys = {"pages", "repaired_pages", "ocr_pages"}
    for pid in ws.vault.paper_ids():
        text = ws.vault.note_path(pid).read_text(encoding="utf-8")
        full = {k: v for k, v in frontmatter.split(text)[0].items() if k in keys}
        assert frontmatter.fields(text, keys) == full and set(full) == keys
    edited = ("---\nid: x2001y\ntitle: 'A: title'\nocr_pages: [3, 4]  # read again\nabstract: |-\n  pages: 9\n\n"
              "  repaired_pages: [1]\nrepaired_pages: []\npages: 4\n---\n\nrepaired_pages: [7]\n")
    assert frontmatter.fields(edited, keys) == {"ocr_pages": [3, 4], "repaired_pages": [], "pages": 4}

    copy = Workspace.init(tmp_path / "copy")[0]
    note = ws.vault.note_path(NON_WORD).read_text(encoding="utf-8")
    text = note.replace("ocr_pages:\n- 1\n- 2\n", "ocr_pages: [1, 2]\n")
    assert text != note
    (copy.vault.papers_dir / NON_WORD).mkdir(parents=True)
    copy.vault.note_path(NON_WORD).write_text(text, encoding="utf-8")
    tl = json.loads(cli_run(["status", "--json", "--workspace", copy.root]).stdout)["text_layers"]
    assert tl["papers"] == {NON_WORD: {"pages": 2, "repaired": [], "ocr": [1, 2]}}
