"""The GPU-job steps the worker's handlers take, over the engines and the store.

``bot.jobs`` decides (selection, the dispatch plan, verdicts, the redrawn section) over data;
this package does the I/O around it: the dispatch executor and result reading over the
engines (``dispatch``, ``results``, engines in ``bot.engines``), the kept reports
(``stored_report``) and the handlers' steps (``flow``).
"""
