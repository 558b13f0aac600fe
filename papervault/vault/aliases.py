"""Former paper ids: the `aliases` a note keeps after `papervault rekey`, read back as claims and as a map
from each former id to its paper. app/ids.py resolves the ids people and agents give with these; the survey
maps the ids it cites. Only the vault is read.
"""

from __future__ import annotations

from papervault.vault.store import Vault


def claims(vault: Vault, wanted: set[str] | None = None) -> dict[str, list[str]]:
    """`{former id: [papers whose note lists it in aliases]}`, for the `wanted` ones (None: every alias).
    A note is parsed only when its text holds one of the wanted ids, so a miss costs one read per note."""
    out: dict[str, list[str]] = {}
    for pid in vault.paper_ids():
        if wanted is not None:
            try:
                text = vault.note_path(pid).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if not any(w in text for w in wanted):
                continue
        try:
            aliases = vault.read_meta(pid).aliases
        except Exception:  # noqa: BLE001 - an unreadable note claims no alias (doctor reports it)
            continue
        for a in dict.fromkeys(aliases):
            if isinstance(a, str) and a != pid and (wanted is None or a in wanted):
                out.setdefault(a, []).append(pid)
    return out


def alias_map(vault: Vault) -> dict[str, str]:
    """`{former id: current id}` of every alias that names exactly one paper and is no paper's own id
    (for callers that map many ids at once, e.g. the ids a survey cites)."""
    own = set(vault.paper_ids())
    return {a: owners[0] for a, owners in claims(vault).items() if len(owners) == 1 and a not in own}
