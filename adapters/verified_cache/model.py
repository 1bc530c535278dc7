"""The LightGBM verifier: training, inference, the certified operating point.

Training is deterministic: LightGBM runs single-threaded (``num_threads=1``) with
``deterministic=True``, ``force_row_wise=True`` and every seed fixed, so the same
rows give the same model bytes (``Booster.model_to_string``) on every run. The
features are read at a fixed precision (:func:`~.features.quantize_features`) in
training, in the training-data hash and at inference alike, so the floating-point
noise of another CPU does not reach the model.

The operating threshold is *certified* on calibration data the model never saw:
with ``n`` must-miss calibration rows of which ``x`` would be served, the exact
(Clopper-Pearson) binomial bound caps the true false-hit rate; the threshold is
the lowest score (most recall) whose bound is at most the FHR budget
(:func:`certify_threshold`). The certificate uses the one-sided 95% upper
bound - "FHR <= 5% with 95% confidence" - while :func:`clopper_pearson` gives
the usual two-sided interval for reports:

    upper_1sided(x, n) = BetaInv(confidence; x + 1, n - x)       (1 when x = n)
    two-sided:  [BetaInv(alpha/2; x, n - x + 1), BetaInv(1 - alpha/2; x + 1, n - x)]

``BetaInv`` is found by bisection on the regularized incomplete beta function
``I_z(a, b)``, itself evaluated with its continued fraction (modified Lentz)
and ``math.lgamma``: the standard library only, no scipy.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cacheeval.metrics.sweep import OperatingPoint, best_operating_point, threshold_sweep
from cacheeval.support.jsonio import dumps_pretty, write_bytes_atomic

from .features import FEATURE_NAMES, direction, quantize_features

if TYPE_CHECKING:
    import lightgbm

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_FILE = "verifier.txt"
META_FILE = "meta.json"
META_FORMAT = "verified-cache-model/1"

#: Default FHR budget and confidence of the certified operating point.
MAX_FHR = 0.05
CONFIDENCE = 0.95

# --- Clopper-Pearson ------------------------------------------------------------------


def _betacf(a: float, b: float, z: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * z / qap
    d = tiny if abs(d) < tiny else d
    d = 1.0 / d
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        # even step
        aa = m * (b - m) * z / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        h *= d * c
        # odd step
        aa = -(a + m) * (qab + m) * z / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = tiny if abs(d) < tiny else d
        c = 1.0 + aa / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            return h
    raise ArithmeticError(f"incomplete beta continued fraction did not converge (a={a}, b={b})")


def betainc(a: float, b: float, z: float) -> float:
    """The regularized incomplete beta function ``I_z(a, b)`` for a, b > 0, z in [0, 1].

    ``I_z(a,b) = z^a (1-z)^b / (a B(a,b)) * CF(a,b,z)``, using the symmetry
    ``I_z(a,b) = 1 - I_{1-z}(b,a)`` where the continued fraction converges slowly.
    """
    if a <= 0 or b <= 0:
        raise ValueError(f"betainc needs a, b > 0 (got a={a}, b={b})")
    if not 0.0 <= z <= 1.0:
        raise ValueError(f"betainc needs z in [0, 1] (got {z})")
    if z == 0.0 or z == 1.0:
        return z
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(z) + b * math.log1p(-z)
    )
    front = math.exp(log_front)
    if z < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, z) / a
    return 1.0 - front * _betacf(b, a, 1.0 - z) / b


def beta_ppf(q: float, a: float, b: float, *, tol: float = 1e-12) -> float:
    """The ``q``-quantile of Beta(a, b): the z with ``I_z(a, b) = q``, by bisection
    (I_z is increasing in z, so bisection always converges)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile must be in [0, 1], got {q}")
    if q == 0.0:
        return 0.0
    if q == 1.0:
        return 1.0
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        mid = (lo + hi) / 2.0
        if betainc(a, b, mid) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def clopper_pearson(x: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The two-sided Clopper-Pearson interval of a binomial proportion ``x / n``."""
    if n <= 0 or not 0 <= x <= n:
        raise ValueError(f"need 0 <= x <= n and n > 0 (got x={x}, n={n})")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    alpha = 1.0 - confidence
    lower = 0.0 if x == 0 else beta_ppf(alpha / 2.0, x, n - x + 1)
    upper = 1.0 if x == n else beta_ppf(1.0 - alpha / 2.0, x + 1, n - x)
    return lower, upper


def fhr_upper_bound(fp: int, n_negative: int, confidence: float = CONFIDENCE) -> float:
    """The one-sided Clopper-Pearson upper confidence bound of FHR = fp / n_negative:
    the true rate is below it with probability ``confidence``."""
    if n_negative <= 0 or not 0 <= fp <= n_negative:
        raise ValueError(f"need 0 <= fp <= n and n > 0 (got fp={fp}, n={n_negative})")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if fp == n_negative:
        return 1.0
    return beta_ppf(confidence, fp + 1, n_negative - fp)


def max_false_hits(
    n_negative: int, max_fhr: float = MAX_FHR, confidence: float = CONFIDENCE
) -> int:
    """The most false hits ``x`` with ``fhr_upper_bound(x, n) <= max_fhr`` (-1 when even
    x = 0 exceeds it: too few must-miss rows to certify anything)."""
    best = -1
    for x in range(n_negative + 1):
        if fhr_upper_bound(x, n_negative, confidence) <= max_fhr:
            best = x
        else:
            break
    return best


# --- the served score -----------------------------------------------------------------

#: A refused pair's score is this share of the threshold times its query cosine
#: (see :func:`served_score`).
FLOOR = 0.99


def served_score(p: float | None, cosine: float, threshold: float) -> float:
    """The score a cache reports for a pair the verifier gave P(HIT) ``p`` (None:
    it never reached the verifier, e.g. below the recall gate):

        served = p                                      if p >= threshold
                 FLOOR * threshold * clip(cosine, 0, 1)  otherwise

    The verifier decides what is served; what it refuses keeps the embedding's
    order, strictly below every served pair (``FLOOR * threshold * cosine <
    threshold``): a vetoed near-duplicate stays above an unrelated pair, and the
    score ranks as the embedding does wherever the verifier does not serve.

    >>> served_score(0.9, 0.5, 0.7), served_score(0.65, 0.8, 0.7) == 0.99 * 0.7 * 0.8
    (0.9, True)
    """
    if p is not None and p >= threshold:
        return p
    return FLOOR * threshold * min(max(cosine, 0.0), 1.0)


def decide(tier: str, p: float | None, cosine: float, threshold: float) -> tuple[bool, float]:
    """The tier rule, written once: whether a pair settled at ``tier`` is served,
    and the score the cache reports (``p`` the verifier's P(HIT), ``cosine`` the
    query cosine):

        policy     -> (False, 0.0)       never served
        exact      -> (True, 1.0)        always served
        embedding  -> (False, served_score(None, cosine, threshold))  below the gate
        verifier   -> (p >= threshold, served_score(p, cosine, threshold))

    >>> decide("exact", None, 0.2, 0.7), decide("verifier", 0.8, 0.9, 0.7)
    ((True, 1.0), (True, 0.8))
    >>> decide("verifier", 0.6, 0.5, 0.7) == (False, 0.99 * 0.7 * 0.5)
    True
    """
    if tier == "policy":
        return False, 0.0
    if tier == "exact":
        return True, 1.0
    if tier == "embedding":
        return False, served_score(None, cosine, threshold)
    if tier != "verifier" or p is None:
        raise ValueError(f"tier {tier!r} with P(HIT) {p!r}: expected the verifier's P(HIT)")
    return p >= threshold, served_score(p, cosine, threshold)


# --- the operating point ----------------------------------------------------------------

#: A threshold above every possible score: serve nothing.
NEVER = 1.000001


@dataclass(frozen=True, slots=True)
class Certificate:
    """A certified operating point: ``point`` (serve when ``score >= threshold``,
    its counts over the calibration rows, ``point.alpha`` the FHR budget) and the
    one-sided Clopper-Pearson upper bound ``fhr_upper`` of its FHR at
    ``confidence``; ``certified`` says whether the bound is within the budget."""

    point: OperatingPoint
    confidence: float
    n_positive: int
    n_negative: int
    fhr_upper: float
    certified: bool

    @property
    def threshold(self) -> float:
        """The threshold; :data:`NEVER` when no threshold can be certified."""
        return serving_threshold(self.point)

    @property
    def max_fhr(self) -> float:
        return self.point.alpha

    @property
    def tp(self) -> int:
        return self.point.tp

    @property
    def fp(self) -> int:
        return self.point.fp

    @property
    def fhr(self) -> float | None:
        return self.point.fhr

    @property
    def recall(self) -> float | None:
        return self.point.recall

    def to_dict(self) -> dict[str, Any]:
        """What ``meta.json`` records as ``operating_point``."""
        return {
            "threshold": self.threshold,
            "max_fhr": self.max_fhr,
            "confidence": self.confidence,
            "bound": "one-sided Clopper-Pearson upper confidence bound",
            "n_positive": self.n_positive,
            "n_negative": self.n_negative,
            "tp": self.tp,
            "fp": self.fp,
            "fhr": self.fhr,
            "fhr_upper": self.fhr_upper,
            "recall": self.recall,
            "certified": self.certified,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Certificate:
        """From :meth:`to_dict` output (``meta.json``): the point's precision is
        ``tp / (tp + fp)``, its threshold None for :data:`NEVER`."""
        tp, fp, threshold = int(data["tp"]), int(data["fp"]), float(data["threshold"])
        point = OperatingPoint(
            alpha=float(data["max_fhr"]),
            threshold=None if threshold >= NEVER else threshold,
            recall=data["recall"],
            precision=tp / (tp + fp) if tp + fp else None,
            fhr=data["fhr"],
            n_fired=tp + fp,
            tp=tp,
            fp=fp,
        )
        return cls(
            point=point,
            confidence=float(data["confidence"]),
            n_positive=int(data["n_positive"]),
            n_negative=int(data["n_negative"]),
            fhr_upper=float(data["fhr_upper"]),
            certified=bool(data["certified"]),
        )


def serving_threshold(point: OperatingPoint) -> float:
    """The threshold a cache applies at ``point``: :data:`NEVER` when the point
    has none (serve nothing)."""
    return NEVER if point.threshold is None else float(point.threshold)


def certify_threshold(
    scores: Sequence[float],
    labels: Sequence[int],
    *,
    max_fhr: float = MAX_FHR,
    confidence: float = CONFIDENCE,
) -> Certificate:
    """The lowest threshold whose FHR upper bound on (scores, labels) is <= max_fhr.

    ``labels[i]`` is 1 for a HIT row. Rows the cache settles before the verifier
    (policy, recall gate) take score 0 and are never served (the threshold is
    always > 0). On the :func:`~cacheeval.metrics.sweep.threshold_sweep` of the
    positive scores, lowering the threshold only adds served rows, so FP and its
    bound only grow: the certified point is the last one of the sweep with
    ``fhr_upper_bound(FP, Nn) <= max_fhr`` (``rule="lowest"``).
    """
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores but {len(labels)} labels")
    sweep = threshold_sweep(labels, [s if s > 0.0 else None for s in scores])
    n_neg = sweep.n_negative
    if n_neg == 0:
        raise ValueError("calibration data has no must-miss rows: nothing to certify")

    def within_budget(fp: int, n_negative: int) -> bool:
        return fhr_upper_bound(fp, n_negative, confidence) <= max_fhr

    point = best_operating_point(sweep, within_budget, alpha=max_fhr, rule="lowest")
    upper = fhr_upper_bound(point.fp, n_neg, confidence)
    return Certificate(
        point=point,
        confidence=confidence,
        n_positive=sweep.n_positive,
        n_negative=n_neg,
        fhr_upper=upper,
        certified=upper <= max_fhr,
    )


# --- training --------------------------------------------------------------------------

SEED = 20250610


def monotone_constraints() -> list[int]:
    """LightGBM's monotone constraints, one per feature in :data:`FEATURE_NAMES`
    order: +1 on every similarity, -1 on every detected difference, 0 on the rest
    (:func:`~.features.direction`). With no difference detected, P(HIT) is then a
    non-decreasing function of the similarities - the verifier follows the
    embedding - and a detected difference can only lower it: a veto. (It also
    lets the cache skip embedding the differing spans whenever P(HIT) at
    cos_diff = -1 and at +1 fall on the same side of the threshold, see
    VerifiedCache.lookup.)"""
    return [direction(n) for n in FEATURE_NAMES]


def default_params() -> dict[str, Any]:
    """LightGBM parameters of the verifier (fixed seeds, one thread, deterministic)."""
    return {
        "objective": "binary",
        "learning_rate": 0.05,
        "num_leaves": 15,
        "max_depth": 5,
        "min_data_in_leaf": 8,
        "feature_fraction": 0.8,
        "bagging_fraction": 0.8,
        "bagging_freq": 1,
        "lambda_l2": 1.0,
        # exact split thresholds: with every feature monotone the trees cannot
        # overfit a template the way the unconstrained model could (randomised
        # thresholds cost 2-13 points of CacheEval recall here, see
        # reports/VERIFIED_vs_GPTCACHE.md, ablations)
        "extra_trees": False,
        "monotone_constraints": monotone_constraints(),
        "seed": SEED,
        "bagging_seed": SEED + 1,
        "feature_fraction_seed": SEED + 2,
        "data_random_seed": SEED + 3,
        "extra_seed": SEED + 4,
        "num_threads": 1,
        "deterministic": True,
        "force_row_wise": True,
        "verbose": -1,
    }


#: The LightGBM parameters that seed randomness (bagging, feature sampling, data).
SEED_PARAMS: tuple[str, ...] = (
    "seed", "bagging_seed", "feature_fraction_seed", "data_random_seed", "extra_seed",
)  # fmt: skip


def seeded_params(seed_offset: int = 0) -> dict[str, Any]:
    """:func:`default_params` with every seed (:data:`SEED_PARAMS`) moved by
    ``seed_offset``: 0 is the shipped model; others retrain it with other random
    draws, to tell a change from seed noise.

    >>> seeded_params(100)["bagging_seed"] - seeded_params()["bagging_seed"]
    100
    """
    p = default_params()
    for name in SEED_PARAMS:
        p[name] += seed_offset
    return p


NUM_BOOST_ROUND = 300


def train_booster(
    X: Sequence[Sequence[float]],
    y: Sequence[int],
    *,
    params: Mapping[str, Any] | None = None,
    num_boost_round: int = NUM_BOOST_ROUND,
) -> lightgbm.Booster:
    """Train the verifier on feature rows ``X`` (in :data:`FEATURE_NAMES` order) and
    labels ``y`` (1 = HIT). Same inputs, same model bytes."""
    import lightgbm
    import numpy as np

    if len(X) != len(y):
        raise ValueError(f"{len(X)} feature rows but {len(y)} labels")
    if len(set(y)) < 2:
        raise ValueError("training data needs both HIT and MISS rows")
    data = lightgbm.Dataset(
        np.asarray([quantize_features(row) for row in X], dtype=np.float64),
        label=np.asarray(y, dtype=np.float64),
        feature_name=list(FEATURE_NAMES),
        free_raw_data=False,
        params={"verbose": -1},
    )
    p = dict(default_params())
    p.update(params or {})
    return lightgbm.train(p, data, num_boost_round=num_boost_round)


def data_sha256(X: Sequence[Sequence[float]], y: Sequence[int], ids: Sequence[str]) -> str:
    """sha256 of the training data: one canonical ``id<TAB>label<TAB>features`` line
    per row (features at the verifier's precision, with ``repr`` so equal floats
    give equal bytes)."""
    h = hashlib.sha256()
    for rid, label, row in zip(ids, y, X, strict=True):
        h.update(f"{rid}\t{label}\t{','.join(repr(v) for v in quantize_features(row))}\n".encode())
    return h.hexdigest()


# --- the shipped artefact ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelMeta:
    """What ``model/meta.json`` records next to ``verifier.txt``."""

    format: str
    feature_names: tuple[str, ...]
    threshold: float
    gate_threshold: float
    operating_point: dict[str, Any]
    training: dict[str, Any]
    model_sha256: str

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["feature_names"] = list(self.feature_names)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> ModelMeta:
        missing = [f for f in cls.__dataclass_fields__ if f not in data]
        if missing:
            raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")
        if data["format"] != META_FORMAT:
            raise ValueError(f"{where}: unsupported format {data['format']!r}")
        return cls(
            format=str(data["format"]),
            feature_names=tuple(data["feature_names"]),
            threshold=float(data["threshold"]),
            gate_threshold=float(data["gate_threshold"]),
            operating_point=dict(data["operating_point"]),
            training=dict(data["training"]),
            model_sha256=str(data["model_sha256"]),
        )


class Verifier:
    """A trained booster plus its certified operating point and recall gate.

    Example::

        v = Verifier.load()                # adapters/verified_cache/model/
        p = v.probability(feature_vector)  # P(HIT)
        serve = p >= serving_threshold(v.operating_point)
    """

    def __init__(self, booster: lightgbm.Booster, meta: ModelMeta) -> None:
        if tuple(meta.feature_names) != FEATURE_NAMES:
            raise ValueError(
                "the model was trained on other features than this code computes "
                "(retrain with scripts/train_verified_cache.py)"
            )
        self.booster = booster
        self.meta = meta
        self.gate_threshold = meta.gate_threshold
        #: The certified operating point (None for a model saved without one,
        #: e.g. the provisional models the training pipeline scores with).
        self.certificate = (
            Certificate.from_dict(meta.operating_point) if meta.operating_point else None
        )
        #: The embedder whose cosines the verifier was trained on (models made
        #: before this was recorded used fp32 MiniLM ONNX).
        self.embedder_name = str(meta.training.get("embedder", "minilm-onnx"))
        constraints = meta.training.get("params", {}).get("monotone_constraints") or []
        #: Whether P(HIT) is non-decreasing in cos_diff (lazy span embedding is exact).
        self.monotone_cos_diff = (
            len(constraints) == len(FEATURE_NAMES)
            and constraints[FEATURE_NAMES.index("cos_diff")] == 1
        )

    @property
    def operating_point(self) -> OperatingPoint:
        """The certified operating point a cache serving with this model applies."""
        if self.certificate is None:
            raise ValueError("this model carries no certified operating point: pass one in")
        return self.certificate.point

    def probability(self, features: Sequence[float]) -> float:
        """P(HIT) for one feature vector (read at the training precision)."""
        import numpy as np

        x = np.asarray([quantize_features(features)], dtype=np.float64)
        return float(self.booster.predict(x, num_threads=1)[0])

    def probabilities(self, X: Sequence[Sequence[float]]) -> list[float]:
        """P(HIT) for many feature vectors."""
        import numpy as np

        if not len(X):
            return []
        x = np.asarray([quantize_features(row) for row in X], dtype=np.float64)
        out = self.booster.predict(x, num_threads=1)
        return [float(v) for v in out]

    def importances(self) -> list[tuple[str, float]]:
        """Total gain per feature, largest first (ties by name)."""
        gains = self.booster.feature_importance(importance_type="gain")
        pairs = [(n, float(g)) for n, g in zip(FEATURE_NAMES, gains, strict=True)]
        return sorted(pairs, key=lambda p: (-p[1], p[0]))

    def model_string(self) -> str:
        return str(self.booster.model_to_string())

    def save(self, directory: Path = MODEL_DIR) -> None:
        """Write ``verifier.txt`` and ``meta.json`` (atomically)."""
        text = self.model_string().encode("utf-8")
        write_bytes_atomic(directory / MODEL_FILE, text)
        write_bytes_atomic(directory / META_FILE, dumps_pretty(self.meta.to_dict()).encode())

    @classmethod
    def load(cls, directory: Path = MODEL_DIR) -> Verifier:
        """Read a saved verifier; ValueError naming the file when it is unusable."""
        import json

        import lightgbm

        model_path = directory / MODEL_FILE
        meta_path = directory / META_FILE
        for p in (model_path, meta_path):
            if not p.is_file():
                raise FileNotFoundError(
                    f"{p} not found: train the verifier with scripts/train_verified_cache.py"
                )
        text = model_path.read_text(encoding="utf-8")
        try:
            data = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{meta_path}:{e.lineno}: not valid JSON ({e.msg})") from None
        meta = ModelMeta.from_dict(data, str(meta_path))
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest != meta.model_sha256:
            raise ValueError(f"{model_path}: sha256 {digest} does not match {meta_path}")
        return cls(lightgbm.Booster(model_str=text), meta)

    @classmethod
    def from_booster(
        cls,
        booster: lightgbm.Booster,
        *,
        threshold: float,
        gate_threshold: float,
        operating_point: Mapping[str, Any] | None = None,
        training: Mapping[str, Any] | None = None,
    ) -> Verifier:
        text = str(booster.model_to_string())
        meta = ModelMeta(
            format=META_FORMAT,
            feature_names=FEATURE_NAMES,
            threshold=float(threshold),
            gate_threshold=float(gate_threshold),
            operating_point=dict(operating_point or {}),
            training=dict(training or {}),
            model_sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        )
        return cls(booster, meta)
