/* Part of the grader's CUDA shim: a feature the CPU backend cannot run. */
#error "The CPU backend cannot run asynchronous copies (cuda_pipeline.h). Remove it, or grade on a GPU with --backend cuda."
