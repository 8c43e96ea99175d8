"""One grading: the pipeline (check, grade) that drives a backend through the judge, and
timing, the grader's side of measuring the kernel's speed."""
