"""What grading a course needs beyond one grading, shared by batch, Gradescope and CI:
finding the submissions, the pool of grading workers and their isolation, the GPU each
uses, the stages a batch clocks, and the points of a result."""
