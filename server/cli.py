"""`zendo serve`: the dashboard on the demo table (or a camera, a recording, a scene file)."""
from __future__ import annotations

import logging
import os
import socket

import click


def lan_address() -> str:
    """This machine's address on the local network (for phones); 127.0.0.1 if there is none."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("10.255.255.255", 1))  # no packet is sent: this only picks the outgoing interface
        return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        s.close()


def register(group: click.Group) -> None:
    from zendo.cli import UserError

    @group.command()
    @click.option("--source", default="demo", show_default=True,
                  help="demo | realsense | FILE.db3 (a recording) | FILE.json (a scene).")
    @click.option("--rule", default=None, help="The secret rule, set at start (the Master can also type it).")
    @click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535))
    @click.option("--host", default="0.0.0.0", show_default=True, help="Address to listen on (0.0.0.0: phones on the LAN).")
    @click.option("--log", "log_path", default="runs/zendo-games.sqlite", show_default=True,
                  help="The SQLite game log (every event of every game).")
    @click.option("--view", type=click.Choice(["camera", "topdown"]), default="camera", show_default=True,
                  help="How a known table is drawn: the synthetic camera, or from straight above.")
    @click.option("--auto-mark", is_flag=True, help="Mark a koan as soon as a student says \"Master\".")
    @click.option("--workers", type=click.IntRange(1, 64), default=1, show_default=True,
                  help="Processes reading a camera's frames at once (every frame instead of every fifth; 12 on a 16-core GPU machine).")
    def serve(source, rule, port, host, log_path, view, auto_mark, workers):
        """Start the dashboard; print the Master's link (token) and the students' link with a QR code."""
        import segno

        from zendo.game import GameError
        from zendo.scene import SceneError
        from zendo.store import StoreError

        from .app import create_app

        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # request lines would print the Master's token
        addr = "127.0.0.1" if host in ("127.0.0.1", "localhost") else lan_address()
        students = f"http://{addr}:{port}/"
        try:  # werkzeug prints a bad address or a port in use over several lines: say it in one
            with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind((host, port))
        except OSError as exc:
            raise UserError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
        try:
            app = create_app({"SOURCE": source, "RULE": rule, "LOG_PATH": log_path, "VIEW": view,
                              "AUTO_MARK": auto_mark, "PUBLIC_URL": students, "WORKERS": workers})
        except (GameError, SceneError, StoreError, ValueError, OSError, RuntimeError) as exc:
            msg = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
            readings = (getattr(exc, "info", None) or {}).get("readings") if isinstance(exc, GameError) else None
            if readings:  # say which readings --rule may choose from
                msg += ": " + " | ".join(readings)
            raise UserError(msg) from None
        token = app.config["MASTER_TOKEN"]
        svc = app.extensions["zendo"]
        click.echo(f"Zendo dashboard on {source} — game {svc.game_id}, log {log_path}")
        click.echo(f"  Master:   http://{addr}:{port}/master?token={token}")
        if "ZENDO_MASTER_TOKEN" not in os.environ:
            click.echo("            (a new token each start; set ZENDO_MASTER_TOKEN to keep one)")
        click.echo(f"  Students: {students}")
        try:
            segno.make(students, error="m").terminal(compact=True)
        except Exception:  # noqa: BLE001 - a terminal that cannot draw it still has the link
            pass
        from werkzeug.serving import run_simple

        run_simple(host, port, app, threaded=True, use_reloader=False, use_debugger=False)

    @group.group("log")
    def log_group():
        """The game log: export games as JSON Lines, import them back."""

    @log_group.command("export")
    @click.argument("db", metavar="LOG.sqlite")
    @click.argument("out", metavar="OUT.jsonl", required=False)
    @click.option("--game", "games", multiple=True, help="Only this game (repeatable); default: every game.")
    def export(db, out, games):
        """Write games from LOG.sqlite as JSON Lines (to OUT.jsonl, or standard output)."""
        from zendo.store import Store, StoreError

        try:
            store = Store(db, create=False)
            if out:
                with open(out, "w", encoding="utf-8") as fh:
                    n = store.export_jsonl(fh, games or None)
                click.echo(f"wrote {n} lines to {out}", err=True)
            else:
                store.export_jsonl(click.get_text_stream("stdout"), games or None)
        except (StoreError, OSError) as exc:
            raise UserError(str(exc).splitlines()[0]) from None

    @log_group.command("import")
    @click.argument("src", metavar="IN.jsonl")
    @click.argument("db", metavar="LOG.sqlite")
    def import_(src, db):
        """Add the games in IN.jsonl to LOG.sqlite (all or nothing)."""
        from zendo.store import Store, StoreError

        try:
            with open(src, encoding="utf-8") as fh:
                lines = fh.read().splitlines(keepends=True)
        except FileNotFoundError:
            raise UserError(f"{src}: no such file") from None
        except UnicodeDecodeError as exc:
            raise UserError(f"{src}: not UTF-8 text (byte {exc.start})") from None
        except OSError as exc:
            raise UserError(f"{src}: cannot read ({exc.strerror or exc.__class__.__name__})") from None
        try:
            store = Store(db)
            ids = store.import_jsonl(lines, name=src)
            click.echo(f"imported {len(ids)} game(s): {', '.join(ids)}")
        except (StoreError, OSError) as exc:
            raise UserError(str(exc).splitlines()[0]) from None
