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
import shutil
import tempfile
import time
from pathlib import Path

from grader import defaults, labs
from grader.course.discover import Entry, Person, from_folder
from grader.course.isolated import grade_isolated
from grader.errors import GraderError
from grader.gradescope.autograder import CONFIG, SECRET
from grader.gradescope.results import results_json
from grader.judge.deadline import default_submission_timeout
from grader.model.lab import Lab
from grader.model.result import Result, Status

DEFAULT_ROOT = Path("/autograder")


def read_secret(source: Path) -> str | None:
    """The zip's secret, or None where it has none."""
    try:
        return (source / SECRET).read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None


def take_secret(source: Path) -> str | None:
    """The secret, read once: its file is gone before student code can look for it."""
    secret = read_secret(source)
    (source / SECRET).unlink(missing_ok=True)
    return secret


def submission_entry(folder: Path) -> Entry:
    """The submission as a batch entry: its one .cu file, or why there is none."""
    return from_folder(folder, "submission", [Person("submission")])


def run_autograder(root: Path = DEFAULT_ROOT) -> Path:
    """Grade ROOT/submission; returns the results.json written."""
    root = Path(root)
    secret = take_secret(root / "source")  # first, as before anything else is read
    config, lab = _settings(root / "source")
    started = time.monotonic()
    result = _grade(lab, submission_entry(root / "submission"), config, secret)
    seconds = time.monotonic() - started
    data = results_json(lab, result, secret, seconds, config["hidden_visibility"])
    results = root / "results" / "results.json"
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return results


def warm(root: Path = DEFAULT_ROOT) -> str:
    """Grade the lab's reference once, as a submission is graded, while Gradescope builds
    the image (setup.sh), so that the image holds what each submission's fresh container
    would build first: the compilers' sandbox, the CPU runner and shim, the reference's
    sums and its and the baseline's profiles (a student's matmul-tiled kernel on 2
    cores: 7.4-7.6 s, 1.4-1.5 s with them). On the CPU backend whatever the zip's: an
    image is built without a GPU, and a GPU's grading builds these too (the CPU model).
    The secret's file is read and left for the runs. Returns a sentence for the build's log:
    a grading that cannot run here leaves the cache cold and the image as good."""
    source = Path(root) / "source"
    config, lab = _settings(source)
    started = time.monotonic()
    try:
        result = _grade_reference(lab, {**config, "backend": "cpu"}, read_secret(source))
    except GraderError as error:
        return f"The grader's cache was not filled: {error}"
    seconds, cache = time.monotonic() - started, defaults.cache_path()
    passed = sum(case.status == Status.PASSED for case in result.cases)
    done = f"Graded {lab.name}'s reference in {seconds:.1f} s to fill the grader's cache"
    done += f" ({cache}): {passed} of {len(result.cases)} cases passed"
    if result.cases and passed == len(result.cases):
        return f"{done}."
    problems = [d.message for d in result.all_diagnostics()]
    why = f" ({problems[0]})" if problems else ""
    return f"{done}{why}; each submission will build what this grading could not."


def _grade_reference(lab: Lab, config: dict, secret: str | None) -> Result:
    """The lab's reference, graded as a submission of its own folder."""
    with tempfile.TemporaryDirectory(prefix="grader-warm-") as folder:
        shutil.copy(lab.home / "reference.cu", Path(folder) / "reference.cu")
        return _grade(lab, submission_entry(Path(folder)), config, secret)


def _settings(source: Path) -> tuple[dict, Lab]:
    """The zip's config.json, and its lab, found in the zip's own lab root if it has one."""
    config = json.loads((source / CONFIG).read_text(encoding="utf-8"))
    if config.get("labs"):
        labs.add_roots([source / config["labs"]])
    return config, labs.get(config["lab"])


def _grade(lab: Lab, entry: Entry, config: dict, secret: str | None) -> Result:
    timeout = float(config["timeout"])
    timing = True  # measured where the backend can (a GPU); the CPU backend says it cannot
    result, _ = grade_isolated(
        lab,
        entry,
        backend=config["backend"],
        secret=secret,
        timeout=timeout,
        timing=timing,
        submission_timeout=default_submission_timeout(lab, timeout, timing, secret),
    )
    return result
