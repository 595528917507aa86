"""Command line: builds the argument parsers and hands each verb to its stage module.

Only the standard library is imported here so that ``--help`` stays fast; each verb's module (and with it
pandas, GitPython or rich) is imported when that verb runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

from tfcnnwrap import __version__, bounds
from tfcnnwrap.errors import EXIT_INTERRUPTED, EXIT_USAGE, TfcnnwrapError

TYPE_CHECKING = False  # typing's own flag would import typing, which --help does without (cli, bounds, errors)
if TYPE_CHECKING:
    from typing import Callable, List, NoReturn, Optional, Sequence, Union

MOST_CANDIDATES = 8  # an error lists at most this many names: more is a page, not a line
DEFAULT_REPO_URL = "https://github.com/tensorflow/benchmarks.git"
# What matplotlib's Agg canvas writes, by file suffix (checked without importing matplotlib).
PLOT_FORMATS = ("png", "svg", "svgz", "pdf", "ps", "eps", "jpg", "jpeg", "tif", "tiff", "webp", "pgf", "raw", "rgba")

# verb -> "module:function"; the function takes the parsed namespace and returns the exit code.
HANDLERS = {
    "setup": "tfcnnwrap.environment.setup:cmd_setup",
    "sweep": "tfcnnwrap.sweep.main:cmd_sweep",
    "report": "tfcnnwrap.present.report:cmd_report",
    "compare": "tfcnnwrap.compare.against:cmd_compare",
    "references": "tfcnnwrap.compare.refview:cmd_references",
    "parse": "tfcnnwrap.run.parse:cmd_parse",
    "doctor": "tfcnnwrap.environment.doctor:cmd_doctor",
    # results to share (issue 24): bundles, the local library, git
    "export": "tfcnnwrap.share.export:cmd_export",
    "verify": "tfcnnwrap.share.verify:cmd_verify",
    "sign": "tfcnnwrap.share.export:cmd_sign",
    "import": "tfcnnwrap.share.library:cmd_import",
    "library": "tfcnnwrap.share.library:cmd_library",
    "publish": "tfcnnwrap.share.gitrepo:cmd_publish",
    "pull": "tfcnnwrap.share.gitrepo:cmd_pull",
    "completion": "tfcnnwrap.completion:cmd_completion",
    "init-repo": "tfcnnwrap.share.resultsrepo:cmd_init_repo",
    "site": "tfcnnwrap.pages.site:cmd_site",
    "list": "tfcnnwrap.sweep.history:cmd_list",
    "config": "tfcnnwrap.present.settingsview:cmd_config",
}
# --format html goes to the page builders, which call the verb's own code (report and compare import no
# page code, so no module imports one that imports it back).
HTML_HANDLERS = {
    "report": "tfcnnwrap.pages.reportpage:cmd_report_html",
    "compare": "tfcnnwrap.pages.comparepage:cmd_compare_html",
}
# verify --repo DIR checks a results repository's tree (share/resultsrepo.py, above verify's own module).
REPO_HANDLERS = {"verify": "tfcnnwrap.share.resultsrepo:cmd_verify_repo"}


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and help wrapped at the terminal's width between words only (never inside a name or a
    list of them, never at a hyphen); indented lines, the examples, are commands: broken only where a copy
    still runs (_example_lines)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: Optional[int] = None
    ) -> None:
        import shutil  # start-up: --help loads only what it needs

        width = width or shutil.get_terminal_size().columns - 2
        # under 80 columns the help starts further left, so a URL or a path fits on its line whole
        super().__init__(prog, indent_increment, max_help_position if width >= 78 else 12, width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap  # start-up: --help loads only what it needs

        return "\n".join(
            _example_lines(line, width)
            if line.startswith(" ")
            else line
            if not line.strip()
            else textwrap.fill(
                line,
                width,
                initial_indent=indent,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
            for line in text.splitlines()
        )

    def _split_lines(self, text: str, width: int) -> List[str]:
        import textwrap  # start-up: --help loads only what it needs

        return textwrap.wrap(" ".join(text.split()), width, break_long_words=False, break_on_hyphens=False)


def _example_lines(line: str, width: int) -> str:
    """An example command (an indented line of an epilog) that fits ``width``: on POSIX broken between its
    shell words with a `` \\`` continuation, so that a copy of the lines runs as the one command; never
    inside a quoted argument. On Windows it stays one line (cmd continues with ^, PowerShell with a
    backtick: no one mark is right in both), which the console folds and copies whole."""
    if len(line) <= width or os.name == "nt":
        return line
    import re  # start-up: --help loads only what it needs

    indent = line[: len(line) - len(line.lstrip())]
    words = re.findall(r"(?:[^\s\"']+|\"[^\"]*\"|'[^']*')+", line)
    for i in range(len(words) - 1, 0, -1):  # an option stays with its value: "--runs 5" reads as one
        if words[i - 1].startswith("--") and not words[i].startswith("-"):
            words[i - 1 : i + 1] = [words[i - 1] + " " + words[i]]
    lines, current = [], indent + words[0]
    for word in words[1:]:
        if len(current) + 1 + len(word) + 2 > width:  # the word and the " \\" must fit
            lines.append(current + " \\")
            current = indent + "    " + word
        else:
            current += " " + word
    return "\n".join(lines + [current])


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line naming the fix, with exit code 2."""

    def error(self, message: str) -> NoReturn:
        from tfcnnwrap import prose  # --help stays on cli, bounds, errors; prose brings shutil, textwrap

        prose.write("%s: error: %s (see `%s --help`)" % (self.prog, message, self.prog))
        sys.exit(EXIT_USAGE)

    def _check_value(self, action: argparse.Action, value: object) -> None:
        """A value not among the choices: the closest choice as a did-you-mean, not the list of them all."""
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(c) for c in choices]
        meant = _closest(str(value), names)
        hint = (
            "; did you mean %s?" % ("`%s`" % meant if isinstance(action, argparse._SubParsersAction) else repr(meant))
            if meant
            else ""
        )
        if isinstance(action, argparse._SubParsersAction):  # 16 verbs: the closest, not the list
            raise argparse.ArgumentError(None, "invalid choice: %r is not a verb%s" % (value, hint))
        listed = " (choose from %s)" % ", ".join(names) if len(names) <= MOST_CANDIDATES else ""
        raise argparse.ArgumentError(action, "invalid choice: %r%s%s" % (value, listed, hint))

    def parse_args(  # type: ignore[override]  # the one form used
        self,
        args: Optional[Sequence[str]] = None,
        namespace: Optional[argparse.Namespace] = None,
    ) -> argparse.Namespace:
        """argparse's, with an unknown flag reported by the verb it was given to, with the closest of its flags."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            verb = self
            for action in self._actions:
                if isinstance(action, argparse._SubParsersAction):
                    verb = action.choices.get(getattr(parsed, action.dest, None) or "", self)
            flags = [flag for action in verb._actions for flag in action.option_strings]
            typed = next((e.split("=", 1)[0] for e in extras if e.startswith("-")), "")
            meant = _closest(typed, flags) if typed else None
            verb.error(
                "unrecognized arguments: %s%s" % (" ".join(extras), "; did you mean %s?" % meant if meant else "")
            )
        return parsed


def _closest(typed: str, names: Sequence[str]) -> Optional[str]:
    """The name ``typed`` most likely meant (difflib's closest, if close enough), else None."""
    import difflib  # start-up: only a mistyped argument needs it

    found = difflib.get_close_matches(typed, names, n=1, cutoff=0.6)
    return found[0] if found else None


def _text(value: str) -> str:
    """argparse type of every string and path argument: an empty one is a usage error, never "not given"
    (``--models ''`` used to run the default sweep, ``--vendor-dir ''`` to clone into the current
    directory)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty; leave the argument out for its default")
    return value


def _number(bound: bounds.Bound, as_list: bool = False) -> Callable[[str], Union[float, List[float]]]:
    """argparse type for a number within ``bound`` (tfcnnwrap.bounds)."""

    def parse(value: str) -> Union[float, List[float]]:
        try:
            return bound.parse_list(value) if as_list else bound.parse(value)
        except bounds.OutOfBounds as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = bound.flag.lstrip("-").replace("-", "_")
    return parse


def _plot_path(value: str) -> str:
    """``--plot FILE``: checked before anything runs; matplotlib would add ``.png`` to a name without a
    suffix (``--plot /tmp`` wrote /tmp.png) and the old code created missing directories."""
    _text(value)
    last = value.replace(os.altsep or os.sep, os.sep).rsplit(os.sep, 1)[-1]
    if last in ("", ".", ".."):
        # Path() drops a trailing separator or "/.": "a.png/" (meant as a directory?) wrote the file a.png
        raise argparse.ArgumentTypeError(
            "%s ends with a path separator; give a file name such as %s" % (value, Path(value) / "compare.png")
        )
    path = Path(value)
    if path.is_dir():
        raise argparse.ArgumentTypeError("%s is a directory; give a file such as %s" % (value, path / "compare.png"))
    suffix = path.suffix.lower().lstrip(".")
    if suffix not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(
            "%s: the file name must end in one of .%s (the suffix picks the format)" % (value, ", .".join(PLOT_FORMATS))
        )
    parent = path.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError("%s: the directory %s does not exist; create it first" % (value, parent))
    return value


def _add_python(p: argparse._ActionsContainer, what: str) -> None:
    p.add_argument(
        "--python",
        metavar="PY",
        type=_text,
        help="interpreter that has TensorFlow, e.g. C:\\Anaconda3\\envs\\tf112\\python.exe "
        "(default: $TFCNNWRAP_PYTHON, else the config file's, else the last setup's, else the one running "
        "tfcnnwrap); %s" % what,
    )


def _add_vendor_dir(p: argparse._ActionsContainer) -> None:
    p.add_argument(
        "--vendor-dir",
        metavar="DIR",
        type=_text,
        help="where setup keeps the tensorflow/benchmarks checkout (default: $TFCNNWRAP_VENDOR_DIR, else the "
        "config file's, else ./vendor)",
    )


def _add_format(p: argparse._ActionsContainer, formats: List[str]) -> None:
    # a metavar: "[--format {table,markdown,csv,json}]" alone is wider than a 60-column usage line
    p.add_argument(
        "--format",
        choices=formats,
        default=formats[0],
        metavar="FORMAT",
        help="%s or %s (default: %s)" % (", ".join(formats[:-1]), formats[-1], formats[0]),
    )


def _add_out(p: argparse._ActionsContainer) -> None:
    p.add_argument(
        "--out",
        metavar="FILE",
        type=_text,
        help="write to FILE (replaced atomically) instead of standard output; with --format html, "
        "run logs under FILE's folder are linked",
    )


def _add_verb(
    verbs: argparse._SubParsersAction, parent: _Parser, name: str, help: str, description: str, examples: List[str]
) -> _Parser:
    """The verb's parser; ``examples`` are its arguments in the help's examples ("" for none)."""
    lines = ("  python -m tfcnnwrap %s\n" % " ".join(filter(None, (name, e))) for e in examples)
    return verbs.add_parser(
        name,
        parents=[parent],
        help=help,
        formatter_class=_Formatter,
        description=description,
        epilog="examples:\n" + "".join(lines),
    )


def _add_setup(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "setup",
        help="fetch the tensorflow/benchmarks branch that matches your TensorFlow into vendor/",
        description="Probe TensorFlow's version, choose the matching cnn_tf_vX.Y_compatible branch and "
        "clone it (depth 1, single branch) into the vendor directory.",
        examples=[
            "",
            "--python C:\\Anaconda3\\envs\\tf112\\python.exe",
            "--tf-version 1.12 --repo-url D:\\mirrors\\benchmarks",
        ],
    )
    _add_python(p, "its TensorFlow version picks the branch")
    p.add_argument("--tf-version", metavar="X.Y[.Z]", type=_text, help="skip probing; use this TensorFlow version")
    p.add_argument("--branch", metavar="NAME", type=_text, help="skip choosing; check out this branch")
    p.add_argument(
        "--repo-url",
        metavar="URL",
        type=_text,
        help="upstream repository: URL, local path or file:// URL of a mirror (default: the last setup's, else "
        "%s)" % DEFAULT_REPO_URL,
    )
    _add_vendor_dir(p)
    p.add_argument("--update", action="store_true", help="fetch the branch's newest commit")


def _add_sweep(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p: argparse._ActionsContainer  # the verb's parser, then each of its --help groups
    p = parser = _add_verb(
        verbs,
        parent,
        "sweep",
        help="run every model N times, each in its own process, and summarise",
        description="Run tf_cnn_benchmarks for each model and batch size, --runs times each, on synthetic "
        "data (or images fed from the host: --data generated, --data-dir); keep every log and record each run "
        "as it ends.",
        examples=[
            "",
            "--models resnet50,vgg16 --batch-size vgg16=32 --runs 5",
            "--device cpu --quick",
            "--resume results/20261130-101500+0100",
            "--models resnet50 --fp16 --xla",
            "--runs 3 --until-ci 1 --max-runs 10 --order interleaved",
        ],
    )
    # --help in groups (what to run, how many runs, time and temperature, distributed, where), not one list
    _add_sweep_plan(parser)
    _add_sweep_cluster(parser.add_argument_group("distributed jobs and fleets", "docs/slurm.md"))
    p = parser.add_argument_group("where", "the interpreter, the checkout, the sweep directory")
    _add_python(p, "the benchmark runs under it")
    _add_vendor_dir(p)  # None: the resumed sweep's own, else $TFCNNWRAP_VENDOR_DIR or ./vendor (sweep.py)
    p.add_argument(
        "--out",
        metavar="DIR",
        type=_text,
        help="the sweep directory (default: results/<local yyyymmdd-HHMMSS+hhmm>; "
        "$TFCNNWRAP_RESULTS replaces results/)",
    )
    p.add_argument("--resume", metavar="DIR", type=_text, help="continue this sweep with its own recorded plan")
    p.add_argument("--retry-failed", action="store_true", help="with --resume: also re-run failed runs")
    p.add_argument("--dry-run", action="store_true", help="print every command and run nothing")
    p = parser
    p.add_argument(
        "extra",
        nargs=argparse.REMAINDER,
        metavar="-- EXTRA",
        help="flags after -- go to tf_cnn_benchmarks unchanged (not the ones tfcnnwrap sets itself)",
    )


def _add_sweep_plan(parser: _Parser) -> None:
    """The flags a sweep records in its plan (refused with --resume), in --help's groups."""
    p = parser.add_argument_group("what to run", "recorded in the sweep's plan (a resumed sweep keeps its own)")
    p.add_argument(
        "--models",
        metavar="M1,M2,...",
        type=_text,
        help="models to run (default: resnet50, resnet152, inception3, vgg16, alexnet)",
    )
    p.add_argument(
        "--batch-size",
        metavar="MODEL=N",
        action="append",
        default=[],
        type=_text,
        help="per-device batch size for MODEL (1 to %d); repeat for several models" % bounds.BATCH_SIZE.high,
    )
    p.add_argument(
        "--runs", metavar="N", type=_number(bounds.RUNS), help="runs per model, 1 to %d (default: 3)" % bounds.RUNS.high
    )
    p.add_argument(
        "--device",
        choices=["auto", "gpu", "cpu"],
        default=None,
        help="auto (default): the GPU when TensorFlow sees one, else the CPU with a warning",
    )
    p.add_argument(
        "--num-gpus",
        metavar="N[,N...]",
        type=_number(bounds.NUM_GPUS, as_list=True),
        help="--num_gpus for tf_cnn_benchmarks, 1 to %d (default: 1); several counts (1,2,4) run "
        "every model at each, batch size per device (a scaling sweep)" % bounds.NUM_GPUS.high,
    )
    p.add_argument(
        "--variable-update",
        metavar="NAME",
        type=_text,
        help="--variable_update for tf_cnn_benchmarks (default: parameter_server)",
    )
    p.add_argument(
        "--num-batches", metavar="N", type=_number(bounds.NUM_BATCHES), help="--num_batches (default: upstream's, 100)"
    )
    p.add_argument(
        "--num-warmup-batches",
        metavar="N",
        type=_number(bounds.NUM_WARMUP_BATCHES),
        help="--num_warmup_batches (default: upstream's)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test: 1 run, batch sizes / 8, 10 batches, 2 warm-up batches (explicit flags win)",
    )
    _add_sweep_data(p)
    _add_sweep_flow(p, parser.add_argument_group("how many runs, in what order"))
    _add_sweep_time(parser.add_argument_group("time and temperature"))


def _add_sweep_data(p: argparse._ActionsContainer) -> None:
    """Where the images come from: made on the GPU (synthetic) or read from TFRecords on the host."""
    p.add_argument(
        "--data",
        metavar="synthetic|generated[:N]",
        type=_text,
        help="synthetic (default: images made on the GPU, nothing crosses the link) or generated[:N]: "
        "N random images (default 512) written as ImageNet TFRecords by the target's TensorFlow, "
        "cached, then decoded on the host and copied to the GPU as a real job's",
    )
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        type=_text,
        help="run on your ImageNet-format TFRecords in DIR (--data_dir, --data_name=imagenet)",
    )


