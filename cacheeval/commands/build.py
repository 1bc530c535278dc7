"""``cacheeval build``: assemble the domain shards (see :mod:`cacheeval.pipeline.assemble`)."""

from __future__ import annotations

import argparse

NAME = "build"
HELP = (
    "Validate the domain shards and write cachebench.jsonl, the private test labels "
    "and domains/manifest.json (--check: verify the committed files are reproducible)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from ..pipeline import assemble  # light: jsonschema is imported only when validating

    assemble.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from ..pipeline import assemble

    return assemble.run(args)
