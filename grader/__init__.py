"""CUDA lab grader: grades students' CUDA kernels on a GPU, or on the CPU without one."""

import os

__version__ = "0.1.0"

# numpy's BLAS runs one thread: the grader's float64 references are small, and idle BLAS
# threads spin, taking the cores that a batch's other workers need (a warm check with the
# hidden cases used 13 s of CPU in 2.8 s on 16 cores). Set before numpy is imported; the
# user's own setting wins.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")
