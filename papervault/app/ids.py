"""Which paper an id names: its current id, or a former one that `papervault rekey` left in the note's
`aliases`. Every front end (the CLI commands, the MCP tools, the app operations) resolves a paper id given
by a person or an agent here, so an old id keeps working everywhere after a rename.

A paper's own id always wins: an alias that is also the id of a paper in the vault is never followed. An
alias that two papers claim (written by hand into both notes) is an error naming both, not a guess.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from papervault.errors import InputError, NotFoundError
from papervault.vault.store import Vault, check_id

NOT_FOUND_FIX = "find ids with `papervault list` (MCP: `list_papers`)"


@dataclass(frozen=True)
class PaperRef:
    """A resolved paper id: `id` is the paper's current id, `given` what was asked for."""

    id: str
    given: str

    @property
    def renamed(self) -> bool:
        return self.id != self.given

    def notice(self) -> str:
        """One line for a reader: `OLD is now NEW`."""
        return f"{self.given} is now {self.id} (renamed by `papervault rekey`)"


def _claims(vault: Vault, wanted: set[str] | None = None) -> dict[str, list[str]]:
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


def _ambiguous(given: str, owners: list[str]) -> InputError:
    return InputError(f"{given!r} is a former id of {len(owners)} papers ({', '.join(sorted(owners))})",
                      fix="use one of their current ids, or remove it from the `aliases` of all but one note")


def resolve_ids(ws, given: Iterable[str]) -> list[PaperRef]:
    """Each of `given` resolved, in order (duplicates kept); every id is checked before any is returned:
    unknown ids are one NotFoundError naming them all, an alias two papers claim is an InputError."""
    vault: Vault = ws.vault
    given = list(given)
    for g in given:
        check_id(g)
    absent = {g for g in given if not vault.has_paper(g)}
    claims = _claims(vault, absent) if absent else {}
    out, unknown = [], []
    for g in given:
        if g not in absent:
            out.append(PaperRef(g, g))
            continue
        owners = claims.get(g, [])
        if len(owners) > 1:
            raise _ambiguous(g, owners)
        if not owners:
            unknown.append(g)
            continue
        out.append(PaperRef(owners[0], g))
    if unknown:
        raise NotFoundError(f"no paper {', '.join(map(repr, dict.fromkeys(unknown)))} in the vault",
                            fix=NOT_FOUND_FIX)
    return out


def resolve_id(ws, given: str) -> PaperRef:
    """One paper id resolved (see `resolve_ids`)."""
    return resolve_ids(ws, [given])[0]


def alias_map(vault: Vault) -> dict[str, str]:
    """`{former id: current id}` of every alias that names exactly one paper and is no paper's own id
    (for callers that map many ids at once, e.g. the ids a survey cites)."""
    own = set(vault.paper_ids())
    return {a: owners[0] for a, owners in _claims(vault).items() if len(owners) == 1 and a not in own}
