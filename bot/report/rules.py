"""Rule sets: the YAML that tells each check what to look at, validated with pydantic.

``rules/<name>.yaml`` holds the shipped defaults. A target repository may override them in
``.github/prbot.yml`` (read at the PR's *base*, so a PR cannot relax its own rules), which
may say ``extends: vllm`` and then override any key. A bad file gives a :class:`RulesError`
naming file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    create_model,
    model_validator,
)

from bot.checks import all_checks
from bot.core.bounded_yaml import YamlRejected, load_bounded
from bot.core.paths import rules_dir

REPO_RULES_PATH = ".github/prbot.yml"


class RulesError(ValueError):
    """A rule file that cannot be used. ``str()`` is one line: file:line: field: problem."""

    def __init__(self, source: str, line: int | None, field: str, problem: str) -> None:
        self.source, self.line, self.field, self.problem = source, line, field, problem
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {field}: {problem}" if field else f"{where}: {problem}")


# A command's own name, or an alias: lower-case words ("retest", "ci run").
_COMMAND_SPELLING = r"^[a-z][a-z0-9_-]*( [a-z][a-z0-9_-]*)*$"
PermissionEntry = Literal["anyone", "author", "read", "triage", "write", "maintain", "admin"]


class CommandPolicy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Who may run the command: "author" (the PR's author), repository permission levels, or
    # "anyone".
    allow: list[PermissionEntry] = ["author", "write", "maintain", "admin"]
    # Other spellings of prbot's own command. Never another bot's (vLLM's `/ci run`, Prow's
    # `/retest`): prbot would answer, and act on, a command its owner already handles.
    aliases: list[Annotated[str, StringConstraints(pattern=_COMMAND_SPELLING, max_length=40)]] = (
        Field(default_factory=list, max_length=20)
    )


class CommandRules(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recheck: CommandPolicy = Field(default_factory=CommandPolicy)
    # A maintainer's approval of GPU jobs for the PR's current head SHA
    # (bot/worker/handlers/approve.py).
    approve_gpu: CommandPolicy = Field(
        default_factory=lambda: CommandPolicy(
            allow=["write", "maintain", "admin"], aliases=["approve-gpu"]
        )
    )
    # `/prbot fix [docs|requirements]` pushes to the PR's branch: write access by default
    # (and prbot pushes only for write access, whatever this says; it posts the patch else).
    fix: CommandPolicy = Field(
        default_factory=lambda: CommandPolicy(allow=["write", "maintain", "admin"])
    )
    # `/prbot help` lists the commands the commenter may use; reading it harms nobody.
    help: CommandPolicy = Field(default_factory=lambda: CommandPolicy(allow=["anyone"]))

    @model_validator(mode="after")
    def _spellings_unique(self) -> CommandRules:
        seen: dict[str, str] = {}
        for name in type(self).model_fields:
            for spelling in [name, *getattr(self, name).aliases]:
                if spelling in seen and seen[spelling] != name:
                    raise ValueError(f"{spelling!r} names both {seen[spelling]} and {name}")
                seen[spelling] = name
        return self

    def spellings(self) -> dict[str, str]:
        """Every way to type a command (name or alias) -> the command it runs."""
        out: dict[str, str] = {}
        for name in type(self).model_fields:
            for spelling in [name, *getattr(self, name).aliases]:
                out.setdefault(spelling, name)
        return out


class TrustRules(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # author_association values whose heads are trusted without approval.
    trusted_associations: list[str] = ["OWNER", "MEMBER", "COLLABORATOR"]
    # Bot accounts whose comments and PRs are never acted on as commands.
    bots: list[str] = [
        "dependabot[bot]",
        "renovate[bot]",
        "github-actions[bot]",
        "pre-commit-ci[bot]",
    ]


class FeatureRules(BaseModel):
    """What prbot may do beyond advisory (reading, commenting, its check run); each feature
    needs the App permissions bot/core/features.py names."""

    model_config = ConfigDict(extra="forbid")

    # Dispatch the selected GPU jobs to the repository's CI (only what its own builds of the
    # head did not run or schedule).
    dispatch: bool = False
    # Push the report's fix as one commit (the 'Apply fix' button, /prbot fix).
    autofix: bool = False
    # Jobs whose rules say `engine: actions` go to GitHub Actions (with dispatch).
    actions: bool = False

    def on(self) -> tuple[str, ...]:
        return tuple(name for name in type(self).model_fields if getattr(self, name))


@cache
def rule_set_model() -> type[BaseModel]:
    """The root model: one field per registered check, plus commands and trust."""
    check_fields: dict[str, Any] = {
        check.name: (check.rules_model, Field(default_factory=check.rules_model))
        for check in all_checks()
    }
    checks_model = create_model(
        "ChecksRules", __config__=ConfigDict(extra="forbid"), **check_fields
    )
    return create_model(
        "RuleSet",
        __config__=ConfigDict(extra="forbid"),
        version=(Literal[1], 1),
        extends=(str | None, None),
        # Paths that, all present, mark a tree this built-in set is made for: `prbot check`
        # picks the set by itself when none is named. Meaningless in a repository's own file.
        detect=(list[str], Field(default_factory=list)),
        checks=(checks_model, Field(default_factory=checks_model)),
        commands=(CommandRules, Field(default_factory=CommandRules)),
        trust=(TrustRules, Field(default_factory=TrustRules)),
        features=(FeatureRules, Field(default_factory=FeatureRules)),
    )


def schema_json() -> str:
    return json.dumps(rule_set_model().model_json_schema(), indent=2, sort_keys=True)


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Follow a pydantic error location through the YAML node tree to a line number."""
    best = node.start_mark.line + 1 if node is not None else None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == str(key):
                    node = value_node
                    best = key_node.start_mark.line + 1
                    break
            else:
                return best
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            best = node.start_mark.line + 1
        else:
            return best
    return best


