"""`tfcnnwrap import`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "import",
        help="verify bundles and add them to the local library",
        description="Library: $TFCNNWRAP_DATA, else the user data directory. Exit 0 every bundle imported or "
        "already there, 1 some refused (each named with why), 2 usage error or unusable library.",
        examples=["1f3a...e9.tfcw.json.gz", "downloads/bundles/"],
    )
    p.add_argument("paths", nargs="+", metavar="BUNDLE|DIR", type=text, help="bundle files or directories")


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.share.library import ImportArgs, cmd_import  # start-up: a verb's stage is imported when it runs

    return cmd_import(ImportArgs(paths=tuple(args.paths)))
