"""The workspace's own copy of every paper's PDF: `<workspace>/pdfs/<sha256>.pdf`, content-addressed.

Why here, and not in the vault or in `.papervault/`:
- `.papervault/` is derived state that can always be rebuilt; an original PDF cannot be rebuilt once the
  user's Downloads folder is gone, so it must not live where `rm -rf .papervault` is a documented fix.
- The vault is a git repository: a PDF committed there stays in its history for ever (a 300-paper library is
  gigabytes of clone), and pushing the vault to share notes would publish every publisher's PDF with it.
- Beside the vault, in the workspace: backed up and moved with the workspace, never committed.
Content addressing makes the copy idempotent (the same bytes are kept once, whatever the file was called) and
lets the note name its PDF by hash (`pdf:` in its frontmatter), which nothing outside the workspace can
redirect: a hash is not a path. Files are copied, not hard-linked: a PDF reader that annotates the original in
place would otherwise change the kept bytes under their hash.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from papervault.errors import InputError, NotFoundError, UnsafePathError
from papervault.hashing import file_sha256, group_sha256
from papervault.vault.paths import guard
from papervault.vault.store import check_id

SHA256 = re.compile(r"\A[0-9a-f]{64}\Z")


def store_dir(root: Path) -> Path:
    """The store of the workspace at `root`."""
    return Path(root) / "pdfs"


def stored_path(root: Path, sha: str | None) -> Path | None:
    """Where the PDF of hash `sha` is kept; None for a value that is not a SHA-256 (a hostile `pdf:` such as
    `../../etc/passwd` never becomes a path)."""
    if not isinstance(sha, str) or not SHA256.fullmatch(sha):
        return None
    return store_dir(root) / f"{sha}.pdf"


def kept(root: Path, sha: str | None) -> Path | None:
    """The stored PDF of hash `sha` when it is there as a regular file (not a link out of the store)."""
    p = stored_path(root, sha)
    if p is None or p.is_symlink() or not p.is_file():
        return None
    try:
        guard(root, p, "read", within=store_dir(root))     # pdfs/ itself may be a link; nothing in it leads out
    except UnsafePathError:
        return None
    return p


def keep(root: Path, src: str | Path, sha: str | None = None) -> str:
    """Copy the PDF `src` into the store (once: same bytes, same file); returns its SHA-256.

    The copy goes to a temporary file in the store, is hashed again, and is renamed into place, so an interrupted
    copy never leaves a truncated file under a hash. The kept file is made read-only.
    """
    src = Path(src)
    digest = sha or file_sha256(src)
    dest = stored_path(root, digest)
    if dest is None:
        raise ValueError(f"not a SHA-256: {digest!r}")
    if kept(root, digest) is not None and dest.stat().st_size == src.stat().st_size:
        return digest
    dest = guard(root, dest, within=store_dir(root), follow=False)   # a link in pdfs/ is replaced, not followed
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".incoming-", suffix=".pdf", dir=dest.parent)
    try:
        with os.fdopen(fd, "wb") as out, open(src, "rb") as fh:
            shutil.copyfileobj(fh, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
        if file_sha256(Path(tmp)) != digest:
            raise InputError(f"{src} changed while it was copied into {dest.parent}",
                             fix="add the file again once nothing is writing to it")
        os.chmod(tmp, 0o444)
        if dest.is_symlink():
            dest.unlink()
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return digest


def pdf_of(ws, meta) -> Path | None:
    """The PDF of a paper: the workspace's kept copy `pdfs/<sha256>.pdf`, or None.

    Only `pdfs/` is trusted. The note's `files:` are where the PDFs came from (provenance), and a note may have
    arrived with a shared vault: `files: [/home/you/private.pdf]` or `../../x.pdf` must never make `open`, `show`
    or the survey's parse stage read a file the user did not add. An import from a file the user chose (a PDF,
    a .bib whose `file` field names PDFs, a Better BibTeX export, Zotero) reads the files it names and copies the
    PDF into `pdfs/` at that moment; afterwards only that copy is read. `pdf_refusal` says why there is none."""
    return kept(ws.root, getattr(meta, "pdf", None))


def pdf_refusal(ws, meta) -> str | None:
    """One line saying why a paper has no PDF to read although its note names files (None when it has one, or
    names none): the note's `files:` lie outside the workspace's `pdfs/` and are never read from the note."""
    if pdf_of(ws, meta) is not None or not getattr(meta, "files", None):
        return None
    return (f"{meta.id}: its note names {str(meta.files[0])!r}, outside {store_dir(ws.root)}; a note's files are not read "
            f"(add the PDF with `papervault add FILE.pdf` to keep a copy)")


def require_pdf(ws, meta) -> Path:
    """`pdf_of`, or a NotFoundError that says how to bring the PDF back (a note's `files:` are never read)."""
    p = pdf_of(ws, meta)
    if p is not None:
        return p
    if getattr(meta, "pdf", None) or meta.sha256:
        name = f"{meta.pdf}.pdf" if meta.pdf else "its PDF"
        raise NotFoundError(f"the PDF of {meta.id} ({name}) is not in {store_dir(ws.root)}; a note's files are "
                            f"not read (its original is gone or changed, or was never added here)",
                            fix=f"add the PDF again: papervault add FILE.pdf (its bytes are matched to {meta.id})")
    refused = pdf_refusal(ws, meta)
    if refused:
        raise NotFoundError(refused)
    raise NotFoundError(f"{meta.id} has no PDF (metadata only)", fix="add its PDF: papervault add FILE.pdf")


def backfill(ws, vault, ids: list[str] | None = None, *, before=None) -> list[str]:
    """Keep the PDF of every paper (or of `ids`) that has none stored yet but whose original still exists with
    the bytes the note records (`sha256`); the notes gain `pdf:` (not committed here). `before(id)` is called
    before a note changes (the add journal). Returns the ids done."""
    done = []
    metas = vault.iter_meta() if ids is None else _read_metas(vault, ids)
    for meta in metas:
        if kept(ws.root, meta.pdf) is not None or not meta.files or not meta.sha256:
            continue
        files = [Path(f) for f in meta.files]
        try:
            if not all(f.is_file() for f in files):
                continue
            hashes = [file_sha256(f) for f in files]
            # the files still hold the bytes the note records (main text + supplements hash as one group)
            if group_sha256(hashes) != meta.sha256:
                continue
            sha = keep(ws.root, files[0], hashes[0])
        except OSError:
            continue
        if before is not None:
            before(meta.id)
        vault.update_meta(meta.id, pdf=sha)
        done.append(meta.id)
    return done


def _read_metas(vault, ids):
    """The notes of `ids` only (not every note in the vault), skipping one that cannot be read."""
    for pid in ids:
        try:
            yield vault.read_meta(pid)
        except Exception:  # noqa: BLE001 - as iter_meta: an unreadable note is not a paper here
            continue


def locate(ws, paper_id: str, page: int | None = None) -> dict:
    """Where a paper's PDF is and the `file://` URL that opens it at `page` (a PDF page, 1-based, as in the
    full text's `#page-N` anchors): `{"id", "pdf", "url", "page", "kept"}`. Raises NotFoundError / InputError."""
    check_id(paper_id)
    meta = ws.vault.read_meta(paper_id)
    path = require_pdf(ws, meta)
    if page is not None and (page < 1 or (meta.pages and page > meta.pages)):
        raise InputError(f"page {page} is not a page of {paper_id}" + (f" (1-{meta.pages})" if meta.pages else ""),
                         fix="give a page between 1 and the paper's page count")
    url = path.resolve().as_uri() + (f"#page={page}" if page else "")
    return {"id": paper_id, "pdf": str(path), "url": url, "page": page,
            "kept": kept(ws.root, meta.pdf) is not None}
