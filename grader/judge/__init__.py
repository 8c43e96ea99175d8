"""Judging: a lab's cases and their inputs, the launch made from them, one run's outputs
compared with the expected ones (verdict), the hints and error maps that name a bug, the
lab's rules, the points, what a whole grading says (grading) and how long it may take
(deadline). It reads the model and never runs anything itself."""
