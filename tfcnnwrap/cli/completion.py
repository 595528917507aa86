"""`tfcnnwrap completion`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_verb


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
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
    # the shell names live here, not in shellcompletion.py, so that --help never imports shtab
    p.add_argument("shell", choices=("bash", "zsh", "fish"), help="bash, zsh or fish")


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.cli.shellcompletion import cmd_completion  # start-up: a verb's stage is imported when it runs

    return int(cmd_completion(args) or 0)
