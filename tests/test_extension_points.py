"""Adding a check and adding an event handler: one new file each, no other module edited.

Both live in a temporary package outside ``bot/``, found the way the built-in ones are.
"""

from __future__ import annotations

import sys
import textwrap

import pytest
from invariant_helpers import REPO, create_repo, open_pr

from bot.checks import checks_in
from bot.cli.demo_stack import LocalStack, wait_for
from bot.core.snapshot import snapshot_from_checkout
from bot.report import rules
from bot.report.runner import run_checks
from bot.worker.handlers import registry

CHECK_MODULE = """
from bot.checks import Check, CheckRules, Section, Status


class TodoRules(CheckRules):
    marker: str = "TODO"


def run(snapshot, rules, context):
    hits = [
        f"{changed.path}:{line}"
        for changed in snapshot.files
        for line, text in changed.added_lines()
        if rules.marker in text
    ]
    if not hits:
        return Section("todos", Status.PASS, f"no new {rules.marker}")
    return Section("todos", Status.WARN, f"{len(hits)} new {rules.marker}", findings=[
        {"where": hit} for hit in hits
    ])


CHECK = Check(name="todos", title="New TODOs", run=run, rules_model=TodoRules)
"""

HANDLER_MODULE = """
from bot.worker.handlers.registry import on_event


@on_event("pull_request", "opened")
def welcome(ctx, event):
    payload = event.payload
    if payload["repository"]["full_name"] != "acme/widgets":
        return
    client = ctx.client_for(payload)
    number = payload["pull_request"]["number"]
    ctx.reply_once(client, f"welcome:{number}", "acme/widgets", number, "Thanks for the PR!")
"""


@pytest.fixture
def extension_package(tmp_path, monkeypatch):
    root = tmp_path / "ext"
    (root / "acme_prbot").mkdir(parents=True)
    (root / "acme_prbot" / "__init__.py").write_text("")
    (root / "acme_prbot" / "checks").mkdir()
    (root / "acme_prbot" / "checks" / "__init__.py").write_text("")
    (root / "acme_prbot" / "checks" / "todos.py").write_text(textwrap.dedent(CHECK_MODULE))
    (root / "acme_prbot" / "handlers").mkdir()
    (root / "acme_prbot" / "handlers" / "__init__.py").write_text("")
    (root / "acme_prbot" / "handlers" / "welcome.py").write_text(textwrap.dedent(HANDLER_MODULE))
    monkeypatch.syspath_prepend(str(root))
    before = list(registry.REGISTRY.events)
    yield "acme_prbot"
    # The registry is per process: leave it as the other tests expect it.
    registry.REGISTRY.events[:] = before
    for name in [m for m in sys.modules if m.startswith("acme_prbot")]:
        del sys.modules[name]


def test_a_check_in_its_own_file_runs_with_its_own_rules(
    extension_package, git_repo, check_context
):
    base = git_repo.commit({"a.py": "x = 1\n"})
    head = git_repo.commit({"a.py": "x = 1\n# TODO: speed up\n"})
    snapshot = snapshot_from_checkout(git_repo.path, base, head, trusted=False)
    checks = checks_in(f"{extension_package}.checks")
    assert [c.name for c in checks] == ["todos"]
    # The built-in rule set does not know the check: it runs with its model's defaults.
    report = run_checks(snapshot, rules.load_builtin("default"), check_context, checks)
    snapshot.close()
    [section] = report.sections
    assert (section.check, section.status) == ("todos", "warn")
    assert section.findings == [{"where": "a.py:2"}]


def test_a_handler_in_its_own_file_reacts_to_real_deliveries(extension_package, tmp_path):
    registry.load_handlers(f"{extension_package}.handlers")
    with LocalStack(tmp_path / "stack") as stack:
        create_repo(stack)
        number = open_pr(stack, author="alice")
        event = stack.github.pull_request_event(REPO, number, "opened")
        assert stack.deliver("pull_request", event).status_code == 202
        wait_for(
            lambda: any(
                c["body"] == "Thanks for the PR!" for c in stack.github.comments(REPO, number)
            ),
            what="the welcome comment",
        )
        wait_for(stack.idle, what="idle queue")
