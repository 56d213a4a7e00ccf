"""Autofix: the report's own patches pushed to the PR branch as one commit, or posted.

- :mod:`bot.fixes.plan`: which patches a report holds, whether prbot may push them, and what
  it says (pure).
- :mod:`bot.fixes.push`: the commit, built in the mirror from exactly those patches, and the
  push over git (the adapter).

The handlers are bot/worker/handlers/fix.py (``/prbot fix``, the "Apply fix" button, the job).
"""
