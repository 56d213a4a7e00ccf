"""The duplicate-work audit: which open PRs are the same work, or touch the same code.

Pipeline: a PR record (export line, webhook payload or snapshot) becomes :class:`PRFeatures`
(``features``); an index (``index.MemoryIndex``, or ``store.DatabaseIndex`` over the database)
generates candidates from inverted indexes instead of comparing all pairs; ``scoring`` turns
the signals of each candidate pair into a calibrated score, a tier and short evidence.
"""
