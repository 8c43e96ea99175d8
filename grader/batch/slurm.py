"""`grader batch --slurm`: an sbatch job-array script that grades one shard per array task
on a GPU node, and the `grader merge` that puts the shards together afterwards.

Every path in the script is absolute, so it runs from any folder the cluster starts it
in. The secret is not written into it: the tasks get GRADER_SECRET from the environment
sbatch passes on."""

from __future__ import annotations

import math
import shlex
from functools import cache
from pathlib import Path

import jinja2

import grader
from grader import labs
from grader.batch.shard import Shard
from grader.course.discover import discover

JINJA = Path(__file__).parent / "jinja"
SCRIPT = "grader-batch.sbatch"
SHARDS = "shards"
LOGS = "logs"
SUBMISSIONS_PER_TASK = 50  # about two minutes of a GPU node at the target rate
CPUS_PER_TASK = 8
TIME_LIMIT = "02:00:00"


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(JINJA),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    env.filters["q"] = lambda value: shlex.quote(str(value))
    return env


def task_count(submissions: int, shard: Shard | None) -> int:
    """N of `--shard I/N` when given, else enough tasks for SUBMISSIONS_PER_TASK each."""
    if shard is not None:
        return shard.count
    return max(1, math.ceil(submissions / SUBMISSIONS_PER_TASK))


def write_slurm_script(
    lab: str,
    folder: Path,
    out: Path,
    *,
    shard: Shard | None = None,
    backend: str = "cuda",
    gpus: int = 1,
    timeout: float | None = None,
    submission_timeout: float | None = None,
    cpus: int = CPUS_PER_TASK,
    public_only: bool = False,
    profile: bool = False,
) -> Path:
    """Write OUT/grader-batch.sbatch and return its path. The shards grade into
    OUT/shards/shard-I; `grader merge` writes the course's files into OUT. Each task asks
    for `gpus` GPUs (none on the cpu backend), and grades without the secret only with
    `public_only` (else a task without GRADER_SECRET is refused, as a batch is)."""
    spec = labs.get(lab)
    folder, out = Path(folder).resolve(), Path(out).resolve()
    submissions = len(discover(folder).entries)
    shards = task_count(submissions, shard)
    # the tasks and the merge find the course's labs as this run does
    lab_roots = [arg for root in labs.course_roots() for arg in ("--labs", str(root))]
    argv = ["grader", "batch", spec.name, str(folder), "--backend", backend, *lab_roots]
    argv += ["--jobs", str(cpus)]
    if gpus:
        argv += ["--gpus", ",".join(str(i) for i in range(gpus))]
    if timeout is not None:
        argv += ["--timeout", f"{timeout:g}"]
    if submission_timeout is not None:
        argv += ["--submission-timeout", f"{submission_timeout:g}"]
    argv += ["--public-only"] if public_only else []
    if profile:
        argv.append("--profile")
    shard_root = out / SHARDS
    script = out / SCRIPT
    merge = f"grader merge {shlex.quote(str(shard_root))}/shard-* "
    merge += shlex.join(["--out", str(out), *lab_roots])
    text = (
        _environment()
        .get_template("slurm.sbatch.j2")
        .render(
            lab=spec.name,
            version=grader.__version__,
            submissions=submissions,
            folder=folder,
            shards=shards,
            gpus=gpus,
            cpus=cpus,
            time_limit=TIME_LIMIT,
            logs=out / LOGS,
            script=script,
            merge=merge,
            command=shlex.join(argv),
            shard_root=shard_root,
        )
    )
    (out / LOGS).mkdir(parents=True, exist_ok=True)
    script.write_text(text, encoding="utf-8")
    script.chmod(0o755)
    return script
