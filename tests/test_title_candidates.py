"""Where the title is among the candidates though the page sets it unlike a title: a cover title set low on the
page, a title set small and bold over a citation in larger type, a report whose title is only its running head;
read by `read_front` on small PDFs made with PyMuPDF."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from papervault.ids import normalize_title
from papervault.parse.lines import not_title
from papervault.parse.pdf import read_front
from papervault.parse.title import _head_choices

RUNNING = ("The harvest of the year was larger than the one before, and the prices paid to growers fell by a",
           "tenth over the season while the stocks held at the end of it rose in most of the regions that",
           "report them; the exports went up as well, mostly to the neighbouring countries of the region, and",
           "the imports stayed where they were. The value of what was grown was about four billion in all.")


def _pdf(path: Path, pages: list[list[tuple[float, float, str, float, str]]]) -> Path:
    """A PDF whose pages hold these lines: (x, y, text, size, font)."""
    doc = pymupdf.open()
    for lines in pages:
        page = doc.new_page(width=612, height=792)
        for x, y, text, size, font in lines:
            page.insert_text((x, y), text, fontsize=size, fontname=font)
    doc.save(path)
    doc.close()
    return path


def test_a_cover_title_set_low_on_the_page_is_the_title(tmp_path):
    pdf = _pdf(tmp_path / "cover.pdf", [[(54, 560, "2031 HARVEST", 44, "helv"),
                                         (54, 610, "WORLD GRAIN SURVEY", 44, "hebo"),
                                         (320, 760, "harvest.example.org", 9, "helv"),
                                         (460, 760, "@harvest", 9, "helv")]])
    h = read_front(pdf)
    assert normalize_title(h.title) == normalize_title("2031 Harvest World Grain Survey")


def test_a_title_set_small_and_bold_over_a_citation_is_the_title_without_its_year(tmp_path):
    lines = [(95, 100, "EXPERIMENTS ON BEAN HYBRIDS (1871)", 9.5, "hebo"),
             (180, 130, "KARL WEBER", 8, "helv"),
             (110, 160, "Read at the February and March meetings of 1871", 9, "helv"),
             (148, 172, "of the Natural History Society", 9, "helv"),
             (72, 205, "Weber, Karl. 1872. Versuche uber Bohnen. Verhandlungen des Vereines", 10, "helv"),
             (72, 218, "in Wien, Bd. II fur das Jahr 1871, Abhandlungen, 3-47, translated here.", 10, "helv")]
    lines += [(90, 280 + 11 * i, t, 9, "helv") for i, t in enumerate(RUNNING * 2)]
    h = read_front(_pdf(tmp_path / "weber.pdf", [lines]))
    assert normalize_title(h.title) == normalize_title("Experiments on Bean Hybrids")
    assert "(1871)" not in h.title


def test_a_report_whose_title_is_only_its_running_head_gets_that_title(tmp_path):
    body = [(45, 100 + 11 * i, t, 10, "helv") for i, t in enumerate(RUNNING * 3)]
    head = [(220, 40, "ZINC (REFINED)—OXIDE", 14, "hebo")]
    pdf = _pdf(tmp_path / "summary.pdf",
               [head + body, head + body])
    h = read_front(pdf)
    assert normalize_title(h.title) == normalize_title("Zinc (Refined)—Oxide")


def test_running_heads_that_are_no_title_are_never_offered():
    heads = ["346", "P.M.C. de Oliveira et al. / Diluted antiferromagnets", "ZINC", "Journal of Economic Theory",
             "Vol. 12, No. 3", "Stanford University"]
    assert _head_choices([], heads, 792.0) == []
    assert [c.text for c in _head_choices([], heads + ["Zinc (Refined)—Oxide"], 792.0)] == ["Zinc (Refined)—Oxide"]


def test_a_document_type_label_in_french_is_never_a_title():
    assert not_title("RAPPORT DE RECHERCHE") and not_title("Rapport technique")
    assert not not_title("Rapports between proof and program")
