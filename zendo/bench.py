"""Benchmarks (never timed tests): figures for the README, measured on this machine."""
from __future__ import annotations

import os
import platform
import statistics
import time
from typing import Callable


def pin_to_one_core() -> None:
    """The relations target is stated for one core: pin the process so the figure means that."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})


def latency_stats(samples_ms: list[float], digits: int = 2) -> dict:
    """Median and 95th percentile (nearest rank) of timings in milliseconds."""
    s = sorted(samples_ms)
    return {"median_ms": round(statistics.median(s), digits), "p95_ms": round(s[int(0.95 * (len(s) - 1))], digits)}


def timed(fn: Callable[[], object], repeat: int) -> dict:
    fn()  # warm caches (coal shapes, numpy)
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return {**latency_stats(samples), "runs": repeat}


def bench_relations(repeat: int = 50) -> dict:
    from .examples import grid_table
    from .relations import koan_facts, table_facts

    pin_to_one_core()
    table = grid_table(10)
    koan = table.pieces[:6]
    return {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, pinned to 1",
        # every predicate worked out: koan_facts leaves most groups until a rule asks for them
        "koan_6_pieces": timed(lambda: dict(koan_facts("k", koan).predicates), repeat),
        "table_60_pieces": timed(lambda: [dict(f.predicates) for f in table_facts(table)[1]], max(5, repeat // 5)),
    }
