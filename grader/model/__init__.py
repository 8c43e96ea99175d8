"""The nouns every other part speaks: a submission and its source, what a compiled module
offers (its interface), what a lab is, what a backend is given and gives back (a launch,
its buffers, its outcome, a timing), and the one result of a grading. Plain data, with no
verb above it: this folder imports nothing of the grader's but its bottom modules."""
