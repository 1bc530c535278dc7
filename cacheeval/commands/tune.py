"""``cacheeval tune``: a certified operating point for any cache that gives a score.

The cache (``--baseline``, ``--cache-module``/``--cache-class``/``--cache-arg``,
run out of process like ``eval``; or a saved ``--predictions`` file) scores the
labelled rows ``--bench``/``--split``/``--domain`` select (CacheEval's dev split,
imported pairs, stress rows). On the one threshold sweep of those scores, tune
prints the threshold with the most recall whose one-sided Clopper-Pearson upper
bound on the false-hit rate is at most ``--max-fhr`` at ``--confidence``
(:func:`cacheeval.metrics.certify.tune_threshold`), with the recall and FHR
there (95% Wilson intervals); ``--per-domain`` gives one such point per domain.
For a GPTCache adapter run it also prints GPTCache's own ``similarity_threshold``.

When nothing can be certified it says why, how many MISS rows a certificate
would need, and names the MISS rows that every threshold serving a HIT row
serves (those scored at least as high as the best-scored HIT row). It never
prints a threshold that is not certified.

Exit codes: 0 every point asked for is certified; 3 at least one is not (the
output says why); 1 the cache failed under ``--on-error raise``; 2 a usage or
data error (one line on stderr); 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._running import UsageError, _one_line, no_rows, output_problem

NAME = "tune"
HELP = "Find the certified threshold (FHR <= budget with confidence) of a cache with scores."

EXIT_OK = 0
EXIT_CACHE_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_CERTIFIED = 3
EXIT_INTERRUPTED = 130
TUNE_KEY = "cacheeval_tune"
TUNE_VERSION = "1.0"

#: Caches whose own setting a certified score threshold translates into:
#: ``module:Class`` -> ``module:function(fires_from, stops_at) -> {setting: value}``
#: (named, never imported by the core until a run of that cache needs it).
SETTINGS: dict[str, tuple[str, str]] = {
    "adapters.gptcache_adapter:GPTCacheAdapter": (
        "GPTCache",
        "adapters.gptcache_adapter:similarity_setting",
    ),
}


def _rate(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1: {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..metrics.certify import CONFIDENCE, MAX_FHR
    from ._running import add_cache_arguments, non_negative_int
    from .eval import add_rows_arguments, add_scale_arguments

    add_rows_arguments(parser)
    add_cache_arguments(parser, predictions=True)
    add_scale_arguments(parser)
    parser.add_argument(
        "--max-fhr",
        type=_rate,
        default=MAX_FHR,
        metavar="A",
        help=f"the false-hit-rate budget (default {MAX_FHR})",
    )
    parser.add_argument(
        "--confidence",
        type=_rate,
        default=CONFIDENCE,
        metavar="C",
        help=f"confidence of the one-sided bound (default {CONFIDENCE})",
    )
    parser.add_argument(
        "--per-domain",
        action="store_true",
        help="one certified point per domain instead of one for all rows",
    )
    parser.add_argument(
        "--show",
        type=non_negative_int,
        default=10,
        metavar="N",
        help="name at most N rows that break every threshold (default 10)",
    )
    parser.add_argument("--json", type=Path, help="also write the result as JSON")
    parser.set_defaults(_prog=parser.prog)


@dataclass(frozen=True, slots=True)
class Scored:
    """What tune keeps of a scored run: each labelled row's id, truth, domain,
    and score (None: the call failed or gave none), and the cache's names."""

    ids: list[str]
    y: list[int]
    domains: list[str]
    scores: list[float | None]
    cache_name: str
    cache_ref: str | None
    split: str | None


