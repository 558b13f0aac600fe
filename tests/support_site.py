"""Test support for the site: a small real vault written directly, a loopback static server, headless Chromium."""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from pathlib import Path

import pymupdf

from papervault.models import PaperMeta
from papervault.workspace import Workspace

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"


@contextlib.contextmanager
def chromium(profile: Path, init_script: str | None = None):
    """Headless Chromium (Debian's, never a download) with a fresh profile in `profile`; skips the test when it
    or playwright is not installed. A module fixture launches it once: launching is the slow part."""
    import pytest

    if not CHROMIUM.exists():
        pytest.skip("headless Chromium not found at /usr/bin/chromium: run scripts/install-browser.sh "
                    "(apt-get update && apt-get install -y chromium)")
    playwright = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    with playwright.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900}, service_workers="block")
        if init_script:
            context.add_init_script(init_script)
        try:
            yield context
        finally:
            context.close()
HARVEST = "distributed_systems_harvest-yield-and-scalable-tolerant-systems.pdf"


def png(width: int = 160, height: int = 100, value: int = 90) -> bytes:
    """A real PNG (a grey rectangle) made with PyMuPDF."""
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pix.clear_with(value)
    return pix.tobytes("png")


PAXOS_NOTE = """\
# Paxos Made Simple

## Summary

The Paxos algorithm reaches consensus among unreliable processes; its quorumology argument is that any two
majorities intersect [p. 2](paper.md#page-2). The invariant is $n > 2f$, and agreement holds for every $b$.

## Claims

- A value chosen by a majority is never changed [p. 3](paper.md#page-3).
"""

PAXOS_FULLTEXT = """\
# Paxos Made Simple

<a id="page-1"></a>

## 1 Introduction

The Paxos algorithm, when presented in plain English, is very simple.

![Figure 1: Message flow between proposers and acceptors](figures/fig-1.png)

<a id="page-2"></a>

## 2 The consensus algorithm

A quorum is any majority of acceptors, so that

$$\\sum_{i=1}^{n} q_i > \\frac{n}{2}$$

<a id="page-3"></a>

## 3 Learning a chosen value

Learners find out that a value has been chosen.
"""

ATTENTION_NOTE = """\
# 注意力机制综述

## 摘要

本文研究注意力机制在神经网络中的作用，并比较了多种模型。 See also [@lamport2001paxos].
"""

SURVEY = """\
# Consensus and attention: a survey

Consensus protocols rely on intersecting quorums [@lamport2001paxos, p. 2]. Replication trades harvest for
yield [@fox1999harvest]. Attention is surveyed in Chinese work [@chen2020attention; @lamport2001paxos].
One key is missing on purpose [@nobody1900none].
"""


