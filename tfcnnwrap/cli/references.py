"""`tfcnnwrap references`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_format, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "references",
        help="list the built-in reference GPUs",
        description="The published tf_cnn_benchmarks results tfcnnwrap ships, with conditions and sources.",
        examples=["", "--gpu 2080-Ti", "--model resnet50 --format csv", "--format json"],
    )
    p.add_argument("--gpu", metavar="NAME", type=text, help="only this reference GPU, every figure with its source")
    p.add_argument("--model", metavar="M", type=text, help="only this model (resnet50, vgg16, ...)")
    p.add_argument("--references", metavar="FILE.csv", type=text, help="also list your own references")
    add_format(p, ["table", "markdown", "csv", "json"])


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.compare import refview  # start-up: a verb's stage is imported when it runs

    return refview.cmd_references(
        refview.ReferencesArgs(gpu=args.gpu, model=args.model, references=args.references, format=args.format)
    )
