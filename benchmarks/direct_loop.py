"""The seed's 15 commands run directly in a loop, each logging to a file: what bench_sweep_overhead.py compares
a sweep with, as a script of its own so that it can run under strace (see sweep_timeline.py).

    FAKE_TFCNN_STEP_DELAY=0.2 python benchmarks/direct_loop.py TFENV/bin/python VENDOR LOGDIR
"""

import os
import subprocess
import sys
from pathlib import Path

SEED = [("resnet50", 64), ("resnet152", 32), ("inception3", 64), ("vgg16", 64), ("alexnet", 512)]


def main() -> None:
    python, vendor, logs = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    script_dir = vendor / "benchmarks" / "scripts" / "tf_cnn_benchmarks"
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for model, bs in SEED:
        for run in (1, 2, 3):
            argv = [
                python,
                "-u",
                "tf_cnn_benchmarks.py",
                "--model=%s" % model,
                "--batch_size=%d" % bs,
                "--num_gpus=1",
                "--variable_update=parameter_server",
            ]
            with open(logs / ("%s-%d.log" % (model, run)), "wb") as log:
                subprocess.run(argv, cwd=script_dir, env=env, stdout=log, stderr=subprocess.STDOUT, check=True)


if __name__ == "__main__":
    main()
