"""`tfcnnwrap setup`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import DEFAULT_REPO_URL, Parser, add_python, add_vendor_dir, add_verb, text


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
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
    add_python(p, "its TensorFlow version picks the branch")
    p.add_argument("--tf-version", metavar="X.Y[.Z]", type=text, help="skip probing; use this TensorFlow version")
    p.add_argument("--branch", metavar="NAME", type=text, help="skip choosing; check out this branch")
    p.add_argument(
        "--repo-url",
        metavar="URL",
        type=text,
        help="upstream repository: URL, local path or file:// URL of a mirror (default: the last setup's, else "
        "%s)" % DEFAULT_REPO_URL,
    )
    add_vendor_dir(p)
    p.add_argument("--update", action="store_true", help="fetch the branch's newest commit")


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.environment.setup import SetupArgs, cmd_setup  # start-up: a verb's stage is imported when it runs

    return cmd_setup(
        SetupArgs(
            python=args.python,
            tf_version=args.tf_version,
            branch=args.branch,
            repo_url=args.repo_url,
            vendor_dir=args.vendor_dir,
            update=bool(args.update),
        )
    )
