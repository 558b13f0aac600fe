"""Caches keyed on every setting that changes their content: the parse cache (OCR, its resolution, the page
limit) and the paper index (chunk sizes, the embedder's token limit). Each test changes one setting and shows
that the result follows it: a new parse, re-chunked papers, or an error naming the command that fixes it."""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from papervault.config import EmbedSettings, ParseSettings, Settings
from papervault.errors import IndexMismatchError, ParseError
from papervault.index.embed import Embedder
from papervault.index.search import search
from papervault.index.store import PaperIndex
from papervault.parse.batch import cache_path, parse_cached, parse_many
from papervault.workspace import Workspace

from support_index import add_paper, synthetic_paper

SCAN_TEXT = "Write-ahead logging makes recovery fast"


@pytest.fixture(scope="module")
def scan_pdf(tmp_path_factory) -> Path:
    """Two pages: one with a text layer, one that is only a picture of a sentence (what a scanner makes)."""
    import pymupdf

    d = tmp_path_factory.mktemp("scan")
    src = pymupdf.open()
    page = src.new_page(width=420, height=200)
    page.insert_text((20, 100), SCAN_TEXT, fontsize=20)
    pix = page.get_pixmap(dpi=150)
    doc = pymupdf.open()
    first = doc.new_page()
    first.insert_textbox(pymupdf.Rect(60, 60, 540, 400),
                         "A Study of Recovery\n\nThe first page has a text layer and says so in more than forty "
                         "characters of running text.", fontsize=11)
    second = doc.new_page()
    second.insert_image(pymupdf.Rect(20, 20, 575, 560), pixmap=pix, keep_proportion=False)
    path = d / "scan.pdf"
    doc.save(path)
    return path


def _files(cache: Path) -> list[Path]:
    return sorted((cache / "parse").glob("*.pickle"))


def test_settings_that_change_a_parse_change_its_cache_key():
    base = ParseSettings()
    assert ParseSettings(ocr_threads=3, workers=8, timeout=5).cache_key() == base.cache_key()
    keys = {base.cache_key(), ParseSettings(ocr=False).cache_key(), ParseSettings(ocr_dpi=100).cache_key(),
            ParseSettings(max_pages=10).cache_key()}
    assert len(keys) == 4
    # with OCR off, its resolution cannot change the result
    assert ParseSettings(ocr=False, ocr_dpi=100).cache_key() == ParseSettings(ocr=False).cache_key()


def test_ocr_setting_is_part_of_the_parse_cache(scan_pdf, tmp_path):
    cache = tmp_path / "cache"
    on = parse_cached(scan_pdf, ParseSettings(ocr=True), cache)
    assert "write-ahead" in on.markdown.lower()
    assert len(_files(cache)) == 1
    # the same file with OCR off is parsed again, not served the OCR'd parse
    off = parse_cached(scan_pdf, ParseSettings(ocr=False), cache)
    assert "write-ahead" not in off.markdown.lower()
    assert any("OCR is off" in w for w in off.warnings)
    assert len(_files(cache)) == 2
    # each setting finds its own entry again
    assert "write-ahead" in parse_cached(scan_pdf, ParseSettings(ocr=True), cache).markdown.lower()
    assert "write-ahead" not in parse_cached(scan_pdf, ParseSettings(ocr=False), cache).markdown.lower()
    # parse_many (the path `add` takes, in worker processes) uses the same keys
    out = parse_many([scan_pdf], ParseSettings(ocr=False), cache_dir=cache, workers=1)
    assert "write-ahead" not in out[str(scan_pdf)].markdown.lower()
    assert len(_files(cache)) == 2


def test_a_hit_is_served_and_a_changed_resolution_parses_again(scan_pdf, tmp_path):
    cache = tmp_path / "cache"
    settings = ParseSettings(ocr=True, ocr_dpi=150)
    first = parse_cached(scan_pdf, settings, cache)
    entry = cache_path(cache, first.sha256, settings)
    assert entry.is_file() and _files(cache) == [entry]
    # a hit is served from the cache: mark the stored parse and read it back
    first.title = "served from the cache"
    entry.write_bytes(pickle.dumps(first))
    assert parse_cached(scan_pdf, ParseSettings(ocr=True, ocr_dpi=150, ocr_threads=1), cache).title == \
        "served from the cache"
    again = parse_cached(scan_pdf, ParseSettings(ocr=True, ocr_dpi=100), cache)
    assert again.title != "served from the cache" and "write-ahead" in again.markdown.lower()
    assert len(_files(cache)) == 2


