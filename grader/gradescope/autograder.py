"""`grader gradescope`: the autograder.zip that Gradescope builds its grading image from.

At the zip's root, as Gradescope requires (https://gradescope-autograders.readthedocs.io/
en/latest/specs/): `setup.sh`, which installs a compiler, Python and the grader's
dependencies, and `run_autograder`, which grades one submission. Beside them: this
grader's own package and the lab's reference kernels (so a zip grades the same way for
the whole term, whatever is released later), `requirements.txt`, `config.json` (lab,
backend, settings) and, when a secret is given, `secret` for the hidden cases.

Gradescope has no GPU, so the zip uses the CPU backend unless told otherwise."""

from __future__ import annotations

import json
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import grader
from grader import defaults, labs, paths
from grader.errors import SetupError, UsageError
from grader.gradescope.results import VISIBILITIES

DISTRIBUTION = "cuda-lab-grader"
FILES = Path(__file__).parent / "files"
CONFIG = "config.json"
SECRET = "secret"
SCRIPTS = ("setup.sh", "run_autograder")
_STAMP = (1980, 1, 1, 0, 0, 0)  # fixed, so the same inputs give the same zip
_SKIPPED = ("__pycache__", ".pyc", ".so", ".partial")


def requirements(backend: str) -> list[str]:
    """The grader's dependencies (with PyCUDA for the cuda backend), from its installed
    metadata or, in a source checkout that was not installed, from pyproject.toml."""
    try:
        declared = metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        declared = _from_pyproject()
    base = [r for r in declared if "extra ==" not in r]
    gpu = [r.split(";")[0].strip() for r in declared if 'extra == "gpu"' in r]
    return base + (gpu if backend == "cuda" else [])


def _from_pyproject() -> list[str]:
    pyproject = Path(grader.__file__).resolve().parents[1] / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    except (OSError, KeyError) as error:
        raise SetupError(
            "The grader's dependencies are unknown: it is neither installed (pip install .) "
            f"nor run from its source checkout ({pyproject} is missing)."
        ) from error
    gpu = [f'{r}; extra == "gpu"' for r in project.get("optional-dependencies", {}).get("gpu", [])]
    return list(project["dependencies"]) + gpu


def _add(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name, date_time=_STAMP)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    archive.writestr(info, data)


def _add_tree(archive: zipfile.ZipFile, folder: Path, prefix: str) -> None:
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and not any(part.endswith(_SKIPPED) for part in relative.parts):
            _add(archive, f"{prefix}/{relative.as_posix()}", path.read_bytes())


def build_autograder(
    lab: str,
    out: Path,
    *,
    backend: str = "cpu",
    secret: str | None = None,
    hidden_visibility: str = VISIBILITIES[0],
    timeout: float = defaults.CASE_TIMEOUT,
) -> Path:
    """Write the zip to `out` and return its path. Without a secret only the public cases
    run on Gradescope, and the students' results say that hidden cases exist."""
    spec = labs.get(lab)
    if backend not in ("cpu", "cuda"):
        raise UsageError(f"A Gradescope autograder runs the cpu or cuda backend, not {backend!r}.")
    if hidden_visibility not in VISIBILITIES:
        raise UsageError(f"Hidden cases are shown {' or '.join(VISIBILITIES)}.")
    reference = paths.reference_dir(spec.name)
    if not reference.is_dir():
        raise SetupError(f"The reference kernels of {spec.name} are missing from {reference}.")
    config = {
        "lab": spec.name,
        "backend": backend,
        "timeout": timeout,
        "timing": backend == "cuda",
        "hidden_visibility": hidden_visibility,
        "grader_version": grader.__version__,
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w") as archive:
        for script in SCRIPTS:
            _add(archive, script, (FILES / script).read_bytes(), executable=True)
        _add(archive, CONFIG, (json.dumps(config, indent=2) + "\n").encode())
        _add(archive, "requirements.txt", ("\n".join(requirements(backend)) + "\n").encode())
        if secret:
            _add(archive, SECRET, secret.encode())
        _add_tree(archive, Path(grader.__file__).parent, "grader")
        _add_tree(archive, reference, f"reference_kernels/{spec.name}")
    return out
