"""Details a reader of a survey notices: the pages the correlation prompt offers."""

from __future__ import annotations

from papervault.survey import export as E
from papervault.survey.papers import SurveyPaper


def test_the_correlation_prompt_gives_pages_only_where_the_notes_have_them():
    note = ("# Widgets\n\n## Summary\n- “Gizmo places widgets in constant time.” [p. 223](paper.md#page-1)\n\n"
            "## Method\n**In one line:** Gizmo\n- A sorted index of free capacity. [p. 224](paper.md#page-2)\n\n"
            "## Coverage\n- Figures: Figure 3\n")
    p = SurveyPaper("doe2020widgets", "Widgets at Scale", year=2020, abstract="We present Gizmo.", method="Gizmo",
                    key_results=[{"setting": "Gizmo", "metric": "latency", "value": "1.2", "page": 2}], note=note)
    assert p.analysis == {"summary": [{"text": "Gizmo places widgets in constant time.", "page": 1}],
                          "method": [{"text": "A sorted index of free capacity.", "page": 2}]}
    text = E.render("correlate.prompt.md.j2", None, topic="t", papers=[p, SurveyPaper("x2021", "Other")], lineages=[])
    assert "- Gizmo places widgets in constant time. (p. 1)" in text
    assert "- A sorted index of free capacity. (p. 2)" in text and "- Gizmo: latency = 1.2 (p. 2)" in text
    assert "Abstract: We present Gizmo.\n" in text and "Cite a page, [@id, p. N], only from a statement" in text
    assert "Figure 3" not in text
