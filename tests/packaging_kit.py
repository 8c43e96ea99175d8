"""Fresh virtual environments for the tests of the grader as users install it: a wheel
built once per session, and venvs made outside the checkout.

A fresh venv gets the grader's dependencies (numpy, jinja2, junit-xml, pyyaml and theirs) linked
in from the environment running the tests, so that no test needs a package index; the
grader itself only ever comes from a wheel. pip runs with PIP_NO_INDEX, so a dependency
the wheel declares and the venv lacks fails the install instead of reaching a network."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from grader.wheel import requirements

CHECKOUT = Path(__file__).resolve().parents[1]


def pip_environment(venv: Path) -> dict[str, str]:
    """The environment of a command run "in" `venv`: its bin first, no index, no checkout
    on the path, and no variable that points pip or Python elsewhere."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV")) and k != "GRADER_SECRET"
    }
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        VIRTUAL_ENV=str(venv),
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_CACHE_DIR="1",
        PYTHONNOUSERSITE="1",
    )
    return env


def _requirement_names(requirements: list[str] | None) -> list[str]:
    names = []
    for requirement in requirements or []:
        if "extra ==" in requirement:
            continue
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        if match:
            names.append(match.group(0))
    return names


def dependencies(wheel: Path) -> list[metadata.Distribution]:
    """Every installed distribution the wheel needs at run time, transitively, NVIDIA's
    nvcc included (the Gradescope locks install it)."""
    seen: dict[str, metadata.Distribution] = {}
    todo = _requirement_names(requirements(wheel, "nvcc"))
    while todo:
        name = todo.pop()
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # a requirement for another Python version or platform
        seen[key] = dist
        todo += _requirement_names(dist.requires)
    return list(seen.values())


def site_packages(venv: Path) -> Path:
    return (
        venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    )


def fresh_venv(path: Path, wheel: Path) -> Path:
    """A new venv at `path` with pip and the dependencies of the grader's `wheel`, and no
    grader."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    site = site_packages(path)
    for dist in dependencies(wheel):
        for top in {f.parts[0] for f in dist.files or []}:
            source = Path(str(dist.locate_file(top)))
            if top != ".." and source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return path


def run_in(
    venv: Path, argv: list[str], cwd: Path, env_extra: dict[str, str] | None = None, **kwargs
) -> subprocess.CompletedProcess:
    """Run `argv` as if `venv` were activated."""
    env = {**pip_environment(venv), **(env_extra or {})}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, **kwargs)
