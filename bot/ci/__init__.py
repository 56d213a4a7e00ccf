"""GPU jobs at the edges: the CI engines' adapters and the steps the jobs handlers take.

``bot.jobs`` decides (selection, the dispatch plan, verdicts, the redrawn section) over data;
this package does the I/O around it: GitHub Actions through PyGithub (``actions``), the
dispatch executor and result reading over the engines and the store (``dispatch``,
``results``), Buildkite's webhook intake (``buildkite_intake``), the kept reports
(``stored_report``) and the handlers' steps (``flow``). Tables: ``schema``.
"""