def _add_sweep_time(p: argparse._ActionsContainer) -> None:
    """How long a run may take and how cool the GPU is before it starts."""
    p.add_argument(
        "--timeout",
        metavar="SEC",
        type=_number(bounds.TIMEOUT),
        help="kill a run after SEC seconds, at most %d (7 days) (default: none)" % bounds.TIMEOUT.high,
    )
    p.add_argument(
        "--cooldown",
        metavar="SEC",
        type=_number(bounds.COOLDOWN),
        help="pause SEC seconds between runs, at most %d (Ctrl-C stops the pause)" % bounds.COOLDOWN.high,
    )
    p.add_argument(
        "--cool-to",
        metavar="CELSIUS",
        type=_number(bounds.COOL_TO),
        help="before each run wait until every GPU reads at most CELSIUS (%g to %g), at most 10 "
        "minutes (needs nvidia-smi)" % (bounds.COOL_TO.low, bounds.COOL_TO.high),
    )


def _add_sweep_flow(p: argparse._ActionsContainer, runs: argparse._ActionsContainer) -> None:
    """Precision and XLA (in ``p``), adaptive runs and run order (in ``runs``): recorded in the plan too."""
    p.add_argument(
        "--fp16", action="store_true", help="half precision: --use_fp16=True, as the checked-out branch spells it"
    )
    p.add_argument("--xla", action="store_true", help="XLA auto-jit: --xla=True, as the checked-out branch spells it")
    p = runs
    p.add_argument(
        "--until-ci",
        metavar="PCT",
        type=_number(bounds.UNTIL_CI),
        help="after --runs, keep running a configuration until its 95%% confidence interval is within "
        "+-PCT%% of its mean (PCT more than 0, at most " + "%g)" % bounds.UNTIL_CI.high,
    )
    p.add_argument(
        "--max-runs",
        metavar="N",
        type=_number(bounds.MAX_RUNS),
        help="with --until-ci: at most N runs per configuration, %d to %d (default: 10)"
        % (bounds.MAX_RUNS.low, bounds.MAX_RUNS.high),
    )
    p.add_argument(
        "--order",
        choices=["grouped", "interleaved"],
        default=None,
        help="grouped (default): each configuration's runs back to back; interleaved: run 1 of every "
        "configuration, then run 2, ...",
    )


