"""Repair: redeliver what prbot missed, sweep PR heads without a report, and reconcile the
open-PR index with GitHub."""
