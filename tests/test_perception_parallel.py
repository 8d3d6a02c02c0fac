"""Perception (issue 6), a stream read by several processes (vision/parallel.py): the tables,
settled koans and events are the sequential pipeline's, frame for frame and in order; a worker
that cannot start is a one-line error. Runs on a CPU with the committed weights."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from vision.detect import DEFAULT_WEIGHTS
from zendo.cli import main

DEMO_FRAMES = 12  # the bundled recording's frames; a koan settles within them


def _demo_frames(n: int = DEMO_FRAMES):
    from vision.frames import open_source

    src = open_source("demo")
    try:
        return list(itertools.islice(src.frames(), n))
    finally:
        src.close()


def _reading(r) -> dict:
    """All a frame's result says about the table (its timings apart)."""
    return {"index": r.frame_index, "scene": r.scene.to_dict(), "tracked": r.tracked.to_dict(),
            "perception": r.tracked.extra.get("perception"), "settled": r.settled, "events": r.events}


@pytest.fixture(scope="module")
def both_ways():
    """The demo recording read by one pipeline frame after frame, and by two worker processes."""
    from vision.detect import Detector
    from vision.parallel import WorkerSetup, perceive_stream
    from vision.pipeline import Pipeline

    frames = _demo_frames()
    one = list(Pipeline(Detector(DEFAULT_WEIGHTS, device="cpu")).run(frames))
    two = list(perceive_stream(frames, WorkerSetup(str(DEFAULT_WEIGHTS), "cpu", threads=1), workers=2))
    return one, two


def test_frames_read_by_two_workers_are_the_tables_one_pipeline_reads(both_ways):
    one, two = both_ways
    assert len(one) == len(two) == DEMO_FRAMES
    for a, b in zip(one, two):
        assert _reading(a) == _reading(b), a.frame_index


def test_the_tracker_takes_the_workers_frames_in_their_order(both_ways):
    """Settling is timed over the frames in order: the koan settles on the same frame both ways."""
    one, two = both_ways
    assert [r.frame_index for r in two] == list(range(DEMO_FRAMES))
    settled_at = [[r.frame_index for r in rs if any(e["event"] == "settled" for e in r.events)] for rs in (one, two)]
    assert settled_at[0] and settled_at[0] == settled_at[1]


def test_perceiving_then_tracking_is_processing():
    from vision.detect import Detector
    from vision.pipeline import Pipeline

    frames = _demo_frames(3)
    det = Detector(DEFAULT_WEIGHTS, device="cpu")
    whole, apart = Pipeline(det), Pipeline(det)
    for f in frames:
        a, b = whole.process(f), apart.track(apart.perceive(f))
        assert _reading(a) == _reading(b)
        assert b.timings_ms["total"] >= b.timings_ms["track"] > 0


def test_zendo_perceive_with_workers_prints_the_table_it_prints_without():
    """On a scene file (its frames rendered with fixed seeds: a recording's playback may hand a
    busy machine's reader its frames in another order, vision.frames.RealSensePipelineSource)."""
    from vision.frames import DEMO_TABLE

    args = ["perceive", str(DEMO_TABLE), "--device", "cpu", "--frames", "4"]
    alone, shared = (CliRunner().invoke(main, args + more) for more in ([], ["--workers", "2"]))
    assert alone.exit_code == 0 and shared.exit_code == 0, (alone.output, shared.output)
    assert json.loads(alone.output) == json.loads(shared.output)


def test_python_m_zendo_cli_with_workers_runs_as_the_zendo_command_does():
    """`python -m zendo.cli`: each spawned worker runs zendo/cli.py again as `__mp_main__`, and
    until session 55 that registered the subcommands from there, a circular import that ended
    every worker ("a perception worker ended before its frames were read")."""
    import subprocess
    import sys
    from pathlib import Path

    from vision.frames import DEMO_TABLE

    root = Path(__file__).resolve().parent.parent
    run = subprocess.run([sys.executable, "-m", "zendo.cli", "perceive", str(DEMO_TABLE), "--device", "cpu",
                          "--frames", "2", "--workers", "2"], cwd=root, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout)["format"] == "zendo-scene/1"


