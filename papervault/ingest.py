"""`papervault add`: sources -> records -> dedup -> parse -> paper.md, figures, note -> one vault commit.

A batch never stops for one bad input: every problem becomes a one-line entry in the report, and nothing
half-written is left in the vault (files are written atomically, figures before the text that links them,
and the commit comes after all files are complete).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from pathlib import Path
from typing import Callable, Iterable

import git

from papervault.errors import ParseError, PapervaultError, WorkspaceError
from papervault.hashing import file_sha256, group_sha256
from papervault.identity import refresh_head
from papervault.ingest_records import (IDENTITY_FIELDS, AddReport, Problem, _merge_parsed,  # noqa: F401
                                       _meta_from, _page_labels, _provenance, _records, _union, key_confident)
from papervault.ids import make_key
from papervault.models import PaperMeta, ParsedPaper, SourceRecord
from papervault.pdfstore import backfill, keep, kept
from papervault.sources.catalog import Catalog
from papervault.sources.limits import cap_record
from papervault.timing import phase
from papervault.vault.frontmatter import body_hash
from papervault.vault.journal import Journal, Recovery
from papervault.vault.store import Vault, sync_files
from papervault.wording import plural
from papervault.workspace import Workspace

BATCH = 64  # records parsed and written together; bounds memory on huge imports
FIRST_COMMIT = 2       # with an `on_commit` step: records in the first commit (see Ingest)
COMMIT_SECONDS = 20.0  # with an `on_commit` step: at most this long between two commits
# Records between two vault commits of a big import (`[sources] commit_every`, default 4096). A commit makes a
# killed import's work permanent (the rerun finds those papers and goes on), but each one writes a new tree
# object listing every folder of papers/, so commits come in thousands of records, not per batch.

Progress = Callable[[str, int, int | None], None]
# How a batch's PDFs are parsed: (paths, parse settings, cache dir) -> {path: ParsedPaper | ParseError}.
# In-process it is `parse_many` (a local process pool); the ingest flow maps it over a task runner instead.
ParseFn = Callable[[list[str], object, Path | None], dict]
# How a batch's analyses run elsewhere: (jobs of `papervault.note_analysis.analysis_job`, backend name) ->
# results of `run_job`, in order. In-process the analyser runs here (`analyse_papers`); the ingest flow maps
# the jobs over its task runner, and this process only writes the notes.
AnalyseFn = Callable[[list[dict], str], list[dict]]


class Ingest:
    """One `add` run over a workspace: holds the catalog (dedup index, ids, file hashes) and the parse settings.

    What it knows of the vault's papers is looked up in the catalog on disk (`papervault.sources.catalog`),
    not held in memory, and its writes are not synced one by one: the file system is synced once before each
    commit, a commit comes every `[sources] commit_every` records, and the write-ahead journal makes a kill at any point
    roll back to the last commit. So memory stays flat and the disk is not waited on per paper.
    """

    def __init__(self, ws: Workspace, *, backend: str = "extractive", progress: Progress | None = None,
                 reanalyse: bool = False, parse_fn: ParseFn | None = None, analyse_fn: AnalyseFn | None = None,
                 first_pass: bool = False, on_commit: Callable[[list[str]], None] | None = None):

        self.ws = ws
        # Told the papers of each commit (`on_commit(ids)`, the first pass's index step). Once PDFs come, the
        # first commit is made at once (after FIRST_COMMIT records when they open the run), then after four times
        # as many records each time, and at most COMMIT_SECONDS apart: the first papers of a large folder are
        # searchable within seconds and the commits stay few. An import of records alone (a .bib, CSL-JSON)
        # keeps its commits every `[sources] commit_every` records and its one index step at the end.
        self.on_commit = on_commit
        self._early = "probe" if on_commit else None      # probe -> on (PDFs came) | off (records alone, so far)
        self._commit_at = ws.settings.sources.commit_every
        self._committed_at = time.monotonic()
        # PDFs read by their first pass only (papervault.parse.firstpass); the arrival worker parses them fully
        self.first_pass = first_pass
        self.vault = Vault(ws.vault.root, fsync=False)
        self.progress = progress or (lambda *a: None)
        self.make_key = make_key
        self.catalog = Catalog.open(ws)
        self.dedup = self.catalog.dedup
        self.taken = self.dedup.ids
        self.by_hash = self.catalog.hashes
        self.what = "add"
        self._since_commit = 0
        self._part = {"added": 0, "merged": 0, "pdfs_kept": 0, "reanalysed": 0}   # the report at the last commit
        self.backend_name = backend
        self.reanalyse = reanalyse
        self.parse_fn = parse_fn
        self.analyse_fn = analyse_fn
        self._backend = None
        self.report = AddReport()
        self.touched: list[Path] = []
        self.code_paths: list[Path] = []     # code notes rewritten because a new paper links to their repository
        self.pending: list[tuple[str, str]] = []   # (paper id, source) written in this batch, to analyse

        self.journal = Journal(ws.state_dir / "journal" / "add", self.vault, fsync=False)

    @property
    def backend(self):
        if self._backend is None:
            from papervault.agents import get_backend  # deferred: a model backend loads only when papers are analysed

            self._backend = get_backend(self.backend_name, self.ws.settings, state_dir=self.ws.state_dir)
        return self._backend

    # --- stages ----------------------------------------------------------------------------------

    def parse(self, records: list[SourceRecord]) -> dict[str, ParsedPaper | ParseError]:
        from papervault.parse.batch import parse_many  # deferred: PyMuPDF loads only when PDFs are parsed

        paths = [r.pdfs[0] for r in records if r.pdfs]
        if not paths:
            return {}
        s = self.ws.settings.parse
        if self.first_pass:
            from papervault.parse.firstpass import first_pass_many  # deferred: as parse_many above

            with phase("add: first pass (text layer)"):
                return first_pass_many(paths, s, self.ws.parse_cache_dir)
        with phase("add: parse PDFs (parser processes)"):
            if self.parse_fn is not None:
                return self.parse_fn(paths, s, self.ws.parse_cache_dir)
            return parse_many(paths, s, cache_dir=self.ws.parse_cache_dir, workers=s.workers)

    def run(self, records: Iterable[SourceRecord | Problem]) -> AddReport:
        """Write `records` a window of BATCH at a time, each window in the same order whatever the commits (the
        user's keyed records first, then the cheapest PDFs: `_window`); with an `on_commit` step a window is
        written in the parts the early commits ask for, so the vault is the one a run without them writes."""
        done = 0
        it = iter(records)
        while True:
            window = self._window(list(itertools.islice(it, BATCH)))
            if not window:
                break
            while window:
                size = FIRST_COMMIT if self._early == "probe" else max(1, self._commit_at - self._since_commit)
                batch, window = window[:size], window[size:]
                good = [item for item in batch if not isinstance(item, Problem)]
                self.report.problems.extend(item for item in batch if isinstance(item, Problem))
                self._run_batch(good)
                done += len(batch)
                self._since_commit += len(batch)
                if self._early in ("probe", "off"):
                    if any(r.pdfs for r in good):
                        self._early, self._commit_at = "on", self._since_commit   # the first PDFs: commit them now
                    elif self._early == "probe":
                        self._early = "off"
                if self._since_commit >= self._commit_at or (
                        self._early == "on" and time.monotonic() - self._committed_at > COMMIT_SECONDS):
                    self.commit(final=False)
                self.progress("add", done, None)
        return self.report

    @staticmethod
    def _window(items: list) -> list:
        """A window of records in the order they are written: problems as they came, then records with the
        user's own citation key (a bare PDF and its BibTeX entry arriving together make one paper under the
        user's key, the PDF merging into it), then the rest, cheapest PDF first (records without a PDF cost
        nothing), so the first papers of an add are written, committed and searchable first."""
        if not any(getattr(r, "pdfs", None) for r in items):
            return items
        from papervault.parse.batch import estimated_cost  # deferred: PyMuPDF, only when PDFs come

        def order(item):
            if isinstance(item, Problem):
                return (0, 0)
            return (1 if item.key is not None else 2, estimated_cost(item.pdfs[0]) if item.pdfs else 0)
        return sorted(items, key=order)

    def _run_batch(self, records: list[SourceRecord]) -> None:
        # Unchanged files (same content already in the vault) cost nothing.
        fresh: list[tuple[SourceRecord, str | None]] = []
        # Records with the user's own citation key first (see `_window`; a caller's own batch may be in any order)
        for rec in sorted(records, key=lambda r: r.key is None):
            rec = self._complete(rec)
            sha = None
            if rec.pdfs:
                try:
                    sha = group_sha256([file_sha256(Path(p)) for p in rec.pdfs])
                except OSError as exc:
                    self.report.problems.append(Problem(rec.source, f"cannot read: {exc.strerror or exc}"))
                    continue
                if sha in self.by_hash and not self.dedup.keeps_apart(self.by_hash[sha], rec):
                    pid = self.by_hash[sha]
                    meta = self.vault.read_meta(pid)
                    if len(rec.pdfs) == 1 and kept(self.ws.root, meta.pdf) is None:
                        # the same bytes again, from wherever they are now: the store keeps them this time
                        try:
                            stored = keep(self.ws.root, rec.pdfs[0], sha)
                        except (OSError, PapervaultError) as exc:
                            self.report.warnings.append(Problem(rec.source, f"PDF not kept: {exc}"))
                        else:
                            self.journal.touch(pid)
                            self.vault.update_meta(pid, pdf=stored)
                            self.report.pdfs_kept.append(pid)
                    if rec.source not in meta.sources:
                        self._merge_into(pid, rec, None, None, reason="same file")
                    else:
                        self.report.unchanged.append(pid)
                        if self.reanalyse:      # the same file: only its note is made again
                            self.journal.touch(pid)
                            self.pending.append((pid, rec.source))
                    continue
            fresh.append((rec, sha))
        parsed = self.parse([r for r, _ in fresh])
        for rec, sha in fresh:
            result = parsed.get(rec.pdfs[0]) if rec.pdfs else None
            if isinstance(result, PapervaultError):
                reason = result.reason if isinstance(result, ParseError) else str(result)
                if rec.origin == "pdf" or not rec.title:
                    self.report.problems.append(Problem(rec.source, reason))
                    continue
                # An entry (BibTeX, CSL, Zotero) whose PDF failed or was abandoned keeps its metadata as a
                # metadata-only paper; with no PDF hash on it, the next `add` of the same file parses it again.
                self.report.problems.append(Problem(rec.source, f"its PDF was not imported: {reason}; the entry is "
                                                                "a metadata-only paper, and adding the file again "
                                                                "retries the PDF"))
                result, sha = None, None
            try:
                with phase("add: write papers into the vault"):
                    self._write(rec, result, sha)
            except PapervaultError as exc:
                self.report.problems.append(Problem(rec.source, str(exc)))
            except Exception as exc:  # one bad paper never stops the batch; the report says what broke
                self.report.problems.append(Problem(rec.source, f"internal error: {type(exc).__name__}: {exc}"))
        with phase("add: notes (analysis)"):
            self.analyse_pending()

    def _complete(self, rec: SourceRecord) -> SourceRecord:
        """Note the record's warnings and search reason; download its PDF (arXiv, DOI link, URL) unless the
        paper it already is has one. A failed download leaves a metadata-only paper and a warning.
        Every field is cut to its cap first (`papervault.sources.limits`), with a warning."""
        rec = cap_record(rec)
        for w in rec.warnings:
            self.report.warnings.append(Problem(rec.source, w))
        if rec.reason:
            self.report.chosen.append({"source": rec.source, "title": rec.title, "reason": rec.reason})
        if rec.pdfs or not (rec.pdf_url or (rec.arxiv and rec.origin == "arxiv")):
            return rec
        match = self.dedup.find(rec)
        if match and self.vault.has_paper(match.paper_id) and self.vault.read_meta(match.paper_id).sha256:
            return rec
        # deferred: the web client (httpx) loads only when a PDF is fetched
        from papervault.sources.resolve import fetch_pdf

        try:
            return fetch_pdf(rec, self.ws.settings, self.ws.cache_dir / "downloads")
        except PapervaultError as exc:
            self.report.warnings.append(Problem(rec.source, f"PDF not downloaded, imported as metadata only: {exc}"))
            return rec

    def _write(self, rec: SourceRecord, parsed: ParsedPaper | None, sha: str | None) -> None:
        prov = _provenance(rec, parsed)
        seen = len(rec.warnings)
        rec = cap_record(_merge_parsed(rec, parsed))   # what the PDF says is capped like what a source says
        for w in rec.warnings[seen:]:
            self.report.warnings.append(Problem(rec.source, w))
        match = self.dedup.find(rec)
        if match:
            self._merge_into(match.paper_id, rec, parsed, sha, reason=match.describe())
            return
        if not rec.title and parsed is None:
            self.report.problems.append(Problem(rec.source, "no title and no PDF: nothing to make a paper from"))
            return
        confident = key_confident(prov, parsed)
        key = self.dedup.new_id(rec, confident)
        if key in self.taken:
            key = self.make_key(rec.authors, rec.year, rec.title or Path(rec.source).stem, self.taken, confident)
        self.catalog.store.add_id(key)
        meta = _meta_from(rec, key)
        meta.provenance = prov
        self._store(meta, rec, parsed, sha)
        self.dedup.add(meta, key)
        self.report.added.append(key)

    def _merge_into(self, pid: str, rec: SourceRecord, parsed: ParsedPaper | None, sha: str | None,
                    reason: str = "same file") -> None:
        self.journal.touch(pid)
        meta, _ = self.vault.read_note(pid)
        original = meta.model_copy(deep=True)
        before = list(meta.sources)
        meta.sources = _union(meta.sources, [rec.source])
        meta.tags = _union(meta.tags, rec.tags)
        meta.collections = _union(meta.collections, rec.collections)
        prov = _provenance(rec, parsed)
        for f in ("doi", "arxiv", "url", "venue", "year", "zotero_key", "abstract"):
            if not getattr(meta, f) and getattr(rec, f):
                setattr(meta, f, getattr(rec, f))
                if f in prov:
                    meta.provenance[f] = prov[f]
        if not meta.authors and rec.authors:
            meta.authors = rec.authors
            if "authors" in prov:
                meta.provenance["authors"] = prov["authors"]
        # The bibliographic fields a source gives are kept; one the note already has is not overwritten.
        meta.bib = {**rec.bib, **meta.bib}
        gained_pdf = parsed is not None and not meta.sha256
        if gained_pdf:
            self._store(meta, rec, parsed, sha)
        else:
            fields = dict(sources=meta.sources, tags=meta.tags, collections=meta.collections, doi=meta.doi,
                          arxiv=meta.arxiv, url=meta.url, venue=meta.venue, year=meta.year,
                          zotero_key=meta.zotero_key, abstract=meta.abstract, authors=meta.authors, bib=meta.bib,
                          provenance=meta.provenance)
            notes_changed = bool(rec.reader_notes) and self._write_reader_notes(pid, rec)
            if all(getattr(original, k) == v for k, v in fields.items()) and not notes_changed:
                # The same record again (an unchanged .bib added twice): nothing to write, nothing to commit
                # (`updated:` alone would make a commit that changes nothing).
                self.dedup.add(rec, pid)
                self.report.unchanged.append(pid)
                return
            self.vault.update_meta(pid, **fields)
            refresh_head(self.vault, pid)  # the head says the merged authors, venue, year (unless hand-edited)
        self.dedup.add(rec, pid)   # the paper now also carries this record's key and identifiers
        self.touched.append(self.vault.paper_dir(pid))
        self.report.merged.append({"id": pid, "source": rec.source, "origin": rec.origin, "reason": reason,
                                   "gained_pdf": gained_pdf, "new_source": rec.source not in before})

    def _write_reader_notes(self, pid: str, rec: SourceRecord) -> bool:
        """Append the record's reader notes that `reader-notes.md` does not hold yet; True when it changed."""
        path = self.vault.guard(self.vault.paper_dir(pid) / "reader-notes.md")    # never read or written through a link out
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        new = "\n\n".join(n.strip() for n in rec.reader_notes if n.strip() and n.strip() not in old)
        if new:
            self.touched.append(self.vault.paper_dir(pid))
            self.vault.write(path, (old.rstrip() + "\n\n" + new).strip() + "\n")
        return bool(new)

    def _store(self, meta: PaperMeta, rec: SourceRecord, parsed: ParsedPaper | None, sha: str | None) -> None:
        """Copy nothing, write the full text and figures, then the note (analysed by the backend)."""

        pid = meta.id
        self.journal.touch(pid)
        pdir = self.vault.guard(self.vault.paper_dir(pid))    # the write guard, before anything is written
        pdir.mkdir(parents=True, exist_ok=True)
        self.touched.append(pdir)
        if rec.reader_notes:
            self._write_reader_notes(pid, rec)
        if parsed is not None:
            self.vault.write_fulltext(pid, parsed)
            meta.sha256 = sha or parsed.sha256
            meta.pages = parsed.pages
            meta.parser = parsed.parser
            meta.ocr_pages = list(parsed.ocr_pages)
            meta.repaired_pages = list(parsed.repaired_pages)
            meta.page_labels = _page_labels(parsed, meta.bib)
            for f, src in parsed.provenance.items():
                if getattr(meta, f, None) == getattr(parsed, f, None):
                    meta.provenance.setdefault(f, src)
            meta.files = list(rec.pdfs)
            if rec.pdfs:
                # The workspace keeps its own copy (papervault.pdfstore), so the original may move or vanish.
                try:
                    meta.pdf = keep(self.ws.root, rec.pdfs[0], sha if len(rec.pdfs) == 1 else None)
                except (OSError, PapervaultError) as exc:
                    self.report.warnings.append(Problem(rec.source, f"PDF not kept in {self.ws.pdf_dir}: {exc}"))
            meta.status = "parsed"
            if parsed.keywords and not meta.tags:
                meta.tags = []
            self.by_hash[meta.sha256] = pid
        # The note first exists with its metadata, so the analyser reads one consistent view of the paper.
        if not self.vault.has_paper(pid):
            link = ("\n**Your highlights and notes:** [reader-notes.md](reader-notes.md)\n"
                    if (pdir / "reader-notes.md").is_file() else "")
            self.vault.write_note(meta, f"# {meta.title}\n{link}")
        else:
            _, body = self.vault.read_note(pid)
            meta.generated_hash = body_hash(body) if not self.vault.is_edited(pid) else self.vault.read_meta(pid).generated_hash
            self.vault.update_meta(pid, **{k: getattr(meta, k) for k in (
                "sha256", "pdf", "pages", "parser", "ocr_pages", "files", "status", "sources", "title", "authors", "year",
                "doi", "arxiv", "abstract", "venue", "repaired_pages", "page_labels", "bib", "provenance")})
        self.catalog.note_paper(meta)
        if parsed is None and not self.vault.fulltext_path(pid).is_file():
            return  # a metadata-only paper (BibTeX, CSL, Zotero without PDF): analysed once its PDF arrives
        if parsed is not None and parsed.parser.startswith("first-pass/"):
            return  # analysed once, from its full parse (papervault.app.arrival), never from the first pass
        self.pending.append((pid, rec.source))      # analysed together at the end of the batch

    def analyse_pending(self) -> None:
        """Analyse the batch's new and changed papers with the concurrent analyser (`[agents] concurrency` at
        once); a paper whose analysis fails is reported as a problem and not counted as added."""
        if not self.pending:
            return
        # deferred: the analysis stage and its backends load only when papers are analysed
        from papervault.note_analysis import analyse_elsewhere, analyse_papers

        pending, self.pending = self.pending, []
        ids = [pid for pid, _ in pending]
        if self.analyse_fn is not None:
            outcomes = analyse_elsewhere(self.vault, ids, self.backend,
                                         lambda jobs: self.analyse_fn(jobs, self.backend_name), force=self.reanalyse,
                                         template_dir=self.ws.root / "templates")
        else:
            outcomes = analyse_papers(self.vault, ids, self.backend, force=self.reanalyse,
                                      template_dir=self.ws.root / "templates")
        for (pid, source), o in zip(pending, outcomes):
            if o.status == "kept-edit":      # say so: the hand-edited note.md stays, the analysis went beside it
                self.report.warnings.append(Problem(source, f"{pid}: {o.message}"))
            if self.reanalyse and o.status in ("analysed", "kept-edit") and pid in self.report.unchanged \
                    and pid not in self.report.added and pid not in self.report.reanalysed:
                self.report.reanalysed.append(pid)
                self.touched.append(self.vault.paper_dir(pid))
            if o.status != "failed":
                continue
            self.report.problems.append(Problem(source, o.message))
            if pid in self.report.added:
                self.report.added.remove(pid)

    def keep_pdfs(self) -> None:
        """Papers added before the workspace kept PDFs get their copy now, when the original is still there."""

        # Only papers with files and a hash can gain a PDF: the catalog names them, no note is read for the rest.
        ids = [pid for pid, pdf in self.catalog.pdf_candidates() if kept(self.ws.root, pdf) is None]
        if not ids:
            return
        try:
            done = backfill(self.ws, self.vault, ids, before=self.journal.touch)
            self.report.pdfs_kept += done
            for pid in done:
                self.catalog.note_paper(self.vault.read_meta(pid))
        except OSError as exc:
            self.report.warnings.append(Problem("pdfs", f"earlier papers' PDFs not kept: {exc}"))

    def link_code(self) -> None:
        """Link the papers of this run to repositories already indexed whose URLs their text names
        (see `papervault.add_repo.link_new_papers`); the code notes it rewrites join this run's commit."""
        from papervault.add_repo import link_new_papers  # deferred: code linking loads tree-sitter and pyarrow

        ids = list(dict.fromkeys([*self.report.added, *(m["id"] for m in self.report.merged)]))
        try:
            links, paths = link_new_papers(self.ws, ids)
        except Exception as exc:  # noqa: BLE001 - the papers are imported; only their code links are missing
            self.report.warnings.append(Problem("code links", f"papers not linked to repositories: "
                                                              f"{type(exc).__name__}: {exc}"))
            return
        self.report.code_links = [{k: l[k] for k in ("paper_id", "repo", "how", "evidence")} for l in links]
        self.code_paths = paths

    def commit(self, what: str | None = None, *, final: bool = True) -> str | None:
        """Commit what the run wrote since its last commit. The final commit first keeps the PDFs of earlier
        papers (`keep_pdfs`) and links the run's papers to indexed code repositories (`link_code`)."""
        r = self.report
        what = what or self.what
        if final:
            self.keep_pdfs()
        part = {k: getattr(r, k)[self._part[k]:] for k in self._part}
        if final and (r.added or r.merged):
            self.link_code()
        if not (any(part.values()) or (final and self.code_paths)):
            self.journal.clear()
            return None
        parts = []
        added = part["added"]
        if added:
            shown = ", ".join(added[:5]) + (f" and {len(added) - 5} more" if len(added) > 5 else "")
            parts.append(f"{len(added)} new ({shown})")
        full = [m["id"] for m in part["merged"] if m.get("reason") == "full parse"]
        if full:        # the arrival worker's full parses of papers read by their first pass
            more = f" and {len(full) - 5} more" if len(full) > 5 else ""
            parts.append(f"{len(full)} parsed fully ({', '.join(full[:5])}{more})")
        if len(part["merged"]) > len(full):
            parts.append(f"{len(part['merged']) - len(full)} merged")
        if part["pdfs_kept"]:
            parts.append(f"{plural(len(part['pdfs_kept']), 'PDF')} kept in the workspace")
        if part["reanalysed"]:
            parts.append(f"{len(part['reanalysed'])} re-analysed ({', '.join(part['reanalysed'][:5])})")
        if final and r.code_links:
            pairs = [f"{l['paper_id']} -> {l['repo']}" for l in r.code_links]
            more = f" and {len(pairs) - 5} more" if len(pairs) > 5 else ""
            parts.append("linked to code: " + ", ".join(pairs[:5]) + more)
        msg = f"{what}: " + "; ".join(parts) + f" [{self.backend_name}]"
        if r.commits or not final:
            msg += f"\n\nPart {len(r.commits) + 1} of a bulk import."
        if final and r.problems:
            msg += f"\n\n{plural(len(r.problems), 'input')} not imported:\n" + "\n".join(
                f"- {p.source}: {p.error}" for p in r.problems[:50])

        # The run's files were written without an fsync each: one sync of the file system makes them durable
        # before the commit that records them.
        sync_files(self.vault.root)
        self.vault.stage(self.touched)
        with phase("add: vault commit"):
            sha = self.vault.commit(msg, [self.vault.papers_dir, *self.code_paths] if final else [])
        if sha:
            r.commit = sha
            r.commits.append(sha)
        self.catalog.committed()
        self.journal.clear()
        self.touched = []
        self._since_commit = 0
        self._part = {k: len(getattr(r, k)) for k in self._part}
        self._committed_at = time.monotonic()
        if self._early == "on" and not final:
            self._commit_at = min(max(self._commit_at, FIRST_COMMIT) * 4, self.ws.settings.sources.commit_every)
            self.on_commit([*part["added"], *(m["id"] for m in part["merged"] if m.get("id")), *part["reanalysed"]])
        return sha

    def parse_one(self, rec: SourceRecord) -> ParsedPaper | str:
        """The parse of a record's PDF, or the one-line reason it has none."""
        parsed = self.parse([rec]).get(rec.pdfs[0])
        if isinstance(parsed, ParseError):
            return parsed.reason
        return parsed if parsed is not None else "not parsed"

    def store_again(self, meta: PaperMeta, rec: SourceRecord, parsed: ParsedPaper, sha: str, *, origin: str,
                    reason: str) -> None:
        """Write a paper already in the vault again from a new parse of its PDF (its note too, unless a person
        edited it), analyse it and say why in the run's commit; the caller commits (`commit()`)."""
        self._store(meta, rec, parsed, sha)
        self.analyse_pending()
        self.report.merged.append({"id": meta.id, "source": rec.source, "origin": origin, "reason": reason,
                                   "gained_pdf": False, "new_source": False})

    def close(self) -> None:
        self.catalog.close()


