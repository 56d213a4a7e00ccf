"""The integration checklist's own logic: pure functions over trees and parsed sources.

``bot.checks.integration`` is the thin check on top. The pieces, one module each:
:mod:`~bot.integration.config` (the rule model), :mod:`~bot.integration.checklist` (the
symbol rules and the run), :mod:`~bot.integration.headfiles` (the head's files, read once,
and the outcome), :mod:`~bot.integration.entries` (the real entries of a file: Python names
and strings, YAML keys and values, never comments), :mod:`~bot.integration.aliases` (names a
benchmark runner maps to a registry member), :mod:`~bot.integration.symbols` (new registry
members), :mod:`~bot.integration.opt_in` (members the project selects only when configured),
:mod:`~bot.integration.dependencies` (the imports rule), :mod:`~bot.integration.imports`
(imports and their guards, with ``ast``), :mod:`~bot.integration.probes` (packages the code
probes for), :mod:`~bot.integration.installs` (install commands of Dockerfiles and CI
scripts) and :mod:`~bot.integration.distributions` (import names to declared
distributions).
"""
