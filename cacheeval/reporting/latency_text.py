"""The sentences that set a report's per-call latency beside what the cache
spent outside its calls: ``prepare()`` per row and the cold single-call probe
(``Report.prepare``, ``Report.cold_probe``). Shared by the Markdown report and
the comparison of several caches (:mod:`cacheeval.reporting.several`)."""

from __future__ import annotations

from ..metrics.latency import ColdProbe, PrepareTime


def ms(x: float | None) -> str:
    """Milliseconds for people: whole ms with thousands separators from 100 ms
    up, else 3 significant digits; ``n/a`` for None.

    >>> ms(0.004213), ms(13.84), ms(3406.55), ms(None)
    ('0.00421', '13.8', '3,407', 'n/a')
    """
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def prepare_sentence(p: PrepareTime) -> str:
    """What ``prepare()`` cost, per row and with the mean call added."""
    if not p.has_prepare:
        return (
            "- prepare(): none; the cache does all its work in the calls, so the per-call "
            "latency is its whole cost per row."
        )
    where = "1 process" if p.processes == 1 else f"{p.processes} processes"
    return (
        f"- prepare(): {ms(p.total_ms)} ms over {where} for {p.n_rows} rows = "
        f"{ms(p.per_row_ms)} ms per row; with the mean call, {ms(p.per_row_with_call_ms)} ms "
        "per row. Work done in prepare() (embedding every pair up front) is not in the "
        "per-call figures above."
    )


def probe_sentence(c: ColdProbe) -> str:
    """The cold probe in one bullet."""
    if c.start_ms is None:
        return f"- Cold probe: not run ({c.error or 'no reason given'})."
    later = c.n_calls - 1
    tail = (
        f"; the next {later} new pairs, {ms(c.next_call_ms)} ms each (median)" if later > 0 else ""
    )
    error = f" One call failed: {c.error}." if c.error else ""
    return (
        f"- Cold probe: a fresh cache process started in {ms(c.start_ms)} ms (interpreter, "
        f"imports, construction); with nothing prepared, its first call on a new pair took "
        f"{ms(c.first_call_ms)} ms (any embedding included){tail}. This is what one request "
        f"costs a cache that has not seen it.{error}"
    )