def test_zendo_eval_with_workers_scores_what_it_scores_alone(tmp_path):
    """Tables are independent: read and scored by two workers, every figure is the same (the
    latencies apart, which workers sharing the cores stretch)."""
    from vision.eval import run_eval, write_eval_set

    data = write_eval_set(tmp_path / "set", 3, 990100)
    alone, shared = (run_eval(data, progress=False, device="cpu", workers=n) for n in (1, 2))
    assert shared.pop("workers") == 2 and alone.pop("workers") == 1
    alone.pop("latency"), shared.pop("latency")
    assert alone["frames"] == 3 and alone["marks"]["scored"] > 0
    assert alone == shared


def test_a_frame_that_cannot_be_read_is_told_and_the_stream_goes_on():
    """The dashboard's stream (StreamPerceiver): a broken frame comes back with its error in one
    line, in its place, and the frames after it are read as one pipeline reads them."""
    from dataclasses import replace

    from vision.parallel import StreamPerceiver
    from vision.pipeline import Perceiver

    good = _demo_frames(3)
    broken = replace(good[1], depth=good[1].depth[:10])  # depth no longer matches the colour
    frames = [good[0], broken, replace(good[2], index=2)]
    got = list(StreamPerceiver(2, device="cpu").stream(frames))
    assert [f.index for f, _ in got] == [0, 1, 2]
    assert isinstance(got[1][1], RuntimeError) and "\n" not in str(got[1][1])
    one = Perceiver()
    alone = {}
    for f in frames:
        try:
            alone[f.index] = one(f)
        except Exception as exc:  # noqa: BLE001 - the broken frame's error, as the feed keeps it
            alone[f.index] = exc
    assert isinstance(alone[1], Exception)
    for i in (0, 2):
        scene, project = got[i][1]
        assert scene.to_dict() == alone[i][0].to_dict()
        tips = [p.tip for p in scene.pieces]
        assert (project(tips) == alone[i][1](tips)).all()


def test_a_worker_that_dies_while_reading_is_a_one_line_error():
    """The pool breaks (a worker killed by the system): the caller gets one line, not a traceback."""
    from perception_helpers import worker_that_dies

    from vision.parallel import FramePool, WorkerError, WorkerSetup

    with FramePool(WorkerSetup(str(DEFAULT_WEIGHTS), "cpu"), 1) as pool:
        with pytest.raises(WorkerError, match="ended before its frames were read") as err:
            list(pool.run(worker_that_dies, [1, 2]))
    assert "\n" not in str(err.value)


def test_a_worker_without_weights_is_a_one_line_error(tmp_path):
    from vision.parallel import FramePool, WorkerError, WorkerSetup

    with pytest.raises(WorkerError, match="no detector weights") as err:
        FramePool(WorkerSetup(str(tmp_path / "gone.pt")), 2)
    assert "\n" not in str(err.value)


def test_a_worker_that_cannot_load_its_weights_is_a_one_line_error(tmp_path, capfd):
    """The weights are there but broken: the worker fails as it starts; the caller gets one line
    that names the file, and no traceback is printed."""
    from vision.parallel import FramePool, WorkerError, WorkerSetup

    broken = tmp_path / "broken.pt"
    broken.write_bytes(b"not a model")
    with FramePool(WorkerSetup(str(broken), "cpu"), 1) as pool:
        with pytest.raises(WorkerError, match="could not start: DetectorError: .*broken.pt: cannot load") as err:
            pool.start()
        with pytest.raises(WorkerError, match="could not start"):
            list(pool.map([(None, None)]))
    assert "\n" not in str(err.value)
    assert "Traceback" not in capfd.readouterr().err


def _alive(pid: int) -> bool:
    """Whether a process runs (a zombie nobody has reaped yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_worker_ends_when_the_process_that_started_it_is_killed(tmp_path):
    """`kill -9`, `timeout` or a service manager's stop ends the caller without its pool's
    shutdown; its workers must not stay behind, each holding a pipeline."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "caller.py"
    script.write_text(
        "import time\n"
        "from vision.parallel import FramePool, WorkerSetup\n"
        "if __name__ == '__main__':  # the worker is spawned: it imports this file again\n"
        f"    pool = FramePool(WorkerSetup({str(DEFAULT_WEIGHTS)!r}, 'cpu'), 1)\n"
        "    print(*pool.start(), flush=True)\n"
        "    time.sleep(120)\n")
    caller = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[1])
    worker = None
    try:
        (worker,) = (int(w) for w in caller.stdout.readline().split())
        assert _alive(worker)
        caller.send_signal(signal.SIGKILL)
        caller.wait(10)
        deadline = time.monotonic() + 10
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker)
    finally:
        caller.kill()
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)  # not left behind by a failing run
