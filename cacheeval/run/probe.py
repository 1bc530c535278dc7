"""The cold single-call probe every ``eval`` report carries: what one request
costs a cache that has prepared nothing.

A run's per-call latency is not comparable across caches on its own: a cache
that embeds every pair in ``prepare`` then decides each call from memory in
microseconds, while one that embeds in the call pays the model every time.
The probe puts them on one footing. A fresh cache process is started (the
same ``python -m cacheeval.run.child`` the run used, so the cache runs out of
process, in the sandbox when the run was), the cache is built, and it decides
:data:`PROBE_CALLS` new pairs one call at a time without ``prepare``: each
call embeds and decides its pair from nothing. The first call carries the
one-off costs a lazy cache defers (loading a model); the median of the others
is the unprepared, warm cost of a request.

The pairs are everyday questions that appear nowhere in the benchmark, each
tagged with a nonce drawn per probe, so no embedding memo a cache keeps on
disk can answer them from an earlier run. Only their timings are kept; the
decisions are not scored.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics.latency import ColdProbe, cold_probe
from ..schema import Pair, Request
from .blockrun import BlockRunner, CacheSpec
from .harness import CacheCallError, CacheLoadError
from .parallel import PredictTask, to_wire
from .procpool import ProcessBackend, threads_per_worker

#: Calls the probe times: the first (cold) and the ones after it (warm, unprepared).
PROBE_CALLS = 5
#: A call of the probe is abandoned after this long when the run set no timeout.
PROBE_TIMEOUT_MS = 120_000.0
#: Seconds the probe's process gets to build the cache.
PROBE_STARTUP_S = 600.0

_QUESTIONS: tuple[tuple[str, str], ...] = (
    ("How many grams are in a kilogram?", "How many grams make up one kilogram?"),
    ("What time zone is Lisbon in?", "Which time zone does Lisbon use?"),
    ("How do I undo the last git commit?", "What is the way to revert my latest git commit?"),
    ("Is a tomato a fruit or a vegetable?", "Botanically, is the tomato a fruit?"),
    ("What is the boiling point of water in Fahrenheit?", "At what Fahrenheit does water boil?"),
    ("How long should I boil an egg for a soft yolk?", "Soft-boiled egg: how many minutes?"),
)


def probe_pairs(n: int = PROBE_CALLS, nonce: str | None = None) -> list[Pair]:
    """``n`` new pairs (cycling through the questions), each tagged with
    ``nonce`` (default: a fresh random one) so no memo has seen them.

    >>> [p.a.query for p in probe_pairs(2, nonce="x1")]
    ['How many grams are in a kilogram? (ref x1-1)', 'What time zone is Lisbon in? (ref x1-2)']
    """
    tag = nonce if nonce is not None else secrets.token_hex(4)
    out = []
    for i in range(n):
        a, b = _QUESTIONS[i % len(_QUESTIONS)]
        ref = f" (ref {tag}-{i + 1})"
        out.append(Pair(f"probe{i + 1}", Request(a + ref), Request(b + ref)))
    return out


@dataclass(frozen=True, slots=True)
class ProbeTask(PredictTask):
    """:class:`~cacheeval.run.parallel.PredictTask` that tells the runner the
    cache has no ``prepare``, so the probe's pairs reach the calls unprepared."""

    def setup(self, cache: Any) -> dict[str, Any]:
        meta = PredictTask.setup(self, cache)
        meta["has_prepare"] = False
        return meta


def _lost(n: int, message: str) -> list[Any]:
    return [PredictTask.failed("error", message, None) for _ in range(n)]


def run_probe(
    spec: CacheSpec,
    *,
    wrap: Sequence[str] = (),
    timeout_ms: float | None = None,
    calls: int = PROBE_CALLS,
    startup_s: float = PROBE_STARTUP_S,
) -> ColdProbe:
    """Start a fresh cache process for ``spec`` (inside ``wrap``, the run's
    sandbox prefix), time its start, then one call per new pair in order
    (each abandoned after ``timeout_ms``, default :data:`PROBE_TIMEOUT_MS`).
    A cache that cannot be built or dies gives a probe with its ``error``."""
    task = ProbeTask(timeout_ms or PROBE_TIMEOUT_MS)
    backend = ProcessBackend(
        spec.portable(),
        task,
        threads=threads_per_worker(1),
        timeout_ms=task.timeout_ms,
        lost=_lost,
        wrap=wrap,
        startup_s=startup_s,
    )
    runner = BlockRunner(backend, 1, _lost, depth=1)
    wire = [to_wire(p, i) for i, p in enumerate(probe_pairs(calls), 1)]
    t0 = time.perf_counter_ns()
    try:
        runner.start()
        start_ms = (time.perf_counter_ns() - t0) / 1e6
        # one block per call: each is sent once the one before it has answered
        results = [r for _, block in runner.run((None, i, [w]) for i, w in enumerate(wire, 1))
                   for r in block]  # fmt: skip
    except (CacheLoadError, CacheCallError) as e:
        runner.abort()
        return cold_probe(None, [], str(e).splitlines()[0] if str(e) else type(e).__name__)
    except BaseException:
        runner.abort()
        raise
    runner.close()
    error = next((r[5] for r in results if r[5] is not None), None)
    return cold_probe(start_ms, [r[4] for r in results], error)


def with_cold_start(
    report: Any,
    spec: CacheSpec | None,
    *,
    prepare_ms: Sequence[float] | None,
    wrap: Sequence[str] = (),
    timeout_ms: float | None = None,
) -> Any:
    """``report`` (a :class:`~cacheeval.reporting.report.Report`) with what
    ``prepare()`` cost per row (``prepare_ms``: each process's time, None for
    a cache without ``prepare``) and, when ``spec`` is given, the cold probe
    of that cache (:func:`run_probe`)."""
    from dataclasses import replace

    from ..metrics.latency import prepare_time

    report = replace(
        report,
        prepare=prepare_time(prepare_ms, report.provenance.n_rows, report.latency.mean_ms),
    )
    if spec is None:
        return report
    return replace(report, cold_probe=run_probe(spec, wrap=wrap, timeout_ms=timeout_ms))
