"""Command line: builds the argument parsers and hands each verb to its stage module.

Only the standard library is imported here so that ``--help`` stays fast; each verb's module (and with it
pandas, GitPython or rich) is imported when that verb runs.
"""

import argparse
import importlib
import os
import sys
import time

from tfcnnwrap import __version__
from tfcnnwrap.errors import EXIT_INTERRUPTED, EXIT_USAGE, TfcnnwrapError

DEFAULT_REPO_URL = "https://github.com/tensorflow/benchmarks.git"

# verb -> "module:function"; the function takes the parsed namespace and returns the exit code.
HANDLERS = {
    "setup": "tfcnnwrap.bootstrap:cmd_setup",
    "sweep": "tfcnnwrap.sweep:cmd_sweep",
    "report": "tfcnnwrap.report:cmd_report",
    "compare": "tfcnnwrap.compare:cmd_compare",
    "references": "tfcnnwrap.references:cmd_references",
    "parse": "tfcnnwrap.parsecmd:cmd_parse",
    "doctor": "tfcnnwrap.doctor:cmd_doctor",
}


class _Formatter(argparse.RawDescriptionHelpFormatter):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line naming the fix, with exit code 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, "%s: error: %s (see `%s --help`)\n" % (self.prog, message, self.prog))


def _add_python(p, what):
    p.add_argument(
        "--python",
        metavar="PY",
        help="interpreter that has TensorFlow, e.g. C:\\Anaconda3\\envs\\tf112\\python.exe "
        "(default: the one running tfcnnwrap); %s" % what,
    )


def _add_vendor_dir(p):
    p.add_argument(
        "--vendor-dir",
        metavar="DIR",
        default="vendor",
        help="where setup keeps the tensorflow/benchmarks checkout (default: ./vendor)",
    )


