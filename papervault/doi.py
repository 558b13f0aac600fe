"""What a DOI looks like: the one pattern, and the forms the readers, the resolver and the site match it in.

A DOI is `10.<registrant>/<suffix>`: a registrant code of 4 to 9 digits, then a suffix. Where a DOI is taken as
given (a person's input, a reference list) the suffix runs to the next space; where one is kept or linked (a
note's frontmatter, a site link) it must have the shape Crossref recommends, which covers all but a few old SICI
DOIs: no brackets, quotes, angle brackets or spaces, so it can never end or extend the Markdown link it becomes.
"""

from __future__ import annotations

import re

PREFIX = r"10\.\d{4,9}/"
# The suffix characters Crossref recommends, lower case (DOIs are case-insensitive).
SAFE_SUFFIX = r"[-._;()/:a-z0-9]+"
# How people write a DOI before its prefix: `doi:`, `https://doi.org/`, `dx.doi.org/`.
URL_PREFIX = re.compile(r"^(?:doi:\s*|https?://(?:dx\.)?doi\.org/|(?:dx\.)?doi\.org/)", re.I)

# A normalised DOI (lower case, `normalize_doi`): `\Z`, because `$` would accept a final newline.
SHAPE = re.compile(rf"\A{PREFIX}{SAFE_SUFFIX}\Z")
# A DOI a site may link to, in any case.
SAFE = re.compile(rf"\A{PREFIX}{SAFE_SUFFIX}\Z", re.I)
# A DOI inside a reference entry, up to a space, a quote or an angle bracket (`parse.references.find_doi`).
IN_TEXT = re.compile(rf"\b({PREFIX}[^\s\"<>]+)", re.I)
# A DOI inside a lower-cased reference list, also up to a comma or semicolon between entries.
IN_LIST = re.compile(rf"{PREFIX}[^\s\"<>,;]+")
# An input that is a DOI, with or without its `doi:` or resolver prefix (`sources.resolve.classify`).
INPUT = re.compile(rf"{URL_PREFIX.pattern}?{PREFIX}\S+$", re.I)
# A DOI that names an arXiv paper.
ARXIV = re.compile(r"^10\.48550/arxiv\.(.+)$", re.I)
# Where a sentence mentions a DOI ("DOI: 10.1145/..."): front matter, never a finding.
MENTION = r"\bDOI:?\s*10\."
