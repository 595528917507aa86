"""`tfcnnwrap config`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_format, add_verb


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "config",
        help="the settings a verb uses when no flag gives them, and where each came from",
        description="The interpreter, vendor directory, upstream, results directory, library and config file "
        "a verb run here without flags would use, each with its source: an environment variable, the config "
        "file, the last setup's manifest or the default. A flag given to a verb wins over all of them.",
        examples=["", "--format json"],
    )
    add_format(p, ["table", "markdown", "csv", "json"])


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.present.settingsview import (
        ConfigArgs,
        cmd_config,
    )  # start-up: the stage is imported when the verb runs

    return cmd_config(ConfigArgs(format=args.format))