def _add_sweep_cluster(p: argparse._ActionsContainer) -> None:
    """Distributed jobs and fleets (docs/usage.md, Distributed jobs; docs/slurm.md)."""
    p.add_argument(
        "--cluster",
        choices=["local", "slurm"],
        default=None,
        help="each run is one distributed tf_cnn_benchmarks job: on this machine (local) or through "
        "srun inside a Slurm allocation (slurm); the mode is --variable-update",
    )
    p.add_argument(
        "--workers",
        metavar="N",
        type=_number(bounds.WORKERS),
        help="worker tasks per job, 1 to %d" % bounds.WORKERS.high,
    )
    p.add_argument(
        "--ps",
        metavar="N",
        type=_number(bounds.PS),
        help="parameter servers per job (parameter_server, distributed_replicated; default 1)",
    )
    p.add_argument(
        "--fleet",
        action="store_true",
        default=None,
        help="with --cluster slurm: the single-node sweep on every node of the allocation at once",
    )


def _add_report(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "report",
        help="summarise a sweep: mean, std, CV, min, max, median per model",
        description="Aggregate a sweep's ok runs per model and batch size.",
        examples=["", "results/20261130-101500 --format markdown"],
    )
    p.add_argument(
        "sweep_dir", nargs="?", metavar="SWEEP_DIR", type=_text, help="default: the newest sweep under results/"
    )
    _add_format(p, ["table", "markdown", "csv", "json", "html"])
    _add_out(p)
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        type=_plot_path,
        help="also draw each configuration's runs: images/sec of every step, and the GPU's "
        "temperature, SM clock and power over time; the suffix picks the format (.png, .svg, ...)",
    )


