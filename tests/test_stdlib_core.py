"""The scoring core imports nothing outside the Python standard library."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO_ROOT

CORE = [
    "cacheeval",
    "cacheeval.run.harness",
    "cacheeval.metrics",
    "cacheeval.metrics.registry",
    "cacheeval.reporting.report",
    "cacheeval.baselines",
    "cacheeval.dataset",
    "cacheeval.cli",
    "cacheeval.results.predictions",
    "cacheeval.support.progress",
    "cacheeval.support.gitinfo",
    "cacheeval.commands.eval",
    "cacheeval.commands.score",
    "cacheeval.commands.predict",
    "cacheeval.replay.engine",
    "cacheeval.replay.report",
    "cacheeval.replay.shared_baselines",
    "cacheeval.metrics.replay",
    "cacheeval.metrics.curves",
    "cacheeval.reporting.plotdata",
    "cacheeval.reporting.plot",  # matplotlib only when a figure is drawn
    "cacheeval.commands.replay",
    "cacheeval.commands.plot",
    "cacheeval.commands.import_pairs",
    "cacheeval.reporting.viewer",
    "cacheeval.reporting.viewer_page",
    "cacheeval.commands.view",
    "cacheeval.commands.tune",
    "cacheeval.metrics.certify",
    "cacheeval.results.columns",
    "cacheeval.support.idset",
    "cacheeval.run.parallel",
    "cacheeval.run.blockrun",
    "cacheeval.run.procpool",
    "cacheeval.run.ray_backend",  # ray itself only when a Ray run starts
    "scripts.eval_harness",
]

PROBE = """
import importlib, json, sys
before = set(sys.modules)  # interpreter start-up (site, editable-install finder)
for name in {core!r}:
    importlib.import_module(name)
new = sorted(set(sys.modules) - before)
ours = ("cacheeval", "scripts")
bad = [m for m in new if m.split(".")[0] not in sys.stdlib_module_names
       and m.split(".")[0] not in ours]
print(json.dumps({{"bad": bad, "n_new": len(new)}}))
"""


def test_core_imports_only_stdlib() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(core=CORE)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["bad"] == []
    assert result["n_new"] > len(CORE)  # the probe really imported the modules


def test_probe_would_catch_a_third_party_import() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(core=["cacheeval", "jsonschema"])],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "jsonschema" in json.loads(done.stdout)["bad"]