def make_vault(root: Path, *, real_pdf: Path | None = None) -> Workspace:
    """A workspace with three papers (one with a figure and page anchors, one in Chinese, one parsed from a
    real PDF when `real_pdf` is given), a survey, a code note and a page of the user's own; committed."""
    ws, _ = Workspace.init(root)
    v = ws.vault
    v.write_note(PaperMeta(id="lamport2001paxos", title="Paxos Made Simple", authors=["Leslie Lamport"], year=2001,
                           venue="ACM SIGACT News", doi="10.1145/568425.568433", tags=["consensus", "distributed"],
                           pages=3, status="analysed", template="default", code=["paxos-impl"],
                           created="2024-01-01T00:00:00+00:00"), PAXOS_NOTE)
    (v.paper_dir("lamport2001paxos") / "paper.md").write_text(PAXOS_FULLTEXT, encoding="utf-8")
    (v.paper_dir("lamport2001paxos") / "figures").mkdir()
    (v.paper_dir("lamport2001paxos") / "figures" / "fig-1.png").write_bytes(png())
    v.write_note(PaperMeta(id="chen2020attention", title="注意力机制综述", authors=["陈 明", "Li Wei", "Wang Fang"],
                           year=2020, venue="计算机学报", tags=["注意力", "deep learning"],
                           created="2024-02-01T00:00:00+00:00"), ATTENTION_NOTE)
    if real_pdf is not None:
        from conftest import parse_once

        parsed = parse_once(real_pdf)   # the project's parser, through the session's parse cache
        from papervault.pdfstore import keep

        # the PDF is kept as `add` keeps it: in the workspace's pdfs/ store, named by the note's `pdf:` hash
        meta = PaperMeta(id="fox1999harvest", title=parsed.title, authors=parsed.authors or ["Armando Fox"],
                         year=parsed.year or 1999, venue="HotOS", pages=parsed.pages, tags=["distributed"],
                         abstract=parsed.abstract, parser=parsed.parser, created="2024-03-01T00:00:00+00:00",
                         pdf=keep(ws.root, real_pdf))
        v.write_note(meta, f"# {parsed.title}\n\n## Abstract\n\n{parsed.abstract}\n")
        v.write_fulltext("fox1999harvest", parsed)
    survey = v.survey_dir("consensus-attention")
    survey.mkdir(parents=True)
    (survey / "survey.md").write_text(SURVEY, encoding="utf-8")
    (survey / "outline.md").write_text("# Outline\n\n1. Consensus [@lamport2001paxos]\n", encoding="utf-8")
    (survey / "references.bib").write_text("@article{lamport2001paxos, title={Paxos Made Simple}}\n", encoding="utf-8")
    (v.code_dir / "paxos-impl.md").write_text("# paxos-impl\n\nA Go implementation of [@lamport2001paxos].\n",
                                              encoding="utf-8")
    (v.root / "ideas.md").write_text("# My reading ideas\n\nCompare quorum systems.\n", encoding="utf-8")
    v.commit("test: site vault")
    return ws


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class StaticServer:
    """`site/` over HTTP on 127.0.0.1 (an ephemeral port), as a user's web server would serve it."""

    def __init__(self, directory: Path):
        handler = functools.partial(_Quiet, directory=str(directory))
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "StaticServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- both site engines: mkdocs-material (the default) and Zensical (`site build --engine zensical`) ---------

def engines():
    """The `engine` parameters of a site fixture: Zensical's builds run in a process of their own (slow tier)."""
    import pytest

    return ["mkdocs", pytest.param("zensical", marks=pytest.mark.slow)]


def engine_of(site: Path) -> str:
    """Which engine built `site/`: Zensical writes its search index as `search.json` at the root."""
    return "zensical" if (site / "search.json").is_file() else "mkdocs"


def search_docs(site: Path) -> tuple[list[dict], str]:
    """The search index of a built site as `[{"location", "title", "text"}]` and its separator."""
    import json

    if engine_of(site) == "zensical":
        index = json.loads((site / "search.json").read_text(encoding="utf-8"))
        return index["items"], index["config"]["separator"]
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    return index["docs"], index["config"]["separator"]


def search(page, query: str, engine: str):
    """Types `query` into the theme's search box (key by key: both themes listen to keyboard events) and
    returns the locator of the result links, waiting for the first."""
    if engine == "zensical":
        page.locator(".md-search__button").click()
        page.locator("dialog[aria-label='Search'] input").wait_for(timeout=10000)
        page.keyboard.type(query)
        results = page.locator("ol[role='listbox'] a[role='option']")
    else:
        page.locator("input.md-search__input").click()
        page.keyboard.type(query)
        results = page.locator(".md-search-result__item a")
        from playwright.sync_api import TimeoutError as PlaywrightTimeout  # only the browser tests have a page

        # mkdocs-material reads the box on `keyup` (and once when its worker is ready). Characters that are not
        # on a keyboard (Chinese) arrive as inserted text without a keyup, so a worker that was ready before the
        # typing ended never sees the query: a key that changes nothing makes the theme read it, as a person's
        # input method does
        for _ in range(3):
            page.keyboard.press("End")
            try:
                results.first.wait_for(timeout=10000)
                return results
            except PlaywrightTimeout:
                continue
    results.first.wait_for(timeout=20000)
    return results
