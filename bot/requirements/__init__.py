"""Requirements per platform and architecture.

``parser`` reads pip-style files, ``graph`` follows ``-r``/``-c``, ``effective`` evaluates
markers per (platform, arch, python) and diffs base against head, ``resolve`` runs uv,
``consistency`` compares pins, ``compiled`` checks ``uv pip compile`` outputs, and
``analysis`` puts them together for ``bot.checks.requirements``.
"""
