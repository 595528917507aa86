"""`tfcnnwrap compare`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap import bounds
from tfcnnwrap.cli.parsing import Parser, add_format, add_out, add_verb, number, plot_path, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p: argparse._ActionsContainer  # the verb's parser, then each of its --help groups
    p = parser = add_verb(
        verbs,
        parent,
        "compare",
        help="a sweep against published GPUs, ranked among them, or sweeps against a baseline",
        description="With --against: each reference cell reads `203.99 (86.7%)`, the reference's images/sec "
        "and measured/reference. With --rank: the measured GPU placed among every reference GPU with the "
        "sweep's conditions. With two or more sweeps: the first is the baseline; per configuration the "
        "change, its 95% interval and whether it is significant, and what differs between the sweeps. "
        "No SWEEP_DIR: the newest sweep(s) under results/ ($TFCNNWRAP_RESULTS).",
        examples=[
            'results/20261130-101500 --against "1080-Ti,2080,2080-Ti,Vega 64,V100" --format markdown',
            "results/20261130-101500 --against V100 --plot compare.svg",
            "results/egpu-F1.0 results/egpu-H2D results/egpu-H3 --fail-on-regression 3",
            "results/20261130-101500 --rank --per watt --plot rank.png",
            "results/20261130-101500 --rank --per dollar --price 499",
            "",
        ],
    )
    p.add_argument(
        "dirs",
        nargs="*",
        metavar="SWEEP_DIR",
        type=text,
        help="one sweep (with --against or --rank), or a baseline and one or more candidates",
    )
    # --help in groups (against references, ranking, sweep against sweeps, output), not one list
    add_references(parser.add_argument_group("against published GPUs (--against, --rank)"))
    add_rank(parser.add_argument_group("ranking"))
    p = parser.add_argument_group("sweep against sweeps")
    p.add_argument(
        "--fail-on-regression",
        metavar="PCT",
        type=number(bounds.FAIL_ON_REGRESSION),
        help="sweep against sweep: exit 1 when a configuration's candidate is significantly slower "
        "(Welch, 95%%) than the baseline by more than PCT%%, naming it",
    )
    p.add_argument(
        "--host",
        metavar="NAME",
        type=text,
        help="a fleet sweep: this host's runs only (default: every host's runs pooled)",
    )
    add_output(parser.add_argument_group("output"))


def add_references(p: argparse._ActionsContainer) -> None:
    """Which published figures a sweep meets, and under which conditions."""
    p.add_argument("--against", metavar="NAME[,NAME...]", type=text, help="reference GPUs (see `references`)")
    p.add_argument("--references", metavar="FILE.csv", type=text, help="add your own references (same columns)")
    p.add_argument(
        "--source",
        choices=["builtin", "community", "all"],
        default="all",
        help="with --against or --rank: the built-in references, the library's community results "
        "(`tfcnnwrap import`/`pull`; median of verified sweeps per GPU and configuration), or both "
        "(default: all)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="with --against or --rank: only references under exactly the sweep's conditions "
        "(batch size included) and its TensorFlow X.Y; no closest-row stand-ins (\u2020)",
    )
    p.add_argument(
        "--include-low-trust",
        action="store_true",
        help="with --against or --rank: also use references of trust derived or partial (left out "
        "by default; see `references`)",
    )
    p.add_argument(
        "--nearest",
        action="store_true",
        help="with --rank: also rank the reference GPUs without a figure under the sweep's "
        "conditions, by their closest figures (marked \u2020 with what differs)",
    )


def add_rank(p: argparse._ActionsContainer) -> None:
    """--rank and what it ranks by."""
    p.add_argument(
        "--rank",
        action="store_true",
        help="place the measured GPU among every reference GPU with the sweep's conditions, by the "
        "geometric mean of measured / reference over the configurations they share",
    )
    p.add_argument(
        "--per",
        choices=["watt", "dollar"],
        help="with --rank: rank by images/sec per watt (telemetry's mean power or --watts) or per "
        "dollar (--price) against the references' board power or launch price",
    )
    p.add_argument("--price", metavar="USD", type=number(bounds.PRICE), help="with --per dollar: your GPU's price")
    p.add_argument(
        "--watts",
        metavar="W",
        type=number(bounds.WATTS),
        help="with --per watt: your GPU's power (default: the sweep's telemetry, mean power draw)",
    )


def add_output(p: argparse._ActionsContainer) -> None:
    add_format(p, ["table", "markdown", "csv", "json", "html"])
    add_out(p)
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        type=plot_path,
        help="also draw the comparison: one horizontal-bar panel per model (measured against each reference, "
        "or baseline against candidate), plus a geometric-mean (or change) panel, or the ranking; with more "
        "than two sweeps, each configuration's images/sec over the sweeps' dates, the baseline marked; the "
        "suffix picks the format (.png, .svg, .pdf, ...); the directory must exist (needs the plot extra: "
        "matplotlib)",
    )


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.compare.against import CompareArgs, cmd_compare  # start-up: a verb's stage is imported when it runs

    typed = CompareArgs(
        dirs=tuple(args.dirs or ()),
        against=args.against,
        rank=bool(args.rank),
        references=args.references,
        source=args.source or "all",
        strict=bool(args.strict),
        include_low_trust=bool(args.include_low_trust),
        nearest=bool(args.nearest),
        per=args.per,
        price=args.price,
        watts=args.watts,
        fail_on_regression=args.fail_on_regression,
        host=args.host,
        format=args.format or "table",
        out=args.out,
        plot=args.plot,
    )
    if typed.format == "html":
        from tfcnnwrap.pages.comparepage import cmd_compare_html  # start-up: as above

        return cmd_compare_html(typed)
    return cmd_compare(typed)
