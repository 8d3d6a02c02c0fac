"""`zendo rule` and `zendo mark`: the rule language on the command line.

Exit codes: 0 understood; 2 not in the language ({"error", "at"}) or a bad scene; 3 ambiguous
({"clarify": [...readings]}); 4 illegal ({"illegal": restriction}). Output is JSON on stdout;
a bad scene is one line on stderr, never a traceback.
"""
from __future__ import annotations

import json
import sys

import click


def emit(doc) -> None:
    from .cli import emit as _emit

    _emit(doc)


def UserError(message: str):  # noqa: N802 - the cli's exception, imported late (cli imports this module)
    from .cli import UserError as _UserError

    return _UserError(message)


def _rule_or_exit(text: str):
    from .rules import RuleAmbiguous, RuleIllegal, RuleSyntaxError, parse_rule

    try:
        return parse_rule(text)
    except RuleSyntaxError as e:
        emit({"error": str(e), "at": e.column})
        sys.exit(2)
    except RuleAmbiguous as e:
        emit({"clarify": e.readings})
        sys.exit(3)
    except RuleIllegal as e:
        emit({"illegal": e.restriction})
        sys.exit(4)


def _load_rulings(path: str | None) -> dict:
    """Rulings file: a JSON list of {"predicate", "pieces", "value"} (the borderline dicts, decided)."""
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        rulings = {(d["predicate"], *d["pieces"]): d["value"] for d in data}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{path}: not a rulings file ({exc.__class__.__name__})") from None
    bad = [k for k, v in rulings.items() if not isinstance(v, bool)]
    if bad:
        raise UserError(f"{path}: the ruling on {bad[0][0]} {', '.join(map(str, bad[0][1:]))} must be true or false")
    return rulings


def register(group: click.Group) -> None:
    @group.command("rule")
    @click.argument("text")
    def rule_cmd(text: str) -> None:
        """Check a rule (English or Spanish) and print its canonical wording."""
        rule = _rule_or_exit(text)
        emit({"canonical": rule.canonical()})

    @group.command("mark")
    @click.option("--rule", "rule_text", required=True, help="The rule, as the Master would say it.")
    @click.option("--rulings", "rulings_path", default=None, help="JSON list of the Master's rulings on borderline predicates.")
    @click.argument("scene_path", metavar="SCENE.json")
    def mark_cmd(rule_text: str, rulings_path: str | None, scene_path: str) -> None:
        """Mark every koan of SCENE.json by the rule, with witnesses and judgment calls (Master only)."""
        from .relations import table_facts
        from .rules import mark
        from .scene import SceneError, load_scene

        rule = _rule_or_exit(rule_text)
        rulings = _load_rulings(rulings_path)
        try:
            scene = load_scene(scene_path)
            _, facts = table_facts(scene)
        except (SceneError, ValueError, OSError) as exc:
            raise UserError(str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__) from None
        emit({"koans": [mark(rule, f, rulings).to_dict() for f in facts]})
