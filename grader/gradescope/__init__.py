"""Gradescope: `build_autograder` writes the autograder.zip; inside Gradescope's container
its run_autograder grades one submission into results.json (grader.gradescope.run)."""

from grader.gradescope.autograder import build_autograder

__all__ = ["build_autograder"]
