"""Intake: the HTTP server that takes GitHub and Buildkite webhooks, verifies, bounds and
stores each delivery, and answers. Nothing here calls GitHub or runs a check."""
