"""Pages at the URLs of former paper ids (`papervault rekey`) that send the reader to the paper's new pages.

A renamed paper keeps its old ids in its note (`aliases`), so every build writes, for each of them,
`papers/<old>/note.html` and `papers/<old>/paper.html`: small static HTML pages that mkdocs copies as they
are. They work opened from disk (file://) as well as served: a script replaces the location keeping the
fragment (an old `paper.html#page-3` lands on the same page anchor), a meta refresh covers browsers without
scripts, and a link covers the rest. No plugin and no network is involved.
"""

from __future__ import annotations

import html
import json

from papervault.site.policy import CSP_META, policy, script_hash
from papervault.vault.store import ID_PATTERN

# The page names of a paper on the site (`use_directory_urls: false`): its note and its full text.
PAPER_PAGES = ("note", "paper")


def redirect_pages(aliases: dict[str, str], titles: dict[str, str], with_text: set[str]) -> dict[str, str]:
    """`{site path: HTML}` of the redirects from each former id in `aliases` (old -> current id).

    `titles` names the papers in the pages' text; a paper without full text (`with_text`) has no
    `paper.html`, so its old full-text URL leads to the note."""
    out: dict[str, str] = {}
    for old, new in sorted(aliases.items()):
        if not (isinstance(old, str) and ID_PATTERN.fullmatch(old) and ".." not in old):
            continue   # an alias written by hand that is no id must not become a path of the site
        for name in PAPER_PAGES:
            target = name if name == "note" or new in with_text else "note"
            out[f"papers/{old}/{name}.html"] = redirect_html(f"../{new}/{target}.html", old, new,
                                                             titles.get(new) or new)
    return out


def redirect_html(href: str, old: str, new: str, title: str) -> str:
    """One redirect page to `href` (relative): every value escaped for where it goes (HTML, attribute, script)."""
    attr = html.escape(href, quote=True)
    # In a script element only "</" could end it early; JSON quoting does the rest.
    script = "location.replace(" + json.dumps(href).replace("</", "<\\/") + " + location.hash);"
    # the site's page policy, with this page's one script allowed by its hash (site/policy.py)
    csp = html.escape(policy([script_hash(script)]), quote=True)
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="{CSP_META}" content="{csp}">\n'
        f"<title>{html.escape(title)} (moved)</title>\n"
        '<meta name="robots" content="noindex">\n'
        f'<link rel="canonical" href="{attr}">\n'
        f"<script>{script}</script>\n"
        f'<meta http-equiv="refresh" content="0; url={attr}">\n'
        "</head>\n<body>\n"
        f"<p>This paper's id changed from <code>{html.escape(old)}</code> to <code>{html.escape(new)}</code>: "
        f'<a href="{attr}">{html.escape(title)}</a>.</p>\n'
        "</body>\n</html>\n"
    )