def test_page_limit_is_part_of_the_parse_cache(scan_pdf, tmp_path):
    cache = tmp_path / "cache"
    assert parse_cached(scan_pdf, ParseSettings(ocr=False, max_pages=10), cache).pages == 2
    # a lower limit refuses the file instead of serving the parse made under the higher one
    with pytest.raises(ParseError, match="pages"):
        parse_cached(scan_pdf, ParseSettings(ocr=False, max_pages=1), cache)
    out = parse_many([scan_pdf], ParseSettings(ocr=False, max_pages=1), cache_dir=cache, workers=1)
    assert isinstance(out[str(scan_pdf)], ParseError)


# --- the paper index ---------------------------------------------------------------------------------

def test_index_name_covers_every_setting_that_changes_chunks_or_vectors(monkeypatch):
    monkeypatch.delenv("PAPERVAULT_EMBED_MODEL", raising=False)   # the environment would win over the file
    base = Settings().index_name()
    assert base == Settings({"index": {"rrf_k": 60, "fts_weight": 1.0}, "embed": {"batch_size": 4}}).index_name()
    changed = [Settings({"index": {"chunk_tokens": 120}}), Settings({"index": {"max_chunk_tokens": 300}}),
               Settings({"embed": {"max_tokens": 128}}), Settings({"embed": {"model": "BAAI/bge-base-en-v1.5"}})]
    names = {s.index_name() for s in changed}
    assert len(names) == 4 and base not in names


@pytest.fixture(scope="module")
def indexed_template(tmp_path_factory, model_dir):
    """Three generated papers indexed with the default settings; each test works on its own copy."""
    ws, _ = Workspace.init(tmp_path_factory.mktemp("keys") / "ws")
    for i in range(3):
        title, md = synthetic_paper(i, pages=2, paragraphs=3)
        add_paper(ws.vault, f"paper{i}", title=title, fulltext=md, year=2000 + i)
    PaperIndex(ws).sync()
    return ws


@pytest.fixture
def ws_copy(indexed_template, tmp_path):
    shutil.copytree(indexed_template.root, tmp_path / "keys", symlinks=True)
    return tmp_path / "keys"


