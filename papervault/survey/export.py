"""The survey's documents: Markdown rendered from templates, `references.bib` and CSL-JSON `references.json`.

`survey.md` opens with a Pandoc YAML header naming both bibliographies, so
`pandoc survey.md --citeproc -o survey.html` renders it with its references.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

import jinja2
import yaml

from papervault.survey.papers import SurveyPaper
from papervault.ids import last_name
from papervault.survey.polish import cite_keys
from papervault.templating import environment as template_environment


def environment(template_dir: Path | None = None) -> jinja2.Environment:
    """Templates from `template_dir` (a workspace's `templates/survey/`: a user's overrides), then the built-in."""
    env = template_environment("survey", extra=[template_dir], undefined=jinja2.StrictUndefined,
                               keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True, autoescape=False)
    env.filters["cell"] = lambda v: ("; ".join(map(str, v)) if isinstance(v, list) else str(v or "")).replace("|", "\\|").replace("\n", " ")[:200] or "–"
    env.filters["tojson"] = lambda v: json.dumps(v, ensure_ascii=False, indent=2, default=str)
    return env


def render(name: str, template_dir: Path | None = None, **context: Any) -> str:
    return environment(template_dir).get_template(name).render(**context)


# --- bibliography ----------------------------------------------------------------------------------

_BIB_ESCAPE = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_"}


def _bib(text: str) -> str:
    text = " ".join(str(text).split())
    return re.sub(r"[&%$#_]", lambda m: _BIB_ESCAPE[m.group(0)], text).replace("{", "").replace("}", "")


_BIB_TYPES = {"article", "book", "booklet", "inbook", "incollection", "inproceedings", "conference", "manual",
              "mastersthesis", "misc", "phdthesis", "proceedings", "techreport", "unpublished", "online", "report",
              "thesis"}
# The `bib` fields written as they are, in this order (venue, ids and url have their own fields).
_BIB_ORDER = ("editor", "booktitle", "journal", "journaltitle", "series", "volume", "number", "issue", "chapter",
              "pages", "edition", "publisher", "organization", "institution", "school", "address", "location",
              "eventtitle", "month", "type", "howpublished", "isbn", "issn", "pagetotal", "language", "note")


def _entry_type(p: SurveyPaper) -> str:
    kind = (p.bib.get("entrytype") or "").lower()
    if kind in _BIB_TYPES:
        return kind
    venue = (p.venue or "").lower()
    if any(w in venue for w in ("proceedings", "conference", "symposium", "workshop", "sosp", "osdi", "nsdi",
                                "sigmod", "vldb", "cidr", "pldi", "popl", "eurosys", "usenix")):
        return "inproceedings"
    if venue:
        return "article"
    return "misc"


def bibtex(papers: Iterable[SurveyPaper]) -> str:
    """`references.bib`: one entry per paper, keyed by its vault id."""
    out = []
    for p in papers:
        kind = _entry_type(p)
        fields: list[tuple[str, str]] = [("title", "{" + _bib(p.title) + "}")]
        if p.authors:
            fields.append(("author", " and ".join(_bib(a) for a in p.authors)))
        if p.year:
            fields.append(("year", str(p.year)))
        venue_field = "booktitle" if kind in ("inproceedings", "incollection", "conference") else "journal"
        if p.venue and kind not in ("techreport", "phdthesis", "mastersthesis", "book", "misc", "online",
                                    "report", "thesis", "unpublished", "manual", "booklet") \
                and not p.bib.get(venue_field) and not p.bib.get("journaltitle"):
            fields.append((venue_field, _bib(p.venue)))
        for name in _BIB_ORDER:
            if p.bib.get(name):
                fields.append((name, _bib(p.bib[name]) if name != "pages" else p.bib[name].replace(" ", "")))
        if p.doi:
            fields.append(("doi", p.doi))
        if p.arxiv:
            fields += [("eprint", p.arxiv), ("archiveprefix", "arXiv")]
        if p.url:
            fields.append(("url", p.url))
        body = ",\n".join(f"  {k} = {{{v}}}" for k, v in fields)
        out.append(f"@{kind}{{{p.id},\n{body}\n}}\n")
    return "\n".join(out)


def _csl_name(author: str) -> dict[str, str]:
    family = last_name(author)
    if "," in author:
        given = author.split(",", 1)[1].strip()
    else:
        given = author[: max(0, len(author) - len(family))].strip()
    return {"family": family, "given": given} if given else {"literal": author.strip()}


_CSL_TYPE = {"inproceedings": "paper-conference", "conference": "paper-conference", "article": "article-journal",
             "book": "book", "incollection": "chapter", "inbook": "chapter", "techreport": "report",
             "report": "report", "phdthesis": "thesis", "mastersthesis": "thesis", "thesis": "thesis",
             "online": "webpage", "unpublished": "manuscript", "misc": "article"}
# `bib` fields -> CSL variables (the inverse of sources.csl.CSL_TO_BIB).
_CSL_VARS = {"pages": "page", "volume": "volume", "number": "issue", "issue": "issue", "publisher": "publisher",
             "edition": "edition", "series": "collection-title", "isbn": "ISBN", "issn": "ISSN",
             "address": "publisher-place", "location": "event-place", "eventtitle": "event", "type": "genre",
             "pagetotal": "number-of-pages", "language": "language", "note": "note"}


def csl_json(papers: Iterable[SurveyPaper]) -> list[dict[str, Any]]:
    """`references.json`: the same references as CSL-JSON items (id = vault id)."""
    items = []
    for p in papers:
        kind = _CSL_TYPE.get(_entry_type(p), "article")
        item: dict[str, Any] = {"id": p.id, "type": kind, "title": p.title}
        if p.authors:
            item["author"] = [_csl_name(a) for a in p.authors]
        if p.year:
            item["issued"] = {"date-parts": [[p.year]]}
        if p.venue:
            item["container-title"] = p.venue
        for name, var in _CSL_VARS.items():
            if p.bib.get(name):
                item[var] = p.bib[name].replace("--", "–") if name == "pages" else p.bib[name]
        if p.bib.get("editor"):
            item["editor"] = [_csl_name(a.strip()) for a in p.bib["editor"].split(" and ") if a.strip()]
        if p.doi:
            item["DOI"] = p.doi
        if p.url:
            item["URL"] = p.url
        elif p.arxiv:
            item["URL"] = f"https://arxiv.org/abs/{p.arxiv}"
        if p.arxiv:
            item["number"] = f"arXiv:{p.arxiv}"
        items.append(item)
    return items


# --- the survey document ---------------------------------------------------------------------------

def yaml_header(title: str, slug: str, extra: dict[str, Any] | None = None) -> str:
    """The Pandoc metadata block: title, both bibliographies, linked citations."""
    meta = {"title": title, "survey": slug, "bibliography": ["references.bib"], "link-citations": True,
            "reference-section-title": "References"}
    meta.update(extra or {})
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def assemble(topic: str, sections: list[tuple[str, str]]) -> str:
    """The survey body: numbered sections in outline order (polishing works on this, header excluded)."""
    parts = []
    for n, (title, body) in enumerate(sections, 1):
        parts.append(f"## {n}. {title}\n\n{body.strip()}\n")
    return "\n".join(parts)


def citations(markdown: str) -> list[str]:
    return cite_keys(markdown)
