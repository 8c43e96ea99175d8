"""The compilers and what they leave: nvcc and its PTX, the system C++ compiler and the
runner built with it, the sandbox every compiler runs in, the build cache and the scratch
folders. Both backends build on it; it knows nothing of labs or grading."""