def _with(root: Path, **sections) -> Workspace:
    """The workspace at `root` after the user edited papervault.toml to these settings."""
    lines = []
    for section, values in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in values.items()]
    (root / "papervault.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Workspace(root)


def _chunk_ids(ws: Workspace) -> set[str]:
    from papervault.index.store import CHUNKS, open_db

    return set(open_db(ws).open_table(CHUNKS).to_arrow()["id"].to_pylist())


def _expected_ids(ws: Workspace) -> set[str]:
    """The chunk ids the workspace's current settings make of its papers."""
    from papervault.chunking.paper import chunk_paper

    out = set()
    for pid in ws.vault.paper_ids():
        meta, body = ws.vault.read_note(pid)
        fulltext = ws.vault.fulltext_path(pid).read_text(encoding="utf-8")
        out |= {c.id for c in chunk_paper(meta, fulltext, body, ws.settings.index)}
    return out


@pytest.mark.parametrize("setting,value", [("chunk_tokens", 60), ("max_chunk_tokens", 10)])
def test_changed_chunk_setting_rechunks_every_paper(ws_copy, setting, value):
    before = PaperIndex(Workspace(ws_copy)).stats()
    assert before["health"] == "ok"
    assert json.loads(before["chunk_settings"]) == {"chunk_tokens": 200, "max_chunk_tokens": 400}
    old_ids = _chunk_ids(Workspace(ws_copy))
    assert old_ids == _expected_ids(Workspace(ws_copy))

    ws = _with(ws_copy, index={setting: value})
    ix = PaperIndex(ws)
    stale = ix.stats()
    assert stale["health"].startswith("stale") and "run `papervault index`" in stale["health"]
    assert f'"{setting}": {value}' in stale["health"]

    report = ix.sync()
    assert sorted(report["updated"]) == ["paper0", "paper1", "paper2"] and report["unchanged"] == 0
    assert report["index_name"] == ws.settings.index_name() != Workspace(ws_copy.parent).settings.index_name()
    # the index holds exactly the chunks the new settings make: nothing of the old chunking is left
    new_ids = _chunk_ids(ws)
    assert new_ids == _expected_ids(ws) and new_ids != old_ids
    after = ix.stats()
    assert after["health"] == "ok" and after["index_name"] == ws.settings.index_name()
    assert json.loads(after["chunk_settings"])[setting] == value
    assert ix.sync()["unchanged"] == 3


def test_back_to_the_old_settings_reuses_the_old_vectors(ws_copy):
    ix = PaperIndex(_with(ws_copy, index={"chunk_tokens": 60}))
    ix.sync()
    (ws_copy / "papervault.toml").unlink()
    report = PaperIndex(Workspace(ws_copy)).sync()
    assert len(report["updated"]) == 3
    # paper chunks and figure captions are the same under both settings: their vectors are reused
    assert report["chunks_reused"] > 0 and report["chunks_embedded"] < report["chunks"]


def test_changed_embed_token_limit_names_the_rebuild(ws_copy):
    ws = _with(ws_copy, embed={"max_tokens": 16})
    ix = PaperIndex(ws)
    assert ix.stats()["health"].startswith("mismatch")
    with pytest.raises(IndexMismatchError, match=r"\[embed\] max_tokens '256'.*'16'") as err:
        ix.sync()
    assert "papervault index --rebuild" in err.value.fix
    report = ix.rebuild()
    assert report["chunks_embedded"] == report["chunks"]
    assert ix.stats()["health"] == "ok" and ix.stats()["embed_max_tokens"] == "16"


def test_an_index_keeps_the_precision_it_was_built_with(ws_copy):
    """`[embed] precision` (int8 by default) is part of the index: an index built at float32 is searched and
    synced at float32 while the settings say nothing (so is one made before the setting existed, which records
    none), and a setting that contradicts it names both ways out."""
    from papervault.index.embed import workspace_embed_settings
    from papervault.index.store import CHUNKS, PAPERS, open_db

    assert workspace_embed_settings(Workspace(ws_copy)).precision == "int8"   # built with the default
    f32 = _with(ws_copy, embed={"precision": "float32"})
    with pytest.raises(IndexMismatchError, match=r"\[embed\] precision 'int8'.*'float32'"):
        PaperIndex(f32).sync()
    report = PaperIndex(f32).rebuild()
    assert report["chunks_embedded"] == report["chunks"] > 0
    silent = _with(ws_copy)
    assert workspace_embed_settings(silent).precision == "float32"
    assert PaperIndex(silent).sync()["unchanged"] == report["papers"]
    hits = search(silent, "consensus among replicas", limit=3)
    assert hits
    for name in (CHUNKS, PAPERS):   # as an older papervault left it: no precision recorded
        open_db(silent).open_table(name).to_lance().update_schema_metadata({"embed_precision": None})
    assert workspace_embed_settings(_with(ws_copy)).precision == "float32"
    assert PaperIndex(_with(ws_copy)).sync()["unchanged"] == report["papers"]
    with pytest.raises(IndexMismatchError, match=r"\[embed\] precision 'float32'.*'int8'") as err:
        PaperIndex(_with(ws_copy, embed={"precision": "int8"})).sync()
    assert 'precision = "float32"' in err.value.fix and "papervault index --rebuild" in err.value.fix


def test_embed_token_limit_changes_the_vectors(model_dir):
    """Why the token limit is part of the index: a long text's vector depends on it."""
    long_text = " ".join(f"word{i} about replication and quorums" for i in range(80))
    full = Embedder(EmbedSettings()).embed([long_text])[0]
    short = Embedder(EmbedSettings(max_tokens=16)).embed([long_text])[0]
    assert float(np.dot(full, short)) < 0.99


def test_index_without_recorded_settings_asks_for_a_rebuild(ws_copy):
    """An index built before the settings were recorded cannot be trusted to match them."""
    from papervault.index.store import CHUNKS, PAPERS, open_db

    ws = Workspace(ws_copy)
    db = open_db(ws)
    for name in (CHUNKS, PAPERS):
        db.open_table(name).to_lance().update_schema_metadata({"embed_max_tokens": None, "chunk_settings": None})
    with pytest.raises(IndexMismatchError, match="records no \\[embed\\] max_tokens"):
        PaperIndex(ws).sync()
