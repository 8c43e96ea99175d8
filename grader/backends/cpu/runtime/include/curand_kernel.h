/* Part of the grader's CUDA shim: a feature the CPU backend cannot run. */
#error "The CPU backend cannot run cuRAND device functions (curand_kernel.h). Remove it, or grade on a GPU with --backend cuda."
