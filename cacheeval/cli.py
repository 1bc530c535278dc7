"""The ``cacheeval`` command line. Each subcommand lives in its own module under
:mod:`cacheeval.commands` and exposes ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``; this module only finds and
dispatches them, so adding a command never touches this file."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import signal
import sys
import threading
from collections.abc import Sequence

from . import commands
from .version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cacheeval", description="Benchmark the HIT/MISS decisions of an LLM prompt cache."
    )
    parser.add_argument("--version", action="version", version=f"cacheeval {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


#: Exit status after a SIGTERM (128 + 15), as a shell reports it.
EXIT_TERMINATED = 143


class _Terminate:
    """A SIGTERM handler that stops the command the way Ctrl-C does (partial
    files marked incomplete, temp files removed) and remembers it came."""

    def __init__(self) -> None:
        self.fired = False

    def __call__(self, signum: int, frame: object) -> None:
        self.fired = True
        raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    terminate = _Terminate()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, terminate)
    try:
        code = int(args._run(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        code = 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return EXIT_TERMINATED if terminate.fired else code


if __name__ == "__main__":
    sys.exit(main())
