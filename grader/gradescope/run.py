"""What `run_autograder` does inside Gradescope's container: grade the one submission in
ROOT/submission and write ROOT/results/results.json. ROOT is /autograder on Gradescope.
The lab, its root, the backend and the timeout come from the zip's config.json alone: no
config file is read, so a grader.toml in the submission changes nothing.

The secret, when the zip has one, is read into memory and its file deleted before any
student code runs; Gradescope starts every submission in a fresh container, so the file
is back for the next one. The grading itself runs in a worker with a scrubbed
environment and a deadline, as in a batch, so nothing the submission does reaches this
process or the results file except through the grader's own report."""

from __future__ import annotations

import json
import time
from pathlib import Path

from grader import labs
from grader.course.discover import Entry, Person, from_folder
from grader.course.isolated import grade_isolated
from grader.gradescope.autograder import CONFIG, SECRET
from grader.gradescope.results import results_json
from grader.judge.deadline import default_submission_timeout

DEFAULT_ROOT = Path("/autograder")


def take_secret(source: Path) -> str | None:
    """The secret, read once: its file is gone before student code can look for it."""
    path = source / SECRET
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    path.unlink()
    return secret or None


def submission_entry(folder: Path) -> Entry:
    """The submission as a batch entry: its one .cu file, or why there is none."""
    return from_folder(folder, "submission", [Person("submission")])


def run_autograder(root: Path = DEFAULT_ROOT) -> Path:
    """Grade ROOT/submission; returns the results.json written."""
    root = Path(root)
    source = root / "source"
    config = json.loads((source / CONFIG).read_text(encoding="utf-8"))
    secret = take_secret(source)
    if config.get("labs"):
        labs.add_roots([source / config["labs"]])
    lab = labs.get(config["lab"])
    timeout = float(config["timeout"])
    timing = True  # measured where the backend can (a GPU); the CPU backend says it cannot
    started = time.monotonic()
    result, _ = grade_isolated(
        lab,
        submission_entry(root / "submission"),
        backend=config["backend"],
        secret=secret,
        timeout=timeout,
        timing=timing,
        submission_timeout=default_submission_timeout(lab, timeout, timing, secret),
    )
    seconds = time.monotonic() - started
    data = results_json(lab, result, secret, seconds, config["hidden_visibility"])
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return results