@contextlib.contextmanager
def sync_job(ws: Workspace, what: str):
    """An `Ingest` job for `papervault sync` (new records, a replaced PDF, a new arXiv version): under the write
    lock, after recovering what a killed run left; closed whatever happens. `what` names it in the commit."""
    with ws.write_lock("sync"):
        recover(ws)
        job = Ingest(ws, backend=ws.settings.agents.backend)
        job.what = what
        try:
            yield job
        finally:
            job.close()


def recover(ws: Workspace) -> Recovery:
    """Undo what an interrupted `add` or `sync` wrote and left uncommitted, and only that (see vault/journal.py);
    the caller holds the lock. What it kept (a person's edit, a file of theirs) is logged and returned."""
    try:
        done = Journal(ws.state_dir / "journal" / "add", ws.vault).recover()
    except git.GitCommandError as exc:
        said = " ".join(str(exc.stderr or exc).split())[:200]
        raise WorkspaceError(f"could not roll back an interrupted add ({said})",
                             fix="run `papervault doctor` and follow its fix") from None
    return done


def add(ws: Workspace, inputs: list[str], *, backend: str = "extractive", progress: Progress | None = None,
        options: dict | None = None, reanalyse: bool = False, parse_fn: ParseFn | None = None,
        analyse_fn: AnalyseFn | None = None, first_pass: bool = False,
        on_commit: Callable[[list[str]], None] | None = None) -> AddReport:
    """Import `inputs` (paths, and whatever `papervault.sources` understands) into the vault; one commit (one
    per `[sources] commit_every` records for a big import).

    `parse_fn` parses a batch's PDFs elsewhere and `analyse_fn` analyses its papers elsewhere (the ingest flow's
    task runner); the writes stay here. `on_commit(ids)` is called under the write lock after each commit but the
    last, with the papers it committed (the first pass indexes them there); commits then come early and often
    (see `Ingest`)."""
    ws.require()
    with ws.write_lock("add"):
        recovered = recover(ws)
        job = Ingest(ws, backend=backend, progress=progress, reanalyse=reanalyse, parse_fn=parse_fn,
                     analyse_fn=analyse_fn, first_pass=first_pass, on_commit=on_commit)
        if recovered.undone or recovered.kept:
            job.report.recovered = recovered.as_dict()
        try:
            job.run(_records(inputs, ws, options or {}))
            job.commit()
        finally:
            job.close()
        src = ws.settings.sources
        if src.online and src.enrich_on_add and job.report.added:
            # Identity from Crossref/OpenAlex/arXiv for the new papers; a failure never undoes the import.
            from papervault.sources.enrich import enrich_locked

            done = enrich_locked(ws, list(job.report.added))
            for pid, err in done["failed"].items():
                job.report.warnings.append(Problem(pid, f"not enriched: {err}"))
        return job.report
