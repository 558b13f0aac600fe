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
# The alias claims are read in vault/aliases.py (the survey maps former ids too); alias_map keeps its name here.
from papervault.vault.aliases import alias_map, claims as _claims  # noqa: F401
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
