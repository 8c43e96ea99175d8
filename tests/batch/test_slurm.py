"""`grader batch --slurm`: a job-array script with one shard per task, that bash accepts."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from grader.batch.shard import Shard
from grader.batch.slurm import write_slurm_script


@pytest.fixture
def course(tmp_path):
    folder = tmp_path / "my course"
    folder.mkdir()
    for i in range(120):
        (folder / f"s{i:03d}.cu").write_text("// kernel\n")
    return folder


def test_the_script_runs_one_shard_per_array_task(course, tmp_path):
    out = tmp_path / "out"
    script = write_slurm_script("matmul-tiled", course, out, timeout=5)
    text = script.read_text()
    assert script == out / "grader-batch.sbatch"
    assert "#SBATCH --array=1-3" in text  # 120 submissions, 50 a task
    assert "#SBATCH --gres=gpu:1" in text
    assert f"grader batch matmul-tiled '{course}' --backend cuda" in text
    assert '--shard "$shard/3"' in text
    assert "--gpus 0" in text and "--timeout 5" in text
    assert "grader merge" in text and "--dependency=afterany" in text
    assert "GRADER_SECRET=" not in text.replace("export GRADER_SECRET=...", "")
    assert (out / "logs").is_dir()
    if shutil.which("bash"):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_the_shard_count_can_be_chosen(course, tmp_path):
    script = write_slurm_script("conv2d", course, tmp_path / "o", shard=Shard(1, 8), gpus=2)
    text = script.read_text()
    assert "#SBATCH --array=1-8" in text and "--gpus 0,1" in text
    assert "#SBATCH --gres=gpu:2" in text


def test_a_cpu_script_asks_for_no_gpu(course, tmp_path):
    text = write_slurm_script("conv2d", course, tmp_path / "o", backend="cpu", gpus=0).read_text()
    assert "--gres" not in text and "--gpus" not in text and "GPU(s)" not in text
    assert "--backend cpu" in text


def test_public_only_reaches_every_task(course, tmp_path):
    """Without it a task that finds no GRADER_SECRET is refused, as a batch is."""
    plain = write_slurm_script("conv2d", course, tmp_path / "a").read_text()
    assert "--public-only" not in plain
    text = write_slurm_script("conv2d", course, tmp_path / "b", public_only=True).read_text()
    assert " --public-only" in text.split("\nexec ", 1)[1]  # the task's command


def test_the_tasks_profile_under_nsight_compute_where_asked(course, tmp_path):
    asked = write_slurm_script("conv2d", course, tmp_path / "o", profile=True).read_text()
    assert "--profile" in asked
    assert "--profile" not in write_slurm_script("conv2d", course, tmp_path / "p").read_text()
