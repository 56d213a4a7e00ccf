"""Generated docs: the repository's generator or prbot's extractor, compared cell by cell.

- :mod:`bot.gendocs.source`: Python files as syntax trees (never imported), with problems.
- :mod:`bot.gendocs.attention_classes` / :mod:`~bot.gendocs.attention_sources` /
  :mod:`~bot.gendocs.mla_prefill`: the attention-backend model of one revision.
- :mod:`bot.gendocs.render`: the model through the Jinja2 table templates.
- :mod:`bot.gendocs.tables`: Markdown tables as data, regions in a doc, cell diffs.
- :mod:`bot.gendocs.doc_check`: one doc (committed tables or marker template) checked;
  :mod:`~bot.gendocs.findings`: the expected tables and the finding it gives.
- :mod:`bot.gendocs.generator`: the doc's own generator (base revision's), run sandboxed,
  the authority where the rules name one (:mod:`~bot.gendocs.mkdocs_stand_in` for
  mkdocs-gen-files scripts); :mod:`~bot.gendocs.doc_diff` explains its output cell by cell.
- :mod:`bot.gendocs.hooks`: the repository's own generators of other files, run sandboxed.
- :mod:`bot.gendocs.patch`: the ready patches the report offers.
"""

from bot.gendocs.config import DocRule, GeneratedDocsRules, HookRule
from bot.gendocs.doc_check import DocResult, check_doc
from bot.gendocs.hooks import HookResult, run_hook

__all__ = [
    "DocResult",
    "DocRule",
    "GeneratedDocsRules",
    "HookResult",
    "HookRule",
    "check_doc",
    "run_hook",
]
