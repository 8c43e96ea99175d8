"""Every default in one place."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from grader.errors import SetupError

SECRET_ENV = "GRADER_SECRET"  # the environment variable that holds the course's secret
ARCH = "sm_90"  # what nvcc targets when no GPU says otherwise (H100/H200)
COMPILE_TIMEOUT = 60.0  # seconds for one compiler run
COMPILE_MEMORY = 2 << 30  # bytes of address space for each compiler process
COMPILE_FILE_SIZE = 64 << 20  # bytes of any file a compiler writes
# Bytes of a compiled module (its code and initialized data): the source limit does not
# bound it, as `__device__ char big[250 << 20] = {1};` is one line.
MODULE_BYTES = 16 << 20
# __device__ data a module may declare: uninitialized arrays take no room in the module but
# GPU memory when it loads, which a batch's other submissions share.
DEVICE_DATA_BYTES = 256 << 20
CASE_TIMEOUT = 10.0  # seconds for one launch, --timeout
MAX_CASE_TIMEOUT = 3600.0  # the most --timeout accepts (docs/student.md says so)
MAX_SUBMISSION_TIMEOUT = 24 * 3600.0  # the most --submission-timeout accepts
MAX_TIMEOUTS = 2  # cases that may hang before the rest are not run
SANITIZE_FACTOR = 10  # a case under a sanitizer may take this many times its timeout
MAX_COMPILE_ERRORS = 10
OUTPUT_LIMIT = 16 * 1024  # bytes of a kernel's printf output kept per case
TIMING_BUDGET = 3.0  # seconds of timing per submission on a GPU
TIMING_GRACE = 10.0  # seconds past the budget before a timing worker is killed
TIMING_TARGET_ERROR = 0.005  # stop timing once the median speedup is known to 0.5 %
TIMING_MIN_ROUNDS = 5
# A round (both kernels' runs) of at least TIMING_LONG_ROUND seconds is a slow kernel's:
# its rounds agree to ±0.1 % (matmul's naive baseline, 26 ms a run on an H200), so
# TIMING_LONG_MIN_ROUNDS of them tell its median, its first pair one of them (Plan).
TIMING_LONG_ROUND = 0.02
TIMING_LONG_MIN_ROUNDS = 3
TIMING_MAX_ROUNDS = 200
# Every round's speedup this share past where the points stop changing (Scoring's zero
# and target speedups) decides them: timing stops there after the least rounds, once the
# speedup shown is known to TIMING_SHOWN_ERROR, a long round's to TIMING_LONG_SHOWN_ERROR
# (a batch's contention spread the naive baseline's 3-round medians by ±10 % on an H100
# without it, and each more long round holds the GPU 20 ms or more). At 1 %, five
# gradings of scan's or histogram's reference showed speedups up to 1.4 to 1.7 % from
# their median; at 0.6 %, 0.3 to 1.1 % on three H100 machines (bench/gpu_labs.py).
TIMING_POINTS_MARGIN = 0.05
TIMING_SHOWN_ERROR = 0.006
TIMING_LONG_SHOWN_ERROR = 0.01
# A round whose two runs' kernels take under TIMING_BRIEF_ROUND seconds is a brief
# kernel's (scan's 14 µs, spmv-csr's 144 µs, conv2d's 214 µs): launch and event jitter,
# tenths of a µs, spread its speedup by 1 to 3 %, so that five medians known to
# TIMING_SHOWN_ERROR still lay 1.8 % apart (scan on an H200). Its rounds cost the GPU
# little beside a round's own flush and events (ROUND_OVERHEAD_S, 2 ms): it is timed
# until its median is known to TIMING_BRIEF_ERROR, points known or not, up to the rounds
# the host can check (grader.grading.timing). On an H100 five gradings of scan's
# reference then lay within ±0.4 % of their median, in 64 rounds (bench/gpu_labs.py). At
# 0.1 ms spmv-csr's reference was not brief, and five gradings stopped at 6.4 rounds lay
# past 1 % of their median in 12 % of sets; at 1 ms, 2 % in 14.8 rounds; every other lab
# 0 to 1 %, histogram 5 % and scan 3 % (brief at either). H100, every lab's reference, 8
# seeds of 128 rounds replayed (bench/timing_spread.py, docs/performance.md).
TIMING_BRIEF_ROUND = 1e-3
TIMING_BRIEF_ERROR = 0.003
SUBMISSION_MEMORY = 2 << 30  # what batch's default --jobs allows each submission
# Similarity across a class (grader.course.similarity): a pair is shown from this share of
# the smaller text in common, the most similar SIMILAR_PAIRS of them. Code that more than
# SIMILAR_COMMON submissions have, or more than SIMILAR_COMMON_SHARE of a larger class, is
# boilerplate, which links no two students (MOSS's -m is 10).
SIMILAR_THRESHOLD = 0.5
SIMILAR_PAIRS = 20
SIMILAR_COMMON = 10
SIMILAR_COMMON_SHARE = 0.1


def cache_path() -> Path:
    """Where compiled modules are cached; GRADER_CACHE overrides."""
    if os.environ.get("GRADER_CACHE"):
        return Path(os.environ["GRADER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cuda-lab-grader"


def cache_dir() -> Path:
    """cache_path(), made where it is missing. One the user may not write is a setup
    error in a sentence, where each use of it would raise PermissionError."""
    return _writable(cache_path())


@cache
def _writable(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
        why = "" if os.access(path, os.W_OK | os.X_OK) else "Permission denied"
    except OSError as error:  # a folder on its way the user may not enter, a file there
        why = error.strerror or str(error)
    if why:
        raise SetupError(
            f"The grader's cache, {path}, is not a folder you may write ({why}): set "
            "GRADER_CACHE to a folder of your own."
        )
    return path
