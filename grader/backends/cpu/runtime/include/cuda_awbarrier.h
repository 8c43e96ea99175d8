/* Part of the grader's CUDA shim: a feature the CPU backend cannot run. */
#error "The CPU backend cannot run asynchronous barriers (cuda_awbarrier.h). Remove it, or grade on a GPU with --backend cuda."
