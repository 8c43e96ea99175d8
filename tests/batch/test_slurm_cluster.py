"""`grader batch --slurm` against a real Slurm (marked `slurm`; skipped where Slurm is not
installed): a single-node cluster from the distribution's packages runs the script as a
2-task job array, the merge the CLI prints runs after it as a dependent job, and the
gradebook is the one a local `grader batch` of the same course writes, byte for byte."""

from __future__ import annotations

import csv
import io
import json
import os
import sys
from pathlib import Path

import pytest
import slurm_kit

from grader import labs
from grader.batch.outputs import MANIFEST

LAB = "matmul-naive"
SECRET = "slurm-course-secret"
KERNELS = (
    "reference.cu",
    "baseline.cu",
    "wrong/no_boundary_check.cu",
    "wrong/compile_error.cu",
    "wrong/out_of_bounds_read.cu",
    "wrong/writes_nothing.cu",
)
JOB_SECONDS = 600.0

pytestmark = [
    pytest.mark.slurm,
    pytest.mark.skipif(bool(slurm_kit.missing()), reason=slurm_kit.missing() or "-"),
]


@pytest.fixture
def cluster(tmp_path):
    cluster = slurm_kit.Cluster(tmp_path / "slurm")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def course(tmp_path) -> Path:
    folder = tmp_path / "course"
    folder.mkdir()
    for i, name in enumerate(KERNELS):
        text = (labs.get(LAB).home / name).read_text()
        (folder / f"student{i}.cu").write_text(f"// student {i}\n{text}")
    # a folder with no kernel in it cannot be graded: its task exits 1
    (folder / "student6").mkdir()
    (folder / "student6" / "notes.txt").write_text("I ran out of time.\n")
    return folder


def grader_env() -> dict[str, str]:
    """What sbatch passes on to the tasks: this grader's `grader` first on PATH, the
    secret, the build cache."""
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "grader").exists():
        pytest.skip(f"no grader command beside {sys.executable} for the tasks to run")
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    return {"PATH": path, "GRADER_SECRET": SECRET}


def test_a_two_task_job_array_grades_the_course_as_a_local_batch_does(cluster, course, tmp_path):
    env = grader_env()
    out, local = tmp_path / "slurm-out", tmp_path / "local-out"
    written = cluster.run("grader", "batch", LAB, str(course), "--out", str(out), "--slurm",
                          "--backend", "cpu", "--shard", "1/2", env=env, cwd=tmp_path)  # fmt: skip
    script = out / "grader-batch.sbatch"
    assert "#SBATCH --array=1-2" in script.read_text()
    job = cluster.run("sbatch", "--parsable", str(script), env=env, cwd=tmp_path).stdout.strip()
    # the merge exactly as the CLI told the TA to run it, after the array
    merge = next(line.strip() for line in written.stdout.splitlines() if "--dependency" in line)
    assert merge.startswith("sbatch --dependency=afterany:$jobid --wrap ")
    queued = cluster.run("bash", "-c", merge.replace("sbatch ", "sbatch --parsable ", 1),
                         env={**env, "jobid": job}, cwd=tmp_path)  # fmt: skip
    merged = queued.stdout.strip()
    states = cluster.wait(job, JOB_SECONDS)
    logs = "\n".join(p.read_text() for p in sorted((out / "logs").glob("*.log")))
    # the folder without a kernel could not be graded: its task exits 1 (FAILED), and the
    # merge runs all the same
    assert sorted(states) == ["COMPLETED", "FAILED"], logs
    assert "1 could not be graded" in logs
    assert cluster.wait(merged, JOB_SECONDS) == ["COMPLETED"], cluster.logs()

    shards = sorted(p.name for p in (out / "shards").iterdir())
    assert shards == ["shard-1", "shard-2"]
    graded = [json.loads(p.read_text()) for p in (out / "shards").glob(f"*/{MANIFEST}")]
    assert sorted(len(m["students"]) for m in graded) == [3, 4]  # the course split in two

    done = cluster.run("grader", "batch", LAB, str(course), "--out", str(local), "--backend",
                       "cpu", env=env, check=False)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    gradebook = (out / "gradebook.csv").read_text()
    assert gradebook == (local / "gradebook.csv").read_text()
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(gradebook))}
    assert rows["student0"]["status"] == "passed"
    compile_error = rows["student3"]
    assert (compile_error["status"], compile_error["diagnostics"]) == ("compile_error",) * 2
    unsourced = rows["student6"]
    assert unsourced["status"] == "not_graded" and "no .cu file" in unsourced["reason"]
    for student in (f"student{i}" for i in range(len(KERNELS))):
        ours = json.loads((out / "students" / student / "report.json").read_text())
        theirs = json.loads((local / "students" / student / "report.json").read_text())
        assert (ours["status"], ours["score"]) == (theirs["status"], theirs["score"]), student
        assert any(c["visibility"] == "hidden" for c in ours["cases"])  # the secret reached it
