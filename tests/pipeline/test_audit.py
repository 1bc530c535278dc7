"""The one-side leakage audit on synthetic data with and without a leak."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cacheeval.benches.audit import (
    NaiveBayes,
    audit_domain,
    audit_rows,
    features,
    format_audit,
    group_folds,
)
from cacheeval.cli import main as cli
from cacheeval.support.jsonio import write_jsonl
from cacheeval.support.layout import rng

from .synthetic import make_shard

VOCAB = (
    "what how why when list explain compare show give find tell describe the a of for in "
    "city river price report summary table value number year plan budget list order"
).split()


def _dataset(domain: str, *, leak: bool, n: int = 200) -> list[dict[str, Any]]:
    """``n`` rows in families of 5 (one source each), HIT/MISS balanced per family.
    With ``leak``, query_b of a HIT row says "kindly" and of a MISS row "instead"."""
    r = rng("audit-test", domain, int(leak))
    rows = []
    for i in range(n):
        label = "HIT" if i % 2 == 0 else "MISS"
        words_a = " ".join(r.choice(VOCAB) for _ in range(8))
        words_b = " ".join(r.choice(VOCAB) for _ in range(8))
        if leak:
            words_b += " kindly" if label == "HIT" else " instead"
        rows.append(
            {
                "id": f"cb-{domain}-{i + 1:04d}",
                "domain": domain,
                "query_a": words_a,
                "query_b": words_b,
                "binary_label": label,
                "verification_method": "exact_match",
                "source": f"sources/{domain}.json#family{i // 5}",
            }
        )
    return rows


def test_leaky_query_b_is_flagged() -> None:
    result = audit_domain("qa_factual", _dataset("qa_factual", leak=True))
    assert result.rows == 200 and result.groups == 40 and result.folds == 5
    assert result.majority == 0.5
    assert result.acc_b is not None and result.acc_b > 0.95
    assert result.gap_b is not None and result.gap_b > 0.4
    # query_a carries no signal.
    assert result.gap_a is not None and abs(result.gap_a) < 0.1
    assert result.max_gap == result.gap_b
    text = format_audit([result])
    assert "<- gap > 0.10" in text
    assert "flagged (1): qa_factual" in text


def test_label_free_queries_are_not_flagged() -> None:
    result = audit_domain("qa_open", _dataset("qa_open", leak=False))
    assert result.gap_b is not None and result.gap_a is not None
    assert result.gap_b < 0.1 and result.gap_a < 0.1
    text = format_audit([result])
    assert "<-" not in text
    assert "no domain's one-side gap exceeds 0.10" in text


def test_audit_is_deterministic_and_independent_of_row_order() -> None:
    rows = _dataset("math", leak=False)
    first = audit_domain("math", rows)
    assert audit_domain("math", rows) == first
    assert audit_domain("math", list(reversed(rows))) == first
    assert audit_rows(rows) == [first]


def test_groups_are_never_split_and_folds_balanced() -> None:
    groups = [f"g{i // 3}" for i in range(31)] + ["big"] * 9
    folds = group_folds(groups, 5, "seed")
    by_group: dict[str, set[int]] = {}
    for g, f in zip(groups, folds, strict=True):
        by_group.setdefault(g, set()).add(f)
    assert all(len(fs) == 1 for fs in by_group.values())
    sizes = Counter(folds)
    assert sorted(sizes) == [0, 1, 2, 3, 4]
    assert max(sizes.values()) - min(sizes.values()) <= 3  # at most one family apart
    assert group_folds(groups, 5, "seed") == folds
    # Fewer groups than folds: one fold per group; a single group cannot be cross-validated.
    assert sorted(set(group_folds(["x", "y", "x"], 5))) == [0, 1]
    single = audit_domain(
        "code", [{**r, "source": "one"} for r in _dataset("code", leak=True, n=20)]
    )
    assert single.acc_b is None and single.max_gap is None
    assert "cannot cross-validate" in single.note


def test_policy_domain_is_trivially_majority() -> None:
    rows = make_shard("creative", (4, 4, 4, 4, 4))
    result = audit_domain("creative", rows)
    assert result.majority == 1.0 and result.majority_label == "MISS"
    assert result.acc_b == 1.0 and result.gap_b == 0.0
    assert "policy domain, every row MISS: trivially majority" in result.note


def test_naive_bayes_and_features() -> None:
    f = features("Sort the list")
    assert f["w:sort"] == 1 and f["b:sort the"] == 1 and f["c: so"] == 1 and f["c:st "] == 1
    model = NaiveBayes.fit(
        [features("red apple"), features("red cherry"), features("blue sky"), features("blue sea")],
        ["HIT", "HIT", "MISS", "MISS"],
    )
    assert model.predict(features("red wine")) == "HIT"
    assert model.predict(features("blue whale")) == "MISS"


def test_cli_audit_max_gap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "qa_factual.jsonl", _dataset("qa_factual", leak=True))
    write_jsonl(tmp_path / "qa_open.jsonl", _dataset("qa_open", leak=False))
    assert cli(["audit", "--shards", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "flagged (1): qa_factual" in out
    assert cli(["audit", "--shards", str(tmp_path), "--max-gap", "0.2"]) == 1
    assert "gap above --max-gap 0.2 in: qa_factual" in capsys.readouterr().out
    assert cli(["audit", "--shards", str(tmp_path), "--domain", "qa_open", "--max-gap", "0.2"]) == 0
    (tmp_path / "math.jsonl").write_text('{"id": "cb-math-0001"}\n')
    assert cli(["audit", "--shards", str(tmp_path)]) == 1
    assert "math.jsonl:1: needs query_a, query_b and binary_label" in capsys.readouterr().err
