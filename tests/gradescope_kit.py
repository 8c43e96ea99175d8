"""Gradescope's /autograder in a folder: the zip unpacked into source/, a submission's
files in submission/, and the zip's own run_autograder run there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from grader.defaults import cache_path


def unpack(zip_path: Path, root: Path, files: dict[str, str | int]) -> None:
    """Lay out ROOT like /autograder: the zip in source/, the files in submission/."""
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        (root / "source" / script).chmod(0o755)  # Gradescope's build restores the modes
    for name, content in files.items():
        path = root / "submission" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, int):  # a sparse file of that many bytes
            with open(path, "wb") as f:
                f.truncate(content)
        else:
            path.write_text(content)


def run_autograder(zip_path: Path, root: Path, files: dict[str, str | int]) -> dict:
    """Run the zip's run_autograder in ROOT with the Python running the tests (so that these
    tests need no install); return results.json."""
    unpack(zip_path, root, files)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "GRADER_PYTHON": sys.executable}
    env["GRADER_CACHE"] = str(cache_path())  # the tests' own, not a cold one in ROOT
    env.pop("GRADER_SECRET", None)
    script = root / "source" / "run_autograder"
    done = subprocess.run(
        [str(script)], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((root / "results" / "results.json").read_text())