def run(args: argparse.Namespace) -> int:
    from ..run.harness import CacheCallError

    prog = getattr(args, "_prog", None) or "cacheeval tune"
    clash = output_problem(args, ("json",), ("bench", "labels", "predictions"))
    if clash is not None:
        print(f"{prog}: error: {clash}", file=sys.stderr)
        return EXIT_USAGE
    try:
        scored = _scored(args, prog)
        if scored is None:
            print(f"{prog}: error: interrupted; nothing tuned", file=sys.stderr)
            return EXIT_INTERRUPTED
        points = _points(args, scored)
        details = _breaking_rows(args, scored, points)
        settings = [_setting(scored.cache_ref, p) for p in points]
        text = render(scored, points, details, settings, args.show, _key_advice(args))
        if args.json is not None:
            from ..support.jsonio import write_bytes_atomic

            doc = to_json(args, scored, points, details, settings)
            write_bytes_atomic(args.json, doc.encode("utf-8"))
    except UsageError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except CacheCallError as e:
        print(f"{prog}: error: the cache failed: {e}", file=sys.stderr)
        return EXIT_CACHE_FAILED
    except OSError as e:
        print(f"{prog}: error: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(text)
    return EXIT_OK if all(p.certified for p in points) else EXIT_NOT_CERTIFIED


# --- scoring the rows ------------------------------------------------------------------


def _scored(args: argparse.Namespace, prog: str) -> Scored | None:
    if args.predictions is not None:
        if args.cache_class or args.cache_args or args.keyed:
            raise UsageError("--cache-class/--cache-arg/--keyed name a cache to run, not a file")
        return _from_predictions(args, prog)
    return _from_cache(args, prog)


def _from_cache(args: argparse.Namespace, prog: str) -> Scored | None:
    from ..support.progress import terminal_progress
    from ._running import LabelledRows, started_cache, stream_rows

    selected = LabelledRows(stream_rows(args, labels=args.labels), args.labels, args.bench)
    rows = selected.start()
    ids: list[str] = []
    y: list[int] = []
    domains: list[str] = []
    scores: list[float | None] = []
    bar = terminal_progress()
    try:
        with started_cache(args) as cache:
            for pred in cache.predictor.run(rows, progress=bar):
                truth = selected.truth.popleft()
                if truth[0] != pred.id:
                    raise AssertionError(f"prediction {pred.id} came back for row {truth[0]}")
                ids.append(truth[0])
                y.append(truth[1])
                domains.append(truth[3])
                scores.append(pred.score if pred.error is None else None)
    except KeyboardInterrupt:
        return None
    finally:
        if bar is not None:
            bar.finish()
    if selected.hidden:
        print(
            f"{prog}: note: leaving out {selected.hidden} hidden test rows without labels "
            "(pass --labels to use them)",
            file=sys.stderr,
        )
    return Scored(ids, y, domains, scores, cache.name, cache.ref, selected.split(args.split))


def _from_predictions(args: argparse.Namespace, prog: str) -> Scored:
    from ..results.columns import ScoreColumns, join_stream
    from ..results.predictions import iter_predictions
    from ._running import hidden_count_message, stream_rows

    try:
        header, predictions = iter_predictions(args.predictions)
    except ValueError as e:  # JsonlError: path:LINE: ...
        raise UsageError(str(e)) from None
    split = args.split or header.split
    domains = args.domains if args.domains is not None else header.domains
    rows = stream_rows(args, split=split, domains=domains, labels=args.labels)
    ids: list[str] = []
    splits: set[str] = set()

    def labelled(stream: Iterator[Any]) -> Iterator[Any]:
        for row in stream:
            if row.is_labelled:
                ids.append(row.id)  # join_stream adds the labelled rows in this order
                splits.add(row.split)
            yield row

    columns = ScoreColumns()
    try:
        seen = join_stream(labelled(rows), predictions, columns)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not seen.n_rows:
        raise no_rows(args.bench)
    if not len(columns):
        raise UsageError(hidden_count_message(seen.n_hidden, seen.n_rows))
    if seen.n_missing == len(columns):
        raise UsageError(
            f"{args.predictions}: no prediction has the id of a selected row of {args.bench}"
        )
    if seen.n_missing:
        print(
            f"{prog}: note: {seen.n_missing} selected rows have no prediction (never served)",
            file=sys.stderr,
        )
    if seen.n_hidden:
        print(
            f"{prog}: note: leaving out {seen.n_hidden} hidden test rows without labels "
            "(pass --labels to use them)",
            file=sys.stderr,
        )
    names = columns.domains.names
    return Scored(
        ids=ids,
        y=list(columns.y),
        domains=[names[c] for c in columns.domain],
        scores=list(columns.scores()),
        cache_name=header.cache_name,
        cache_ref=header.cache_ref,
        split=split if split is not None else (splits.pop() if len(splits) == 1 else None),
    )


# --- the certified points --------------------------------------------------------------


def _points(args: argparse.Namespace, s: Scored) -> list[Any]:
    from ..metrics.certify import tune_threshold
    from ..metrics.slices import slice_order
    from ..schema import DOMAINS

    if not any(v is not None for v in s.scores):
        raise UsageError(
            f"{s.cache_name}: the cache gives no scores: there is no threshold to "
            "tune (a cache's Verdict.score ranks its willingness to serve)"
        )
    groups: dict[str, list[int]] = {}
    if args.per_domain:
        for i, d in enumerate(s.domains):
            groups.setdefault(d, []).append(i)
        keys = slice_order(groups, DOMAINS)
    else:
        groups["all"] = list(range(len(s.ids)))
        keys = ["all"]
    out = []
    for key in keys:
        idx = groups[key]
        p = tune_threshold(
            [s.y[i] for i in idx],
            [s.scores[i] for i in idx],
            max_fhr=args.max_fhr,
            confidence=args.confidence,
            key=key,
        )
        # breaking indexes the group: map it back to the run's rows
        out.append(_reindex(p, idx))
    return out


def _reindex(point: Any, idx: Sequence[int]) -> Any:
    from dataclasses import replace

    return replace(point, breaking=tuple(idx[i] for i in point.breaking))


def _breaking_rows(
    args: argparse.Namespace, s: Scored, points: Sequence[Any]
) -> dict[str, dict[str, Any]]:
    """Label, sub-score and subcategory of every row that breaks a threshold,
    read from the benchmark again (only those rows are kept)."""
    from ..schema import subscore_of
    from ._running import stream_rows

    wanted = {s.ids[i]: s.scores[i] for p in points for i in p.breaking}
    if not wanted:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for row in stream_rows(args, split=s.split, domains=args.domains, labels=args.labels):
        if row.id in wanted:
            found[row.id] = {
                "id": row.id,
                "domain": row.domain,
                "label": row.label,
                "subscore": subscore_of(row),
                "subcategory": row.subcategory,
                "score": wanted[row.id],
            }
    return found


def _setting(cache_ref: str | None, point: Any) -> dict[str, Any] | None:
    """The cache's own setting at a certified point (None: no translation known)."""
    if cache_ref is None or cache_ref not in SETTINGS or point.threshold is None:
        return None
    system, target = SETTINGS[cache_ref]
    module, _, name = target.partition(":")
    translate: Callable[[float, float | None], dict[str, Any]] = getattr(
        importlib.import_module(module), name
    )
    return {"system": system, **translate(point.threshold, point.next_lower)}


# --- output ------------------------------------------------------------------------------


def _estimate(e: Any, digits: int = 3) -> str:
    if e.value is None:
        return "n/a (no rows)"
    return (
        f"{e.value:.{digits}f} [{e.ci_low:.{digits}f}, {e.ci_high:.{digits}f}] "
        f"({int(e.numerator)} of {int(e.denominator)})"
    )


def _key_advice(args: argparse.Namespace) -> str:
    """What to do about rows no threshold can refuse, for this run."""
    if getattr(args, "keyed", False):
        return "they got past --keyed: the cache's own key or policy lets them through"
    if getattr(args, "predictions", None) is not None:
        return "the fix is the cache's key (tune --keyed runs a cache behind it)"
    return "rerun with --keyed (the cache behind the key it should have) to tune the rest"


def key_hint(breaking: Sequence[Mapping[str, Any]], advice: str) -> str | None:
    """A line on the rows that break every threshold because the cache's key,
    not its score, should refuse them: context rows (another system prompt,
    other turns or tools) and never-cache requests; None when there are none.

    >>> key_hint([{"subscore": "context"}, {"subscore": "context"}, {"subscore": "query"}],
    ...          "rerun with --keyed")
    '  2 of them differ in context (system prompt, prior turns or tools): no score threshold can refuse them; rerun with --keyed'
    """  # noqa: E501
    context = sum(1 for d in breaking if d.get("subscore") == "context")
    policy = sum(1 for d in breaking if d.get("subscore") == "policy")
    parts = []
    if context:
        parts.append(f"{context} of them differ in context (system prompt, prior turns or tools)")
    if policy:
        parts.append(f"{policy} {'are' if context else 'of them are'} never-cache requests")
    if not parts:
        return None
    return f"  {' and '.join(parts)}: no score threshold can refuse them; {advice}"


def render(
    s: Scored,
    points: Sequence[Any],
    details: dict[str, dict[str, Any]],
    settings: Sequence[dict[str, Any] | None],
    show: int,
    advice: str = "",
) -> str:
    """The text tune prints: one block per point; a threshold only when certified
    (``advice``: what to do about rows the key should refuse, :func:`key_hint`)."""
    first = points[0]
    out = [
        f"cache: {s.cache_name} on {len(s.ids)} labelled rows"
        + (f" of the {s.split} split" if s.split else ""),
        f"budget: FHR <= {first.max_fhr:g} with {first.confidence:g} confidence "
        "(one-sided Clopper-Pearson upper bound)",
    ]
    for p, setting in zip(points, settings, strict=True):
        out.append("")
        head = f"{p.key}: {p.n} rows ({p.n_positive} HIT, {p.n_negative} MISS)"
        if p.certified:
            out.append(f"{head}: certified threshold: serve when score >= {p.threshold:.6g}")
            out.append(f"  recall {_estimate(p.recall)}")
            out.append(
                f"  FHR    {_estimate(p.fhr, 4)}; upper bound {p.fhr_upper:.4f} <= {p.max_fhr:g}"
            )
            if p.next_lower is not None:
                out.append(
                    f"  (any threshold in ({p.next_lower:.6g}, {p.threshold:.6g}] makes "
                    "the same decisions on these rows)"
                )
            if setting is not None:
                shown = ", ".join(f"{k}={v:g}" for k, v in setting.items() if k != "system")
                out.append(f"  {setting['system']} setting: {shown}")
            continue
        out.append(f"{head}: NOT CERTIFIED, no threshold given")
        out.append(f"  why: {p.reason}")
        if p.needed is not None and p.n_negative and p.top_score is not None:
            needed = f"  MISS rows a certificate needs: {p.needed} with no false hit"
            if p.top_false_hits and p.needed_at_top is not None:
                needed += (
                    f"; {p.needed_at_top} with the {p.top_false_hits} false hit(s) every threshold "
                    "serves"
                )
            out.append(needed + f" (these rows have {p.n_negative})")
        if p.breaking:
            first = f", first {show}" if len(p.breaking) > show else ""
            out.append(
                f"  rows that break every threshold ({len(p.breaking)}; MISS rows scored "
                f">= {p.top_score:.6g}{first}):"
            )
            for i in p.breaking[:show]:
                d = details.get(s.ids[i], {"id": s.ids[i]})
                out.append(
                    f"    {d['id']}  {d.get('label')}  {d.get('subscore')}  "
                    f"{d.get('subcategory')}  score {s.scores[i]:.6g}"
                )
            hint = key_hint([details.get(s.ids[i], {}) for i in p.breaking], advice)
            if hint is not None and advice:
                out.append(hint)
    return "\n".join(out) + "\n"


def to_json(
    args: argparse.Namespace,
    s: Scored,
    points: Sequence[Any],
    details: dict[str, dict[str, Any]],
    settings: Sequence[dict[str, Any] | None],
) -> str:
    """The result as canonical JSON: provenance, then one record per point with
    every breaking row."""
    from ..reporting.report import to_plain
    from ..support.jsonio import dumps_pretty

    records = []
    for p, setting in zip(points, settings, strict=True):
        rec = to_plain(p)
        rec["certified"] = p.certified
        rec["breaking"] = [details.get(s.ids[i], {"id": s.ids[i]}) for i in p.breaking]
        rec["setting"] = setting
        records.append(rec)
    doc = {
        TUNE_KEY: TUNE_VERSION,
        "cache_name": s.cache_name,
        "cache_ref": s.cache_ref,
        "dataset_path": str(args.bench),
        "split": s.split,
        "domains": args.domains,
        "n_rows": len(s.ids),
        "points": records,
    }
    return dumps_pretty(doc)
