"""`zendo counterexample` and `zendo tao`: issue 4's commands (output is for the Master only)."""
from __future__ import annotations

from pathlib import Path

import click

from .cli import UserError, emit, friendly
from .scene import load_scene


def _parse(text: str, what: str):
    """Parse a rule, naming which option was wrong in one line (readings listed when ambiguous)."""
    try:
        from .rules import RuleAmbiguous, RuleError, parse_rule
    except ModuleNotFoundError:
        raise UserError("the rule language (zendo.rules) is not installed") from None
    try:
        return parse_rule(text)
    except RuleAmbiguous as exc:
        readings = " | ".join(str(r) for r in getattr(exc, "readings", []))
        raise UserError(f"{what} can be read more than one way: {readings}") from None
    except RuleError as exc:
        raise UserError(f"{what}: {str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__}") from None


def _stash(table, colors: str | None, trios: int):
    from .counter import Stash
    from .counter.stash import DEFAULT_COLORS

    cols = tuple(c.strip() for c in colors.split(",") if c.strip()) if colors else DEFAULT_COLORS
    from .pieces import PIECE_COLORS

    if not cols:
        raise UserError(f"--colors: no colour in {colors!r}")
    bad = [c for c in cols if c not in PIECE_COLORS]
    if bad:
        raise UserError(f"--colors: unknown colour '{bad[0]}'")
    return Stash.for_table(table, cols, trios)


_common = [
    click.option("--table", "table_path", metavar="TABLE.json", default=None, help="The table (zendo-scene/1)."),
    click.option("--style", type=click.Choice(["helpful", "tight-lipped"]), default="helpful", show_default=True),
    click.option("--max-pieces", type=click.IntRange(1, 6), default=4, show_default=True,
                 help="Largest koan the search builds."),
    click.option("--colors", default=None, help="Stash colours, comma-separated (default red,yellow,green,blue)."),
    click.option("--trios", type=click.IntRange(0, 20), default=5, show_default=True, help="Trios per colour in the stash."),
    click.option("--svg", "svg_path", metavar="FILE.svg", default=None, help="Write a top-down picture of the koan."),
]


def _with_common(fn):
    for opt in reversed(_common):
        fn = opt(fn)
    return fn


@click.command()
@click.option("--rule", "rule_text", required=True, help="The Master's secret rule.")
@click.option("--guess", "guess_text", required=True, help="The student's official guess.")
@_with_common
@friendly
def counterexample(rule_text, guess_text, table_path, style, max_pieces, colors, trios, svg_path) -> None:
    """A koan that disproves GUESS under the secret RULE: one on the table, or one to build.

    Prints {"on_table", "scene", "rule_mark", "guess_mark", "instructions"} or
    {"found": false, "searched": ...}. For the Master's eyes only.
    """
    from .counter import SearchConfig, find_counterexample

    rule, guess = _parse(rule_text, "--rule"), _parse(guess_text, "--guess")
    table = load_scene(table_path) if table_path else None
    res = find_counterexample(rule, guess, table, style, _stash(table, colors, trios),
                              SearchConfig(max_pieces=max_pieces))
    doc = res.to_dict(with_svg=False)
    if svg_path and res.found:
        Path(svg_path).write_text(res.svg() + "\n", encoding="utf-8")
        doc["picture"] = svg_path
    emit(doc)


@click.command()
@click.option("--rule", "rule_texts", multiple=True, required=True, help="A candidate rule (repeat the option).")
@_with_common
@friendly
def tao(rule_texts, table_path, style, max_pieces, colors, trios, svg_path) -> None:
    """Zendo-Tao: which RULEs fit the marked koans of TABLE, and a koan two viable ones mark differently."""
    from .counter import SearchConfig
    from .counter.tao import tao_report
    from .scene import Scene

    rules = [(t, _parse(t, f"--rule #{i + 1}")) for i, t in enumerate(rule_texts)]
    table = load_scene(table_path) if table_path else Scene()
    doc = tao_report(rules, table, style, _stash(table, colors, trios), SearchConfig(max_pieces=max_pieces))
    if svg_path and doc.get("split"):
        from .counter.picture import koan_svg
        from .scene import scene_from_dict

        Path(svg_path).write_text(koan_svg(scene_from_dict(doc["split"]["scene"]), "split koan") + "\n",
                                  encoding="utf-8")
        doc["picture"] = svg_path
    emit(doc)


def register(group: click.Group) -> None:
    group.add_command(counterexample)
    group.add_command(tao)
