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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics.agreement import kendall_tau
from ..metrics.classification import Confusion, Estimate, fhr, recall
from ..metrics.slices import Slice
from ..reporting.markdown import table
from ..reporting.report import Report, to_plain
from ..results.columns import KIND_FAMILIES

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


def to_record(
    sources: Sequence[Mapping[str, Any]],
    results: Sequence[CacheResult],
    *,
    cacheeval_rows: str,
    verified: str,
    seed: int,
) -> dict[str, Any]:
    """The JSON record of the report: the sources (as given: name, file, rows,
    ...), every cache's family rates, stress FHR, per-kind slices and CacheEval
    ADVERSARIAL-FHR, the taus between the two orderings, and the verified
    cache's targets (``verified`` names it in ``results``)."""
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
    ]
    lines += table(
        ["Source", "File", "Prompts", "Prompts with rows", "Rows"],
        [[s["name"], f"`{s['file']}`", str(s["prompts"]), str(s["prompts_with_rows"]),
          str(s["rows"])] for s in record["sources"]],
    )  # fmt: skip
    lines += _families(record)
    lines += _verified(record, targets)
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
            rows.append([c["name"], _rate(fams.get("noise", {}).get("recall")),
                         *(_rate(fams.get(f, {}).get("fhr")) for f in ("identity", "context",
                                                                        "policy"))])  # fmt: skip
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
    for name, checks in v["sources"].items():
        out += ["", f"### {name}", ""]
        rows = []
        for chk in checks:
            back = ", ".join(
                f"{k['kind']} {k['value']:.3f} ({int(k['numerator'])}/{int(k['denominator'])})"
                for k in chk["holding_back"]
            )
            want = (f"<= {targets['max_fhr']:g}" if chk["rate"] == "fhr"
                    else f">= {targets['min_recall']:g}")  # fmt: skip
            rows.append([f"{chk['family']} {'FHR' if chk['rate'] == 'fhr' else 'recall'} {want}",
                         _rate(chk["estimate"]), "yes" if chk["holds"] else "**no**",
                         back or "-"])  # fmt: skip
        out += table(["Target", "Value", "Holds", "Kinds holding it back"], rows)
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
        "JSON record has every interval."
    )
    out.append("")
    rows = []
    for key in keys:
        cells, n = [], 0
        for c in caches:
            s = next((x for x in c["stress"][source]["per_kind"] if x["key"] == key), None)
            if s is None:
                cells.append("-")
                continue
            n = s["n"]
            e = s["recall"] if family_of_key(key) == "noise" else s["fhr"]
            cells.append("-" if e["value"] is None else f"{e['value']:.2f}")
        rows.append([key, str(n), *cells])
    out += table(["Kind", "Rows", *(c["name"] for c in caches)], rows)
    return out
