"""`tfcnnwrap pull`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "pull",
        help="fetch a git results repository and import every new, verified bundle",
        description="Fetches the branch (shallow), verifies every bundle the library has not seen and imports "
        "the good ones; each bad one is named with its path and why. Exit as import.",
        examples=["https://github.com/someone/tf-results.git", "/srv/git/results.git --branch main"],
    )
    p.add_argument("url", metavar="GIT_URL", type=text, help="a path, file://, ssh:// or https:// URL")
    p.add_argument("--branch", metavar="B", type=text, help="default: the repository's default branch")


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.share.gitrepo import PullArgs, cmd_pull  # start-up: a verb's stage is imported when it runs

    return cmd_pull(PullArgs(url=args.url, branch=args.branch))