# A rule file is a page of YAML. A PR can propose any file (its changed .github/prbot.yml is
# validated), so size, aliases, depth and the size of the tree aliases expand to are bounded
# before anything is built (bot/core/bounded_yaml.py).
MAX_RULES_CHARS = 256_000
MAX_ALIASES = 50
# A plain file at MAX_RULES_CHARS is about 13,000 nodes (rules/vllm.yaml: 905 in 18 KB).
MAX_RULES_NODES = 100_000


def parse_yaml(text: str, source: str) -> tuple[dict[str, Any], yaml.Node | None]:
    if len(text) > MAX_RULES_CHARS:
        raise RulesError(source, None, "", f"over {MAX_RULES_CHARS:,} characters; not read")
    try:
        data, node = load_bounded(text, max_aliases=MAX_ALIASES, max_nodes=MAX_RULES_NODES)
    except YamlRejected as exc:
        raise RulesError(source, exc.line, "", exc.message) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark else None
        raise RulesError(source, line, "", f"invalid YAML: {problem}") from None
    if data is None:
        return {}, node
    if not isinstance(data, dict):
        raise RulesError(source, 1, "", "a rule file must be a mapping at the top level")
    return data, node


# The explicit forms of a list in a repository's file: {replace: [...]} and {append: [...]}.
LIST_OPERATIONS = ("replace", "append")


def _list_operation(value: Any) -> tuple[str, Any] | None:
    if isinstance(value, dict) and len(value) == 1:
        ((key, items),) = value.items()
        if key in LIST_OPERATIONS and isinstance(items, list):
            return key, items
    return None


def _named(items: list[Any]) -> bool:
    return bool(items) and all(
        isinstance(i, dict) and isinstance(i.get("name"), str) for i in items
    )


