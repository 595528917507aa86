"""`tfcnnwrap export`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "export",
        help="write a sweep as one checkable bundle, <id>.tfcw.json.gz",
        description="One gzip'd JSON file: conditions, every run, the summary and every log with its sha256. "
        "Host name, user name and home paths are replaced by placeholders.",
        examples=["results/20261130-101500", "results/20261130-101500 --out shared/ --no-logs"],
    )
    p.add_argument("sweep_dir", metavar="SWEEP_DIR", type=text, help="the sweep directory")
    p.add_argument(
        "--out",
        metavar="FILE",
        type=text,
        help="the bundle file or a directory for it (default: <id>.tfcw.json.gz here)",
    )
    p.add_argument("--no-logs", action="store_true", help="leave the logs out (the bundle is then unverified)")
    p.add_argument("--keep-host", action="store_true", help="keep the host name (default: <host>)")
    p.add_argument(
        "--data",
        choices=["synthetic", "real"],
        default=None,
        help="of a sweep that ran both data kinds (--data synthetic,generated): the runs to export, one kind a "
        "bundle (default: synthetic, the references' terms)",
    )
    p.add_argument(
        "--sign",
        metavar="KEY",
        type=text,
        help="sign the bundle's id with this OpenSSH key (ssh-keygen -Y sign -n tfcnnwrap)",
    )


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.share.export import ExportArgs, cmd_export  # start-up: a verb's stage is imported when it runs

    return cmd_export(
        ExportArgs(
            sweep_dir=args.sweep_dir,
            out=args.out,
            no_logs=args.no_logs,
            keep_host=args.keep_host,
            sign=args.sign,
            data=args.data,
        )
    )
