"""GPU jobs: which smoke tests and kernel benchmarks a PR needs, and what their results say.

Pure logic only: reading CI step files and benchmark results, selecting jobs, comparing base
and head. Dispatch to CI engines and the webhook handlers sit at the edges.
"""