def _add_compare(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p: argparse._ActionsContainer  # the verb's parser, then each of its --help groups
    p = parser = _add_verb(
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
        type=_text,
        help="one sweep (with --against or --rank), or a baseline and one or more candidates",
    )
    # --help in groups (against references, ranking, sweep against sweeps, output), not one list
    _add_compare_references(parser.add_argument_group("against published GPUs (--against, --rank)"))
    _add_compare_rank(parser.add_argument_group("ranking"))
    p = parser.add_argument_group("sweep against sweeps")
    p.add_argument(
        "--fail-on-regression",
        metavar="PCT",
        type=_number(bounds.FAIL_ON_REGRESSION),
        help="sweep against sweep: exit 1 when a configuration's candidate is significantly slower "
        "(Welch, 95%%) than the baseline by more than PCT%%, naming it",
    )
    p.add_argument(
        "--host",
        metavar="NAME",
        type=_text,
        help="a fleet sweep: this host's runs only (default: every host's runs pooled)",
    )
    _add_compare_output(parser.add_argument_group("output"))


def _add_compare_references(p: argparse._ActionsContainer) -> None:
    """Which published figures a sweep meets, and under which conditions."""
    p.add_argument("--against", metavar="NAME[,NAME...]", type=_text, help="reference GPUs (see `references`)")
    p.add_argument("--references", metavar="FILE.csv", type=_text, help="add your own references (same columns)")
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


def _add_compare_rank(p: argparse._ActionsContainer) -> None:
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
    p.add_argument("--price", metavar="USD", type=_number(bounds.PRICE), help="with --per dollar: your GPU's price")
    p.add_argument(
        "--watts",
        metavar="W",
        type=_number(bounds.WATTS),
        help="with --per watt: your GPU's power (default: the sweep's telemetry, mean power draw)",
    )


def _add_compare_output(p: argparse._ActionsContainer) -> None:
    _add_format(p, ["table", "markdown", "csv", "json", "html"])
    _add_out(p)
    p.add_argument(
        "--plot",
        metavar="FILE.png",
        type=_plot_path,
        help="also draw the comparison: one horizontal-bar panel per model (measured against each reference, "
        "or baseline against candidate), plus a geometric-mean (or change) panel, or the ranking; with more "
        "than two sweeps, each configuration's images/sec over the sweeps' dates, the baseline marked; the "
        "suffix picks the format (.png, .svg, .pdf, ...); the directory must exist (needs the plot extra: "
        "matplotlib)",
    )


def _add_references(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "references",
        help="list the built-in reference GPUs",
        description="The published tf_cnn_benchmarks results tfcnnwrap ships, with conditions and sources.",
        examples=["", "--gpu 2080-Ti", "--model resnet50 --format csv", "--format json"],
    )
    p.add_argument("--gpu", metavar="NAME", type=_text, help="only this reference GPU, every figure with its source")
    p.add_argument("--model", metavar="M", type=_text, help="only this model (resnet50, vgg16, ...)")
    p.add_argument("--references", metavar="FILE.csv", type=_text, help="also list your own references")
    _add_format(p, ["table", "markdown", "csv", "json"])


def _add_parse(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "parse",
        help="read tf_cnn_benchmarks logs (any, ours or not)",
        description="One record per log file: status, total images/sec, model, batch size and the header.",
        examples=["resnet50.log", "old-logs/ --format csv"],
    )
    p.add_argument("paths", nargs="+", metavar="PATH", type=_text, help="log files or directories (recursive)")
    _add_format(p, ["table", "markdown", "csv", "json", "jsonl"])


def _add_doctor(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "doctor",
        help="check TensorFlow, the GPU, CUDA, git, nvidia-smi and the checkout",
        description="What a careful person checks before trusting a benchmark.",
        examples=["", "--python C:\\Anaconda3\\envs\\tf112\\python.exe --matmul"],
    )
    _add_python(p, "the one to question")
    _add_vendor_dir(p)
    p.add_argument(
        "--matmul", action="store_true", help="time a [10000x1000]x[1000x2000] float32 product on /cpu:0 and /gpu:0"
    )
    p.add_argument(
        "--bandwidth",
        action="store_true",
        help="time host->GPU and GPU->host copies (GB/s) with the target TensorFlow on /gpu:0",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 when a sweep would not run as asked (not ready)")
    _add_format(p, ["table", "json"])


def _add_export(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "export",
        help="write a sweep as one checkable bundle, <id>.tfcw.json.gz",
        description="One gzip'd JSON file: conditions, every run, the summary and every log with its sha256. "
        "Host name, user name and home paths are replaced by placeholders.",
        examples=["results/20261130-101500", "results/20261130-101500 --out shared/ --no-logs"],
    )
    p.add_argument("sweep_dir", metavar="SWEEP_DIR", type=_text, help="the sweep directory")
    p.add_argument(
        "--out",
        metavar="FILE",
        type=_text,
        help="the bundle file or a directory for it (default: <id>.tfcw.json.gz here)",
    )
    p.add_argument("--no-logs", action="store_true", help="leave the logs out (the bundle is then unverified)")
    p.add_argument("--keep-host", action="store_true", help="keep the host name (default: <host>)")
    p.add_argument(
        "--sign",
        metavar="KEY",
        type=_text,
        help="sign the bundle's id with this OpenSSH key (ssh-keygen -Y sign -n tfcnnwrap)",
    )


def _add_sign(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "sign",
        help="add your OpenSSH signature to a bundle (several people may sign one)",
        description="Signs the bundle's id (its 64 hex characters) with ssh-keygen -Y sign -n tfcnnwrap, the "
        "signature format git uses, and adds it to the bundle's signatures; the id and the file name stay. Exit 0 "
        "signed or already signed by that key, 1 the bundle is not verified, 2 unreadable or no ssh-keygen.",
        examples=["1f3a...e9.tfcw.json.gz --key ~/.ssh/id_ed25519"],
    )
    p.add_argument("bundle", metavar="BUNDLE", type=_text, help="the bundle file (rewritten in place)")
    p.add_argument(
        "--key",
        metavar="KEY",
        type=_text,
        required=True,
        help="the private key, or the .pub of a key held in ssh-agent",
    )


def _add_verify(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "verify",
        help="check bundles against their own logs",
        description="Re-parse every log with the sweep's parser: sha256, status and images/sec, model, batch "
        "size and GPU count, every number within bounds; check every OpenSSH signature over the id and name its "
        "signer. Exit 0 verified, 1 not (an altered signature included), 2 unreadable or no ssh-keygen.",
        examples=["1f3a...e9.tfcw.json.gz", "--repo ."],
    )
    p.add_argument("bundles", nargs="*", metavar="BUNDLE", type=_text, help="bundle files")
    p.add_argument(
        "--repo",
        metavar="DIR",
        type=_text,
        help="every bundle of a results repository's work tree, and whether each lies where publish "
        "puts it (bundles/<vendor>/<gpu-slug>/<id>.tfcw.json.gz); signers named from DIR/allowed_signers",
    )
    p.add_argument(
        "--allowed-signers",
        metavar="FILE",
        type=_text,
        help="OpenSSH allowed_signers file naming whom you trust (default: the config's allowed_signers, "
        "else allowed_signers in the data folder); signers not in it are named by key fingerprint",
    )


def _add_import(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "import",
        help="verify bundles and add them to the local library",
        description="Library: $TFCNNWRAP_DATA, else the user data directory. Exit 0 every bundle imported or "
        "already there, 1 some refused (each named with why), 2 usage error or unusable library.",
        examples=["1f3a...e9.tfcw.json.gz", "downloads/bundles/"],
    )
    p.add_argument("paths", nargs="+", metavar="BUNDLE|DIR", type=_text, help="bundle files or directories")


def _add_library(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "library",
        help="list the bundles in the local library",
        description="One row per bundle and configuration: GPU, model, batch size, images/sec, verified.",
        examples=["", "--gpu 2070 --model resnet50", "--format json"],
    )
    p.add_argument("--gpu", metavar="NAME", type=_text, help="only GPUs whose name has these words")
    p.add_argument("--model", metavar="M", type=_text, help="only this model")
    _add_format(p, ["table", "markdown", "csv", "json"])


def _add_publish(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
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
    p.add_argument("source", metavar="SWEEP_DIR|BUNDLE", type=_text, help="a sweep directory or a bundle file")
    p.add_argument(
        "--to",
        metavar="GIT_URL",
        type=_text,
        required=True,
        help="the results repository: a path, file://, ssh:// or https:// URL",
    )
    p.add_argument("--branch", metavar="B", type=_text, help="default: the repository's default branch")


def _add_pull(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "pull",
        help="fetch a git results repository and import every new, verified bundle",
        description="Fetches the branch (shallow), verifies every bundle the library has not seen and imports "
        "the good ones; each bad one is named with its path and why. Exit as import.",
        examples=["https://github.com/someone/tf-results.git", "/srv/git/results.git --branch main"],
    )
    p.add_argument("url", metavar="GIT_URL", type=_text, help="a path, file://, ssh:// or https:// URL")
    p.add_argument("--branch", metavar="B", type=_text, help="default: the repository's default branch")


def _add_site(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
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
        type=_text,
        help="sweep directories, bundles (*.tfcw.json.gz), directories of them, or `library`",
    )
    p.add_argument("--out", metavar="DIR", type=_text, required=True, help="the site's directory")
    p.add_argument(
        "--ab", action="store_true", help="also an A/B page: the first sweep is the baseline, the others candidates"
    )


def _add_init_repo(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
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
    p.add_argument("dir", metavar="DIR", type=_text, help="the repository's folder (made when missing)")
    p.add_argument(
        "--install",
        metavar="SPEC",
        type=_text,
        help="what the workflow installs with pip (default: this tfcnnwrap's version from PyPI)",
    )


def _add_list(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "list",
        help="past sweeps, newest first: GPU, TensorFlow, conditions, runs, complete or interrupted",
        description="Every sweep under RESULTS_DIR, newest first, with the command that resumes an interrupted one.",
        examples=["", "results --format json"],
    )
    p.add_argument(
        "results_dir", nargs="?", metavar="RESULTS_DIR", type=_text, help="default: $TFCNNWRAP_RESULTS, else results/"
    )
    _add_format(p, ["table", "markdown", "csv", "json"])


def _add_config(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "config",
        help="the settings a verb uses when no flag gives them, and where each came from",
        description="The interpreter, vendor directory, upstream, results directory, library and config file "
        "a verb run here without flags would use, each with its source: an environment variable, the config "
        "file, the last setup's manifest or the default. A flag given to a verb wins over all of them.",
        examples=["", "--format json"],
    )
    _add_format(p, ["table", "markdown", "csv", "json"])


def _add_completion(verbs: argparse._SubParsersAction, parent: _Parser) -> None:
    p = _add_verb(
        verbs,
        parent,
        "completion",
        help="print the shell completion script (bash, zsh or fish)",
        description="Prints the completion script for your shell; load it once per shell session or save it "
        "where your shell reads completions (docs/usage.md).",
        examples=[
            "bash > ~/.local/share/bash-completion/completions/tfcnnwrap",
            "zsh > ~/.zfunc/_tfcnnwrap",
            "fish > ~/.config/fish/completions/tfcnnwrap.fish",
        ],
    )
    # the shell names live here, not in completion.py, so that --help never imports shtab
    p.add_argument("shell", choices=("bash", "zsh", "fish"), help="bash, zsh or fish")


VERB_BUILDERS = (
    _add_setup,
    _add_sweep,
    _add_report,
    _add_compare,
    _add_references,
    _add_parse,
    _add_doctor,
    _add_list,
    _add_export,
    _add_sign,
    _add_verify,
    _add_import,
    _add_library,
    _add_publish,
    _add_pull,
    _add_init_repo,
    _add_site,
    _add_completion,
    _add_config,
)


class _VersionAction(argparse.Action):
    """--version; what it prints is assembled only when asked (about.py reads the checkout's files)."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str = argparse.SUPPRESS,
        default: object = argparse.SUPPRESS,
        help: Optional[str] = None,
    ) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: Optional[str] = None,
    ) -> None:
        from tfcnnwrap.about import version_text  # --help stays on cli, bounds, errors; about brings platform

        sys.stdout.write(version_text() + "\n")
        parser.exit()


def build_parser() -> _Parser:
    parser = _Parser(
        prog="tfcnnwrap",
        formatter_class=_Formatter,
        description="Benchmark a TensorFlow GPU with tf_cnn_benchmarks and compare it with published numbers.",
        epilog=(
            "typical use:\n"
            "  python -m tfcnnwrap doctor --matmul\n"
            "  python -m tfcnnwrap setup\n"
            "  python -m tfcnnwrap sweep\n"
            '  python -m tfcnnwrap compare results/20261130-101500 --against "1080-Ti,2080,2080-Ti,Vega 64,V100"\n'
        ),
    )
    parser.add_argument(
        "--version",
        action=_VersionAction,
        help="show the version, the Python and platform, and the commit of a checkout",
    )
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an unexpected error")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    debug_parent = _Parser(add_help=False)
    debug_parent.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for add in VERB_BUILDERS:
        add(verbs, debug_parent)
    return parser


def _crash_report(exc: BaseException) -> Optional[str]:
    """Write the traceback to a file and return its path (or None if even that fails)."""
    import tempfile  # start-up: --help loads only what it needs
    import traceback  # start-up: --help loads only what it needs

    try:
        fd, path = tempfile.mkstemp(prefix="tfcnnwrap-crash-%s-" % time.strftime("%Y%m%d-%H%M%S"), suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("tfcnnwrap %s, Python %s\n" % (__version__, sys.version))
            fh.write("argv: %r\n\n" % (sys.argv,))
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=fh)
        return path
    except OSError:
        return None


def _tolerant_streams() -> None:
    """Never die on a character the console's code page lacks (cp1252 on Windows, say)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")  # type: ignore[union-attr]  # a TextIOWrapper, or refused
        except (AttributeError, ValueError):
            pass


def main(argv: Optional[List[str]] = None) -> int:
    _tolerant_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verb:
        parser.print_help()
        return EXIT_USAGE
    from tfcnnwrap import outstream  # --help stays on cli, bounds, errors; outstream brings typing

    guarded = outstream.guard_stdout(args.verb)  # a closed, full or cut-off stdout never stops a verb
    return outstream.exit_code(args.verb, _run_verb(args), guarded)


def _run_verb(args: argparse.Namespace) -> int:
    handlers = HTML_HANDLERS if getattr(args, "format", None) == "html" else HANDLERS
    handlers = REPO_HANDLERS if getattr(args, "repo", None) else handlers
    module_name, func_name = handlers.get(args.verb, HANDLERS[args.verb]).split(":")
    try:
        handler = getattr(importlib.import_module(module_name), func_name)
        return int(handler(args) or 0)
    except TfcnnwrapError as exc:
        from tfcnnwrap import prose  # --help stays on cli, bounds, errors; only an error needs them
        from tfcnnwrap.render import safe_text  # --help stays on cli, bounds, errors; render brings csv, json

        prose.write("tfcnnwrap %s: error: %s" % (args.verb, safe_text(exc.message)))
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("tfcnnwrap %s: interrupted\n" % args.verb)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `tfcnnwrap report | head`: the reader left; not an error worth a traceback.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:  # noqa: BLE001 - last line of defence: one line, traceback to a file
        if args.debug:
            import traceback  # start-up: --help loads only what it needs

            traceback.print_exc()
            return 3
        path = _crash_report(exc)
        where = " (full traceback in %s)" % path if path else ""
        sys.stderr.write(
            "tfcnnwrap %s: unexpected error: %s: %s%s; rerun with --debug to see it\n"
            % (args.verb, type(exc).__name__, exc, where)
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
