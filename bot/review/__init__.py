"""Review points a reviewer would raise on new kernel-backend code, found on changed lines.

Each pattern is a module with ``find(reviewed, rules, ...) -> list[Flag]`` over one parsed
head file (:class:`bot.review.source.ReviewedFile`); :mod:`bot.review.engine` runs them over
a PR's changed files. Nothing here imports or runs the code it reads.
"""
