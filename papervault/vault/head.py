"""A note's head (its `# title` heading and the `**Authors:**` / `**Published:**` lines) made again from the
paper's record, after `edit`, `enrich` or a merge changed it. Only the vault is read and written.
"""

from __future__ import annotations

import re

from papervault.models import PaperMeta


def refresh_head(vault, pid: str) -> bool:
    """Make the note's own head (title, Authors, Published) say what its record says now, after `edit`,
    `enrich` or a merge changed the record; a body a person edited stays as they left it. True if written."""
    if vault.is_edited(pid):
        return False
    meta, body = vault.read_note(pid)
    fresh = refresh_note_head(body, meta)
    if fresh == body:
        return False
    vault.write_note(meta, fresh)
    return True


_HEAD_FIELD = re.compile(r"^\*\*(Authors|Published):\*\*")
_HEAD_LABEL = re.compile(r"^\*\*[^*\n]+:\*\*")


def refresh_note_head(body: str, meta: PaperMeta) -> str:
    """`body` with the lines the note template makes from the record (the `# title` heading and the
    `**Authors:**` / `**Published:**` lines before the first section) made again from `meta`; the rest of
    the body is kept byte for byte. A head without labelled lines (a metadata-only note) only gets its title."""
    lines = body.split("\n")
    end = next((i for i, line in enumerate(lines) if line.startswith("## ")), len(lines))
    head, rest = lines[:end], lines[end:]
    one_line = lambda s: " ".join(str(s).split())        # noqa: E731 - a title or name never spans lines
    title = next((i for i, line in enumerate(head) if line.startswith("# ")), None)
    if title is not None:
        head[title] = f"# {one_line(meta.title or meta.id)}"
    kept = [line for line in head if not _HEAD_FIELD.match(line)]
    at = next((i for i, line in enumerate(head) if _HEAD_LABEL.match(line)), None)
    if at is None:
        return "\n".join(head + rest)
    published = ", ".join(one_line(x) for x in (meta.venue, meta.year) if x)
    new = ([f"**Authors:** {one_line(', '.join(meta.authors))}  "] if meta.authors else []) + \
          ([f"**Published:** {published}  "] if published else [])
    return "\n".join(kept[:at] + new + kept[at:] + rest)
