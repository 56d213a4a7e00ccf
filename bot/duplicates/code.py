"""Code features of a PR: the line ranges it touches and the identifiers its diff adds.

Identifiers are what two PRs doing the same work tend to share even when worded
differently: a new enum member (``TOKENSPEED_MLA``), a new function or class, a config key,
an environment variable, a requirement name. Extraction is a few regular expressions per
file kind over the added lines: cheap, language-agnostic enough, and never fails on odd
input.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from bot.duplicates.records import FileChange

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
# The enclosing definition git names after a hunk header ("@@ -58,3 +58,4 @@ class Foo(Enum):",
# "@@ ... @@ static void launch_kernel(...)"): which function or class the edit is in.
_CONTEXT_NAME = re.compile(
    r"^\s*(?:(?:async\s+)?def|class|fn|func|function|struct|impl|module)\s+([A-Za-z_]\w*)"
    r"|([A-Za-z_]\w*)\s*\("
)

_PY_DEF = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)")
_PY_CLASS = re.compile(r"^\s*class\s+([A-Za-z_]\w*)")
_PY_CONSTANT = re.compile(r"^\s*([A-Z][A-Z0-9_]{2,})\s*(?::[^=]+)?=(?!=)")
_PY_FIELD = re.compile(r"^\s+([a-z][a-z0-9_]{3,})\s*:\s*[\w\[\]., |\"']+=(?!=)")
_QUOTED_KEY = re.compile(r"""["'](--[a-z][a-z0-9-]{2,}|VLLM_[A-Z0-9_]+|[A-Z][A-Z0-9_]{4,})["']""")
_C_FUNCTION = re.compile(
    r"^\s*(?:template\s*<[^>]*>\s*)?(?:(?:static|inline|__global__|__device__|__host__|"
    r"__forceinline__|constexpr|extern|virtual)\s+)*[A-Za-z_][\w:<>,*& ]*[\s*&]+"
    r"([A-Za-z_]\w*)\s*\([^;]*$"
)
_C_KEYWORDS = frozenset("if for while switch return else sizeof case do new delete".split())
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:[<>=!~;@#]|$)")
# Only keys with a separator: "label:" or "commands:" are in every YAML file.
_YAML_KEY = re.compile(r"^\s*-?\s*([A-Za-z][A-Za-z0-9]*[_-][\w-]+)\s*:")

# Names every other PR adds: they carry no signal about what the PR is for.
_GENERIC = frozenset(
    """__init__ __call__ __repr__ __eq__ __hash__ __post_init__ forward main setup setUp
    tearDown run get set apply build init test name value self args kwargs config model
    reset update step call process params weight weights inputs outputs""".split()
)


METHOD_PREFIX = "method:"
REQUIREMENT_PREFIX = "requirement:"
_PREFIXES = (METHOD_PREFIX, REQUIREMENT_PREFIX)


@dataclass(frozen=True)
class LineRange:
    """Lines ``start..end`` (inclusive) of the *base* file that one hunk replaces."""

    start: int
    end: int

    def overlaps(self, other: LineRange, slack: int = 0) -> bool:
        return self.start <= other.end + slack and other.start <= self.end + slack


def base_ranges(patch: str | None) -> list[LineRange]:
    """The base-file line range of every hunk. Both PRs diff against (about) the same base,
    so base ranges are what collide at merge time."""
    if not patch:
        return []
    ranges = []
    for line in patch.splitlines():
        if line.startswith("@@"):
            match = _HUNK_HEADER.match(line)
            if match:
                start, count = int(match.group(1)), int(match.group(2) or 1)
                ranges.append(LineRange(start, start + max(count, 1) - 1))
    return ranges


def changed_definitions(patch: str | None) -> list[str]:
    """The functions and classes the hunks edit, as git's hunk headers name them (in order,
    each once). A name is what both PRs edit, not what either adds."""
    if not patch:
        return []
    names: list[str] = []
    for line in patch.splitlines():
        if not line.startswith("@@"):
            continue
        match = _HUNK_HEADER.match(line)
        context = match.group(5).strip() if match else ""
        found = _CONTEXT_NAME.search(context) if context else None
        if found is None:
            continue
        name = found.group(1) or found.group(2)
        if name not in _C_KEYWORDS and name not in names and len(name) >= 3:
            names.append(name)
    return names[:MAX_DEFINITIONS]


def added_lines(patch: str | None) -> list[str]:
    if not patch:
        return []
    return [
        line[1:]
        for line in patch.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]


_CODE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_CODE_STOP = frozenset(
    """def self cls return import from none true false class elif else for not and
    the with while pass raise try except finally lambda yield assert async await int str
    float bool list dict tuple const void auto static inline template typename struct""".split()
)
MAX_CODE_TERMS = 2_000
# Enclosing definitions kept per file: past a few dozen a diff is a rewrite of the file.
MAX_DEFINITIONS = 30


def code_terms(files: list[FileChange]) -> Counter[str]:
    """Words of the added code; two fixes for one bug tend to add the same code."""
    counts: Counter[str] = Counter()
    for change in files:
        if change.binary or _kind(change.path) in ("other", "config"):
            continue
        for line in added_lines(change.patch):
            for word in _CODE_WORD.findall(line):
                word = word.lower()
                if word not in _CODE_STOP:
                    counts[word] += 1
        if len(counts) > MAX_CODE_TERMS:
            break
    return Counter(dict(counts.most_common(MAX_CODE_TERMS)))


def removed_lines(patch: str | None) -> list[str]:
    if not patch:
        return []
    return [
        line[1:]
        for line in patch.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]


def _kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    if name.endswith((".py", ".pyi")):
        return "python"
    if name.endswith((".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp", ".hip")):
        return "c"
    if "requirements" in path.lower() and name.endswith((".txt", ".in")):
        return "requirements"
    if name.endswith((".yaml", ".yml", ".toml", ".json")):
        return "config"
    return "other"


def _names_in(lines: list[str], kind: str) -> set[str]:
    found: set[str] = set()
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "//", "*", "/*")):
            continue
        if kind == "python":
            for pattern in (_PY_DEF, _PY_CLASS, _PY_CONSTANT, _PY_FIELD):
                match = pattern.match(line)
                if match:
                    name = match.group(1)
                    # An indented def is usually an override every sibling class defines.
                    method = pattern is _PY_DEF and line[:1].isspace()
                    found.add(METHOD_PREFIX + name if method else name)
            found.update(_QUOTED_KEY.findall(line))
        elif kind == "c":
            match = _C_FUNCTION.match(line)
            if match and match.group(1) not in _C_KEYWORDS:
                found.add(match.group(1))
        elif kind == "requirements":
            match = _REQUIREMENT.match(line)
            if match and not stripped.startswith("-"):
                found.add(REQUIREMENT_PREFIX + canonicalize_name(match.group(1)))
        elif kind == "config":
            match = _YAML_KEY.match(line)
            if match:
                found.add(match.group(1))
            found.update(_QUOTED_KEY.findall(line))
    return found


def identifiers_added(change: FileChange) -> set[str]:
    """Names the patch of one file introduces (definitions, constants, keys, requirements).

    A name on both a removed and an added line was edited, not introduced (a version bump, a
    signature change): it says nothing about what the PR is for.
    """
    kind = _kind(change.path)
    added = _names_in(added_lines(change.patch), kind)
    if not added:
        return set()
    removed = _names_in(removed_lines(change.patch), kind)
    return {
        name
        for name in added - removed
        if display_name(name) not in _GENERIC and len(display_name(name)) >= 4
    }


def display_name(name: str) -> str:
    """An identifier as the code spells it (without the kind prefix)."""
    return name.split(":", 1)[1] if name.startswith(_PREFIXES) else name
