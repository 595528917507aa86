"""`tfcnnwrap sweep`: its arguments, and the call into its stage with them."""

from __future__ import annotations

import argparse

from tfcnnwrap import bounds
from tfcnnwrap.cli.parsing import Parser, add_python, add_vendor_dir, add_verb, number, text

TYPE_CHECKING = False  # typing's own flag would import typing, which --help does without (cli/parsing.py)
if TYPE_CHECKING:
    from typing import Optional

    from tfcnnwrap.results.plan import SweepArgs


def add(verbs: argparse._SubParsersAction, parent: Parser) -> None:
    p: argparse._ActionsContainer  # the verb's parser, then each of its --help groups
    p = parser = add_verb(
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
    add_plan(parser)
    add_cluster(parser.add_argument_group("distributed jobs and fleets", "docs/slurm.md"))
    p = parser.add_argument_group("where", "the interpreter, the checkout, the sweep directory")
    add_python(p, "the benchmark runs under it")
    add_vendor_dir(p)  # None: the resumed sweep's own, else $TFCNNWRAP_VENDOR_DIR or ./vendor (sweep.py)
    p.add_argument(
        "--out",
        metavar="DIR",
        type=text,
        help="the sweep directory (default: results/<local yyyymmdd-HHMMSS+hhmm>; "
        "$TFCNNWRAP_RESULTS replaces results/)",
    )
    p.add_argument("--resume", metavar="DIR", type=text, help="continue this sweep with its own recorded plan")
    p.add_argument("--retry-failed", action="store_true", help="with --resume: also re-run failed runs")
    p.add_argument("--dry-run", action="store_true", help="print every command and run nothing")
    p = parser
    p.add_argument(
        "extra",
        nargs=argparse.REMAINDER,
        metavar="-- EXTRA",
        help="flags after -- go to tf_cnn_benchmarks unchanged (not the ones tfcnnwrap sets itself)",
    )


def add_plan(parser: Parser) -> None:
    """The flags a sweep records in its plan (refused with --resume), in --help's groups."""
    p = parser.add_argument_group("what to run", "recorded in the sweep's plan (a resumed sweep keeps its own)")
    p.add_argument(
        "--models",
        metavar="M1,M2,...",
        type=text,
        help="models to run (default: resnet50, resnet152, inception3, vgg16, alexnet)",
    )
    p.add_argument(
        "--batch-size",
        metavar="MODEL=N",
        action="append",
        default=[],
        type=text,
        help="per-device batch size for MODEL (1 to %d); repeat for several models" % bounds.BATCH_SIZE.high,
    )
    p.add_argument(
        "--runs", metavar="N", type=number(bounds.RUNS), help="runs per model, 1 to %d (default: 3)" % bounds.RUNS.high
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
        type=number(bounds.NUM_GPUS, as_list=True),
        help="--num_gpus for tf_cnn_benchmarks, 1 to %d (default: 1); several counts (1,2,4) run "
        "every model at each, batch size per device (a scaling sweep)" % bounds.NUM_GPUS.high,
    )
    p.add_argument(
        "--variable-update",
        metavar="NAME",
        type=text,
        help="--variable_update for tf_cnn_benchmarks (default: parameter_server)",
    )
    p.add_argument(
        "--num-batches", metavar="N", type=number(bounds.NUM_BATCHES), help="--num_batches (default: upstream's, 100)"
    )
    p.add_argument(
        "--num-warmup-batches",
        metavar="N",
        type=number(bounds.NUM_WARMUP_BATCHES),
        help="--num_warmup_batches (default: upstream's)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="a smoke test: 1 run, batch sizes / 8, 10 batches, 2 warm-up batches (explicit flags win)",
    )
    add_data(p)
    add_flow(p, parser.add_argument_group("how many runs, in what order"))
    add_time(parser.add_argument_group("time and temperature"))


def add_data(p: argparse._ActionsContainer) -> None:
    """Where the images come from: made on the GPU (synthetic) or read from TFRecords on the host."""
    p.add_argument(
        "--data",
        metavar="synthetic|generated[:N]",
        type=text,
        help="synthetic (default: images made on the GPU, nothing crosses the link) or generated[:N]: "
        "N random images (default 512) written as ImageNet TFRecords by the target's TensorFlow, "
        "cached, then decoded on the host and copied to the GPU as a real job's; synthetic,generated[:N] "
        "runs both, interleaved, and `report` gives what the input path costs each model",
    )
    p.add_argument(
        "--data-dir",
        metavar="DIR",
        type=text,
        help="run on your ImageNet-format TFRecords in DIR (--data_dir, --data_name=imagenet)",
    )


def add_time(p: argparse._ActionsContainer) -> None:
    """How long a run may take and how cool the GPU is before it starts."""
    p.add_argument(
        "--timeout",
        metavar="SEC",
        type=number(bounds.TIMEOUT),
        help="kill a run after SEC seconds, at most %d (7 days) (default: none)" % bounds.TIMEOUT.high,
    )
    p.add_argument(
        "--cooldown",
        metavar="SEC",
        type=number(bounds.COOLDOWN),
        help="pause SEC seconds between runs, at most %d (Ctrl-C stops the pause)" % bounds.COOLDOWN.high,
    )
    p.add_argument(
        "--cool-to",
        metavar="CELSIUS",
        type=number(bounds.COOL_TO),
        help="before each run wait until every GPU reads at most CELSIUS (%g to %g), at most 10 "
        "minutes (needs nvidia-smi)" % (bounds.COOL_TO.low, bounds.COOL_TO.high),
    )


def add_flow(p: argparse._ActionsContainer, runs: argparse._ActionsContainer) -> None:
    """Precision and XLA (in ``p``), adaptive runs and run order (in ``runs``): recorded in the plan too."""
    p.add_argument(
        "--fp16", action="store_true", help="half precision: --use_fp16=True, as the checked-out branch spells it"
    )
    p.add_argument("--xla", action="store_true", help="XLA auto-jit: --xla=True, as the checked-out branch spells it")
    p = runs
    p.add_argument(
        "--until-ci",
        metavar="PCT",
        type=number(bounds.UNTIL_CI),
        help="after --runs, keep running a configuration until its 95%% confidence interval is within "
        "+-PCT%% of its mean (PCT more than 0, at most " + "%g)" % bounds.UNTIL_CI.high,
    )
    p.add_argument(
        "--max-runs",
        metavar="N",
        type=number(bounds.MAX_RUNS),
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


def add_cluster(p: argparse._ActionsContainer) -> None:
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
        type=number(bounds.WORKERS),
        help="worker tasks per job, 1 to %d" % bounds.WORKERS.high,
    )
    p.add_argument(
        "--ps",
        metavar="N",
        type=number(bounds.PS),
        help="parameter servers per job (parameter_server, distributed_replicated; default 1)",
    )
    p.add_argument(
        "--fleet",
        action="store_true",
        default=None,
        help="with --cluster slurm: the single-node sweep on every node of the allocation at once",
    )


def run(args: argparse.Namespace) -> int:
    from tfcnnwrap.sweep.main import cmd_sweep  # start-up: a verb's stage is imported when it runs

    return int(cmd_sweep(sweep_args(args)) or 0)


def sweep_args(args: argparse.Namespace) -> SweepArgs:
    """The parsed flags as the sweep's typed options, field by field (argparse has bounded the numbers)."""
    from tfcnnwrap.results.plan import SweepArgs  # start-up: as the stage

    return SweepArgs(
        models=args.models,
        batch_size=tuple(args.batch_size),
        runs=_whole(args.runs),
        device=args.device,
        num_gpus=None if args.num_gpus is None else tuple(int(n) for n in args.num_gpus),
        variable_update=args.variable_update,
        num_batches=_whole(args.num_batches),
        num_warmup_batches=_whole(args.num_warmup_batches),
        quick=bool(args.quick),
        data=args.data,
        data_dir=args.data_dir,
        fp16=bool(args.fp16),
        xla=bool(args.xla),
        until_ci=_decimal(args.until_ci),
        max_runs=_whole(args.max_runs),
        order=args.order,
        timeout=_decimal(args.timeout),
        cooldown=_decimal(args.cooldown),
        cool_to=_decimal(args.cool_to),
        cluster=args.cluster,
        workers=_whole(args.workers),
        ps=_whole(args.ps),
        fleet=bool(args.fleet),
        extra=tuple(str(a) for a in args.extra),
        python=args.python,
        vendor_dir=args.vendor_dir,
        out=args.out,
        resume=args.resume,
        retry_failed=bool(args.retry_failed),
        dry_run=bool(args.dry_run),
    )


def _whole(value: Optional[float]) -> Optional[int]:
    return None if value is None else int(value)


def _decimal(value: Optional[float]) -> Optional[float]:
    return None if value is None else float(value)
