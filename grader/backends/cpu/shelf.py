"""One copy of a compiled module for all the runs of a grading, never one per case.

Every worker (and addr2line) needs the module inside its own scratch folder, the only
place its sandbox lets it read. The shelf hard-links it there from the build cache, made
read-only first: a worker cannot write it, since it runs without capabilities and, where
it switched from root, as another user, and seccomp stops it changing the file's mode; nor
is the link handed over to the worker's user. Where the cache is on another file system
than the scratch folders, or a link is refused, the module is copied once onto the shelf,
a scratch folder of the backend's, and linked from there. (Copied into every case folder,
a module of 250 MB had a grading write 4.2 GB; the module's size is capped too:
grader.defaults.MODULE_BYTES.)"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
from pathlib import Path

from grader.toolchain import scratch

KEPT = 16  # copies on the shelf; a grading has a few builds, a batch worker many gradings


class Shelf:
    def __init__(self) -> None:
        self._folder: Path | None = None
        self._copies: dict[Path, Path] = {}  # module -> its copy, oldest first
        self._unlinkable: set[Path] = set()  # modules a link from the cache failed for
        self._made = 0
        self._lock = threading.Lock()  # cases run beside each other place at once

    def place(self, module: Path, target: Path) -> None:
        """Make `target` (in a scratch folder) the module, read-only. Raises OSError when
        neither a link nor a copy can be made."""
        with self._lock:
            self._place(module, target)

    def _place(self, module: Path, target: Path) -> None:
        if module not in self._unlinkable:
            try:
                _read_only(module)
                os.link(module, target)
                return
            except OSError:
                self._unlinkable.add(module)
        os.link(self._copy(module), target)

    def _copy(self, module: Path) -> Path:
        copy = self._copies.pop(module, None)
        if copy is None or not copy.exists():
            if self._folder is None:
                self._folder = Path(tempfile.mkdtemp(prefix=scratch.prefix("shelf")))
            self._made += 1
            copy = self._folder / f"{self._made}-module.so"
            shutil.copyfile(module, copy)
            _read_only(copy)
        self._copies[module] = copy
        while len(self._copies) > KEPT:  # a job's own link keeps an old copy it still uses
            oldest = next(iter(self._copies))
            self._copies.pop(oldest).unlink(missing_ok=True)
        return copy

    def close(self) -> None:
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        self._folder, self._copies = None, {}

    def __enter__(self) -> Shelf:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _read_only(path: Path) -> None:
    if os.stat(path).st_mode & 0o222:
        os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