def build_parser():
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
    parser.add_argument("--version", action="version", version="tfcnnwrap %s" % __version__)
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback of an unexpected error"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    debug_parent = _Parser(add_help=False)
    debug_parent.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    # setup ---------------------------------------------------------------------------------------
    p = verbs.add_parser(
        "setup",
        parents=[debug_parent],
        help="fetch the tensorflow/benchmarks branch that matches your TensorFlow into vendor/",
        formatter_class=_Formatter,
        description="Probe TensorFlow's version, choose the matching cnn_tf_vX.Y_compatible branch and "
        "clone it (depth 1, single branch) into the vendor directory.",
        epilog=(
            "examples:\n"
            "  python -m tfcnnwrap setup\n"
            "  python -m tfcnnwrap setup --python C:\\Anaconda3\\envs\\tf112\\python.exe\n"
            "  python -m tfcnnwrap setup --tf-version 1.12 --repo-url D:\\mirrors\\benchmarks\n"
        ),
    )
    _add_python(p, "its TensorFlow version picks the branch")
    p.add_argument("--tf-version", metavar="X.Y[.Z]", help="skip probing; use this TensorFlow version")
    p.add_argument("--branch", metavar="NAME", help="skip choosing; check out this branch")
    p.add_argument(
        "--repo-url",
        metavar="URL",
        default=DEFAULT_REPO_URL,
        help="upstream repository: URL, local path or file:// URL of a mirror (default: %(default)s)",
    )
    _add_vendor_dir(p)
    p.add_argument("--update", action="store_true", help="fetch the branch's newest commit")

    # sweep ---------------------------------------------------------------------------------------
    p = verbs.add_parser(
        "sweep",
        parents=[debug_parent],
        help="run every model N times, each in its own process, and summarise",
        formatter_class=_Formatter,
        description="Run tf_cnn_benchmarks for each model and batch size, --runs times each, on synthetic "
        "data; keep every log and record each run as it ends.",
        epilog=(
            "examples:\n"
            "  python -m tfcnnwrap sweep\n"
            "  python -m tfcnnwrap sweep --models resnet50,vgg16 --batch-size vgg16=32 --runs 5\n"
            "  python -m tfcnnwrap sweep --device cpu --quick\n"
            "  python -m tfcnnwrap sweep --resume results/20261130-101500\n"
            "  python -m tfcnnwrap sweep --models resnet50 -- --use_fp16=True\n"
        ),
    )
    _add_python(p, "the benchmark runs under it")
    _add_vendor_dir(p)
    p.add_argument(
        "--models",
        metavar="M1,M2,...",
        help="models to run (default: resnet50,resnet152,inception3,vgg16,alexnet)",
    )
    p.add_argument(
        "--batch-size",
        metavar="MODEL=N",
        action="append",
        default=[],
        help="per-device batch size for MODEL; repeat for several models",
    )
    p.add_argument("--runs", metavar="N", help="runs per model (default: 3)")
    p.add_argument(
        "--device",
        choices=["auto", "gpu", "cpu"],
        default=None,
        help="auto (default): the GPU when TensorFlow sees one, else the CPU with a warning",
    )
    p.add_argument("--num-gpus", metavar="N", help="--num_gpus for tf_cnn_benchmarks (default: 1)")
    p.add_argument(
        "--variable-update",
        metavar="NAME",
        help="--variable_update for tf_cnn_benchmarks (default: parameter_server)",
    )
    p.add_argument("--num-batches", metavar="N", help="--num_batches (default: upstream's, 100)")
    p.add_argument("--num-warmup-batches", metavar="N", help="--num_warmup_batches (default: upstream's)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test: 1 run, batch sizes / 8, 10 batches, 2 warm-up batches (explicit flags win)",
    )
    p.add_argument("--timeout", metavar="SEC", help="kill a run after SEC seconds (default: none)")
    p.add_argument(
        "--out", metavar="DIR", help="the sweep directory (default: results/<UTC yyyymmdd-HHMMSS>)"
    )
    p.add_argument("--resume", metavar="DIR", help="continue this sweep with its own recorded plan")
    p.add_argument(
        "--retry-failed", action="store_true", help="with --resume: also re-run failed runs"
    )
    p.add_argument("--dry-run", action="store_true", help="print every command and run nothing")
    p.add_argument(
        "extra",
        nargs=argparse.REMAINDER,
        metavar="-- EXTRA",
        help="flags after -- go to tf_cnn_benchmarks unchanged",
    )

    # report --------------------------------------------------------------------------------------
    p = verbs.add_parser(
        "report",
        parents=[debug_parent],
        help="summarise a sweep: mean, std, CV, min, max, median per model",
        formatter_class=_Formatter,
        description="Aggregate a sweep's ok runs per model and batch size.",
        epilog=(
            "examples:\n"
            "  python -m tfcnnwrap report\n"
            "  python -m tfcnnwrap report results/20261130-101500 --format markdown\n"
        ),
    )
    p.add_argument("sweep_dir", nargs="?", metavar="SWEEP_DIR", help="default: the newest sweep under results/")
    p.add_argument("--format", choices=["table", "markdown", "csv", "json"], default="table")

    # compare -------------------------------------------------------------------------------------
    p = verbs.add_parser(
        "compare",
        parents=[debug_parent],
        help="a sweep against published GPUs, or one sweep against another",
        formatter_class=_Formatter,
        description="With --against: each reference cell reads `203.99 (86.7%%)`, the reference's images/sec "
        "and measured/reference. With two sweeps: change per model and whether it is significant.",
        epilog=(
            "examples:\n"
            '  python -m tfcnnwrap compare results/20261130-101500 --against "1080-Ti,2080,2080-Ti,Vega 64,V100" '
            "--format markdown\n"
            "  python -m tfcnnwrap compare results/egpu-F1.0 results/egpu-H2D\n"
        ),
    )
    p.add_argument("dirs", nargs="+", metavar="SWEEP_DIR", help="one sweep (with --against) or two sweeps")
    p.add_argument("--against", metavar="NAME[,NAME...]", help="reference GPUs (see `references`)")
    p.add_argument("--references", metavar="FILE.csv", help="add your own references (same columns)")
    p.add_argument("--format", choices=["table", "markdown", "csv", "json"], default="table")
    p.add_argument("--plot", metavar="FILE.png", help="grouped bar chart (needs the plot extra)")

    # references ----------------------------------------------------------------------------------
    p = verbs.add_parser(
        "references",
        parents=[debug_parent],
        help="list the built-in reference GPUs",
        formatter_class=_Formatter,
        description="The published tf_cnn_benchmarks results tfcnnwrap ships, with conditions and sources.",
        epilog="examples:\n  python -m tfcnnwrap references\n  python -m tfcnnwrap references --format json\n",
    )
    p.add_argument("--references", metavar="FILE.csv", help="also list your own references")
    p.add_argument("--gpu", metavar="NAME", help="only this reference GPU, every figure with its source")
    p.add_argument("--model", metavar="M", help="only this model (resnet50, vgg16, ...)")
    p.add_argument("--format", choices=["table", "markdown", "csv", "json"], default="table")

    # parse ---------------------------------------------------------------------------------------
    p = verbs.add_parser(
        "parse",
        parents=[debug_parent],
        help="read tf_cnn_benchmarks logs (any, ours or not)",
        formatter_class=_Formatter,
        description="One record per log file: status, total images/sec, model, batch size and the header.",
        epilog=(
            "examples:\n"
            "  python -m tfcnnwrap parse resnet50.log\n"
            "  python -m tfcnnwrap parse old-logs/ --format csv\n"
        ),
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="log files or directories (recursive)")
    p.add_argument("--format", choices=["table", "json", "jsonl", "csv"], default="table")

    # doctor --------------------------------------------------------------------------------------
    p = verbs.add_parser(
        "doctor",
        parents=[debug_parent],
        help="check TensorFlow, the GPU, CUDA, git, nvidia-smi and the checkout",
        formatter_class=_Formatter,
        description="What a careful person checks before trusting a benchmark.",
        epilog=(
            "examples:\n"
            "  python -m tfcnnwrap doctor\n"
            "  python -m tfcnnwrap doctor --python C:\\Anaconda3\\envs\\tf112\\python.exe --matmul\n"
        ),
    )
    _add_python(p, "the one to question")
    _add_vendor_dir(p)
    p.add_argument(
        "--matmul",
        action="store_true",
        help="time a [10000x1000]x[1000x2000] float32 product on /cpu:0 and /gpu:0",
    )
    p.add_argument("--format", choices=["table", "json"], default="table")
    return parser


def _crash_report(exc):
    """Write the traceback to a file and return its path (or None if even that fails)."""
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(
            prefix="tfcnnwrap-crash-%s-" % time.strftime("%Y%m%d-%H%M%S"), suffix=".txt"
        )
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write("tfcnnwrap %s, Python %s\n" % (__version__, sys.version))
            fh.write("argv: %r\n\n" % (sys.argv,))
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=fh)
        return path
    except OSError:
        return None


def _tolerant_streams():
    """Never die on a character the console's code page lacks (cp1252 on Windows, say)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError):
            pass


def main(argv=None):
    _tolerant_streams()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verb:
        parser.print_help()
        return EXIT_USAGE
    module_name, func_name = HANDLERS[args.verb].split(":")
    try:
        handler = getattr(importlib.import_module(module_name), func_name)
        return int(handler(args) or 0)
    except TfcnnwrapError as exc:
        sys.stderr.write("tfcnnwrap %s: error: %s\n" % (args.verb, exc.message))
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
        if getattr(args, "debug", False):
            import traceback

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
