"""`tfcnnwrap publish`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "publish",
        help="add a sweep or bundle to a git results repository and push",
        description="Clones or fetches the repository, adds bundles/<vendor>/<gpu-slug>/<id>.tfcw.json.gz, "
        "commits and pushes; a push rejected because someone pushed first is rebased and retried.",
        examples=[
            "results/20261130-101500 --to git@github.com:me/tf-results.git",
            "1f3a...e9.tfcw.json.gz --to /srv/git/results.git --branch main",
        ],
    )
    p.add_argument("source", metavar="SWEEP_DIR|BUNDLE", type=text, help="a sweep directory or a bundle file")
    p.add_argument(
        "--to",
        metavar="GIT_URL",
        type=text,
        required=True,
        help="the results repository: a path, file://, ssh:// or https:// URL",
    )
    p.add_argument("--branch", metavar="B", type=text, help="default: the repository's default branch")


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.share.gitrepo import PublishArgs, cmd_publish  # start-up: a verb's stage is imported when it runs

    return cmd_publish(PublishArgs(source=args.source, to=args.to, branch=args.branch))
