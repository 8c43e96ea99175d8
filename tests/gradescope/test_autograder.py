"""The Gradescope zip installs locked dependencies: requirements.txt pins an exact version
of every package the grader needs, each with the hashes of its release's files, and
setup.sh installs it with `pip --require-hashes`, so two builds of a zip install the same
packages; a file whose hash is not in the lock is refused. No test here needs a network:
the hash check is shown on a package built here."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging_kit import pip_environment

from grader.errors import SetupError
from grader.gradescope import build_autograder
from grader.gradescope.autograder import LOCKED_EXTRAS, LOCKS
from grader.wheel import normalized_name, requirements

PIN = re.compile(  # name==version, then one --hash line or more
    r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+) \\\n((?:\s+--hash=sha256:[0-9a-f]{64}(?: \\)?\n)+)",
    re.MULTILINE,
)


def pins(text: str) -> dict[str, tuple[str, list[str]]]:
    """{name: (version, hashes)} of a lock."""
    return {
        normalized_name(name): (version, re.findall(r"sha256:([0-9a-f]{64})", hashes))
        for name, version, hashes in PIN.findall(text)
    }


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_the_lock_pins_every_dependency_exactly_with_hashes(grader_wheel, backend):
    text = LOCKS[backend].read_text()
    locked = pins(text)
    packages = [line for line in text.splitlines() if line and line[0].isalnum()]
    assert len(locked) == len(packages) > 0  # every package line is an exact pin with hashes
    assert all(hashes for _, hashes in locked.values())
    needed = requirements(grader_wheel, *LOCKED_EXTRAS[backend])
    for requirement in map(Requirement, needed):
        version, _ = locked[normalized_name(requirement.name)]
        assert requirement.specifier.contains(version), (requirement, version)
    assert ("pycuda" in locked) == (backend == "cuda")
    assert "nvidia-cuda-nvcc" in locked  # an image without the CUDA toolkit compiles with it
    assert "://" not in text  # no index: the image's pip configuration decides where from


def test_the_cuda_lock_is_the_cpu_lock_and_pycuda(grader_wheel):
    cpu, cuda = pins(LOCKS["cpu"].read_text()), pins(LOCKS["cuda"].read_text())
    assert {name: cuda[name] for name in cpu} == cpu


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_two_builds_of_a_zip_carry_the_lock_byte_for_byte(tmp_path, grader_wheel, backend):
    one = build_autograder(
        "matmul-naive", tmp_path / "one.zip", backend=backend, wheel=grader_wheel
    )
    two = build_autograder(
        "matmul-naive", tmp_path / "two.zip", backend=backend, wheel=grader_wheel
    )
    assert one.read_bytes() == two.read_bytes()
    with zipfile.ZipFile(one) as archive:
        assert archive.read("requirements.txt") == LOCKS[backend].read_bytes()
        setup = archive.read("setup.sh").decode()
    assert "--require-hashes" in setup and "requirements.txt" in setup


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A minimal pure-Python wheel, as pip installs it."""
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}/__init__.py": b"",
        f"{info}/METADATA": metadata.encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = "".join(f"{path},sha256={_digest(data)},{len(data)}\n" for path, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path, content in files.items():
            archive.writestr(path, content)
    path = folder / f"{name}-{version}-py3-none-any.whl"
    path.write_bytes(data.getvalue())
    return path


def test_a_wheel_whose_dependency_the_lock_lacks_is_refused(tmp_path):
    wheel = _wheel(tmp_path, "cuda_lab_grader", "0.1.0", ("numpy>=1.24", "leftpad>=1"))
    with pytest.raises(SetupError, match="needs leftpad>=1, which requirements-cpu.txt"):
        build_autograder("matmul-naive", tmp_path / "a.zip", wheel=wheel)
    assert not (tmp_path / "a.zip").exists()


@pytest.mark.parametrize("tampered", [False, True])
def test_setup_installs_only_files_whose_hash_the_lock_holds(
    autograder_tree, venv_factory, tmp_path, tampered
):
    wheelhouse = tmp_path / "wheelhouse"
    wheelhouse.mkdir()
    demo = _wheel(wheelhouse, "hashdemo", "1.0")
    digest = hashlib.sha256(demo.read_bytes()).hexdigest()
    if tampered:  # the index serves other bytes under the same name and version
        digest = hashlib.sha256(b"what the lock was made from").hexdigest()
    root = autograder_tree(tmp_path / "autograder")
    (root / "source" / "requirements.txt").write_text(
        f"hashdemo==1.0 \\\n    --hash=sha256:{digest}\n"
    )
    (root / "venv").symlink_to(venv_factory(f"lock-{tampered}"))
    env = {**pip_environment(root / "venv"), "AUTOGRADER_ROOT": str(root)}
    env["PIP_FIND_LINKS"] = str(wheelhouse)  # the package index, here
    done = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True
    )
    if tampered:
        assert done.returncode != 0
        assert "DO NOT MATCH THE HASHES" in done.stderr, done.stderr
    else:
        assert done.returncode == 0, done.stdout + done.stderr
        found = root / "venv" / "bin" / "python"
        check = [str(found), "-c", "import hashdemo, grader"]
        assert subprocess.run(check, env=env, capture_output=True).returncode == 0


@pytest.fixture
def autograder_tree(grader_wheel):
    """Makes a folder laid out like /autograder with a zip's files in source/."""

    def make(root: Path) -> Path:
        built = build_autograder("matmul-naive", root.parent / "z.zip", wheel=grader_wheel)
        with zipfile.ZipFile(built) as archive:
            archive.extractall(root / "source")
        (root / "source" / "setup.sh").chmod(0o755)
        return root

    return make
