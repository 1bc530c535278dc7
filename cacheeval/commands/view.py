"""``cacheeval view``: every pair of a run, with each cache's decision, in one HTML file.

    cacheeval view a.jsonl b.jsonl --bench cachebench.jsonl --split test \\
        --labels private/test_labels.jsonl --out view.html

Reads the benchmark rows and one predictions file per cache (``predict``,
``eval --predictions``) and writes a self-contained page (no server, no
network; see :mod:`cacheeval.reporting.viewer_page`): a per-cache summary
and the false hits grouped by what differs on the first screen, then the
pairs, filterable by domain, label, subcategory, what differs, cache and
outcome, sortable by score, one column per cache, 100 to a page.

The rows are those of ``--split``/``--domain``, else of the split (and
domains) every predictions header names, else all. Hidden test rows are
shown only with ``--labels`` (as ``cacheeval score``); without it they are
left out with a note. A prediction whose id is no row of the bench is an
error (``path:LINE``), and so is a file with no prediction for any selected
row; a selected row a file lacks is shown as a missing prediction. Writes
only ``--out`` (mode 600, with a note, when it shows hidden test labels: such
a page is as private as the labels file). Exit 0, or 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ._pages import write_page
from ._running import UsageError, _one_line
from .eval import add_rows_arguments, fail, prog_name

NAME = "view"
HELP = "Write one HTML page with every pair and each cache's decision, caches side by side."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "predictions",
        nargs="+",
        type=Path,
        metavar="PREDICTIONS",
        help="predictions JSONL files (one column per file)",
    )
    add_rows_arguments(parser)
    parser.add_argument("--out", required=True, type=Path, help="HTML file to write")
    parser.add_argument("--title", help="page title (default: names the bench and split)")
    parser.set_defaults(_prog=parser.prog)


def run(args: argparse.Namespace) -> int:
    prog = prog_name(args, f"cacheeval {NAME}")
    from ._running import output_problem

    clash = output_problem(args, ("out",), ("bench", "labels", "predictions"))
    if clash is not None:
        return fail(prog, clash)

    try:
        summary, _ = write_page(args, prog)
    except UsageError as e:
        return fail(prog, str(e))
    except OSError as e:
        return fail(prog, _one_line(e))
    print(summary)
    return 0
