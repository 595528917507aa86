"""`tfcnnwrap init-repo`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "init-repo",
        help="make a git repository for community results: README, allowed_signers, a CI workflow",
        description="Makes DIR a git repository (or adds to one) that publish --to can push bundles into: a "
        "README saying how to submit, an allowed_signers file and a workflow (GitHub, Forgejo or Gitea Actions) "
        "that runs `verify --repo .` on every push and pull request and publishes the site from the default "
        "branch. Existing files are kept.",
        examples=["tf-results", "tf-results --install 'tfcnnwrap==0.9.0'"],
    )
    p.add_argument("dir", metavar="DIR", type=text, help="the repository's folder (made when missing)")
    p.add_argument(
        "--install",
        metavar="SPEC",
        type=text,
        help="what the workflow installs with pip (default: this tfcnnwrap's version from PyPI)",
    )


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.share.resultsrepo import (  # start-up: a verb's stage is imported when it runs
        InitRepoArgs,
        cmd_init_repo,
    )

    return cmd_init_repo(InitRepoArgs(dir=args.dir, install=args.install))
