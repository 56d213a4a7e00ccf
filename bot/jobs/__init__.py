"""GPU jobs: which smoke tests and kernel benchmarks a PR needs, and what their results say.

Logic over data: reading CI step files and benchmark results, selecting jobs, planning their
dispatch, comparing base and head, redrawing the report's section from job records; the
engine protocol (``engines``) and Buildkite's REST client and webhook checks. The database,
GitHub and the handlers' steps sit at the edges, in ``bot.worker.ci``.
"""