def _merge_lists(base: list[Any], override: list[Any]) -> list[Any]:
    """Named entries (``integration.rules``) merge by name: an override with a built-in's name
    replaces it in place, new ones are appended. Plain lists (``allow``, ``paths``) replace."""
    if not (_named(base) and _named(override)):
        return override
    mine = {item["name"]: item for item in override}
    merged = [mine.pop(item["name"], item) for item in base]
    return merged + [item for item in override if item["name"] in mine]


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` layered over ``base``: mappings merge key by key, lists as
    :func:`_merge_lists` says unless written ``{replace: [...]}`` or ``{append: [...]}``,
    anything else replaces the base value."""
    merged = dict(base)
    for key, value in override.items():
        operation = _list_operation(value)
        if operation is not None:
            kind, items = operation
            before = merged.get(key) if isinstance(merged.get(key), list) else []
            merged[key] = list(items) if kind == "replace" else [*before, *items]
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        elif isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = _merge_lists(merged[key], value)
        else:
            merged[key] = value
    return merged


def _without_operations(data: Any, done: dict[int, Any] | None = None) -> Any:
    """A file read alone (no parent): ``{replace: [...]}`` and ``{append: [...]}`` are lists.

    A mapping YAML shares through an alias is rebuilt once and shared again, so the result
    is no bigger than what was read (rebuilding each use made a 2^n tree of n aliases).
    """
    done = {} if done is None else done
    if not isinstance(data, dict):
        return data
    if id(data) not in done:
        operation = _list_operation(data)
        if operation is not None:
            done[id(data)] = list(operation[1])
        else:
            done[id(data)] = {k: _without_operations(v, done) for k, v in data.items()}
    return done[id(data)]


def validate(data: dict[str, Any], source: str, node: yaml.Node | None = None) -> BaseModel:
    try:
        return rule_set_model().model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A misspelt key also makes the real one "missing"; the typo is the one to name.
        first = min(errors, key=lambda e: e["type"] != "extra_forbidden")
        loc = tuple(first["loc"])
        field = ".".join(str(part) for part in loc)
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise RulesError(source, _line_of(node, loc), field, first["msg"] + more) from None


def _builtin_text(name: str) -> tuple[str, str]:
    if "/" in name or name.startswith("."):
        raise RulesError(REPO_RULES_PATH, None, "extends", f"unknown rule set {name!r}")
    path = rules_dir() / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in rules_dir().glob("*.yaml"))
        raise RulesError(
            REPO_RULES_PATH,
            None,
            "extends",
            f"unknown rule set {name!r} (known: {', '.join(known)})",
        )
    return path.read_text(), f"rules/{name}.yaml"


def builtin_names() -> list[str]:
    """The built-in rule sets, by name (``rules/<name>.yaml``)."""
    return sorted(p.stem for p in rules_dir().glob("*.yaml"))


def detect_builtin(exists: Callable[[str], bool]) -> str | None:
    """The built-in set whose ``detect`` paths all exist in a tree, or None.

    ``exists`` answers for one path of the tree (a checkout, a working directory).
    """
    for name in builtin_names():
        text, source = _builtin_text(name)
        data, _ = parse_yaml(text, source)
        paths = data.get("detect") or []
        if paths and all(exists(path) for path in paths):
            return name
    return None


def load_file(path: Path | str) -> BaseModel:
    """A rule file on disk, validated; ``extends`` is honoured."""
    path = Path(path)
    # Read to the bound only (a rules path can be /dev/zero or a 100 MB file); UTF-8 holds at
    # most 4 bytes a character, so anything over the bound in characters is over it in bytes.
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_RULES_CHARS * 4 + 1)
    except OSError as exc:
        raise RulesError(str(path), None, "", f"cannot read: {exc.strerror}") from None
    if len(data) > MAX_RULES_CHARS * 4:
        raise RulesError(str(path), None, "", f"over {MAX_RULES_CHARS:,} characters; not read")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RulesError(str(path), None, "", f"not UTF-8 text (byte {exc.start})") from None
    return load_text(text, str(path))


def load_text(text: str, source: str, default: str | None = None) -> BaseModel:
    """Rules from YAML text, layered over ``extends`` (or ``default``) when given."""
    data, node = parse_yaml(text, source)
    own_data = data
    parent_name = data.get("extends", default)
    if parent_name:
        if not isinstance(parent_name, str):
            raise RulesError(source, _line_of(node, ("extends",)), "extends", "must be a string")
        parent_text, parent_source = _builtin_text(parent_name)
        parent_data, parent_node = parse_yaml(parent_text, parent_source)
        validate(parent_data, parent_source, parent_node)
        data = deep_merge({k: v for k, v in parent_data.items() if k != "extends"}, data)
    ruleset = validate(_without_operations(data), source, node)
    _check_symbol_rules(ruleset, own_data, source, node)
    return ruleset


def _check_symbol_rules(ruleset: BaseModel, data: dict[str, Any], source: str, node) -> None:
    """A symbol rule needs ``added`` (the regex whose group is the new name); without it the
    rule could never find a name, so it is refused here rather than failing at run time."""
    for index, rule in enumerate(ruleset.checks.integration.rules):
        if rule.kind == "symbol" and not rule.added:
            loc = ("checks", "integration", "rules", index)
            raise RulesError(
                source,
                _line_of(node, _own_index(data, loc, rule.name)),
                ".".join(str(part) for part in (*_own_index(data, loc, rule.name), "added")),
                f"symbol rule {rule.name!r} needs `added` (a regex whose first group is the "
                "new name)",
            )


def _own_index(data: dict[str, Any], loc: tuple[Any, ...], name: str) -> tuple[Any, ...]:
    """Where a merged rule sits in the file's own text (merging may have moved it)."""
    own = ((data.get("checks") or {}).get("integration") or {}).get("rules")
    operation = _list_operation(own)
    items = operation[1] if operation else own
    if isinstance(items, list):
        for position, item in enumerate(items):
            if isinstance(item, dict) and item.get("name") == name:
                return (*loc[:-1], position)
    return loc[:-1]


def load_builtin(name: str = "default") -> BaseModel:
    text, source = _builtin_text(name)
    return load_text(text, source)


def for_repository(repo_file_text: str | None, default: str = "default") -> BaseModel:
    """The rules for one repository: its ``.github/prbot.yml`` over a built-in set."""
    if repo_file_text is None:
        return load_builtin(default)
    return load_text(repo_file_text, REPO_RULES_PATH, default=default)
