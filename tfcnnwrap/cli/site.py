"""`tfcnnwrap site`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "site",
        help="a static HTML site of sweeps, bundles or the library (no network needed to view it)",
        description="An index (rank per model under each set of conditions, newest results), a page per "
        "GPU, a page per sweep or bundle; relative links only, so the directory can be served by any static "
        "host or opened from disk.",
        examples=["results/* --out site", "library --out site", "results/a results/b --ab --out site"],
    )
    p.add_argument(
        "sources",
        nargs="+",
        metavar="SOURCE",
        type=text,
        help="sweep directories, bundles (*.tfcw.json.gz), directories of them, or `library`",
    )
    p.add_argument("--out", metavar="DIR", type=text, required=True, help="the site's directory")
    p.add_argument(
        "--ab", action="store_true", help="also an A/B page: the first sweep is the baseline, the others candidates"
    )


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.pages.site import SiteArgs, cmd_site  # start-up: a verb's stage is imported when it runs

    return cmd_site(SiteArgs(sources=tuple(args.sources), out=args.out, ab=args.ab))
