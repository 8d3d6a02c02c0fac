"""Questions asked aloud or typed: "Master, is the small green piece pointing at the large red?"

`parse_question(text, pieces, selected)` finds the kind of question and the pieces it names. A
piece is named by its label (p3), or by size and colour ("the small green one"), optionally "in
koan k2"; "this" and "that" mean the pieces tapped on the picture. A description that fits more
than one piece is answered with a question back, never a guess.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from zendo.pieces import PIECE_COLORS, SIZES

MAX_QUESTION = 300

_SIZE_WORDS = {"small": "small", "little": "small", "tiny": "small", "medium": "medium", "middle": "medium",
               "large": "large", "big": "large", "biggest": "large"}
_COLOR_WORDS = {c: c for c in PIECE_COLORS} | {"grey": "black", "gray": "black"}
_NOUNS = {"piece", "pieces", "pyramid", "pyramids", "one"}
_DEICTIC = {"this", "that", "it"}


class QuestionUnclear(ValueError):
    """The question cannot be answered as asked; the message says what to add (one line)."""


@dataclass(frozen=True)
class Parsed:
    kind: str
    a: str
    b: str | None


def _kind(words: list[str], text: str) -> str:
    t = " ".join(words)
    if "same direction" in t or "same way" in t:
        return "same_direction"
    point = any(w.startswith("point") for w in words)
    touch = any(w.startswith("touch") for w in words)
    which = any(w in ("which", "what", "whom") for w in words)
    if touch and ("table" in words or "ground" in words):
        return "grounded"
    if "grounded" in words:
        return "grounded"
    if which and touch:
        return "touching_which"
    if which and point:
        return "pointing_which"
    if point:
        return "pointing"
    if touch:
        return "touching"
    raise QuestionUnclear("ask about touching, pointing, the same direction, or touching the table")


def parse_question(text: str, pieces: list[dict], selected: list[str] | None = None) -> Parsed:
    """pieces: [{'id', 'color', 'size', 'koan'}] as the student sees them (public)."""
    if not isinstance(text, str) or not text.strip():
        raise QuestionUnclear("say or type a question")
    if len(text) > MAX_QUESTION:
        raise QuestionUnclear(f"that question is too long (at most {MAX_QUESTION} characters)")
    selected = list(selected or [])
    words = re.findall(r"[a-z0-9]+", text.lower())
    kind = _kind(words, text)
    ids = {p["id"].lower(): p["id"] for p in pieces}
    koans = {str(p.get("koan") or "").lower() for p in pieces}
    # "in koan 3" / "in k3" limits the descriptions that follow and precede
    koan = None
    for i, w in enumerate(words):
        if w == "koan" and i + 1 < len(words) and f"k{words[i + 1]}" in koans:
            koan = f"k{words[i + 1]}"
        elif re.fullmatch(r"k\d+", w) and w in koans:
            koan = w
    mentions: list[str] = []
    i = 0
    used_sel = 0
    while i < len(words):
        w = words[i]
        if w in ids:
            mentions.append(ids[w])
            i += 1
            continue
        if w in _DEICTIC and not (w == "it" and mentions):
            if used_sel < len(selected):
                mentions.append(selected[used_sel])
                used_sel += 1
            i += 1
            continue
        size = color = None
        j = i
        while j < len(words) and (words[j] in _SIZE_WORDS or words[j] in _COLOR_WORDS):
            if words[j] in _SIZE_WORDS:
                size = _SIZE_WORDS[words[j]]
            else:
                color = _COLOR_WORDS[words[j]]
            j += 1
        if j > i and (j < len(words) and words[j] in _NOUNS or color is not None):
            mentions.append(_resolve(size, color, koan, pieces))
            i = j + (1 if j < len(words) and words[j] in _NOUNS else 0)
            continue
        i += 1
    need = 1 if kind in ("touching_which", "pointing_which", "grounded") else 2
    while len(mentions) < need and used_sel < len(selected):
        mentions.append(selected[used_sel])
        used_sel += 1
    if len(mentions) < need:
        raise QuestionUnclear("which piece" + ("s" if need == 2 else "") +
                              "? Tap " + ("two pieces" if need == 2 else "a piece") +
                              " or name them (for example 'the small green piece')")
    return Parsed(kind, mentions[0], mentions[1] if need == 2 else None)


def _resolve(size: str | None, color: str | None, koan: str | None, pieces: list[dict]) -> str:
    fits = [p for p in pieces if (size is None or p["size"] == size) and (color is None or p["color"] == color)
            and (koan is None or p.get("koan") == koan)]
    what = " ".join(x for x in (size, color) if x) + " piece"
    if not fits:
        raise QuestionUnclear(f"there is no {what}{' in koan ' + koan if koan else ''} on the table")
    if len(fits) > 1:
        where = ", ".join(f"{p['id']} in {p.get('koan') or 'no koan'}" for p in fits[:6])
        raise QuestionUnclear(f"there are {len(fits)} {what}s ({where}): which one? Tap it or say its label")
    return fits[0]["id"]


__all__ = ["parse_question", "Parsed", "QuestionUnclear", "MAX_QUESTION", "SIZES"]
