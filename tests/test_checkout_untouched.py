"""Commands write caches of derived data (embedding memos, exported ONNX
models, pair scores) to the user cache directory, never into the checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from cacheeval.support.layout import CACHE_DIR_ENV, REPO_ROOT, user_cache_dir


def test_the_user_cache_dir_follows_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "mine"))
    assert user_cache_dir("embeddings") == tmp_path / "mine" / "embeddings"
    monkeypatch.delenv(CACHE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert user_cache_dir() == tmp_path / "xdg" / "cacheeval"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir("onnx") == tmp_path / "home" / ".cache" / "cacheeval" / "onnx"


def test_no_adapter_cache_lives_in_the_checkout() -> None:
    from adapters import cosine_baseline, difficulty_scorers, embedders

    for where in (cosine_baseline.MEMO_DIR, difficulty_scorers.CACHE_DIR, embedders.ONNX_CACHE_DIR):
        assert not Path(where).resolve().is_relative_to(REPO_ROOT), where
