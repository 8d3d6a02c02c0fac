"""parse_rule: the one entry from text (English or Spanish) to a Rule, and the seeds' rules."""
from __future__ import annotations

from . import ast as A
from .errors import RuleAmbiguous, RuleSyntaxError
from .legality import check_legal
from .parser import normalise, parse_condition, readings
from .rule import Rule
from .spanish import looks_spanish, to_english

_HEAD = "A koan has the Buddha-nature if and only if "
_HEAD_ES = "Un koan tiene la naturaleza búdica si y solo si "

#: Seed 001, "Rules For Beginners", word for word after the shared opening.
BEGINNER_RULES: list[str] = [_HEAD + s for s in (
    "all its pieces are the same color.",
    "all its pieces are the same size.",
    "all its pieces are flat.",
    "it contains at least one red piece.",
    "it contains at least one small piece.",
    "it contains at least one piece of each of the four colors.",
    "it contains no green pieces.",
    "it contains no large pieces.",
    "it contains at least one medium yellow piece.",
    "it contains exactly two pieces.",
    "it contains two or more upright pieces.",
    "it contains a piece pointing at another piece.",
    "it contains an ungrounded piece.",
    "it contains at least one green piece and at least one blue piece.",
    "it contains at least two pieces that are touching each other.",
)]

#: Seed 003, "Reglas para principiantes", word for word after the shared opening.
BEGINNER_RULES_ES: list[str] = [_HEAD_ES + s for s in (
    "todas sus piezas son del mismo color.",
    "todas sus piezas son del mismo tamaño.",
    "todas sus piezas son planas.",
    "contiene al menos una pieza roja.",
    "contiene al menos una pequeña pieza.",
    "contiene al menos una pieza de cada uno de los cuatro colores.",
    "no contiene piezas verdes.",
    "no contiene piezas grandes.",
    "contiene al menos una pieza amarilla mediana.",
    "contiene exactamente dos piezas.",
    "contiene dos o más piezas verticales.",
    "contiene una pieza apuntando a otra pieza.",
    "contiene una pieza sin conexión a tierra.",
    "contiene al menos una pieza verde y al menos una pieza azul.",
    "contiene al menos dos piezas que se tocan entre sí.",
)]

#: Seed 000's (and 001's) three example rules.
EXAMPLE_RULES: list[str] = [
    "A koan has the Buddha-nature if and only if it contains one or more green pieces.",
    "A koan has the Buddha-nature if and only if it contains an odd number of pieces pointing at other pieces.",
    "A koan does not have the Buddha-nature if it contains exactly three pieces touching the table; otherwise it does.",
]

#: The same three in seed 003's Spanish.
EXAMPLE_RULES_ES: list[str] = [
    "un koan tiene la naturaleza búdica si y solo si contiene una o más piezas verdes.",
    "un koan tiene la naturaleza búdica si y solo si contiene un número impar de piezas apuntando a otras piezas.",
    "un koan no tiene la naturaleza búdica si contiene exactamente tres piezas que tocan la mesa; de lo contrario, lo hace.",
]


def parse_rule(text: str) -> Rule:
    """The Rule a person's wording means, exactly.

    Raises RuleIllegal (refers outside the koan), RuleSyntaxError (.message, .column: where the
    wording left the language and what could come next), or RuleAmbiguous (.readings: every
    complete reading, each a canonical English rule that parses unambiguously).
    """
    if not isinstance(text, str):
        raise RuleSyntaxError("the rule must be text", 1)
    spanish = looks_spanish(text)
    if spanish:
        english, columns = to_english(text)
    else:
        english, columns = normalise(text), None
    check_legal(english, spanish)
    try:
        kind, cond = parse_condition(english)
    except RuleSyntaxError as e:
        if columns is None:
            raise
        col = columns(e.column)
        raise RuleSyntaxError(f"{e.message.split(' at column')[0].split(';')[0]} at column {col} "
                              f"(read as Spanish: '{english.strip()}'){_tail(e.message)}", col) from None
    negated = kind == "neg"
    options = readings(cond)
    if len(options) > 1:
        raise RuleAmbiguous([A.render_rule(c, negated) for c in options])
    return Rule(options[0], negated)


def _tail(message: str) -> str:
    return message[message.index(";"):] if ";" in message else ""
