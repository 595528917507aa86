"""`tfcnnwrap library`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_format, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "library",
        help="list the bundles in the local library",
        description="One row per bundle and configuration: GPU, model, batch size, images/sec, verified.",
        examples=["", "--gpu 2070 --model resnet50", "--format json"],
    )
    p.add_argument("--gpu", metavar="NAME", type=text, help="only GPUs whose name has these words")
    p.add_argument("--model", metavar="M", type=text, help="only this model")
    add_format(p, ["table", "markdown", "csv", "json"])


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.share.library import LibraryArgs, cmd_library  # start-up: a verb's stage is imported when it runs

    return cmd_library(LibraryArgs(gpu=args.gpu, model=args.model, format=args.format))
