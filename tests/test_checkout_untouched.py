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


# --- no command run changes the checkout -----------------------------------------------

#: Folders of tools that may write while the tests run, whatever the commands do.
TOOL_CACHES = (".git", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", "__pycache__")

PAIRS_CSV = (
    "text_a,text_b,label\n"
    "How do I boil an egg?,How do I boil an egg?,HIT\n"
    "What is the capital of France?,Which city is the capital of France?,HIT\n"
    "What is 2 + 2?,What is 2 + 3?,MISS\n"
    "Write a poem about cats,Write a poem about dogs,MISS\n"
)


def checkout_state() -> tuple[list[str], dict[str, tuple[int, int]]]:
    """``git status`` (ignored and untracked files included) and every file's
    size and modification time: a command that writes anything into the
    checkout, even a committed file rewritten with the same bytes, changes it."""
    import subprocess

    status = subprocess.run(
        ["git", "status", "--porcelain", "--ignored", "--untracked-files=all"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    lines = sorted(ln for ln in status if not any(f"{c}/" in ln for c in TOOL_CACHES))
    files = {}
    for path in REPO_ROOT.rglob("*"):
        rel = path.relative_to(REPO_ROOT)
        if rel.parts and (rel.parts[0] in TOOL_CACHES or "__pycache__" in rel.parts):
            continue
        if path.is_file():
            st = path.stat()
            files[str(rel)] = (st.st_size, st.st_mtime_ns)
    return lines, files


def _changed(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """Files added, removed or written between the two snapshots."""
    return sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))


def _run_in_checkout(argv: list[str], env: dict[str, str]) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "cacheeval", *argv],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (argv[0], done.stderr[-2000:])


def _user_env(tmp_path: Path) -> dict[str, str]:
    import os

    env = {k: v for k, v in os.environ.items() if k != CACHE_DIR_ENV}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONDONTWRITEBYTECODE="1",
               CACHEEVAL_CACHE_DIR=str(tmp_path / "user-cache"))  # fmt: skip
    return env


def test_no_command_changes_the_checkout(tmp_path: Path) -> None:
    """eval (one cache and several), predict, external, replay and plot, run
    from the checkout's root on its files with relative paths, as a user
    would: only the output paths given (all outside it) are written."""
    bench, labels = "tests/fixtures/mini_bench.jsonl", "tests/fixtures/mini_test_labels.jsonl"
    out = tmp_path / "out"
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS_CSV, encoding="utf-8")
    env = _user_env(tmp_path)
    before = checkout_state()
    runs = [
        ["eval", "--bench", bench, "--labels", labels, "--baseline", "exact_match",
         "--out", f"{out}/e.md", "--json", f"{out}/e.json", "--predictions", f"{out}/e.jsonl"],
        ["eval", "--bench", bench, "--split", "dev", "--baseline", "exact_match", "--baseline",
         "always_hit", "--no-probe", "--out", f"{out}/cmp.md", "--json", f"{out}/cmp.json"],
        ["predict", "--bench", bench, "--split", "test", "--baseline", "exact_match",
         "--out", f"{out}/p.jsonl"],
        ["external", str(pairs), "--baseline", "exact_match", "--no-reference", "--bench", bench,
         "--split", "dev", "--out", f"{out}/x.md", "--json", f"{out}/x.json"],
        ["replay", "--bench", bench, "--labels", labels, "--split", "train", "--baseline",
         "exact_match", "--out", f"{out}/r.md", "--json", f"{out}/r.json"],
        ["plot", f"{out}/e.json", f"{out}/r.json", "--out", f"{out}/figures"],
    ]  # fmt: skip
    for argv in runs:
        _run_in_checkout(argv, env)
    after = checkout_state()
    assert after[0] == before[0]  # git status
    changed = sorted(
        k for k in set(before[1]) | set(after[1]) if before[1].get(k) != after[1].get(k)
    )
    assert changed == []
    written = {p.name for p in out.rglob("*") if p.is_file()}
    assert {"e.md", "cmp.md", "cmp.exact_match.md", "p.jsonl", "x.md", "r.json",
            "clq.svg"} <= written  # fmt: skip


@pytest.mark.slow  # loads MiniLM in three processes (the run, the probe, the reference)
def test_embedding_caches_keep_their_memos_out_of_the_checkout(tmp_path: Path) -> None:
    """A cache that memoises embeddings (the MiniLM cosine) and external's
    reference write their memos to $CACHEEVAL_CACHE_DIR, never the checkout."""
    bench = "tests/fixtures/mini_bench.jsonl"
    out = tmp_path / "out"
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(PAIRS_CSV, encoding="utf-8")
    env = _user_env(tmp_path)
    before = checkout_state()
    _run_in_checkout(["eval", "--bench", bench, "--split", "dev", "--cache-module",
                      "adapters.cosine_baseline", "--cache-class", "MiniLMCosine",
                      "--out", f"{out}/e.md"], env)  # fmt: skip
    _run_in_checkout(["external", str(pairs), "--baseline", "exact_match", "--resamples", "0",
                      "--out", f"{out}/x.md"], env)  # fmt: skip
    after = checkout_state()
    assert after[0] == before[0]
    changed = sorted(
        k for k in set(before[1]) | set(after[1]) if before[1].get(k) != after[1].get(k)
    )
    assert changed == []
    assert any((tmp_path / "user-cache").rglob("*")), "the memo went somewhere else"
