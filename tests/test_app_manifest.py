"""The App manifest asks for exactly what the code uses: every permission is needed by a call
the whole flow makes on the local GitHub test server, every call is covered by one, and the
events are those the intake accepts; docs/github-app.md's by-hand table says the same."""

from __future__ import annotations

import json
import re
from pathlib import Path

from bot.cli import main
from bot.cli.app_manifest import EVENTS, PERMISSIONS, manifest, permission_for
from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.core.features import BASE_PERMISSIONS, FEATURES, permissions_for
from bot.events.webhooks import HANDLED_ACTIONS
from bot.report.render import MARKER

REPO = "acme/widgets"
LEVELS = {"read": 1, "write": 2}
# Sent to every App whatever it subscribes to; GitHub refuses them in default_events.
ALWAYS_SENT = {"installation", "installation_repositories"}


def test_events_are_those_the_intake_accepts_and_the_handlers_handle():
    from bot.worker.handlers.registry import REGISTRY, load_handlers

    load_handlers()
    handled = {name for name, _actions, _fn in REGISTRY.events}
    github_events = set(HANDLED_ACTIONS)  # the GitHub intake; CI engines have their own
    assert set(EVENTS) == github_events - ALWAYS_SENT
    assert github_events <= handled, "an event the intake stores but no handler takes"
    everything = manifest("https://x.example/h", features=tuple(FEATURES))
    assert everything["default_events"] == list(EVENTS)
    assert "workflow_run" not in manifest("https://x.example/h")["default_events"]


def test_every_permission_is_used_by_the_flow_and_every_call_is_covered(tmp_path):
    with LocalStack(tmp_path / "stack") as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        gh.commit(REPO, "feature", {"a.py": "x = 2\n"})
        number = gh.open_pull_request(REPO, head_branch="feature", title="Change a")["number"]
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        wait_for(lambda: any(MARKER in c["body"] for c in gh.comments(REPO, number)), what="report")
        gh.set_permission(REPO, "mallory", "read")
        for author, body in (("octocat", "/recheck"), ("mallory", "/recheck")):
            comment = gh.add_user_comment(REPO, number, author, body)
            stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, comment))
        wait_for(stack.idle, what="idle queue")
        calls = {(c.method, c.path) for c in gh.calls}

    needed: dict[str, str] = {}
    for method, path in sorted(calls):
        found = permission_for(method, path)
        assert found is not None, f"no permission known for {method} {path}"
        permission, level = found
        if permission is None:
            continue  # the App's own JWT calls
        assert permission in PERMISSIONS, f"{method} {path} needs {permission}"
        granted = PERMISSIONS[permission][0]
        assert LEVELS[granted] >= LEVELS[level], f"{method} {path} needs {permission}:{level}"
        if LEVELS[level] > LEVELS.get(needed.get(permission, ""), 0):
            needed[permission] = level
    # Nothing more than the calls need (metadata every App has), but what features this
    # flow does not drive name (fixes, Actions, team trust).
    from bot.cli.app_manifest import USED_ELSEWHERE

    granted = {p: level for p, (level, _) in PERMISSIONS.items()}
    assert granted == {"metadata": "read", **needed, **USED_ELSEWHERE}


def test_the_command_prints_the_manifest_and_the_reasons(capsys):
    assert main(["app-manifest", "--webhook-url", "https://bot.example/webhooks/github"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["hook_attributes"] == {
        "url": "https://bot.example/webhooks/github",
        "active": True,
    }
    advisory = {p: level for p, (level, _) in BASE_PERMISSIONS.items()}
    assert printed["default_permissions"] == advisory
    assert main(["app-manifest", "--webhook-url", "https://x.example/h", "--explain"]) == 0
    explained = capsys.readouterr().out
    assert all(f"#   {p}: " in explained for p in BASE_PERMISSIONS)
    assert "actions" not in explained


def test_the_default_manifest_writes_nothing_but_comments_and_check_runs(capsys):
    assert main(["app-manifest", "--webhook-url", "https://bot.example/h"]) == 0
    printed = json.loads(capsys.readouterr().out)
    writes = {p for p, level in printed["default_permissions"].items() if level == "write"}
    assert writes == {"issues", "checks"}
    assert printed["default_permissions"]["contents"] == "read"
    assert "actions" not in printed["default_permissions"]
    assert "members" not in printed["default_permissions"]


def test_each_feature_asks_for_exactly_its_permissions(capsys):
    cases = {
        "dispatch": {"members": "read"},
        "autofix": {"contents": "write"},
        "actions": {"actions": "write"},
        "dispatch,autofix,actions": {"members": "read", "contents": "write", "actions": "write"},
    }
    advisory = {p: level for p, (level, _) in BASE_PERMISSIONS.items()}
    for features, added in cases.items():
        argv = ["app-manifest", "--webhook-url", "https://b.example/h", "--features", features]
        assert main(argv) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed["default_permissions"] == {**advisory, **added}, features
    assert main(["app-manifest", "--webhook-url", "https://b.example/h", "--features", "x"]) == 2
    assert "no feature 'x'" in capsys.readouterr().err


README = Path(__file__).resolve().parent.parent / "docs" / "github-app.md"
README_LEVELS = {"Read": "read", "Read & write": "write"}
# GitHub's settings page names some permissions otherwise than the manifest's keys.
README_NAMES = {"commit_statuses": "statuses", "organization_permissions": "members"}
# GitHub scopes "members" to the organization; the rest prbot asks for are repository ones.
ORGANIZATION_PERMISSIONS = {"members"}


def _readme_row(setting: str) -> str:
    """The Value cell of README's by-hand App table row for ``setting``."""
    for line in README.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] == setting:
            return cells[1]
    raise AssertionError(f"README has no {setting!r} row in its App table")


def _readme_permissions(setting: str) -> dict[str, str]:
    # "Pull requests: **Read** (why)" -> {"pull_requests": "read"}
    found = re.findall(
        r"([A-Z][a-z]+(?: [a-z]+)*): \*\*(Read(?: & write)?)\*\*", _readme_row(setting)
    )
    names = [README_NAMES.get(n, n) for n in (name.lower().replace(" ", "_") for name, _ in found)]
    assert len(names) == len(set(names)), f"a permission twice in README's {setting!r} row"
    return {name: README_LEVELS[level] for name, (_, level) in zip(names, found, strict=True)}


def test_readme_permission_table_matches_the_manifest():
    advisory = _readme_permissions("Repository permissions")
    assert advisory == {p: level for p, (level, _) in BASE_PERMISSIONS.items()}
    events = re.findall(r"\*\*([A-Z][a-z]+(?: [a-z]+)*)\*\*", _readme_row("Subscribe to events"))
    assert sorted(e.lower().replace(" ", "_") for e in events) == sorted(
        manifest("https://x.example/h")["default_events"]
    )
    for name, feature in FEATURES.items():
        row = _readme_permissions(f"With `{name}`")
        assert row == {p: level for p, (level, _) in feature.permissions.items()}, name
        named = re.findall(
            r"event \*\*([A-Z][a-z]+(?: [a-z]+)*)\*\*", _readme_row(f"With `{name}`")
        )
        assert sorted(e.lower().replace(" ", "_") for e in named) == sorted(feature.events)
    assert set(permissions_for(FEATURES)) == set(PERMISSIONS)
