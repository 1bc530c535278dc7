"""reports/STRESS.md: the reference caches on stress rows, per perturbation kind.

``python -m scripts.run_stress`` makes stress rows (``cacheeval stress``,
seeded) from the shipped prompts file and from CacheEval's dev queries, runs a
pool of caches on them and on CacheEval's own rows, and hands the reports to
:func:`to_record`; :func:`render_markdown` renders that JSON record, so the
Markdown is a function of the committed JSON alone.

Per family (:data:`~cacheeval.results.columns.KIND_FAMILIES`), the rows of a
family's kinds are pooled: noise is read by its recall ``TP / (TP + FN)``,
identity, context and policy by their FHR ``FP / (FP + TN)``, each with its
95% Wilson interval. A cache's *stress FHR* is the FHR over every MISS stress
row of a source (identity, context and policy). Kendall's tau-b
(:func:`~cacheeval.metrics.agreement.kendall_tau`) compares the caches'
ordering by stress FHR with their ordering by CacheEval's ADVERSARIAL-FHR.

The verified cache's targets (issue 28): identity and context FHR <= 0.05 and
noise recall >= 0.90 on each source; the kinds that hold it back are those of
a failing family whose own rate misses the target.

Every count leads to its pairs: a source may name a per-pair page (``view``:
``cacheeval view``'s page of every stress row and every cache, relative to the
report), and each count of wrong decisions links to it with the filters that
show exactly those pairs (:func:`view_link`); the verified cache's wrong
decisions are also listed in the Markdown itself (:func:`wrong_decisions`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics.agreement import kendall_tau
from ..metrics.classification import Confusion, Estimate, fhr, recall
from ..metrics.slices import Slice
from ..reporting.failures_markdown import shorten
from ..reporting.markdown import table
from ..reporting.report import Report, to_plain
from ..reporting.viewer import ViewLink, outcome, pairs_address
from ..results.columns import KIND_FAMILIES, missing_prediction, perturbation_kind
from ..results.predictions import Prediction
from ..schema import HIT, Row

RECORD_KEY = "cacheeval_stress_report"
RECORD_VERSION = "1.0"
#: The targets: identity and context FHR at most this, noise recall at least that.
MAX_FHR = 0.05
MIN_RECALL = 0.90
#: The family each target reads, and how.
TARGETS: tuple[tuple[str, str], ...] = (
    ("identity", "fhr"),
    ("context", "fhr"),
    ("noise", "recall"),
)


def family_of_key(key: str) -> str:
    """The family of a per-kind key (``identity/city`` -> ``identity``; ``policy``).

    >>> family_of_key("noise/typo_drop"), family_of_key("policy")
    ('noise', 'policy')
    """
    return key.split("/", 1)[0]


def family_rates(per_kind: Sequence[Slice]) -> dict[str, dict[str, Any]]:
    """Each family present (in :data:`KIND_FAMILIES` order): its kinds' rows
    pooled, as ``{"n", "fhr", "recall"}`` (``n`` a count, the rates Estimates).

    >>> s = lambda k, c: Slice(k, c.n, c, *[None] * 5, None)
    >>> r = family_rates([s("identity/a", Confusion(0, 1, 0, 3)),
    ...                   s("identity/b", Confusion(0, 0, 0, 4))])
    >>> r["identity"]["fhr"].numerator, r["identity"]["fhr"].denominator
    (1, 8)
    """
    sums: dict[str, list[int]] = {}
    for s in per_kind:
        cell = sums.setdefault(family_of_key(s.key), [0, 0, 0, 0])
        c = s.confusion
        for i, v in enumerate((c.tp, c.fp, c.fn, c.tn)):
            cell[i] += v
    order = [f for f in KIND_FAMILIES if f in sums] + sorted(set(sums) - set(KIND_FAMILIES))
    out: dict[str, dict[str, Any]] = {}
    for f in order:
        c = Confusion(*sums[f])
        out[f] = {"n": c.n, "fhr": fhr(c), "recall": recall(c)}
    return out


def stress_fhr(per_kind: Sequence[Slice]) -> Estimate:
    """The FHR over every MISS stress row (identity, context, policy together)."""
    fp = sum(s.confusion.fp for s in per_kind)
    tn = sum(s.confusion.tn for s in per_kind)
    return fhr(Confusion(0, fp, 0, tn))


def holding_back(per_kind: Sequence[Slice]) -> list[dict[str, Any]]:
    """Every target (identity FHR, context FHR, noise recall) with whether it
    holds, and the kinds of a failing family whose own rate misses it (worst
    first; a kind's rate with its rows)."""
    fams = family_rates(per_kind)
    out = []
    for family, rate in TARGETS:
        if family not in fams:
            continue
        e: Estimate = fams[family][rate]
        ok = e.value is not None and (
            e.value <= MAX_FHR if rate == "fhr" else e.value >= MIN_RECALL
        )  # fmt: skip
        kinds = []
        if not ok:
            for s in per_kind:
                k = getattr(s, rate)
                if family_of_key(s.key) != family or k.value is None:
                    continue
                if (k.value > MAX_FHR) if rate == "fhr" else (k.value < MIN_RECALL):
                    kinds.append({"kind": s.key, "value": k.value, "numerator": k.numerator,
                                  "denominator": k.denominator})  # fmt: skip
            kinds.sort(key=lambda d: (-d["value"] if rate == "fhr" else d["value"], d["kind"]))
        out.append({"family": family, "rate": rate, "estimate": to_plain(e), "holds": ok,
                    "holding_back": kinds})  # fmt: skip
    return out


@dataclass(frozen=True, slots=True)
class CacheResult:
    """One cache of the pool: its stress reports by source name and its report
    on CacheEval's own rows. ``group`` is ``reference`` or ``gptcache``."""

    name: str
    group: str
    stress: Mapping[str, Report]
    cacheeval: Report


#: The outcome a family's count of wrong decisions is, on the per-pair page.
_WRONG = {"fhr": "false hit", "recall": "missed hit"}


def view_link(view: str, cache: str, key: str, rate: str) -> str:
    """The per-pair page ``view`` opened on ``cache``'s wrong decisions on the
    rows of ``key`` (a per-kind key, or ``family/`` for every kind of a
    family): its false hits where ``rate`` is ``fhr``, its missed hits where
    it is ``recall``.

    >>> view_link("stress/dev.html", "gptcache minilm@0.80", "identity/", "fhr")
    'stress/dev.html#cache=gptcache%20minilm%400.80&sub=identity%2F&outcome=false%20hit'
    """
    return pairs_address(view, cache=cache, sub=key, outcome=_WRONG[rate])


def _visible(span: object) -> str:
    """An edited span as a reader can see it: an empty one as ``(nothing)``,
    one of spaces alone with each space as ``␣``.

    >>> _visible(""), _visible("  "), _visible("a b")
    ('(nothing)', '␣␣', 'a b')
    """
    text = "" if span is None else str(span)
    if not text:
        return "(nothing)"
    return text if text.strip() else text.replace(" ", "␣")


def wrong_decisions(rows: Sequence[Row], predictions: Sequence[Prediction]) -> list[dict[str, Any]]:
    """The stress rows a cache decided wrongly, in row order: each with its
    per-kind key, whether it was a false hit (a MISS row served) or a missed
    hit (a HIT row not served; a failed call counts so), both queries, the
    edit (the span and its replacement; for a context edit, the field), and
    the cache's score and tier. A row without a prediction is a missed hit
    or, on a MISS row, not wrong.

    >>> from cacheeval.schema import ROW_FIELDS
    >>> row = Row.from_dict({f: None for f in ROW_FIELDS} | {"id": "r1", "split": "dev",
    ...     "construction_method": "stress_perturbation", "subcategory": "city",
    ...     "label": "ADVERSARIAL", "binary_label": "MISS", "query_a": "Fly to Rome",
    ...     "query_b": "Fly to Oslo", "verification_payload": {"family": "identity",
    ...     "field": "query", "original": "Rome", "replacement": "Oslo"}})
    >>> [(w["key"], w["outcome"], w["change"]) for w in wrong_decisions(
    ...     [row], [Prediction("r1", True, 0.9, 0.97, "embedding", 1.0)])]
    [('identity/city', 'false hit', 'Rome → Oslo')]
    """
    by_id = {p.id: p for p in predictions}
    out = []
    for row in rows:
        p = by_id.get(row.id) or missing_prediction(row.id)
        result = outcome(row.binary_label, p)
        if result == "error":  # a failed call serves nothing: wrong only on a HIT row
            result = "missed hit" if row.binary_label == HIT else "correct"
        if result not in _WRONG.values():
            continue
        payload = row.verification_payload if isinstance(row.verification_payload, dict) else {}
        field = payload.get("field") or "query"
        if field == "query" and payload.get("original") is not None:
            change = f"{_visible(payload['original'])} → {_visible(payload.get('replacement'))}"
        else:
            change = f"another {str(field).replace('_', ' ')}"
        out.append({
            "id": row.id,
            "key": perturbation_kind(row) or row.subcategory,
            "outcome": result,
            "query_a": row.query_a,
            "query_b": row.query_b,
            "change": change,
            "score": p.score,
            "tier": p.tier_used,
        })  # fmt: skip
    return out


def to_record(
    sources: Sequence[Mapping[str, Any]],
    results: Sequence[CacheResult],
    *,
    cacheeval_rows: str,
    verified: str,
    seed: int,
    verified_wrong: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The JSON record of the report: the sources (as given: name, file, rows,
    a ``view`` page...), every cache's family rates, stress FHR, per-kind
    slices and CacheEval ADVERSARIAL-FHR, the taus between the two orderings,
    and the verified cache's targets (``verified`` names it in ``results``)
    and its wrong decisions per source (``verified_wrong``,
    :func:`wrong_decisions`)."""
    caches = []
    for r in results:
        stress = {}
        for name, rep in r.stress.items():
            kinds = rep.per_kind or ()
            stress[name] = {
                "families": to_plain(family_rates(kinds)),
                "stress_fhr": to_plain(stress_fhr(kinds)),
                "per_kind": to_plain(list(kinds)),
            }
        caches.append({
            "name": r.name,
            "group": r.group,
            "cacheeval": {
                "adversarial_fhr": to_plain(r.cacheeval.headline.adversarial_fhr),
                "fhr": to_plain(r.cacheeval.headline.fhr),
                "recall": to_plain(r.cacheeval.headline.recall),
            },
            "stress": stress,
        })  # fmt: skip
    taus = []
    adv = [r.cacheeval.headline.adversarial_fhr.value for r in results]
    for src in sources:
        name = src["name"]
        for measure in ("stress_fhr", "identity_fhr"):
            xs = []
            for r in results:
                kinds = r.stress[name].per_kind or ()
                e = stress_fhr(kinds) if measure == "stress_fhr" else _identity(kinds)
                xs.append(e.value)
            taus.append({"source": name, "measure": measure,
                         "tau": kendall_tau(xs, adv), "n_caches": len(results)})  # fmt: skip
    target = next(r for r in results if r.name == verified)
    return {
        RECORD_KEY: RECORD_VERSION,
        "seed": seed,
        "cacheeval_rows": cacheeval_rows,
        "targets": {"max_fhr": MAX_FHR, "min_recall": MIN_RECALL},
        "sources": [dict(s) for s in sources],
        "caches": caches,
        "taus": taus,
        "verified": {
            "name": verified,
            "sources": {
                name: holding_back(rep.per_kind or ()) for name, rep in target.stress.items()
            },
            "wrong": {name: [dict(w) for w in ws] for name, ws in (verified_wrong or {}).items()},
        },
    }


def _identity(per_kind: Sequence[Slice]) -> Estimate:
    fam = family_rates(per_kind).get("identity")
    e: Estimate = fam["fhr"] if fam else fhr(Confusion(0, 0, 0, 0))
    return e


# --- Markdown ------------------------------------------------------------------------


def _rate(e: Mapping[str, Any] | None, ci: bool = True) -> str:
    if not e or e.get("value") is None:
        return "-"
    text = f"{e['value']:.3f}"
    if ci:
        text += f" [{e['ci_low']:.3f}, {e['ci_high']:.3f}]"
    return text + f" ({int(e['numerator'])}/{int(e['denominator'])})"


def _wrong_count(e: Mapping[str, Any] | None, rate: str) -> int:
    """How many wrong decisions an estimate counts: its numerator for an FHR
    (false hits), the rest of its denominator for a recall (missed hits)."""
    if not e or e.get("value") is None:
        return 0
    num, den = int(e["numerator"]), int(e["denominator"])
    return num if rate == "fhr" else den - num


def _pairs_link(src: Mapping[str, Any], cache: str, key: str, rate: str,
                e: Mapping[str, Any] | None) -> str:  # fmt: skip
    """`` · [N false hits](page#...)`` for a rate's wrong decisions, or ""
    when there are none or the source has no per-pair page."""
    n = _wrong_count(e, rate)
    if not n or not src.get("view"):
        return ""
    return " · " + ViewLink(src["view"], cache).wrong(_WRONG[rate], n, sub=key)


def _tau(t: float | None) -> str:
    return "n/a" if t is None else f"{t:+.2f}"


def render_markdown(record: Mapping[str, Any]) -> str:
    """The report for people, from :func:`to_record`'s record alone."""
    targets = record["targets"]
    lines = [
        "# Stress rows: the reference caches per perturbation kind",
        "",
        "Generated by `python -m scripts.run_stress` (the main job runs it). Stress rows are "
        "ordinary benchmark rows `cacheeval stress` makes from unlabelled prompts: each prompt "
        "paired with one controlled edit whose effect on the answer is known by construction - "
        "noise that keeps it (HIT; read by recall), identity and context edits that change it "
        "(MISS; read by FHR), and every row of a never-cache prompt MISS by policy. "
        f"Seed {record['seed']}; 95% Wilson intervals; counts in parentheses.",
        "",
        "Every pair behind these numbers is on one page per source (the Pairs column: "
        "`cacheeval view`'s page, every row and every cache side by side; open it in a "
        "browser from a checkout). Each count of false hits or missed hits below links to "
        "that page filtered to exactly those pairs, and the verified cache's are also listed "
        "here.",
        "",
    ]
    lines += table(
        ["Source", "File", "Prompts", "Prompts with rows", "Rows", "Pairs"],
        [[s["name"], f"`{s['file']}`", str(s["prompts"]), str(s["prompts_with_rows"]),
          str(s["rows"]), f"[{s['view']}]({s['view']})" if s.get("view") else "-"]
         for s in record["sources"]],
    )  # fmt: skip
    lines += _families(record)
    lines += _verified(record, targets)
    lines += _wrong_pairs(record)
    lines += _agreement(record)
    for src in record["sources"]:
        lines += _per_kind(record, src["name"])
    return "\n".join(lines) + "\n"


def _families(record: Mapping[str, Any]) -> list[str]:
    out = ["", "## Per family", ""]
    out.append(
        "Noise recall (the share of answer-keeping edits served), and the FHR of identity edits, "
        "context edits (the same query under another user's system prompt or after other "
        "turns) and never-cache prompts."
    )
    for src in record["sources"]:
        name = src["name"]
        rows = []
        for c in record["caches"]:
            fams = c["stress"][name]["families"]
            cells = []
            for fam, rate in (("noise", "recall"), ("identity", "fhr"), ("context", "fhr"),
                              ("policy", "fhr")):  # fmt: skip
                e = fams.get(fam, {}).get(rate)
                key = "policy" if fam == "policy" else f"{fam}/"
                cells.append(_rate(e) + _pairs_link(src, c["name"], key, rate, e))
            rows.append([c["name"], *cells])
        out += ["", f"### {name}", ""]
        out += table(["Cache", "Noise recall", "Identity FHR", "Context FHR", "Policy FHR"], rows)
    return out


def _verified(record: Mapping[str, Any], targets: Mapping[str, Any]) -> list[str]:
    v = record["verified"]
    out = ["", f"## The verified cache against the targets ({v['name']})", ""]
    out.append(
        f"Targets: identity and context FHR <= {targets['max_fhr']:g}, noise recall >= "
        f"{targets['min_recall']:g}, on each source. Where a target is missed, the kinds of "
        "that family that miss it themselves are named, worst first."
    )
    by_name = {s["name"]: s for s in record["sources"]}
    for name, checks in v["sources"].items():
        out += ["", f"### {name}", ""]
        rows = []
        for chk in checks:
            link = _pairs_link(by_name.get(name, {}), v["name"], f"{chk['family']}/",
                               chk["rate"], chk["estimate"])  # fmt: skip
            back = ", ".join(
                f"{k['kind']} {k['value']:.3f} ({int(k['numerator'])}/{int(k['denominator'])})"
                for k in chk["holding_back"]
            )
            want = (f"<= {targets['max_fhr']:g}" if chk["rate"] == "fhr"
                    else f">= {targets['min_recall']:g}")  # fmt: skip
            rows.append([f"{chk['family']} {'FHR' if chk['rate'] == 'fhr' else 'recall'} {want}",
                         _rate(chk["estimate"]) + link, "yes" if chk["holds"] else "**no**",
                         back or "-"])  # fmt: skip
        out += table(["Target", "Value", "Holds", "Kinds holding it back"], rows)
    return out


def _wrong_pairs(record: Mapping[str, Any]) -> list[str]:
    """The verified cache's wrong decisions, pair by pair, per source."""
    v = record["verified"]
    wrong = v.get("wrong") or {}
    if not wrong:
        return []
    out = ["", f"## The verified cache's wrong decisions, pair by pair ({v['name']})", ""]
    out.append(
        "Every stress row it decided wrongly: a false hit serves a stored answer to a request "
        "it does not answer; a missed hit costs a model call. Queries are cut to a cell's "
        "length (the JSON record and the per-pair page have them whole)."
    )
    for name, pairs in wrong.items():
        out += ["", f"### {name}", ""]
        if not pairs:
            out.append("None.")
            continue
        out += table(
            ["Row", "Kind", "Outcome", "Query a", "Edit", "Score (tier)"],
            [[w["id"], w["key"], w["outcome"], shorten(w["query_a"], 90),
              shorten(w["change"], 60),
              ("-" if w["score"] is None else f"{w['score']:.4f}") + f" ({w['tier'] or '-'})"]
             for w in pairs],
        )  # fmt: skip
    return out


def _agreement(record: Mapping[str, Any]) -> list[str]:
    out = ["", "## Does the stress FHR order caches as CacheEval's ADVERSARIAL-FHR does?", ""]
    out.append(
        f"Kendall's tau-b over the {len(record['caches'])} caches of the pool (the reference "
        f"caches and the GPTCache configurations) between their FHR on the stress rows and "
        f"their ADVERSARIAL-FHR on CacheEval's {record['cacheeval_rows']}."
    )
    out.append("")
    names = [s["name"] for s in record["sources"]]
    rows = []
    for c in record["caches"]:
        cells = []
        for n in names:
            st = c["stress"][n]
            cells += [_rate(st["stress_fhr"], ci=False),
                      _rate(st["families"].get("identity", {}).get("fhr"), ci=False)]  # fmt: skip
        rows.append([c["name"], *cells, _rate(c["cacheeval"]["adversarial_fhr"], ci=False)])
    header = ["Cache"]
    for n in names:
        header += [f"{n}: stress FHR", f"{n}: identity FHR"]
    out += table([*header, "CacheEval ADVERSARIAL-FHR"], rows)
    out += [""]
    out += table(
        ["Stress source", "Stress measure", "tau vs ADVERSARIAL-FHR", "Caches"],
        [[t["source"], t["measure"].replace("_", " "), _tau(t["tau"]), str(t["n_caches"])]
         for t in record["taus"]],
    )  # fmt: skip
    return out


def _per_kind(record: Mapping[str, Any], source: str) -> list[str]:
    caches = record["caches"]
    keys: list[str] = []
    for c in caches:
        keys += [s["key"] for s in c["stress"][source]["per_kind"] if s["key"] not in keys]
    order = {f: i for i, f in enumerate(KIND_FAMILIES)}
    keys.sort(key=lambda k: (order.get(family_of_key(k), len(order)), k))
    out = ["", f"## Per kind: {source}", ""]
    out.append(
        "Recall on noise kinds, FHR on the others (the value, then the rows it is over); the "
        "JSON record has every interval. A value with wrong decisions behind it links to "
        "them on the per-pair page."
    )
    out.append("")
    src = next(s for s in record["sources"] if s["name"] == source)
    rows = []
    for key in keys:
        cells, n = [], 0
        rate = "recall" if family_of_key(key) == "noise" else "fhr"
        for c in caches:
            s = next((x for x in c["stress"][source]["per_kind"] if x["key"] == key), None)
            if s is None:
                cells.append("-")
                continue
            n = s["n"]
            e = s[rate]
            text = "-" if e["value"] is None else f"{e['value']:.2f}"
            if _wrong_count(e, rate) and src.get("view"):  # the value opens its wrong pairs
                text = f"[{text}]({view_link(src['view'], c['name'], key, rate)})"
            cells.append(text)
        rows.append([key, str(n), *cells])
    out += table(["Kind", "Rows", *(c["name"] for c in caches)], rows)
    return out
