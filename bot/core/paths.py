"""Where prbot's own data files (templates, default rules) live, in a checkout or a wheel."""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # bot/


def _data_dir(name: str) -> Path:
    # A source checkout keeps them beside the package; a wheel carries them in bot/_data.
    for candidate in (_PACKAGE.parent / name, _PACKAGE / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"prbot data directory {name!r} is missing from the install")


def templates_dir() -> Path:
    return _data_dir("templates")


def rules_dir() -> Path:
    return _data_dir("rules")
