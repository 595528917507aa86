"""`tfcnnwrap verify`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "verify",
        help="check bundles against their own logs",
        description="Re-parse every log with the sweep's parser: sha256, status and images/sec, model, batch "
        "size and GPU count, every number within bounds; check every OpenSSH signature over the id and name its "
        "signer. Exit 0 verified, 1 not (an altered signature included), 2 unreadable or no ssh-keygen.",
        examples=["1f3a...e9.tfcw.json.gz", "--repo ."],
    )
    p.add_argument("bundles", nargs="*", metavar="BUNDLE", type=text, help="bundle files")
    p.add_argument(
        "--repo",
        metavar="DIR",
        type=text,
        help="every bundle of a results repository's work tree, and whether each lies where publish "
        "puts it (bundles/<vendor>/<gpu-slug>/<id>.tfcw.json.gz); signers named from --allowed-signers, "
        "else DIR/allowed_signers",
    )
    p.add_argument(
        "--allowed-signers",
        metavar="FILE",
        type=text,
        help="OpenSSH allowed_signers file naming whom you trust (default: the config's allowed_signers, "
        "else allowed_signers in the data folder); signers not in it are named by key fingerprint",
    )


def run(args: argparse.Namespace) -> int:
    if args.repo:
        from tfcnnwrap.share.resultsrepo import (  # start-up: a verb's stage is imported when it runs
            VerifyRepoArgs,
            cmd_verify_repo,
        )

        return cmd_verify_repo(
            VerifyRepoArgs(repo=args.repo, bundles=tuple(args.bundles), allowed_signers=args.allowed_signers)
        )
    from tfcnnwrap.share.verify import VerifyArgs, cmd_verify  # start-up: a verb's stage is imported when it runs

    return cmd_verify(VerifyArgs(bundles=tuple(args.bundles), allowed_signers=args.allowed_signers))
