"""The running process: settings from the environment, logs, metrics, locks, and the
supervisor of worker processes."""
