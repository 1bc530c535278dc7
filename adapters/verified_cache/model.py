"""The LightGBM verifier: training, inference, the certified operating point.

Training is deterministic: LightGBM runs single-threaded (``num_threads=1``) with
``deterministic=True``, ``force_row_wise=True`` and every seed fixed, so the same
rows give the same model bytes (``Booster.model_to_string``) on every run. The
features are read at a fixed precision (:func:`~.features.quantize_features`) in
training, in the training-data hash and at inference alike, so the floating-point
noise of another CPU does not reach the model.

The operating threshold is *certified* on calibration data the model never saw:
the lowest score (most recall) whose one-sided Clopper-Pearson upper bound on
the false-hit rate is at most the FHR budget (:func:`certify_threshold`). The
certificate, the bound and its incomplete-beta arithmetic live in
:mod:`cacheeval.metrics.certify` (``cacheeval tune`` uses the same one); they
are imported here under their old names.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

# The certificate lives in the core (one certificate); its names stay importable from here.
from cacheeval.metrics.certify import CONFIDENCE as CONFIDENCE
from cacheeval.metrics.certify import MAX_FHR as MAX_FHR
from cacheeval.metrics.certify import NEVER as NEVER
from cacheeval.metrics.certify import Certificate as Certificate
from cacheeval.metrics.certify import beta_ppf as beta_ppf
from cacheeval.metrics.certify import betainc as betainc
from cacheeval.metrics.certify import certify_threshold as certify_threshold
from cacheeval.metrics.certify import clopper_pearson as clopper_pearson
from cacheeval.metrics.certify import fhr_upper_bound as fhr_upper_bound
from cacheeval.metrics.certify import max_false_hits as max_false_hits
from cacheeval.metrics.certify import serving_threshold as serving_threshold
from cacheeval.metrics.sweep import OperatingPoint
from cacheeval.support.jsonio import dumps_pretty, write_bytes_atomic

from .features import FEATURE_NAMES, direction, quantize_features

if TYPE_CHECKING:
    import lightgbm

MODEL_DIR = Path(__file__).resolve().parent / "model"
MODEL_FILE = "verifier.txt"
META_FILE = "meta.json"
META_FORMAT = "verified-cache-model/1"


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
    weights: Sequence[float] | None = None,
) -> lightgbm.Booster:
    """Train the verifier on feature rows ``X`` (in :data:`FEATURE_NAMES` order) and
    labels ``y`` (1 = HIT), each row weighted by ``weights`` (None: all 1). Same
    inputs, same model bytes."""
    import lightgbm
    import numpy as np

    if len(X) != len(y) or (weights is not None and len(weights) != len(y)):
        raise ValueError(f"{len(X)} feature rows but {len(y)} labels")
    if len(set(y)) < 2:
        raise ValueError("training data needs both HIT and MISS rows")
    data = lightgbm.Dataset(
        np.asarray([quantize_features(row) for row in X], dtype=np.float64),
        label=np.asarray(y, dtype=np.float64),
        weight=None if weights is None else np.asarray(weights, dtype=np.float64),
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
