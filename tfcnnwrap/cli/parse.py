"""`tfcnnwrap parse`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_format, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "parse",
        help="read tf_cnn_benchmarks logs (any, ours or not)",
        description="One record per log file: status, total images/sec, model, batch size and the header.",
        examples=["resnet50.log", "old-logs/ --format csv"],
    )
    p.add_argument("paths", nargs="+", metavar="PATH", type=text, help="log files or directories (recursive)")
    add_format(p, ["table", "markdown", "csv", "json", "jsonl"])


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.run.parse import ParseArgs, cmd_parse  # start-up: a verb's stage is imported when it runs

    return cmd_parse(ParseArgs(paths=tuple(args.paths), format=args.format))
