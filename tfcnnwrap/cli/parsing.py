"""What every verb's arguments share: the parser that reports one line naming the fix, the help formatter,
the argument types that check a value before anything runs, and the options several verbs take.

Only the standard library is imported here so that ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tfcnnwrap import bounds
from tfcnnwrap.errors import EXIT_USAGE

TYPE_CHECKING = False  # typing's own flag would import typing, which --help does without (cli, bounds, errors)
if TYPE_CHECKING:
    from typing import Callable, List, NoReturn, Optional, Sequence, Union

MOST_CANDIDATES = 8  # an error lists at most this many names: more is a page, not a line


DEFAULT_REPO_URL = "https://github.com/tensorflow/benchmarks.git"


# What matplotlib's Agg canvas writes, by file suffix (checked without importing matplotlib).
PLOT_FORMATS = ("png", "svg", "svgz", "pdf", "ps", "eps", "jpg", "jpeg", "tif", "tiff", "webp", "pgf", "raw", "rgba")


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and help wrapped at the terminal's width between words only (never inside a name or a
    list of them, never at a hyphen); indented lines, the examples, are commands: broken only where a copy
    still runs (example_lines)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: Optional[int] = None
    ) -> None:
        width = width or terminal_columns() - 2
        # under 80 columns the help starts further left, so a URL or a path fits on its line whole
        super().__init__(prog, indent_increment, max_help_position if width >= 78 else 12, width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap  # start-up: --help loads only what it needs

        return "\n".join(
            example_lines(line, width)
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


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil (~1.5 ms): argparse makes a Formatter for
    every argument it adds, so each verb's start would pay it (issue 39: start-up)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]  # None: 80
    except (AttributeError, ValueError, OSError):
        return 80


def example_lines(line: str, width: int) -> str:
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


class Parser(argparse.ArgumentParser):
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
        meant = closest(str(value), names)
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
            meant = closest(typed, flags) if typed else None
            verb.error(
                "unrecognized arguments: %s%s" % (" ".join(extras), "; did you mean %s?" % meant if meant else "")
            )
        return parsed


def closest(typed: str, names: Sequence[str]) -> Optional[str]:
    """The name ``typed`` most likely meant (difflib's closest, if close enough), else None."""
    import difflib  # start-up: only a mistyped argument needs it

    found = difflib.get_close_matches(typed, names, n=1, cutoff=0.6)
    return found[0] if found else None


def text(value: str) -> str:
    """argparse type of every string and path argument: an empty one is a usage error, never "not given"
    (``--models ''`` used to run the default sweep, ``--vendor-dir ''`` to clone into the current
    directory)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty; leave the argument out for its default")
    return value


def number(bound: bounds.Bound, as_list: bool = False) -> Callable[[str], Union[float, List[float]]]:
    """argparse type for a number within ``bound`` (tfcnnwrap.bounds)."""

    def parse(value: str) -> Union[float, List[float]]:
        try:
            return bound.parse_list(value) if as_list else bound.parse(value)
        except bounds.OutOfBounds as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = bound.flag.lstrip("-").replace("-", "_")
    return parse


def plot_path(value: str) -> str:
    """``--plot FILE``: checked before anything runs; matplotlib would add ``.png`` to a name without a
    suffix (``--plot /tmp`` wrote /tmp.png) and the old code created missing directories."""
    text(value)
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


def add_python(p: argparse._ActionsContainer, what: str) -> None:
    p.add_argument(
        "--python",
        metavar="PY",
        type=text,
        help="interpreter that has TensorFlow, e.g. C:\\Anaconda3\\envs\\tf112\\python.exe "
        "(default: $TFCNNWRAP_PYTHON, else the config file's, else the last setup's, else the one running "
        "tfcnnwrap); %s" % what,
    )


def add_vendor_dir(p: argparse._ActionsContainer) -> None:
    p.add_argument(
        "--vendor-dir",
        metavar="DIR",
        type=text,
        help="where setup keeps the tensorflow/benchmarks checkout (default: $TFCNNWRAP_VENDOR_DIR, else the "
        "config file's, else ./vendor)",
    )


def add_format(p: argparse._ActionsContainer, formats: List[str]) -> None:
    # a metavar: "[--format {table,markdown,csv,json}]" alone is wider than a 60-column usage line
    p.add_argument(
        "--format",
        choices=formats,
        default=formats[0],
        metavar="FORMAT",
        help="%s or %s (default: %s)" % (", ".join(formats[:-1]), formats[-1], formats[0]),
    )


def add_out(p: argparse._ActionsContainer) -> None:
    p.add_argument(
        "--out",
        metavar="FILE",
        type=text,
        help="write to FILE (replaced atomically) instead of standard output; with --format html, "
        "run logs under FILE's folder are linked",
    )


def add_verb(
    verbs: argparse._SubParsersAction, parent: Parser, name: str, help: str, description: str, examples: List[str]
) -> Parser:
    """The verb's parser; ``examples`` are its arguments in the help's examples ("" for none)."""
    lines = ("  python -m tfcnnwrap %s\n" % " ".join(filter(None, (name, e))) for e in examples)
    return verbs.add_parser(
        name,
        parents=[parent],
        help=help,
        formatter_class=Formatter,
        description=description,
        epilog="examples:\n" + "".join(lines),
    )
