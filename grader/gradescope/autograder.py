"""`grader gradescope`: the autograder.zip that Gradescope builds its grading image from.

At the zip's root, as Gradescope requires (https://gradescope-autograders.readthedocs.io/
en/latest/specs/): `setup.sh`, which installs a compiler, Python and the grader, and
`run_autograder`, which grades one submission. Beside them: a wheel of this very grader
under `wheel/` (so a zip grades the same way for the whole term, whatever is released
later, and the grader never comes from a package index), `requirements.txt` (its
dependencies, locked: an exact version of each, with the hash of every file of its
release, which setup.sh installs with `pip --require-hashes`, so that every build of the
zip installs the same packages), `config.json` (lab, backend, settings), for a course's
own lab a lab root `labs/` with its definition and reference, and, when a secret is
given, `secret` for the hidden cases.

The locks are files/requirements-cpu.txt and files/requirements-cuda.txt, made with
pip-tools from pyproject.toml (their header has the command); a wheel whose dependencies
a lock does not pin cannot be put in a zip.

Gradescope has no GPU, so the zip uses the CPU backend unless told otherwise."""

from __future__ import annotations

import io
import json
import re
import tempfile
import zipfile
from pathlib import Path

import grader
from grader import defaults, labs
from grader.errors import SetupError, UsageError
from grader.files import refuse_unsafe, write_atomically
from grader.gradescope.results import VISIBILITIES
from grader.labroot import export, portable
from grader.wheel import add_file, build_running_wheel, normalized_name, requirements

FILES = Path(__file__).parent / "files"
CONFIG = "config.json"
SECRET = "secret"
WHEEL_DIR = "wheel"
SCRIPTS = ("setup.sh", "run_autograder")
LOCKS = {"cpu": FILES / "requirements-cpu.txt", "cuda": FILES / "requirements-cuda.txt"}
# The extras each lock installs: an image without the CUDA toolkit gets NVIDIA's nvcc, so
# that its CPU backend compiles as a GPU does (on a GPU runner the system's comes first)
LOCKED_EXTRAS = {"cpu": ("nvcc",), "cuda": ("gpu", "nvcc")}
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==", re.MULTILINE)
LABS_DIR = "labs"  # a lab root with a course's own lab, when the zip grades one


def build_autograder(
    lab: str,
    out: Path,
    *,
    backend: str = "cpu",
    secret: str | None = None,
    hidden_visibility: str = VISIBILITIES[0],
    timeout: float = defaults.CASE_TIMEOUT,
    wheel: Path | None = None,
) -> Path:
    """Write the zip to `out` and return its path. Without a secret only the public cases
    run on Gradescope, and the students' results say that hidden cases exist. `wheel` is
    the grader's wheel to put in it; by default one is made of the running grader."""
    spec = labs.get(lab)
    course_lab = portable(spec)  # the grader's own labs travel in its wheel
    if backend not in ("cpu", "cuda"):
        raise UsageError(f"A Gradescope autograder runs the cpu or cuda backend, not {backend!r}.")
    if hidden_visibility not in VISIBILITIES:
        raise UsageError(f"Hidden cases are shown {' or '.join(VISIBILITIES)}.")
    config = {
        "lab": spec.name,
        "labs": LABS_DIR if course_lab else None,
        "backend": backend,
        "timeout": timeout,
        "hidden_visibility": hidden_visibility,
        "grader_version": grader.__version__,
    }
    out = Path(out)
    refuse_unsafe(out, "the autograder zip")
    data = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="grader-zip-") as tmp:
        wheel = Path(wheel) if wheel else build_running_wheel(Path(tmp))
        lock = locked_requirements(wheel, backend)
        with zipfile.ZipFile(data, "w") as archive:
            for script in SCRIPTS:
                add_file(archive, script, (FILES / script).read_bytes(), executable=True)
            add_file(archive, CONFIG, (json.dumps(config, indent=2) + "\n").encode())
            add_file(archive, "requirements.txt", lock)
            add_file(archive, f"{WHEEL_DIR}/{wheel.name}", wheel.read_bytes())
            if course_lab:
                for path in export(spec, Path(tmp) / LABS_DIR):
                    add_file(archive, path.relative_to(tmp).as_posix(), path.read_bytes())
            if secret:
                add_file(archive, SECRET, secret.encode())
    write_atomically(out, data.getvalue(), mode=0o600 if secret else 0o644)
    return out


def locked_requirements(wheel: Path, backend: str) -> bytes:
    """The lock of `backend`'s dependencies, once it is known to pin every dependency the
    grader's `wheel` declares. Raises SetupError naming those it lacks."""
    lock = LOCKS[backend].read_bytes()
    pinned = {normalized_name(name) for name in _PIN.findall(lock.decode("utf-8"))}
    needed = requirements(wheel, *LOCKED_EXTRAS[backend])
    missing = [r for r in needed if normalized_name(r) not in pinned]
    if missing:
        raise SetupError(
            f"The grader's wheel needs {', '.join(missing)}, which {LOCKS[backend].name} does "
            "not pin: lock it again with the command in that file's header."
        )
    return lock
