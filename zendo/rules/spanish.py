"""Spanish rules, by translation into the English rule language (one grammar, one meaning).

Seed 003 words the beginner rules in Spanish; a phrase table maps Spanish words and phrases to
English ones (longest phrase first), then two fixes make it English word order: adjectives after
the noun move before it ("pieza amarilla mediana" → "yellow medium piece"), and the article "una"
becomes "one" after a quantifier ("al menos una" → "at least one"). Every English word remembers
the column of the Spanish word it came from, so errors point into what the person typed.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Callable

from .parser import _IGNORED, scan

_WORD = re.compile(r"[a-zñáéíóúü0-9]+(?:'[a-z]+)?(?:-[a-zñáéíóúü]+)*|[()]")


def strip_accents(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")


def _table() -> dict[tuple[str, ...], tuple[str, ...]]:
    rows: dict[str, str] = {
        # the rule's frame
        "un koan tiene la naturaleza budica": "a koan has the buddha-nature",
        "un koan tiene la naturaleza de buda": "a koan has the buddha-nature",
        "un koan no tiene la naturaleza budica": "a koan does not have the buddha-nature",
        "un koan no tiene la naturaleza de buda": "a koan does not have the buddha-nature",
        "si y solo si": "if and only if", "si y solamente si": "if and only if", "sii": "iff", "si": "if",
        "a menos que": "unless", "salvo que": "unless", "excepto si": "unless",
        "de lo contrario lo hace": "otherwise it does", "en caso contrario lo hace": "otherwise it does",
        "de lo contrario si": "otherwise it does", "si no lo hace": "otherwise it does",
        "no es cierto que": "it is not the case that",
        # contains
        "contiene": "it contains", "tiene": "it contains", "hay": "there are",
        "no contiene ninguna": "it contains no", "no contiene ningun": "it contains no",
        "no contiene ninguno": "it contains no", "no contiene": "it contains no",
        "no hay": "there are no", "no hay ninguna": "there are no",
        # quantities
        "al menos": "at least", "como minimo": "at least", "por lo menos": "at least",
        "como maximo": "at most", "a lo sumo": "at most", "como mucho": "at most",
        "exactamente": "exactly", "justo": "exactly", "mas de": "more than", "menos de": "fewer than",
        "o mas": "or more", "o menos": "or fewer", "ninguna": "no", "ningun": "no", "ninguno": "no",
        "cero": "zero", "un numero impar de": "an odd number of", "un numero par de": "an even number of",
        "es impar": "is odd", "es par": "is even", "impar": "odd", "par": "even",
        "un": "a", "una": "a", "uno": "a", "dos": "two", "tres": "three", "cuatro": "four", "cinco": "five",
        "seis": "six", "siete": "seven", "ocho": "eight", "nueve": "nine", "diez": "ten", "once": "eleven",
        "doce": "twelve",
        "el mismo numero de": "the same number of", "la misma cantidad de": "the same number of",
        "tantas": "as many", "tantos": "as many", "como": "as", "mas": "more", "menos": "fewer",
        "la mayoria de": "the majority of", "la mayor parte de": "the majority of",
        "mas de la mitad de": "more than half of", "una pluralidad de": "a plurality of",
        "la pluralidad de": "the plurality of",
        "el numero de pips de": "the pip count of", "la suma de pips de": "the pip count of",
        "la cantidad de pips de": "the pip count of", "el numero de pips": "its pip count",
        "la suma de pips": "its pip count", "la cantidad de pips": "its pip count",
        "el numero de": "the number of", "la cantidad de": "the number of",
        "colores": "colours", "color": "colour", "tamanos": "sizes", "tamano": "size",
        "colores distintos": "different colours", "colores diferentes": "different colours",
        "tamanos distintos": "different sizes", "tamanos diferentes": "different sizes",
        "de cada uno de los cuatro colores": "of each of the four colours",
        "de cada uno de los tres tamanos": "of each of the three sizes",
        "de cada color": "of each colour", "de cada tamano": "of each size",
        # all / every
        "todas sus piezas": "all its pieces", "todas las piezas": "all its pieces",
        "todos sus": "all its", "todas sus": "all its", "todas": "all", "todos": "all", "cada": "every",
        "ninguna de sus": "none of its", "ninguna de las": "none of its", "si las hay": "if any",
        "son del mismo color": "are the same colour", "son del mismo tamano": "are the same size",
        "son de la misma orientacion": "are the same orientation",
        "tienen el mismo color": "have the same colour", "tienen el mismo tamano": "have the same size",
        "apuntan en la misma direccion": "point in the same direction",
        "apuntan todas en la misma direccion": "point in the same direction",
        "son": "are", "es": "is", "estan": "are", "esta": "is", "y todas son": "and they are all",
        # pieces and their properties
        "pieza": "piece", "piezas": "pieces", "piramide": "piece", "piramides": "pieces",
        "roja": "red", "rojo": "red", "rojas": "red", "rojos": "red",
        "amarilla": "yellow", "amarillo": "yellow", "amarillas": "yellow", "amarillos": "yellow",
        "verde": "green", "verdes": "green", "azul": "blue", "azules": "blue",
        "negra": "black", "negro": "black", "negras": "black", "negros": "black",
        "blanca": "white", "blanco": "white", "blancas": "white", "blancos": "white",
        "naranja": "orange", "naranjas": "orange", "morada": "purple", "moradas": "purple",
        "purpura": "purple", "cian": "cyan", "transparente": "clear", "transparentes": "clear",
        "pequena": "small", "pequeno": "small", "pequenas": "small", "pequenos": "small",
        "mediana": "medium", "mediano": "medium", "medianas": "medium", "medianos": "medium",
        "grande": "large", "grandes": "large",
        "plana": "flat", "planas": "flat", "plano": "flat", "planos": "flat", "tumbada": "flat",
        "tumbadas": "flat", "acostada": "flat", "acostadas": "flat",
        "vertical": "upright", "verticales": "upright", "de pie": "upright", "erguida": "upright",
        "erguidas": "upright", "rara": "weird", "raras": "weird",
        "sin conexion a tierra": "ungrounded", "sin tocar la mesa": "ungrounded",
        "con conexion a tierra": "grounded", "conectada a tierra": "grounded", "conectadas a tierra": "grounded",
        "mas grande": "largest", "mas grandes": "largest", "mas pequena": "smallest", "mas pequenas": "smallest",
        "mas alta": "highest", "mas altas": "highest", "mas baja": "lowest", "mas bajas": "lowest",
        "con tres pips": "with three pips", "pips": "pips",
        # relations
        "apuntando a": "pointing at", "apuntando hacia": "pointing at", "que apunta a": "that points at",
        "que apuntan a": "that point at", "apunta a": "points at", "apuntan a": "point at",
        "otra pieza": "another piece", "otras piezas": "other pieces", "otra": "another", "otras": "other",
        "que se tocan entre si": "that are touching each other", "que se tocan": "that are touching each other",
        "que tocan la mesa": "that touch the table", "que toca la mesa": "that touches the table",
        "tocando la mesa": "touching the table", "tocando": "touching", "que tocan": "that touch",
        "que toca": "that touches", "tocan": "touch", "toca": "touches", "entre si": "each other",
        "la una a la otra": "each other", "unas a otras": "each other",
        "apilada sobre": "stacked on", "apiladas sobre": "stacked on", "encima de": "stacked on",
        "debajo de": "stacked under", "anidada en": "nested in", "anidadas en": "nested in",
        "dentro de": "nested in", "en una torre con": "in a tower with",
        "apuntando en la misma direccion que": "pointing in the same direction as",
        "apuntando en direccion opuesta a": "pointing in the opposite direction to",
        "mas alta que": "higher than", "mas baja que": "lower than", "mas grande que": "larger than",
        "mas pequena que": "smaller than", "mas altas que": "higher than", "mas bajas que": "lower than",
        "mas grandes que": "larger than", "mas pequenas que": "smaller than",
        "del mismo color que": "the same colour as", "del mismo tamano que": "the same size as",
        # glue
        "que es": "that is", "que son": "that are", "que no es": "that is not", "que no son": "that are not",
        "que": "that", "y": "and", "o": "or", "no": "not", "la mesa": "the table", "de": "of",
        "el": "the", "la": "the", "los": "the", "las": "the", "su": "its", "sus": "its",
        "lo hace": "it does",
        # what legality must see
        "jugador": "player", "jugadores": "players", "maestro": "master", "estudiante": "student",
        "estudiantes": "students", "piedra": "stone", "piedras": "stones", "otro koan": "other koan",
        "otros koans": "other koans", "koans": "koans", "borde": "edge", "bordes": "edges",
        "norte": "north", "sur": "south", "oeste": "west", "habitacion": "room", "patron": "pattern",
        "diseno": "design", "antes": "before", "despues": "after", "colocada": "placed",
        "colocadas": "placed", "puesta": "placed", "orden": "order",
    }
    return {tuple(k.split()): tuple(v.split()) for k, v in rows.items()}


_TABLE = _table()
_LONGEST = max(len(k) for k in _TABLE)
_ADJ = frozenset({"red", "yellow", "green", "blue", "black", "white", "orange", "purple", "cyan", "clear",
                  "small", "medium", "large", "flat", "upright", "weird", "ungrounded", "grounded",
                  "largest", "smallest", "highest", "lowest"})
_SUP = frozenset({"largest", "smallest", "highest", "lowest"})
_MARKERS = frozenset({"contiene", "pieza", "piezas", "tiene", "naturaleza", "todas", "todos", "hay", "ninguna",
                      "mesa", "piramide", "piramides", "jugador", "jugadores", "piedra", "piedras", "budica",
                      "sus", "tocan", "apuntando", "menos", "mas", "exactamente"})


def _tokens(text: str) -> list[tuple[str, int]]:
    return scan(text, _WORD, _IGNORED, strict=False)


def looks_spanish(text: str) -> bool:
    words = {strip_accents(w) for w, _ in _tokens(text.lower())}
    return bool(words & _MARKERS)


def to_english(text: str) -> tuple[str, Callable[[int], int]]:
    """(English text, map from a 1-based English column to the 1-based column in `text`)."""
    low = text.lower()
    toks = _tokens(low)
    keys = [strip_accents(w) for w, _ in toks]
    out: list[tuple[str, int]] = []
    i = 0
    while i < len(toks):
        for n in range(min(_LONGEST, len(toks) - i), 0, -1):
            eng = _TABLE.get(tuple(keys[i:i + n]))
            if eng is not None:
                out.extend((w, toks[i][1]) for w in eng)
                i += n
                break
        else:
            out.append(toks[i])  # unknown: passes through, and the English parser names it
            i += 1
    out = _fix_order(out)
    text_out, starts = "", []
    for w, src in out:
        if text_out:
            text_out += " "
        starts.append((len(text_out), src))
        text_out += w

    def column(col: int) -> int:
        best = 1
        for eng_at, src in starts:
            if eng_at <= col - 1:
                best = src + 1
        return best
    return text_out, column


def _fix_order(words: list[tuple[str, int]]) -> list[tuple[str, int]]:
    w = list(words)
    # adjectives after the noun go before it ("pieza roja" → "red piece"); superlatives lead
    i = 0
    while i < len(w):
        if w[i][0] in ("piece", "pieces"):
            j = i + 1
            while j < len(w) and w[j][0] in _ADJ and not (j + 1 < len(w) and w[j + 1][0] == "than"):
                j += 1
            if j > i + 1:
                adjs = w[i + 1:j]
                sups = [a for a in adjs if a[0] in _SUP]
                rest = [a for a in adjs if a[0] not in _SUP]
                k = i
                while k > 0 and w[k - 1][0] in _ADJ:
                    k -= 1
                w[k:j] = sups + w[k:i] + rest + [w[i]]
                i = j
                continue
        i += 1
    # "una" is "a" unless a quantifier wants a number ("al menos una" → "at least one")
    for i, (word, src) in enumerate(w):
        if word == "a":
            prev = tuple(x for x, _ in w[max(0, i - 2):i])
            nxt = tuple(x for x, _ in w[i + 1:i + 3])
            if prev[-1:] == ("exactly",) or prev in (("at", "least"), ("at", "most"), ("more", "than"),
                                                     ("fewer", "than")) or nxt == ("or", "more") \
                    or nxt == ("or", "fewer"):
                w[i] = ("one", src)
    # comparisons: "más piezas rojas que piezas azules" → "more red pieces than blue pieces"
    for i, (word, src) in enumerate(w):
        if word == "that" and i > 0 and w[i - 1][0] in ("piece", "pieces"):
            before = [x for x, _ in w[:i]]
            last_more = max((k for k, x in enumerate(before) if x == "more"), default=-1)
            last_same = max((k for k in range(len(before) - 2) if before[k:k + 3] == ["the", "same", "number"]),
                            default=-1)
            if last_more >= 0 and "than" not in before[last_more:] and last_more > last_same:
                w[i] = ("than", src)
            elif last_same >= 0 and "as" not in before[last_same:]:
                w[i] = ("as", src)
    return w
