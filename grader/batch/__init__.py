"""Grading a whole course: `run_batch` grades a folder of submissions into an OUT folder
(gradebook.csv, summary.html, a report folder per student), resumably and in parallel;
`merge` combines the OUT folders of shards graded on several machines."""

from grader.batch.run import BatchReport, run_batch
from grader.batch.shard import Shard, merge, parse_shard

__all__ = ["BatchReport", "Shard", "merge", "parse_shard", "run_batch"]
