"""The system C++ compiler, and how what is built with it once per machine is built: the
compilers' sandbox (grader.toolchain.sandbox) and the CPU backend's runner and shim
(grader.backends.cpu.runner, grader.backends.cpu.shim).

Each is cached under `grader.defaults.cache_dir()` in a folder named by a hash of its
sources and the compiler's version (source_hash): editing a source or changing compilers
rebuilds it."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from grader import machine
from grader.errors import SetupError
from grader.toolchain import build_cache

PACKAGE = Path(__file__).resolve().parents[1]  # what a source's name in a hash is relative to


@dataclass(frozen=True)
class Compiler:
    path: str
    version: str  # e.g. "g++ 12.2.0"


@cache
def compiler() -> Compiler:
    """The C++ compiler: $CXX, else g++, c++ or clang++ on PATH."""
    wanted = os.environ.get("CXX")
    names = [wanted] if wanted else ["g++", "c++", "clang++"]
    for name in names:
        path = shutil.which(name) if name else None
        if path:
            return Compiler(path, _version(path))
    raise SetupError(
        "The CPU backend needs a C++ compiler, and none was found: install g++ or clang++, "
        "or name one in the CXX environment variable."
    )


def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return Path(path).name
    first = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
    number = re.search(r"\d+\.\d+(\.\d+)?", first)
    kind = "clang++" if "clang" in first.lower() else Path(path).name
    return f"{kind} {number.group(0)}" if number else first.strip() or kind


def clean_env() -> dict[str, str]:
    """What a compiler or worker gets of the environment: a PATH, and nothing of the
    grader's (never GRADER_SECRET)."""
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C"}


def source_hash(sources: Iterable[Path], *generated: str) -> str:
    """A short hash of what a build compiles: each source's place in the package and its
    bytes, the `generated` sources' text, and the compiler's version."""
    digest = hashlib.sha256()
    for path in sorted(map(str, sources)):
        digest.update(_file_digest(path))
    for text in generated:
        digest.update(text.encode())
    digest.update(compiler().version.encode())
    return digest.hexdigest()[:16]


def _file_digest(path: str) -> bytes:
    """The hash of a source's place in the package and its bytes, read again only when
    the file's size, times or inode change. Safe because the files hashed here are the
    grader's own installation, which no submission writes: its compile and its worker run
    in the sandbox, which lets them write only their own scratch files."""
    st = os.stat(path)
    return _named_digest(path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@cache
def _named_digest(path: str, *_identity: int) -> bytes:
    digest = hashlib.sha256(Path(path).relative_to(PACKAGE).as_posix().encode())
    digest.update(Path(path).read_bytes())
    return digest.digest()


def built_once(product: Path, make: Callable[[Path], None]) -> Path:
    """`product`, made with its folder by `make(folder)` (which stages it and renames the
    folder into place) under a lock, unless another process made it first; then held, so
    that it is never evicted while this process lives."""
    folder = product.parent
    if product.exists():
        build_cache.hold(folder)
        if product.exists():
            return product
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{product.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not product.exists():
            make(folder)
    build_cache.hold(folder)
    build_cache.stored()
    return product


def build_program(
    folder: Path,
    name: str,
    sources: Sequence[Path],
    flags: Sequence[str],
    link: Sequence[str],
    who: str,
    generated: dict[str, str],
) -> None:
    """The program folder/name, compiled from `sources` with `flags` and linked with
    `link` after the objects, for built_once; the `generated` headers (name -> text,
    grader.toolchain.header) are written beside the objects, where the sources find
    them. Raises SetupError, starting with `who`, when the compiler fails."""
    cxx = compiler().path
    with tempfile.TemporaryDirectory(prefix=f"grader-{name}-", dir=folder.parent) as tmp:
        for header, text in generated.items():
            (Path(tmp) / header).write_text(text)
        flags = ["-I", tmp, *flags]
        objects = [Path(tmp) / f"{s.stem}.o" for s in sources]

        def compile_one(pair: tuple[Path, Path]) -> subprocess.CompletedProcess:
            source, obj = pair
            cmd = [cxx, *flags, "-c", str(source), "-o", str(obj)]
            return subprocess.run(cmd, capture_output=True, text=True, env=clean_env())

        # A dozen files; compiling them side by side halves the wait.
        with ThreadPoolExecutor(max_workers=machine.cores()) as pool:
            results = list(pool.map(compile_one, zip(sources, objects, strict=True)))
        failed = [r for r in results if r.returncode != 0]
        if not failed:
            cmd = [cxx, *flags, *map(str, objects), "-o", f"{tmp}/{name}", *link]
            failed = [subprocess.run(cmd, capture_output=True, text=True)]
            failed = [r for r in failed if r.returncode != 0]
        if failed:
            raise SetupError(f"{who} with {compiler().version}: {failed[0].stderr.strip()[:2000]}")
        staged = Path(tmp) / "out"
        staged.mkdir()
        shutil.move(f"{tmp}/{name}", staged / name)
        os.replace(staged, folder)
