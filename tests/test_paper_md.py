"""`paper.md` has one owner: `papervault.vault.paper` writes its conventions, reads it and builds links into it.

The rule test reads every module's regular expressions and fails when one outside the vault's module reads
`paper.md` structure (page anchors or page links, figure or table labels, image lines, headings, the
reference list). The round-trip tests write a paper with the parser's own writer and read it back.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from papervault.models import Figure, Reference
from papervault.parse.layout import Block
from papervault.parse.pdf import _markdown
from papervault.vault import paper as paper_md

ROOT = Path(__file__).resolve().parent.parent
OWNER = "papervault/vault/paper.py"

# What a regular expression that reads paper.md structure contains.
SIGNATURES = {
    "page anchor or page link": re.compile(r"page-|<a id|paper\\?\.md"),
    "image line": re.compile(r"!\\\["),
    "heading": re.compile(r"\^\(?\\?s?\*?#|#\{1,6\}|^#"),
    "figure or table label": re.compile(r"(?:Fig(?:ure)?|Table|Tab\\\.|FIGURE|TABLE)[\s\S]*\\d|\\\*\\\*(?:Fig|Tab)"),
    "reference list": re.compile(r"references|bibliography", re.I),
}
# Patterns outside the vault's module that look alike but read other files (module, signature) -> why.
NOT_PAPER_MD = {
    ("papervault/parse/", "*"): "the writer: it reads PDF text (captions, reference headings) and writes paper.md",
    ("papervault/vault/reader.py", "heading"): "reader-notes.md",
    ("papervault/survey/outline.py", "heading"): "outline.md",
    ("papervault/site/stage.py", "heading"): "the title of survey.md and other site pages",
    ("papervault/site/snapshot.py", "heading"): "the title of survey.md as the vault is read",
    ("papervault/chunking/paper.py", "heading"): "note.md's sections",
    ("papervault/survey/papers.py", "heading"): "note.md's sections",
    ("papervault/chunking/code/repository.py", "image line"): "a repository's README",
    ("papervault/chunking/code/repository.py", "heading"): "a repository's README",
    ("papervault/survey/polish.py", "image line"): "survey.md's images",
}
RE_FUNCS = {"compile", "match", "search", "fullmatch", "sub", "subn", "findall", "finditer", "split"}


def _regexes(tree: ast.AST):
    """(line, pattern text) of every `re.<func>(pattern, ...)` call; a pattern built from parts is joined."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in RE_FUNCS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args):
            parts = [n.value for n in ast.walk(node.args[0]) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            if parts:
                yield node.lineno, "".join(parts)


def _allowed(path: str, signature: str) -> bool:
    return any(path.startswith(mod) and sig in ("*", signature) for mod, sig in NOT_PAPER_MD)


def test_no_module_but_the_vaults_parses_paper_md():
    files = [p for d in ("papervault", "mcp_server", "flows") for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 50
    found, seen = [], 0
    for f in files:
        rel = f.relative_to(ROOT).as_posix()
        for line, pattern in _regexes(ast.parse(f.read_text(encoding="utf-8"))):
            seen += 1
            for name, sig in SIGNATURES.items():
                if sig.search(pattern) and rel != OWNER and not _allowed(rel, name):
                    found.append(f"{rel}:{line}: {name}: {pattern[:70]}")
    assert seen > 100                         # the scan sees the package's regular expressions
    assert not found, "paper.md read outside papervault.vault.paper:\n" + "\n".join(found)


def test_the_rule_catches_a_reader_of_its_own():
    """The signatures are not vacuous: each reader removed from the other modules would be caught."""
    removed = [r'(?m)^<a id="page-\d+"></a>\s*$', r"^(#{1,6})\s+(.+?)\s*#*\s*$",
               r"^!\[(?P<alt>[^\]]*)\]\((?P<path>[^)\s]+)[^)]*\)\s*$", r"\*\*Figure [^*]+\*\*",
               r"\b(?:Figure|Fig\.?)\s*([A-Z]?\d+[a-z]?)\b", r"\[p\. \d+\]\(paper\.md#page-\d+\)",
               r"^#{1,6}\s*(?:\d+\.?\s*)?(references|bibliography|works cited)\s*$"]
    for pattern in removed:
        tree = ast.parse(f"import re\nX = re.compile({pattern!r})\n")
        assert any(sig.search(p) for _, p in _regexes(tree) for sig in SIGNATURES.values()), pattern


# --- the writer and the reader agree ------------------------------------------------------------------

def _block(kind: str, page: int, text: str = "", **kw) -> Block:
    return Block(lines=[], page=page, kind=kind, text=text, **kw)


HOSTILE_CAPTION = r"Latency [ms] of \x under *load* <script>alert(1)</script>"


def _written() -> tuple[str, dict]:
    """A paper written by the parser's writer: 3 pages, nested sections, figures, tables (one HTML), references."""
    figs = [Figure(number="1", page=1, caption=HOSTILE_CAPTION, filename="fig-1.png", png=b"x"),
            Figure(number="B.2", page=2, caption="Throughput ] of [ 3 setups", filename="fig-b2.png", png=b"x")]
    pages = [
        [_block("title", 1, "A Hostile Paper"),
         _block("heading", 1, level=1, number="1", data={"title": "Introduction"}),
         _block("text", 1, "# not a heading: a paragraph that starts like one, see Figure 1 and Table 2."),
         _block("figure_caption", 1, data={"figure": figs[0]}),
         _block("heading", 1, level=2, number="1.1", data={"title": "Scope *and* limits"})],
        [_block("text", 2, "Table 9 shows nothing; this sentence only names a table."),
         _block("table_caption", 2, number="2", data={"caption": "Results [a] of runs",
                                                       "table": "| run | ms |\n|---|---|\n| a | 1.5 |"}),
         _block("figure_caption", 2, data={"figure": figs[1]}),
         _block("heading", 2, level=1, number="2", data={"title": "Design"}),
         _block("table_caption", 2, number="IV", data={"caption": "Merged cells", "table":
                "<table>\n<tr><th colspan=\"2\">Both</th></tr>\n<tr><td>x</td><td>y</td></tr>\n</table>"})],
        [_block("text", 3, "- a list item that is prose"),
         _block("heading", 3, level=1, number="", data={"title": "References"})],
    ]
    refs = [Reference(raw="[1] A. Author. A paper about [anchors] and *stars*. 2001.", page=3),
            Reference(raw="[2] B. Author. ## Not a heading either. 2002.", page=3)]
    return _markdown("A Hostile Paper", pages, refs, figs, []), {"figs": figs, "refs": refs}


def test_the_writer_round_trips_through_the_reader():
    text, made = _written()
    doc = paper_md.read(text)
    assert doc.title == "A Hostile Paper"
    assert doc.pages == [1, 2, 3]
    for page, (start, end) in doc.page_spans().items():
        assert text[start:].startswith(paper_md.page_anchor(page)) and start < end
    assert [(s.title, s.level, s.path, s.page) for s in doc.sections] == [
        ("1 Introduction", 2, "1 Introduction", 1),
        ("1.1 Scope and limits", 3, "1 Introduction > 1.1 Scope and limits", 1),
        ("2 Design", 2, "2 Design", 2),
        ("References", 2, "References", 3)]
    assert [(f.number, f.caption, f.page, f.src) for f in doc.figures] == [
        ("1", paper_md.alt_text(HOSTILE_CAPTION), 1, "figures/fig-1.png"),
        ("B.2", r"Throughput \] of \[ 3 setups", 2, "figures/fig-b2.png")]
    # the caption as written is what the file holds (a quotation of it is found there)
    assert all(f.caption in text and f.label == f"Figure {f.number}: {f.caption}" for f in doc.figures)
    assert [(t.number, t.caption, t.page, t.rows, t.html) for t in doc.tables] == [
        ("2", "Results [a] of runs", 2, [["run", "ms"], ["a", "1.5"]], False),
        ("IV", "Merged cells", 2, [["Both"], ["x", "y"]], True)]
    refs = doc.references_text()
    assert all(" ".join(r.raw.split()) in " ".join(refs.split()) for r in made["refs"])
    assert "2 Design" not in refs and text.endswith(refs)
    # a "#" opening prose or a reference is text, not structure
    assert len(doc.sections) == 4
    kinds = [(b.kind, b.page_start) for b in doc.blocks]
    assert kinds == [("heading", None), ("heading", 1), ("text", 1), ("figure", 1), ("heading", 1), ("text", 2),
                     ("table", 2), ("figure", 2), ("heading", 2), ("table", 2), ("text", 3), ("heading", 3),
                     ("text", 3)]
    assert [b.section.path if b.section else None for b in doc.blocks if b.kind != "heading"] == [
        "1 Introduction", "1 Introduction", "1 Introduction > 1.1 Scope and limits",
        "1 Introduction > 1.1 Scope and limits", "1 Introduction > 1.1 Scope and limits", "2 Design",
        "2 Design", "References"]


def test_the_chunker_and_the_prose_view_read_what_the_reader_reads():
    from papervault.agents.paperdoc import read_paper
    from papervault.chunking.paper import chunk_paper
    from papervault.models import PaperMeta

    text, _ = _written()
    doc = paper_md.read(text)
    chunks = chunk_paper(PaperMeta(id="p"), text, "")
    figures = [c for c in chunks if c.level == "figure"]
    tables = [c for c in chunks if c.level == "table"]
    assert [(c.extra["number"], c.extra["figure"], c.page_start) for c in figures] == \
        [(f.number, f.src, f.page) for f in doc.figures]
    assert [(c.extra["number"], c.extra["caption"], c.page_start) for c in tables] == \
        [(t.number, t.caption, t.page) for t in doc.tables]
    assert tables[1].text == "Table IV: Merged cells\n| Both |\n| x | y |"      # the HTML table's cells
    assert {c.section_path for c in chunks if c.level == "section"} == \
        {s.path for s in doc.sections if not paper_md.is_references(s.title)}
    assert not any("A. Author" in c.text for c in chunks)                         # the references are not indexed
    assert any(c.level == "paragraph" and c.text.startswith(r"\# not a heading") and
               c.extra["mentions"] == ["figure:1", "table:2"] for c in chunks)

    prose = read_paper(text)
    assert prose.title == "A Hostile Paper" and prose.pages == 3
    assert [s.label for s in prose.sections] == ["A Hostile Paper"] + [s.title for s in doc.sections]
    assert [(f.number, f.page, f.section) for f in prose.figures] == \
        [("1", 1, "1 Introduction"), ("B.2", 2, "1.1 Scope and limits")]
    assert [(t.number, t.section) for t in prose.tables] == [("2", "1.1 Scope and limits"), ("IV", "2 Design")]
    assert len(prose.references) == 2 and prose.references[0].startswith("- [1] A. Author")
    assert "Merged cells" not in prose.sections[3].text and "Results" not in prose.sections[2].text


@pytest.mark.parametrize("name", ["time_series_ts-asap.pdf", "distributed_systems_paxos-made-moderately-complex.pdf"])
def test_the_reader_reads_sections_and_references_as_the_parser_wrote_them(corpus_dir, name):
    from conftest import parse_once

    parsed = parse_once(corpus_dir / name)
    doc = paper_md.read(parsed.markdown)
    assert [(s.title, s.page) for s in doc.sections] == \
        [(f"{h.number} {h.title}".strip(), h.page) for h in parsed.headings]
    refs = " ".join(doc.references_text().split())
    assert len(parsed.references) >= 20
    assert all(" ".join(r.raw.split()) in refs for r in parsed.references)


# --- links and rewriting -------------------------------------------------------------------------------

def test_page_links_are_built_in_one_place():
    assert paper_md.page_link("doe2020", 3) == "papers/doe2020/paper.md#page-3"
    assert paper_md.page_link("doe2020", 3, relative_to="papers/roe2012/note.md") == "../doe2020/paper.md#page-3"
    assert paper_md.page_link("doe2020", 3, relative_to="papers/doe2020/paper.md") == "paper.md#page-3"
    assert paper_md.page_link("doe2020", 3, relative_to="surveys/s/survey.md") == \
        paper_md.page_link("doe2020", 3, prefix="../../papers/") == "../../papers/doe2020/paper.md#page-3"
    assert paper_md.page_link("doe2020", None, relative_to="index.md") == "papers/doe2020/paper.md"
    # the note template's own page links are what the honesty check takes out
    note_line = "- “a quoted claim” [p. 4](paper.md#page-4) and [p. 12](../x/paper.md#page-12)"
    assert paper_md.without_page_citations(note_line) == "- “a quoted claim”  and "


# A template that writes a page fragment itself (`paper.md#page-{{ n }}`, `{{ url }}#page-{{ n }}`).
HAND_BUILT_PAGE_LINK = re.compile(r"#page-|paper\.md#")


def _hand_built_page_links(text: str) -> list[str]:
    return [line for line in text.splitlines() if HAND_BUILT_PAGE_LINK.search(line)]


def test_no_template_builds_a_page_link_by_hand():
    """Templates link to a page of paper.md through the vault's builder (the Jinja global `page_link`)."""
    files = [p for p in sorted((ROOT / "templates").rglob("*")) if p.is_file()]
    assert len(files) > 20 and any(p.name == "note.md.j2" for p in files)
    found = [f"{p.relative_to(ROOT).as_posix()}: {line.strip()[:90]}"
             for p in files for line in _hand_built_page_links(p.read_text(encoding="utf-8", errors="replace"))]
    assert not found, "page links built by hand in templates:\n" + "\n".join(found)
    # the rule is not vacuous: the forms the templates used to write are caught
    assert _hand_built_page_links("[p. {{ page }}](paper.md#page-{{ page }})")
    assert _hand_built_page_links("[p. {{ f.page }}]({{ p.fulltext_url }}#page-{{ f.page }})")


def test_templates_call_the_vaults_page_link_builder():
    from papervault import templating

    env = templating.environment("", sources={"t.j2": "{{ page_link(page=n) }} {{ page_link('doe2020', n) }}"})
    assert env.get_template("t.j2").render(n=3) == \
        f"{paper_md.page_link(page=3)} {paper_md.page_link('doe2020', 3)}" == \
        "paper.md#page-3 papers/doe2020/paper.md#page-3"
    assert paper_md.page_link(page=3) == paper_md.page_link("x", 3, relative_to="papers/x/note.md")
    # every loader of templates has it: the site's pages and the survey's documents too
    from papervault.site.stage import template_env
    from papervault.survey.export import environment as survey_environment

    assert template_env().globals["page_link"] is survey_environment().globals["page_link"] is paper_md.page_link


def test_anchors_are_rewritten_and_removed_by_the_vault_module():
    text = "a\n\n" + paper_md.page_anchor(2) + "\n\nb " + paper_md.page_anchor(3) + " c\n\n" + paper_md.page_anchor(4)
    # an anchor inside a line is not the writer's: it stays text
    assert paper_md.without_anchors(text) == "a\n\n\n\nb " + paper_md.page_anchor(3) + " c\n\n"
    assert paper_md.mark_pages(text, lambda n: f"[{n}]") == "a\n\n[2]\n\nb " + paper_md.page_anchor(3) + " c\n\n[4]"
    assert re.fullmatch(paper_md.ANCHOR_HTML, paper_md.page_anchor(7))
    assert paper_md.mentions("Fig. 2b, see Figure B.1 and Table IV; Table 1shows") == \
        [("figure", "2b"), ("figure", "B.1"), ("table", "IV")]


# --- page anchors cannot be forged by a paper's text ------------------------------------------------------

FORGED = ['<a id="page-3"></a>', "<a id='page-3'>", '<A ID="PAGE-3"></A>', '<a  id = "page-3" ></a>']
PAGE_TWO = "The zebra protocol commits every ballot within two message delays."


def _forging_pdf(path: Path) -> Path:
    """Three pages made with PyMuPDF; page 1 spells out page anchors, alone on a line and inside prose."""
    import pymupdf

    doc = pymupdf.open()
    texts = [["Forged Anchors in Practice", "1 Introduction",
              *FORGED, f'We quote {FORGED[0]} inside a sentence and {FORGED[1]} too.',
              "An ordinary closing sentence of the first page."],
             ["2 Design", PAGE_TWO, "Nothing else of note happens on this page."],
             ["3 Evaluation", "The third page holds the results of the evaluation."]]
    for lines in texts:
        page = doc.new_page()
        y = 90
        for k, line in enumerate(lines):
            page.insert_text((72, y), line, fontsize=16 if k == 0 and page.number == 0 else 10)
            y += 40
    doc.set_metadata({"title": "Forged Anchors in Practice", "author": "Ada Tester"})
    doc.save(path)
    doc.close()
    return path


def test_a_pdf_cannot_forge_a_page_anchor(tmp_path):
    """Anchors a PDF's text spells out (any quoting, spacing, case; alone on a line or in prose) are written
    as text, and the reader, the site's full text and `locate` put a passage of page 2 on page 2."""
    from papervault.app.locate import locate
    from papervault.models import PaperMeta
    from papervault.parse import parse_pdf
    from papervault.site.stage import plan_site, read_vault
    from papervault.workspace import Workspace

    parsed = parse_pdf(_forging_pdf(tmp_path / "forged.pdf"))
    md = parsed.markdown
    assert "&lt;a id=\"page-3\">&lt;/a>" in md and "&lt;A ID=\"PAGE-3\">" in md      # kept, as text
    assert [ln for ln in md.splitlines() if "<a " in ln.lower()] == [paper_md.page_anchor(p) for p in (1, 2, 3)]
    doc = paper_md.read(md)
    assert doc.pages == [1, 2, 3]
    assert doc.page_at(md.index(PAGE_TWO)) == 2 and doc.page_at(md.index("An ordinary closing")) == 1
    first = next(b for b in doc.blocks if "inside a sentence" in b.text)
    assert first.pages == [1] and "&lt;a id=\"page-3\">" in first.text

    ws, _ = Workspace.init(tmp_path / "ws")
    ws.vault.write_note(PaperMeta(id="tester2026forged", title="Forged Anchors in Practice"), "# Forged\n")
    ws.vault.write_fulltext("tester2026forged", parsed)
    ws.vault.commit("add tester2026forged")
    found = locate(ws, PAGE_TWO)
    assert (found[0].page, found[0].anchor) == (2, "papers/tester2026forged/paper.md#page-2") and found[0].exact

    site = plan_site(read_vault(ws.vault.root)).pages["papers/tester2026forged/paper.md"]
    assert [site.count(f'<a id="page-{p}"') for p in (1, 2, 3)] == [1, 1, 1]
    assert site.lower().count("<a id") == 3
    assert site.index('<a id="page-2"') < site.index(PAGE_TWO) < site.index('<a id="page-3"')


def test_the_reader_takes_only_the_writers_anchor_line():
    """Anything but the exact anchor line, as a paragraph of its own, is text: inline, indented, in a list, a
    quote, a heading, a code block or an HTML block, in another case or quoting."""
    decoys = ["Prose <a id=\"page-7\"></a> with an anchor inside.", "  <a id=\"page-7\"></a>",
              "- <a id=\"page-7\"></a>", "> <a id=\"page-7\"></a>", "## <a id=\"page-7\"></a>",
              "```\n<a id=\"page-7\"></a>\n```", "<div>\n<a id=\"page-7\"></a>\n</div>",
              "<a id='page-7'></a>", "<A ID=\"page-7\"></A>", "<a id=\"page-07\"></a>",
              "a line of prose\n<a id=\"page-7\"></a>"]
    text = paper_md.page_anchor(1) + "\n\n" + "\n\n".join(decoys) + "\n\n" + paper_md.page_anchor(2) + "\n\nEnd.\n"
    doc = paper_md.read(text)
    assert doc.pages == [1, 2] and doc.page_at(text.index("End.")) == 2
    end = next(b for b in doc.blocks if b.text == "End.")
    assert end.pages == [2] and all(set(b.pages) <= {1} for b in doc.blocks if b.start < end.start)
    assert paper_md.without_anchors(text) == text.replace(paper_md.page_anchor(1), "").replace(paper_md.page_anchor(2), "")
    assert paper_md.escape_html('<a id="page-3"></a> a < b, <https://x.org> <!-- c --> <?p?> <br/>') == \
        '&lt;a id="page-3">&lt;/a> a < b, <https://x.org> &lt;!-- c --> &lt;?p?> &lt;br/>'


def test_a_fence_nothing_closes_hides_no_page(tmp_path):
    """A `paper.md` written before the writer escaped fence lines may hold a line of ``` from a PDF's text that
    nothing closes: the reader, the site's full text page and `locate` still see every page after it. A fence
    that is closed (a code block the parser wrote) stays a code block."""
    from papervault.app.locate import locate
    from papervault.models import PaperMeta, ParsedPaper
    from papervault.site.stage import plan_site, read_vault
    from papervault.workspace import Workspace

    code = "```\nx = 1  # a code block the parser wrote\n```"
    md = "\n\n".join([paper_md.page_anchor(1), "# Fenced Text Read Back", code, "Some prose of page one.\r```\r",
                      paper_md.page_anchor(2), "## 2 Later", "Leases bound the recovery time on page two.",
                      paper_md.page_anchor(3), "~~~ and a tilde line too", "Page three closes the paper."]) + "\n"
    assert paper_md.escape_unclosed_fence(md).count("\n") == md.count("\n")
    assert len(paper_md.escape_unclosed_fence(md)) == len(md)
    doc = paper_md.read(md)
    assert doc.pages == [1, 2, 3]
    assert doc.page_at(md.index("Leases bound")) == 2 and doc.page_at(md.index("Page three")) == 3
    assert [s.title for s in doc.sections][-1:] == ["2 Later"]

    ws, _ = Workspace.init(tmp_path / "ws")
    ws.vault.write_note(PaperMeta(id="tester2026fenced", title="Fenced Text Read Back"), "# Fenced\n")
    ws.vault.write_fulltext("tester2026fenced", ParsedPaper(markdown=md, pages=3))
    ws.vault.commit("add tester2026fenced")
    found = locate(ws, "Leases bound the recovery time on page two.")
    assert (found[0].page, found[0].anchor) == (2, "papers/tester2026fenced/paper.md#page-2")
    site = plan_site(read_vault(ws.vault.root)).pages["papers/tester2026fenced/paper.md"]
    assert [site.count(f'<a id="page-{p}"') for p in (1, 2, 3)] == [1, 1, 1]
    assert "\\``" in site and code in site           # the open fence is text, the closed one a code block
