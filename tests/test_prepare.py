"""What a machine builds once for the CPU backend (the compilers' sandbox, the runner, the
shim's two precompiled headers: 5 s on 2 cores) is built before any deadline counts and
before any case's clock shows: as a batch's worker opens its backend, and in `grader
check`'s "starting the backend" step. Each opening runs in a process of its own with an
empty cache, since a process builds each once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BUILT = [("cpu", "runner"), ("cpu", "shim"), ("cpu", "shim"), ("sandbox", "sandbox")]
WORKER = """
from grader.course.grading_worker import open_backend
open_backend({"backend": "cpu", "backend_jobs": 1, "gates": ARG, "gate": "none"}).close()
"""
# `check` of a file that does not compile: its grading stops after the compile step
CHECK = """
from pathlib import Path
from grader.grading.pipeline import Options, check
from grader.defaults import cache_dir
seen = []
def progress(step):
    if step.stage == "compile" and not seen:
        seen.append(sorted(str(p.relative_to(cache_dir())) for p in cache_dir().glob("*/*/*")))
(Path(ARG) / "kernel.cu").write_text("__global__ void matmul( {")
check("matmul-naive", Path(ARG) / "kernel.cu", Options(backend="cpu", progress=progress))
print(json.dumps(seen[0]))
"""


def built(cache: Path, names: list[str]) -> list[tuple[str, str]]:
    """Each file's top folder and the kind of its own folder (`runner` of `runner-HASH`)."""
    folders = dict.fromkeys(Path(n).parts[:2] for n in names if (cache / n).is_file())
    return sorted((top, folder.split("-")[0]) for top, folder in folders)


def run(code: str, arg: Path, cache: Path) -> str:
    script = f"import json\nARG = {str(arg)!r}\n{code}"
    env = {**os.environ, "GRADER_CACHE": str(cache)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("entry", ["worker", "check"])
def test_what_a_machine_builds_once_is_built_before_a_submission_is_timed(tmp_path, entry):
    cache = tmp_path / "cache"
    if entry == "worker":  # a submission given 3 s on a fresh machine timed out before
        run(WORKER, tmp_path, cache)
        names = [str(p.relative_to(cache)) for p in cache.glob("*/*/*")]
    else:  # the first case's clock ran 5 s and said when it would be stopped as hung
        names = json.loads(run(CHECK, tmp_path, cache))
    assert built(cache, names) == BUILT
