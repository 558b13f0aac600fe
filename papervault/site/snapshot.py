"""What the site shows, read from the vault in one pass (`read_vault` -> `VaultSnapshot`): the papers with their
notes, full texts, figures and PDFs, the surveys, the code notes and the person's own pages and files; and which
vault files may be published as they are (`publishable`)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from papervault.errors import UnsafePathError
from papervault.models import PaperMeta
from papervault.pdfstore import SHA256
from papervault.site.svg import FIGURE_PATH
from papervault.vault import frontmatter
from papervault.vault.paths import safe_vault_path
from papervault.vault import paper as paper_md
from papervault.vault.store import ID_PATTERN

PAPER_LINK = re.compile(r"papers/([A-Za-z0-9][A-Za-z0-9_.-]*)/(?:note|paper)\.md")
H1 = re.compile(r"\A\s*#\s+[^\n]*\n")
NOTE_HEAD = re.compile(r"\A(?:\s*\*\*(?:Authors|Published):\*\*[^\n]*\n)+")
SKIP_DIRS = {".git", ".obsidian", ".trash", "__pycache__", "node_modules"}
# Files a paper folder may hold that are not pages of the site.
PAPER_SKIP = {"note.new.md", ".gitkeep"}

# The only vault files published as they are (Markdown is rendered instead). A browser runs the script of an
# `.html`, `.svg` or `.xhtml` file opened from the site, so those and every other type stay out. Images are
# shown with `<img>`; a PDF opens in the browser's viewer. Text data (a survey's BibTeX or CSL-JSON) is
# published only when it does not start with markup: a file of unknown type opened from disk is sniffed,
# and one that begins with `<html>` would be shown as a page.
IMAGE_TYPES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
PUBLISHED_TYPES = IMAGE_TYPES | {".pdf"}
TEXT_TYPES = frozenset({".bib", ".json", ".csv", ".txt", ".ris"})
# The one exception to "no SVG": a survey's figures (surveys/<slug>/figures/*.svg), which are never published
# as they are but rebuilt from an allow-list of SVG elements and attributes (site/svg.py).


def publishable(path: Path) -> bool:
    """Whether a vault file (not Markdown) is published: its type is on the list above."""
    suffix = path.suffix.lower()
    if suffix in PUBLISHED_TYPES:
        return True
    if suffix in TEXT_TYPES:
        try:
            with path.open("rb") as f:
                head = f.read(1024)
        except OSError:
            return False
        return not head.lstrip(b"\xef\xbb\xbf \t\r\n\f").startswith(b"<")
    return False


def survey_figure(rel: str) -> bool:
    """Whether a vault file (its path from the vault's root) is a survey's figure,
    `surveys/<slug>/figures/<name>.svg`: published sanitised, never as it is."""
    return bool(FIGURE_PATH.fullmatch(rel))


@dataclass
class FigureInfo:
    filename: str
    caption: str
    page: int | None = None


@dataclass
class PaperEntry:
    meta: PaperMeta
    body: str
    fulltext: str = ""
    figures: list[FigureInfo] = field(default_factory=list)
    figure_files: list[str] = field(default_factory=list)   # every file in figures/ (static assets)
    other_files: list[str] = field(default_factory=list)    # other files in the paper folder (kept as assets)
    pdf: Path | None = None      # the PDF the workspace keeps (pdfs/<sha256>.pdf), published as paper.pdf
    reader_notes: str = ""                                   # reader-notes.md: the reader's highlights and notes


@dataclass
class SurveyEntry:
    slug: str
    title: str
    text: str
    pages: dict[str, str] = field(default_factory=dict)   # other Markdown files of the survey folder
    files: list[str] = field(default_factory=list)         # non-Markdown files (references.bib, CSL-JSON)
    figures: dict[str, str] = field(default_factory=dict)  # figures/<name>.svg -> its text (sanitised when staged)


@dataclass
class VaultSnapshot:
    """What the site shows, read from the vault in one pass."""

    root: Path
    papers: dict[str, PaperEntry] = field(default_factory=dict)
    surveys: list[SurveyEntry] = field(default_factory=list)
    code: dict[str, str] = field(default_factory=dict)         # "code/<repo>.md" -> text
    user_pages: dict[str, str] = field(default_factory=dict)   # other Markdown in the vault -> text
    user_files: list[str] = field(default_factory=list)        # other files (images ...) the pages may link
    problems: list[str] = field(default_factory=list)


# --- reading ---------------------------------------------------------------------------------------

def read_vault(vault_root: Path, *, include_pdfs: bool = True, pdf_store: Path | None = None) -> VaultSnapshot:
    """Read notes, full texts, surveys, code notes and the user's own pages; a broken note is reported, not fatal.
    `pdf_store` is the workspace's `pdfs/` folder: a note's `pdf:` hash names its file there (never a path).

    Every file goes through `safe_vault_path`: one that is (or lies under) a link out of the vault is neither
    read nor published, and is reported as a problem (a warning of `site build`)."""
    snap = VaultSnapshot(root=vault_root)

    def inside(path: Path) -> bool:
        try:
            safe_vault_path(vault_root, path)
        except UnsafePathError as exc:
            snap.problems.append(str(exc))
            return False
        if path.suffix != ".md" and path.is_file() and not publishable(path) \
                and not survey_figure(path.relative_to(vault_root).as_posix()):
            snap.problems.append(f"{path.relative_to(vault_root).as_posix()}: not published (a {path.suffix or 'file'}"
                                 " file is not among the types the site publishes; see docs/site.md)")
            return False
        return True

    papers_dir = vault_root / "papers"
    if papers_dir.is_dir() and inside(papers_dir):
        for pdir in sorted(papers_dir.iterdir()):
            if not pdir.is_dir() or not ID_PATTERN.match(pdir.name) or not (pdir / "note.md").is_file():
                continue
            try:
                entry = _read_paper(pdir, include_pdfs=include_pdfs, inside=inside, pdf_store=pdf_store)
            except UnsafePathError as exc:
                snap.problems.append(str(exc))
                continue
            except (ValueError, OSError, UnicodeDecodeError) as exc:
                snap.problems.append(f"papers/{pdir.name}/note.md: {exc}")
                continue
            snap.papers[entry.meta.id] = entry
    surveys_dir = vault_root / "surveys"
    if surveys_dir.is_dir() and inside(surveys_dir):
        for sdir in sorted(surveys_dir.iterdir()):
            if sdir.is_dir() and (sdir / "survey.md").is_file() and inside(sdir / "survey.md"):
                snap.surveys.append(_read_survey(sdir, inside))
    code_dir = vault_root / "code"
    if code_dir.is_dir() and inside(code_dir):
        for f in sorted(code_dir.rglob("*.md")):
            if inside(f):
                snap.code[f.relative_to(vault_root).as_posix()] = f.read_text(encoding="utf-8", errors="replace")
    for dirpath, dirnames, filenames in os.walk(vault_root):
        rel_dir = Path(dirpath).relative_to(vault_root)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        if rel_dir == Path("."):
            dirnames[:] = [d for d in dirnames if d not in ("papers", "surveys", "code")]
        for name in sorted(filenames):
            if name.startswith(".") or not inside(Path(dirpath) / name):
                continue
            rel = (rel_dir / name).as_posix()
            if name.endswith(".md"):
                snap.user_pages[rel] = (Path(dirpath) / name).read_text(encoding="utf-8", errors="replace")
            else:
                snap.user_files.append(rel)
    return snap


def _read_paper(pdir: Path, *, include_pdfs: bool, inside, pdf_store: Path | None = None) -> PaperEntry:
    root = pdir.parent.parent
    data, body = frontmatter.split(safe_vault_path(root, pdir / "note.md").read_text(encoding="utf-8"))
    data.setdefault("id", pdir.name)
    meta = PaperMeta.model_validate(data)
    meta.id = pdir.name     # the folder is the id the links use
    full = pdir / "paper.md"
    fulltext = full.read_text(encoding="utf-8", errors="replace") if full.is_file() and inside(full) else ""
    entry = PaperEntry(meta=meta, body=body, fulltext=fulltext)
    reader = pdir / "reader-notes.md"
    if reader.is_file() and inside(reader):
        entry.reader_notes = reader.read_text(encoding="utf-8", errors="replace")
    fig_dir = pdir / "figures"
    if fig_dir.is_dir():
        entry.figure_files = sorted(f.name for f in fig_dir.iterdir()
                                    if f.is_file() and not f.name.startswith(".") and inside(f))
    entry.figures = _figures(fulltext, entry.figure_files)
    for f in sorted(pdir.iterdir()):
        if f.is_file() and f.name not in PAPER_SKIP and not f.name.startswith(".") and f.suffix != ".md" \
                and inside(f):
            if f.suffix.lower() == ".pdf" and not include_pdfs:
                continue
            entry.other_files.append(f.name)
    if include_pdfs and pdf_store is not None:
        entry.pdf = stored_pdf(pdf_store, meta.pdf)
    return entry


def stored_pdf(store: Path, sha: Any) -> Path | None:
    """The kept PDF named by a note's `pdf:` value: only a SHA-256 names a file, and only a regular file directly
    in the store counts (a link in the store leading elsewhere is not followed)."""
    if not isinstance(sha, str) or not SHA256.match(sha):
        return None
    p = store / f"{sha}.pdf"
    try:
        if p.is_symlink() or not p.is_file() or p.resolve().parent != store.resolve():
            return None
    except OSError:
        return None
    return p


def _figures(fulltext: str, files: list[str]) -> list[FigureInfo]:
    """Figures in reading order with the caption and page the full text gives them; unreferenced files last."""
    out: list[FigureInfo] = []
    if not files:
        return out       # no file in figures/: nothing to find in the full text (which need not be parsed)
    seen: set[str] = set()
    existing = set(files)
    for f in paper_md.read(fulltext).figures:
        if not f.src.startswith("figures/"):
            continue
        name = f.src[len("figures/"):]
        if name in seen or name not in existing:
            continue
        seen.add(name)
        out.append(FigureInfo(filename=name, caption=f.label or name, page=f.page))
    for name in files:
        if name not in seen and Path(name).suffix.lower() in IMAGE_TYPES:
            out.append(FigureInfo(filename=name, caption=name))
    return out


def _read_survey(sdir: Path, inside) -> SurveyEntry:
    text = (sdir / "survey.md").read_text(encoding="utf-8", errors="replace")
    data, body = frontmatter.split(text) if text.startswith("---") else ({}, text)
    m = re.search(r"^#\s+(.+)$", body, re.M)
    title = str(data.get("title") or (m.group(1).strip() if m else sdir.name))
    entry = SurveyEntry(slug=sdir.name, title=title, text=body)
    for f in sorted(sdir.rglob("*")):
        if not f.is_file() or f.name.startswith(".") or f.name == "survey.md" or not inside(f):
            continue
        rel = f.relative_to(sdir).as_posix()
        if f.suffix == ".md":
            entry.pages[rel] = f.read_text(encoding="utf-8", errors="replace")
        elif f.suffix.lower() == ".svg":
            entry.figures[rel] = f.read_text(encoding="utf-8", errors="replace")
        else:
            entry.files.append(rel)
    return entry


