"""`tfcnnwrap sign`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "sign",
        help="add your OpenSSH signature to a bundle (several people may sign one)",
        description="Signs the bundle's id (its 64 hex characters) with ssh-keygen -Y sign -n tfcnnwrap, the "
        "signature format git uses, and adds it to the bundle's signatures; the id and the file name stay. Exit 0 "
        "signed or already signed by that key, 1 the bundle is not verified, 2 unreadable or no ssh-keygen.",
        examples=["1f3a...e9.tfcw.json.gz --key ~/.ssh/id_ed25519"],
    )
    p.add_argument("bundle", metavar="BUNDLE", type=text, help="the bundle file (rewritten in place)")
    p.add_argument(
        "--key",
        metavar="KEY",
        type=text,
        required=True,
        help="the private key, or the .pub of a key held in ssh-agent",
    )


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.share.export import SignArgs, cmd_sign  # start-up: a verb's stage is imported when it runs

    return cmd_sign(SignArgs(bundle=args.bundle, key=args.key))
