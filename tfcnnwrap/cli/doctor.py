"""`tfcnnwrap doctor`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap.cli.parsing import Parser, add_format, add_python, add_vendor_dir, add_verb


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p = add_verb(
        verbs,
        parent,
        "doctor",
        help="check TensorFlow, the GPU, CUDA, git, nvidia-smi and the checkout",
        description="What a careful person checks before trusting a benchmark.",
        examples=["", "--python C:\\Anaconda3\\envs\\tf112\\python.exe --matmul"],
    )
    add_python(p, "the one to question")
    add_vendor_dir(p)
    p.add_argument(
        "--matmul", action="store_true", help="time a [10000x1000]x[1000x2000] float32 product on /cpu:0 and /gpu:0"
    )
    p.add_argument(
        "--bandwidth",
        action="store_true",
        help="time host->GPU and GPU->host copies (GB/s) with the target TensorFlow on /gpu:0",
    )
    p.add_argument("--strict", action="store_true", help="exit 1 when a sweep would not run as asked (not ready)")
    add_format(p, ["table", "json"])


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.environment.doctor import (
        DoctorArgs,
        cmd_doctor,
    )  # start-up: the stage is imported when the verb runs

    return cmd_doctor(
        DoctorArgs(
            python=args.python,
            vendor_dir=args.vendor_dir,
            matmul=bool(args.matmul),
            bandwidth=bool(args.bandwidth),
            strict=bool(args.strict),
            format=args.format,
        )
    )
