"""One runner from snapshot to report (runner.py), the rule sets it loads (rules.py), and the
rendering of a report as the comment (render.py)."""
