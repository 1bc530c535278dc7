"""The structure limits stay enforced: no module over 900 lines, no function over
120, no import cycle and no import inside a function that closes one, every
module in a layer and no import going up one, and at most ten modules at the
top of cacheeval/, in cacheeval/ and adapters/ (``scripts/check_structure.py``). The checker itself
is tested on tiny packages written here, so it can fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.check_structure import LAYERS, Report, layer_of, main, render, scan
from tests.conftest import REPO_ROOT

#: Known violations, each owned by other work in flight, with the reason. A
#: listed item that no longer violates fails the test below: delete its line.
KNOWN_LONG_MODULES: dict[str, str] = {}
KNOWN_LONG_FUNCTIONS: dict[str, str] = {}
KNOWN_CYCLES: dict[tuple[str, ...], str] = {}


@pytest.fixture(scope="module")
def report() -> Report:
    return scan([REPO_ROOT / "cacheeval", REPO_ROOT / "adapters"])


def _rel(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix()


def test_no_module_over_the_limit(report: Report) -> None:
    long = {_rel(m.path): m.lines for m in report.long_modules}
    assert {k: v for k, v in long.items() if k not in KNOWN_LONG_MODULES} == {}


def test_no_function_over_the_limit(report: Report) -> None:
    long = {f"{f.module}.{f.name}": f.lines for f in report.long_functions}
    assert {k: v for k, v in long.items() if k not in KNOWN_LONG_FUNCTIONS} == {}


def test_no_import_cycle_and_no_cycle_breaking_import(report: Report) -> None:
    assert [c for c in report.cycles if c not in KNOWN_CYCLES] == []
    assert list(report.cycle_breakers) == []


def test_every_module_has_a_layer_and_no_import_goes_up(report: Report) -> None:
    assert report.unlayered == ()
    assert [f"{i.source}:{i.line} -> {i.target}" for i in report.upward] == []


def test_cacheeval_top_level_keeps_only_the_api_and_entry_points(report: Report) -> None:
    top = report.top_level["cacheeval"]
    assert len(top) <= 10, top
    assert "report_markdown.py" not in top and "harness.py" not in top


def test_public_api_is_unchanged() -> None:
    import cacheeval

    assert set(cacheeval.__all__) >= {
        "evaluate", "predict", "score", "load_bench", "iter_bench",
        "Pair", "Request", "Verdict", "Cache", "Report",
    }  # fmt: skip
    for name in cacheeval.__all__:
        assert getattr(cacheeval, name) is not None


def test_every_known_violation_still_exists(report: Report) -> None:
    """A fixed violation must leave the lists above, so the limits only tighten."""
    modules = {_rel(m.path) for m in report.long_modules}
    functions = {f"{f.module}.{f.name}" for f in report.long_functions}
    stale = (
        [m for m in KNOWN_LONG_MODULES if m not in modules]
        + [f for f in KNOWN_LONG_FUNCTIONS if f not in functions]
        + [" <-> ".join(c) for c in KNOWN_CYCLES if c not in report.cycles]
    )
    assert stale == [], f"fixed: remove from tests/test_structure.py: {stale}"


# --- the checker on packages written here -----------------------------------------------


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / next(iter(files)).split("/")[0]


def test_checker_measures_modules_and_functions(tmp_path: Path) -> None:
    body = "\n".join(f"        x{i} = {i}" for i in range(5))
    pkg = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": f"def short():\n    return 1\n\n\nclass C:\n    def long(self):\n{body}\n",
        },
    )
    got = scan([pkg], root=tmp_path, max_module_lines=8, max_function_lines=4)
    assert [(m.name, m.lines) for m in got.long_modules] == [("pkg.a", 11)]
    assert [(f.module, f.name, f.lines) for f in got.long_functions] == [("pkg.a", "C.long", 6)]
    assert not got.ok
    text = render(got)
    assert "VIOLATION pkg.a:6 C.long: 6 lines > 4" in text


def test_checker_finds_cycles_and_cycle_breakers(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from . import b\n",
            "pkg/b.py": "from .a import x\n",
            "pkg/c.py": "import pkg.d\n",
            "pkg/d.py": "def f():\n    from .c import y\n    return y\n",
            "pkg/e.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import f\n"
            ),
            "pkg/f.py": "from .e import z\n",
            "pkg/g.py": "def lazy():\n    import json\n    from . import a\n",
        },
    )
    got = scan([pkg], root=tmp_path)
    assert got.cycles == (("pkg.a", "pkg.b"),)  # e <-> f only under TYPE_CHECKING
    assert [(i.source, i.target, i.line) for i in got.cycle_breakers] == [("pkg.d", "pkg.c", 2)]
    assert not got.ok


def test_checker_finds_upward_imports_unlayered_modules_and_a_crowded_top(
    tmp_path: Path,
) -> None:
    pkg = _package(
        tmp_path,
        {
            "pkg/__init__.py": "from . import top\n",  # the top layer may import anything
            "pkg/low/__init__.py": "",
            "pkg/low/a.py": "def f():\n    from ..high import b\n",  # lazy, still upward
            "pkg/high/__init__.py": "",
            "pkg/high/b.py": "from ..low import a\n",  # downward: fine
            "pkg/top.py": "from .high import b\n",
            "pkg/stray/__init__.py": "",
        },
    )
    layers = (("low", ("pkg.low",)), ("high", ("pkg.high",)), ("top", ("pkg.top", "pkg")))
    got = scan([pkg], root=tmp_path, layers=layers, max_top_level=1, limited_top_levels=("pkg",))
    assert [(i.source, i.target, i.line, i.lazy) for i in got.upward] == [
        ("pkg.low.a", "pkg.high.b", 2, True)
    ]
    assert got.unlayered == ()  # pkg.stray falls under the "pkg" prefix of the top layer
    assert got.top_level == {"pkg": ("__init__.py", "top.py")}
    assert not got.ok
    text = render(got)
    assert "VIOLATION pkg.low.a:2: imports pkg.high.b, a higher layer" in text
    assert "VIOLATION pkg/: 2 top-level modules > 1" in text
    narrow = (("low", ("pkg.low",)), ("high", ("pkg.high",)))
    assert "pkg.top" in scan([pkg], root=tmp_path, layers=narrow).unlayered


def test_layer_of_takes_the_longest_prefix() -> None:
    assert layer_of("cacheeval") == len(LAYERS) - 2
    assert layer_of("cacheeval.reporting.report") == layer_of("cacheeval.reporting")
    assert layer_of("cacheeval.support.jsonio") < layer_of("cacheeval.run.harness")  # type: ignore[operator]
    assert layer_of("adapters.verified_cache.cache") == len(LAYERS) - 1
    assert layer_of("numpy") is None


def test_checker_passes_a_clean_package(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/a.py": "import os\n", "pkg/b.py": "from .a import os\n"},
    )
    got = scan([pkg], root=tmp_path)
    assert got.ok and got.cycles == () and got.cycle_breakers == ()


def test_command_line_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no_such_package"]) == 2
    assert main(["scripts", "--max-module-lines", "10000", "--max-function-lines", "10000"]) == 0
    assert "import cycles: 0" in capsys.readouterr().out
