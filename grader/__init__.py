"""CUDA lab grader: grades students' CUDA kernels on a GPU, or on the CPU without one."""

__version__ = "0.1.0"
