"""Is a task's node still there? What a distributed job under Slurm asks before it trusts its figure.

A node that dies (or stops answering) in the middle of a job does not fail the job by itself:

- the task's ``srun`` waits until slurmctld declares the node down (``SlurmdTimeout``: tens of seconds to
  minutes), prints ``srun: error: Node failure on NODE`` and then exits **0**, as if the task had ended well;
- until then the other workers may go on, and worker 0 may print a ``total images/sec`` that counted a worker
  which is gone.

So a task is lost when its srun reported a node failure (read from the end of the task's log, where srun's
own messages land), and, when the job is decided, a task whose srun still runs but whose server does not
answer at its address is lost too. A lost task fails the run with ``node_failure`` and the node's name.
Under Slurm's default a node failure ends the whole job, the sweep included: the run is then ``interrupted``,
as when the user stops the sweep. Nothing runs while the benchmark runs: the checks (a log's tail, a TCP
connect, one ``squeue``) happen when a task or the job ends.
"""

from __future__ import annotations

import re
import socket
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, Optional

from tfcnnwrap.cluster import slurm
from tfcnnwrap.errors import TfcnnwrapError

if TYPE_CHECKING:
    from tfcnnwrap.cluster.layout import Task

NODE_FAILURE = re.compile(rb"srun: error: Node failure on ([A-Za-z0-9_.\-\[\],]+)")
TAIL_BYTES = 64 * 1024
PROBE_TIMEOUT_S = 3.0


def node_failure_in(log_path: Path) -> Optional[str]:
    """The node srun named in ``Node failure on NODE`` near the end of ``log_path``, or None."""
    try:
        with open(str(log_path), "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            tail = fh.read()
    except OSError:
        return None
    found = NODE_FAILURE.findall(tail)
    return found[-1].decode("ascii", "replace") if found else None


def answers(host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S) -> Optional[str]:
    """None when something at ``host:port`` accepts a TCP connection; else why not: ``"refused"`` (the
    host answered, nothing listens: the task is gone) or ``"no answer"`` (the host itself is silent)."""
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
        return None
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return "no answer"


class NodeWatch:
    """The Slurm backend's check of its tasks' nodes (``cluster.run_plan(watch=...)``) in job ``job_id``."""

    def __init__(self, job_id: Optional[str] = None) -> None:
        self.job_id = job_id

    def allocation_ending(self) -> bool:
        """Whether Slurm is ending the whole job (a node failure without ``--no-kill`` does): the sweep itself
        is about to be stopped, and the run is ``interrupted`` like any run a stop request cuts short."""
        if self.job_id is None:
            return False
        try:
            done = slurm.run_slurm(
                ["squeue", "--noheader", "--jobs=%s" % self.job_id, "--format=%T"],
                "squeue --jobs=%s" % self.job_id,
                check=False,
            )
        except (TfcnnwrapError, OSError):
            # No answer (a controller busy with the failure, no process to be had): the run failed on its node,
            # which is true either way; an ending allocation stops the sweep through its own signal.
            return False
        return done.returncode != 0 or done.stdout.strip() not in ("RUNNING", "")

    def ended(self, task: Task, log_path: Path) -> Optional[str]:
        """``node_failure: NODE (task ...)`` when the task's srun ended on a node failure, else None."""
        node = node_failure_in(log_path)
        if node is None:
            return None
        return "node_failure: %s (%s on %s: srun: Node failure on %s)" % (node, task.name, task.host, node)

    def unreachable(self, tasks: Iterable, silent_only: bool = False) -> Dict[str, str]:
        """For tasks whose srun still runs: {task name: reason} for those that no longer answer at their
        address. ``silent_only``: count only a host that does not answer at all (after a ``--timeout`` a task
        may simply not listen yet). Probed all at once, each within PROBE_TIMEOUT_S."""
        tasks = list(tasks)
        found: Dict[str, str] = {}

        def probe(task: Task) -> None:
            why = answers(task.host, task.port)
            if why is not None and not (silent_only and why == "refused"):
                found[task.name] = "node_failure: %s (%s at %s: %s)" % (task.host, task.name, task.address, why)

        threads = [threading.Thread(target=probe, args=(t,), daemon=True) for t in tasks]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(PROBE_TIMEOUT_S + 2)
        return dict(found)
