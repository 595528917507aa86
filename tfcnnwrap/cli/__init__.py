"""The command line: one module per verb (asv's ``commands/`` is the model), each adding its arguments and
turning argparse's Namespace into its stage's typed arguments; this package is the only code that reads a
Namespace. Here: the top-level parser, the dispatch, and the last line of defence against a traceback.

Only the standard library is imported here so that ``--help`` stays fast; each verb's stage (and with it
pandas, GitPython or rich) is imported when that verb runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

from tfcnnwrap import __version__
from tfcnnwrap.cli.parsing import Formatter, Parser
from tfcnnwrap.errors import EXIT_INTERRUPTED, EXIT_USAGE, TfcnnwrapError

TYPE_CHECKING = False  # typing's own flag would import typing, which --help does without (cli, bounds, errors)
if TYPE_CHECKING:
    from typing import List, Optional, Sequence

# verb -> its module in this package, in --help's order; each has add(verbs, parent) and run(args) -> exit code
VERB_MODULES = {
    "setup": "tfcnnwrap.cli.setup",
    "sweep": "tfcnnwrap.cli.sweep",
    "report": "tfcnnwrap.cli.report",
    "compare": "tfcnnwrap.cli.compare",
    "references": "tfcnnwrap.cli.references",
    "parse": "tfcnnwrap.cli.parse",
    "doctor": "tfcnnwrap.cli.doctor",
    "list": "tfcnnwrap.cli.list",
    "export": "tfcnnwrap.cli.export",
    "sign": "tfcnnwrap.cli.sign",
    "verify": "tfcnnwrap.cli.verify",
    "import": "tfcnnwrap.cli.import_",
    "library": "tfcnnwrap.cli.library",
    "publish": "tfcnnwrap.cli.publish",
    "pull": "tfcnnwrap.cli.pull",
    "init-repo": "tfcnnwrap.cli.init_repo",
    "site": "tfcnnwrap.cli.site",
    "completion": "tfcnnwrap.cli.completion",
    "config": "tfcnnwrap.cli.config",
}


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


def build_parser(only: Optional[str] = None) -> Parser:
    """The whole command line: every verb's parser (completion walks them all); with ``only``, that verb's
    parser and the other verbs as bare names, all that parsing an argv naming ``only`` reads (start-up:
    argparse building 19 verbs' options and help costs a `list` ~8 ms)."""
    parser = Parser(
        prog="tfcnnwrap",
        formatter_class=Formatter,
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
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser)
    debug_parent = Parser(add_help=False, formatter_class=Formatter)  # argparse's own would import shutil
    debug_parent.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for name, module in VERB_MODULES.items():
        if only is None or name == only:
            importlib.import_module(module).add(verbs, debug_parent)
        else:
            verbs.add_parser(name, add_help=False)
    return parser


def named_verb(argv: Sequence[str]) -> Optional[str]:
    """The verb ``argv`` runs when nothing before it but --debug could print the top-level help or an error
    that lists the verbs (``--help``, a mistyped verb, none at all): then only its parser need be built."""
    for arg in argv:
        if arg != "--debug":
            return arg if arg in VERB_MODULES else None
    return None


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
    parser = build_parser(named_verb(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if not args.verb:
        parser.print_help()
        return EXIT_USAGE
    from tfcnnwrap import outstream  # --help stays on cli, bounds, errors; outstream brings typing

    guarded = outstream.guard_stdout(args.verb)  # a closed, full or cut-off stdout never stops a verb
    return outstream.exit_code(args.verb, _run_verb(args), guarded)


def _run_verb(args: argparse.Namespace) -> int:
    try:
        return int(importlib.import_module(VERB_MODULES[args.verb]).run(args) or 0)
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
