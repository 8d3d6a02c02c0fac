"""The one `zendo` command. Every subcommand turns bad input into a one-line error, never a traceback."""
from __future__ import annotations

import json
import sys
from functools import wraps

import click

from .scene import SceneError, load_scene


class UserError(click.ClickException):
    """A clear one-line error (exit 2 by default) for input the user can fix."""

    exit_code = 2

    def show(self, file=None) -> None:  # one line, no usage dump
        click.echo(f"error: {self.format_message()}", err=True)


def friendly(fn):
    """Turn the domain's own error types into UserError so nothing reaches the user as a traceback."""

    @wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (SceneError, ValueError, OSError) as exc:
            raise UserError(str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__) from None

    return wrapper


def emit(doc) -> None:
    click.echo(json.dumps(doc, indent=2))


class OneLineErrors(click.Group):
    """Click's own usage errors (a bad or missing option, an unknown command) as one line too."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            if isinstance(exc, getattr(click.exceptions, "NoArgsIsHelpError", ())):
                raise  # `zendo log` alone: its help, as click prints it
            raise UserError(exc.format_message()) from None


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="zendo-table")
def main() -> None:
    """Zendo table assistant: see the table, mark koans, answer questions, find counterexamples."""


@main.command()
@click.argument("scene_path", metavar="SCENE.json")
@click.option("--band-mm", type=float, default=None, help="Judgment band for mm predicates (default 0.4).")
@click.option("--band-deg", type=float, default=None, help="Judgment band for angle predicates (default 3).")
@friendly
def relations(scene_path: str, band_mm: float | None, band_deg: float | None) -> None:
    """Print every terminology predicate of every koan in SCENE.json, with borderline ones listed."""
    from .facts import DEFAULT_BAND
    from .relations import RelationsConfig, relations_report

    for name, value in (("--band-mm", band_mm), ("--band-deg", band_deg)):
        if value is not None and not 0 <= value <= 1000:  # also refuses nan
            raise UserError(f"{name} {value} is out of range (0-1000)")
    band = dict(DEFAULT_BAND)
    if band_mm is not None:
        band["mm"] = band_mm
    if band_deg is not None:
        band["deg"] = band_deg
    scene = load_scene(scene_path)
    emit(relations_report(scene, RelationsConfig(band=band)))


#: Modules that add their own subcommands: each defines `register(group)`. Keeping them apart
#: keeps this file small and lets each area (rules, vision, server ...) own its commands.
PLUGINS = (
    "zendo.cli_rules",
    "zendo.cli_counter",
    "zendo.cli_bench",
    "vision.cli",
    "vision.cli_perception",
    "vision.cli_classify",
    "calibration.cli",
    "server.cli",
)


def _register_plugins() -> None:
    import importlib

    for name in PLUGINS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name in (name, name.rsplit(".", 1)[0]):
                continue  # that area is not built yet
            raise
        module.register(main)


if __name__ == "__main__":  # pragma: no cover - `python -m zendo.cli`: use the one true module
    from zendo.cli import main as _main

    sys.exit(_main())
elif __name__ == "zendo.cli":
    # Only as itself: a worker process that `python -m zendo.cli --workers N` spawns runs this file
    # again as `__mp_main__`, and registering from there imported the plugins while they were
    # still importing this module (a circular import that ended every worker).
    _register_plugins()
