"""The vault store: frontmatter round trips, atomic writes, human edits kept, the writer lock, path checks."""

from __future__ import annotations

import multiprocessing
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from papervault.errors import LockedError, NotFoundError
from papervault.models import PaperMeta
from papervault.vault import frontmatter
from papervault.vault.store import Vault, check_id
from papervault.workspace import Workspace

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r\x85\u2028\u2029"), max_size=60)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), text)
values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4),
                                                   st.dictionaries(st.from_regex(r"[a-z_]{1,10}", fullmatch=True), c, max_size=4)),
                      max_leaves=12)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.dictionaries(st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True), values, max_size=8),
       body=st.text(max_size=300).filter(lambda s: "\x00" not in s))
def test_frontmatter_round_trip(data, body):
    out_data, out_body = frontmatter.split(frontmatter.join(data, body))
    assert out_data == data
    assert frontmatter.body_hash(out_body) == frontmatter.body_hash(body)


@settings(max_examples=100, deadline=None)
@given(title=text, authors=st.lists(text, max_size=4), abstract=text, year=st.one_of(st.none(), st.integers(1900, 2100)))
def test_paper_meta_round_trip(title, authors, abstract, year):
    meta = PaperMeta(id="doe2020x", title=title, authors=authors, abstract=abstract, year=year)
    data, _ = frontmatter.split(frontmatter.join(meta.model_dump(exclude_none=True), "body"))
    assert PaperMeta.model_validate(data) == meta


@pytest.fixture
def vault(tmp_path) -> Vault:
    ws, _ = Workspace.init(tmp_path / "ws")
    return ws.vault


def test_person_edits_are_never_overwritten(vault):
    meta = PaperMeta(id="doe2020x", title="X")
    vault.write_note(meta, "# X\n\ntool text\n")
    vault.commit("add: doe2020x")
    path = vault.note_path("doe2020x")
    path.write_text(path.read_text().replace("tool text", "my own reading of it"))
    assert vault.is_edited("doe2020x")
    written = vault.write_note(PaperMeta(id="doe2020x", title="X"), "# X\n\nnew tool text\n")
    assert written.name == "note.new.md"
    assert "my own reading of it" in path.read_text()
    # a frontmatter-only change keeps the person's body
    vault.update_meta("doe2020x", tags=["read"])
    assert "my own reading of it" in path.read_text() and vault.read_meta("doe2020x").tags == ["read"]


def test_atomic_write_leaves_no_partial_file(vault, monkeypatch):
    from papervault.vault import store

    target = vault.root / "papers" / "a.md"
    store.atomic_write(target, "complete")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        store.atomic_write(target, "partial")
    assert target.read_text() == "complete"
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def _hold_lock(path, ready, release):
    ws = Workspace(path)
    with ws.write_lock("add"):
        ready.set()
        release.wait(30)


def test_writer_lock_names_the_holder(tmp_path):
    ws, _ = Workspace.init(tmp_path / "ws")
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold_lock, args=(str(ws.root), ready, release))
    p.start()
    try:
        assert ready.wait(60)
        with pytest.raises(LockedError) as err:
            ws.write_lock("index").acquire()
        assert "`papervault add`" in str(err.value) and "wait for it to finish" in str(err.value)
    finally:
        release.set()
        p.join(30)
    with ws.write_lock("index"):
        pass


def test_lock_is_released_when_the_holder_dies(tmp_path):
    ws, _ = Workspace.init(tmp_path / "ws")
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold_lock, args=(str(ws.root), ready, release))
    p.start()
    assert ready.wait(60)
    p.kill()
    p.join(30)
    with ws.write_lock("index"):
        pass


@pytest.mark.parametrize("bad", ["../etc", "a/b", "", ".hidden", "x" * 200, "a..b", "with space"])
def test_ids_and_paths_cannot_escape(vault, bad):
    with pytest.raises(NotFoundError):
        check_id(bad)
    with pytest.raises(NotFoundError):
        vault.resolve_inside("../../etc/passwd")
    assert vault.resolve_inside("papers") == (vault.root / "papers").resolve()


def test_a_commits_automatic_gc_runs_before_the_commit_returns(tmp_path):
    """`git commit` ends with `git gc --auto`; detached, it would hold the vault's locks behind the next step.
    With gc due (gc.auto = 1 and 2,000 new objects), the vault is packed when `commit` returns."""
    import subprocess

    ws, _ = Workspace.init(tmp_path / "ws")
    vault = ws.vault
    subprocess.run(["git", "-C", str(vault.root), "config", "gc.auto", "1"], check=True)
    many = vault.root / "many"
    many.mkdir()
    for i in range(2000):
        (many / f"n{i}.md").write_text(f"note {i}\n", encoding="utf-8")
    assert vault.commit("2,000 notes")
    count = subprocess.run(["git", "-C", str(vault.root), "count-objects", "-v"], check=True,
                           capture_output=True, text=True).stdout
    loose = int(next(line.split()[1] for line in count.splitlines() if line.startswith("count:")))
    assert loose < 100 and not (vault.root / ".git" / "gc.pid").exists(), count
