"""A wheel of the running grader, which `grader init-ci` commits to a student repository
and `grader gradescope` puts into its zip, so that both install exactly the grader that
wrote them, never a package of the same name from an index.

Run from a source checkout, the wheel is built there by setuptools (the build copies the
labs into the package). Installed from a wheel, the grader packs its installed files again,
as RECORD lists them, with the metadata it was installed with."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
import shutil
import subprocess
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path, PurePosixPath

import grader
from grader import paths, spawn
from grader.errors import SetupError
from grader.files import write_atomically

DISTRIBUTION = "cuda-lab-grader"
_STAMP = (1980, 1, 1, 0, 0, 0)  # fixed, so the same grader gives the same bytes
# what a source checkout's build needs; everything else there (tests, bench) stays out
_SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "grader", *paths.LAB_FOLDERS)
_JUNK = shutil.ignore_patterns("__pycache__", "*.py[co]", "*.egg-info", "lab_root")
# dist-info files that describe one installation rather than the distribution
_INSTALL_ONLY = {"RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "WHEEL"}


def build_running_wheel(folder: Path) -> Path:
    """Write a wheel of the running grader into `folder`; returns its path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if paths.builtin_root() == paths.CHECKOUT_ROOT:
        return _build_checkout(paths.CHECKOUT_ROOT, folder)
    return _repack_installed(folder)


def requirements(wheel: Path, *extras: str) -> list[str]:
    """The wheel's dependencies (Requires-Dist), with those of each of `extras`."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(name).decode("utf-8")
    out = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement, _, marker = line.split(":", 1)[1].strip().partition(";")
        wanted = re.fullmatch(r'\s*extra\s*==\s*"([^"]+)"\s*', marker) if marker else None
        if not marker or (wanted and wanted.group(1) in extras):
            out.append(requirement.strip())
    return out


def normalized_name(requirement: str) -> str:
    """The name a requirement (`Jinja2>=3.1`) installs, as pip compares names (PEP 503)."""
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", name.group(1) if name else requirement.strip()).lower()


def _build_checkout(root: Path, folder: Path) -> Path:
    """setuptools' own build, on a copy of the checkout's sources, so that the build's
    leftovers (build/, *.egg-info) never land in the checkout."""
    with tempfile.TemporaryDirectory(prefix="grader-wheel-") as tmp:
        source = Path(tmp) / "src"
        source.mkdir()
        for name in _SOURCES:
            if (root / name).is_dir():
                shutil.copytree(root / name, source / name, ignore=_JUNK)
            elif (root / name).is_file():
                shutil.copy2(root / name, source / name)
        out = Path(tmp) / "out"
        script = "import sys, setuptools.build_meta as b; print(b.build_wheel(sys.argv[1]))"
        done = subprocess.run(
            spawn.python_code(script, str(out)),
            cwd=source,
            capture_output=True,
            text=True,
            env=spawn.helper_env(),
        )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise SetupError(
                f"Could not build a wheel of the grader from {root} ({last}). Building one "
                "needs setuptools 68 or newer and wheel: pip install 'setuptools>=68' wheel."
            )
        built = out / done.stdout.strip().splitlines()[-1]
        target = folder / built.name
        write_atomically(target, built.read_bytes())
    return target


def _installed() -> metadata.Distribution:
    """The distribution the running grader was installed from."""
    here = Path(grader.__file__).resolve()
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        dist = None
    if dist is None or Path(str(dist.locate_file("grader/__init__.py"))).resolve() != here:
        raise SetupError(
            f"The running grader ({here.parent}) has no installation record of its own, so "
            "no wheel can be made of it. Install it with pip from a wheel or a checkout."
        )
    return dist


def installed_from() -> dict | None:
    """Where pip installed the running grader from (its direct_url.json, PEP 610), or None
    when it runs from a checkout or was installed from an index."""
    if paths.builtin_root() == paths.CHECKOUT_ROOT:
        return None
    text = _installed().read_text("direct_url.json")
    return json.loads(text) if text else None


def _packed(path: PurePosixPath) -> bool:
    """Whether an installed file belongs in the wheel: the package's own files and the
    metadata that describes the distribution, not this installation."""
    if path.parts[0] == "grader":
        return "__pycache__" not in path.parts
    return path.parts[0].endswith(".dist-info") and path.name not in _INSTALL_ONLY


def _repack_installed(folder: Path) -> Path:
    dist = _installed()
    files = [f for f in dist.files or [] if _packed(f)]
    info_dir = next((f.parts[0] for f in files if f.parts[0].endswith(".dist-info")), None)
    if info_dir is None or not any(f.parts[0] == "grader" for f in files):
        raise SetupError(f"The installation record of {DISTRIBUTION} lists no package files.")
    entries = {f.as_posix(): Path(str(dist.locate_file(f))).read_bytes() for f in files}
    entries[f"{info_dir}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: grader {grader.__version__}\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n"
    ).encode()
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    target = folder / f"{name}-{dist.version}-py3-none-any.whl"
    _write_wheel(target, entries, f"{info_dir}/RECORD")
    return target


def _write_wheel(target: Path, entries: dict[str, bytes], record: str) -> None:
    rows = io.StringIO()
    writer = csv.writer(rows, lineterminator="\n")
    wheel = io.BytesIO()
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(entries):
            data = entries[name]
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            writer.writerow([name, f"sha256={digest.decode()}", len(data)])
            add_file(archive, name, data)
        writer.writerow([record, "", ""])
        add_file(archive, record, rows.getvalue().encode())
    write_atomically(target, wheel.getvalue())


def add_file(archive: zipfile.ZipFile, name: str, data: bytes, executable: bool = False) -> None:
    """One member with a fixed date and mode, so the same content gives the same zip."""
    info = zipfile.ZipInfo(name, date_time=_STAMP)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o100755 if executable else 0o100644) << 16
    archive.writestr(info, data)
