"""`tfcnnwrap list`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_format, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "list",
        help="past sweeps, newest first: GPU, TensorFlow, conditions, runs, complete or interrupted",
        description="Every sweep under RESULTS_DIR, newest first, with the command that resumes an interrupted one.",
        examples=["", "results --format json"],
    )
    p.add_argument(
        "results_dir", nargs="?", metavar="RESULTS_DIR", type=text, help="default: $TFCNNWRAP_RESULTS, else results/"
    )
    add_format(p, ["table", "markdown", "csv", "json"])


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.sweep.history import ListArgs, cmd_list  # start-up: a verb's stage is imported when it runs

    return cmd_list(ListArgs(results_dir=args.results_dir, format=args.format))
