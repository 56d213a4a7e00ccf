"""The shared core: sections and the check context, the PR snapshot and its tree readers
(reading git through bot/local), input limits, paths, markdown helpers, redaction."""
