"""`zendo bench`: the figures the README reports, from one command."""
from __future__ import annotations

import importlib

import click

from .cli import emit

SUITES = {
    "relations": ("zendo.bench", "bench_relations"),
    "rules": ("zendo.rules.bench", "run"),
    "counterexamples": ("zendo.counter.bench", "run"),
    "pipeline": ("vision.bench", "run"),
}


@click.command()
@click.argument("suites", nargs=-1, type=click.Choice(sorted(SUITES)))
def bench(suites: tuple[str, ...]) -> None:
    """Measure speed (relations, rules, counterexamples, pipeline); prints JSON. Default: relations."""
    out = {}
    for name in suites or ("relations",):
        module, fn = SUITES[name]
        try:
            run = getattr(importlib.import_module(module), fn)
        except (ModuleNotFoundError, AttributeError):
            out[name] = {"error": f"{module}.{fn} is not available in this build"}
            continue
        out[name] = run()
    emit(out)


def register(group: click.Group) -> None:
    group.add_command(bench)
