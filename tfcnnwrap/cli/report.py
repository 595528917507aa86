"""`tfcnnwrap report`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_format, add_out, add_verb, plot_path, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "report",
        help="summarise a sweep: mean, std, CV, min, max, median per model",
        description="Aggregate a sweep's ok runs per model and batch size.",
        examples=["", "results/20261130-101500 --format markdown"],
    )
    p.add_argument(
        "sweep_dir", nargs="?", metavar="SWEEP_DIR", type=text, help="default: the newest sweep under results/"
    )
    add_format(p, ["table", "markdown", "csv", "json", "html"])
    add_out(p)
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        type=plot_path,
        help="also draw each configuration's runs: images/sec of every step, and the GPU's "
        "temperature, SM clock and power over time; the suffix picks the format (.png, .svg, ...)",
    )


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.present.report import ReportArgs, cmd_report  # start-up: a verb's stage is imported when it runs

    typed = ReportArgs(sweep_dir=args.sweep_dir, format=args.format, out=args.out, plot=args.plot)
    if typed.format == "html":
        from tfcnnwrap.pages.reportpage import cmd_report_html  # start-up: jinja2 only for the page

        return cmd_report_html(typed)
    return cmd_report(typed)
