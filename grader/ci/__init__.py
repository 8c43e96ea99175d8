"""CI for students' repositories: `init_ci` writes a GitHub Actions workflow that runs
`grader check` and reports to the run's page and to GitHub Classroom."""

from grader.ci.workflow import init_ci, workflow

__all__ = ["init_ci", "workflow"]
