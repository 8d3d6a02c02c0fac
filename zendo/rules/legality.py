"""Legality: a koan may not refer to anything outside itself, in space or in time (seed 000/001).

Checked before parsing, on words: a rule that mentions players, absolute directions, other koans,
time or the order of placement, the stones, or patterns/edges of the table is refused with the
restriction it breaks, quoted from the seed (seed 003's Spanish for a Spanish rule). Checking
words rather than the parse means an illegal rule is refused even when it is also outside the
grammar, which is the more useful answer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import RuleIllegal


@dataclass(frozen=True)
class Restriction:
    name: str
    en: str
    es: str
    patterns: tuple[str, ...]


RESTRICTIONS = (
    Restriction(
        "players",
        "No Outside References: You may not make a rule that specifies whether or not a piece is pointing at "
        "one of the players, because players are things that exist outside of koans.",
        "Sin referencias externas: no puede establecer una regla que especifique si una pieza apunta o no a uno "
        "de los jugadores, porque los jugadores son cosas que existen fuera de los koans.",
        (r"players?", r"students?", r"masters?", r"me", r"you", r"him", r"her", r"them", r"person", r"people",
         r"whoever", r"somebody", r"someone", r"i"),
    ),
    Restriction(
        "absolute direction",
        "No Outside References: You may not make a rule that specifies whether or not a piece is pointing in an "
        "absolute direction (say, toward one side of the room), because absolute directions are also things that "
        "exist outside of koans.",
        "Sin referencias externas: No puede hacer una regla que especifique si una pieza apunta en una dirección "
        "absoluta (digamos, hacia un lado de la habitación), porque las direcciones absolutas también son cosas "
        "que existen fuera de los koans.",
        (r"north\w*", r"south\w*", r"east\w*", r"west\w*", r"room", r"window", r"door", r"walls?", r"ceiling",
         r"sky", r"sun", r"compass", r"clockwise", r"counterclockwise", r"anticlockwise", r"toward(s)?",
         r"(to|on) the (left|right)", r"leftwards?", r"rightwards?", r"absolute"),
    ),
    Restriction(
        "other koans",
        "No References to Other Koans: You may not make a rule in which the status of a koan is affected by the "
        "contents of other koans on the table.",
        "Sin referencias a otros koans: no puede establecer una regla en la que el estado de un koan se vea "
        "afectado por el contenido de otros koans en la mesa.",
        (r"koans", r"other koan", r"another koan", r"any koan", r"every koan", r"each koan", r"previous koan",
         r"next koan", r"last koan", r"that koan", r"this koan"),
    ),
    Restriction(
        "time",
        "No References to Time: You may not make a rule that refers to pieces which used to be in a koan, because "
        "a koan's past state is something that exists outside of that koan in time. You may not make a rule that "
        "has something to do with the order in which pieces were added to a koan.",
        "Sin referencias al tiempo: No puede hacer una regla que se refiera a piezas que solían estar en un koan, "
        "porque el estado pasado de un koan es algo que existe fuera de ese koan en el tiempo. No puede establecer "
        "una regla que tenga algo que ver con el orden en que se agregaron las piezas a un koan.",
        (r"used to", r"placed", r"added", r"put", r"built", r"moved", r"removed", r"was", r"were", r"been",
         r"before", r"after", r"earlier", r"later", r"previously", r"originally", r"yesterday", r"ago", r"order",
         r"first placed", r"placed first", r"last placed", r"placed last", r"time", r"minutes?", r"seconds?",
         r"turns?"),
    ),
    Restriction(
        "stones",
        "No References to Stones: The black & white marking stones are not actually contained within koans, so "
        "you may not make a rule that refers to them.",
        "Sin referencias a piedras: las piedras de marcado en blanco y negro no están contenidas en los koans, por "
        "lo que no puede establecer una regla que se refiera a ellas.",
        (r"stones?", r"markers?", r"marking", r"tokens?"),
    ),
    Restriction(
        "table",
        "Referring to the Table: you may not make a rule that refers to some pattern or design on the playing "
        "surface, nor may you make a rule that refers to the edges of the surface.",
        "Refiriéndose a la Mesa: no puede hacer una regla que se refiera a algún patrón o diseño en la superficie "
        "de juego, ni tampoco puede hacer una regla que se refiera a los bordes de la superficie.",
        (r"edges?", r"patterns?", r"designs?", r"tablecloth", r"cloth", r"mat", r"grain", r"stripes?",
         r"squares?", r"lines?", r"(centre|center|middle|corner|side|end)s? of the (table|surface)",
         r"surface"),
    ),
)

_COMPILED = [(r, re.compile(r"(?<![\w'-])(" + "|".join(r.patterns) + r")(?![\w'-])")) for r in RESTRICTIONS]


def illegal_reference(text: str) -> Restriction | None:
    """The first restriction a (lower-cased, English) rule text breaks, if any."""
    low = text.lower()
    for r, rx in _COMPILED:
        if rx.search(low):
            return r
    return None


def check_legal(text: str, spanish: bool = False) -> None:
    r = illegal_reference(text)
    if r is not None:
        raise RuleIllegal(r.es if spanish else r.en, r.name)
