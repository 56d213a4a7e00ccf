"""The git edge of autofix against the test server's git, and the fix job's replay safety."""

from __future__ import annotations

import itertools
import sys

import pytest

from bot.fixes.plan import FilePatch
from bot.fixes.push import PushRefused, build_commit, push, same_host
from bot.gendocs.patch import unified_patch
from bot.github.app import GitHubApp
from bot.local.mirror import RepoMirror
from bot.runtime.settings import Settings
from bot.store import state
from bot.store.db import make_engine, migrate
from bot.store.queue import Queue
from bot.testing.github_server import FakeGitHub
from bot.worker.handlers.context import HandlerContext
from bot.worker.handlers.fix import run_fix

REPO = "acme/fixme"
DOC = "# Modules\n\n- a.py\n"
FIXED = "# Modules\n\n- a.py\n- b.py\n"
PATCH = FilePatch("docs", "docs/modules.md", unified_patch("docs/modules.md", DOC, FIXED))
AUTHOR = ("prbot[bot]", "prbot[bot]@users.noreply.github.com")


_names = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One test server for the module (its key pair is the slow part); a repository per test."""
    with FakeGitHub(root=tmp_path_factory.mktemp("github")) as gh:
        gh.add_installation(1, "acme")
        yield gh


@pytest.fixture
def world(server, tmp_path, monkeypatch):
    """A repository with one PR (same-repo branch), fetched into a mirror."""
    gh = server
    # Each test has its own repository on the shared server, under the module's one name.
    monkeypatch.setattr(sys.modules[__name__], "REPO", f"acme/fixme-{next(_names)}")
    gh.create_repo(REPO, installation_id=1, files={"docs/modules.md": DOC, "pkg/a.py": "A\n"})
    head = gh.commit(REPO, "feature", {"pkg/b.py": "B\n"}, "add b")
    pr = gh.open_pull_request(REPO, head_branch="feature", title="b", author="alice")
    token = gh.create_installation_token(1)
    mirror = RepoMirror(tmp_path / "data", REPO, gh.git_url(REPO))
    base = gh.repos[REPO].branch_sha("main")
    mirror.fetch_pull(token, pr["number"], "main", base, head)
    return gh, pr["number"], head, token, mirror


def test_same_host_only():
    clone = "https://github.com/acme/w.git"
    assert same_host("https://github.com/alice/w.git", clone)
    assert not same_host("https://evil.example/alice/w.git", clone)
    assert not same_host("http://github.com/alice/w.git", clone)
    assert not same_host("https://github.com:8443/alice/w.git", clone)
    assert not same_host("https://user:pw@github.com/alice/w.git", clone)
    assert not same_host("file:///etc/passwd", "file:///etc/passwd")


def test_the_commit_is_the_patch_on_the_head_and_the_same_when_rebuilt(world):
    _, _, head, _, mirror = world
    when = 1_700_000_000
    sha = build_commit(mirror.path, head, [PATCH], "fix\n", author=AUTHOR, timestamp=when)
    again = build_commit(mirror.path, head, [PATCH], "fix\n", author=AUTHOR, timestamp=when)
    assert sha == again  # a job run twice builds one commit
    assert mirror.read_file(sha, "docs/modules.md") == FIXED.encode()
    later = build_commit(mirror.path, head, [PATCH], "fix\n", author=AUTHOR, timestamp=when + 1)
    assert later != sha


def test_a_patch_that_does_not_apply_or_changes_nothing_is_refused(world):
    _, _, head, _, mirror = world
    stale = FilePatch("docs", "docs/modules.md", unified_patch("docs/modules.md", "x\n", "y\n"))
    with pytest.raises(PushRefused, match="does not apply"):
        build_commit(mirror.path, head, [stale], "m", author=AUTHOR, timestamp=1)
    escape = FilePatch("docs", "../x.md", unified_patch("../x.md", "", "y\n"))
    with pytest.raises(PushRefused, match="does not apply"):
        build_commit(mirror.path, head, [escape], "m", author=AUTHOR, timestamp=1)
    with pytest.raises(PushRefused, match="change nothing"):
        build_commit(mirror.path, head, [], "m", author=AUTHOR, timestamp=1)


def test_push_fast_forwards_and_never_forces(world):
    gh, number, head, token, mirror = world
    sha = build_commit(mirror.path, head, [PATCH], "fix\n", author=AUTHOR, timestamp=1)
    push(mirror.path, gh.git_url(REPO), token, sha, "feature")
    push(mirror.path, gh.git_url(REPO), token, sha, "feature")  # again: a no-op
    assert gh.pushes(REPO) == [("feature", head, sha)]
    assert gh.repos[REPO].pulls[number].head_sha == sha
    # A commit on the old head, after the branch moved: refused, not forced.
    other = build_commit(mirror.path, head, [PATCH], "other\n", author=AUTHOR, timestamp=2)
    with pytest.raises(PushRefused, match="moved"):
        push(mirror.path, gh.git_url(REPO), token, other, "feature")
    assert gh.repos[REPO].branch_sha("feature") == sha
    with pytest.raises(PushRefused, match="not a valid ref"):
        push(mirror.path, gh.git_url(REPO), token, sha, "bad..name")
    with pytest.raises(PushRefused, match="did not let prbot push"):
        push(mirror.path, gh.git_url(REPO), "wrong-token", sha, "feature")


def test_a_fork_takes_the_push_only_when_it_allows_maintainer_edits(server, tmp_path, monkeypatch):
    gh = server
    monkeypatch.setattr(sys.modules[__name__], "REPO", f"acme/fork-{next(_names)}")
    gh.create_repo(REPO, installation_id=1, files={"docs/modules.md": DOC})
    head = gh.commit(REPO, "patch-1", {"pkg/b.py": "B\n"}, "add b")
    pr = gh.open_pull_request(REPO, head_branch="patch-1", title="b", fork_owner="alice")
    token = gh.create_installation_token(1)
    mirror = RepoMirror(tmp_path / "data", REPO, gh.git_url(REPO))
    mirror.fetch_pull(token, pr["number"], "main", gh.repos[REPO].branch_sha("main"), head)
    sha = build_commit(mirror.path, head, [PATCH], "fix\n", author=AUTHOR, timestamp=1)
    fork_url = pr["head"]["repo"]["clone_url"]
    with pytest.raises(PushRefused, match="did not let prbot push"):
        push(mirror.path, fork_url, token, sha, "patch-1")
    gh.repos[REPO].pulls[pr["number"]].maintainer_can_modify = True
    push(mirror.path, fork_url, token, sha, "patch-1")
    assert gh.repos[REPO].pulls[pr["number"]].head_sha == sha


def _report(head: str) -> dict:
    finding = {"path": PATCH.path, "patch": PATCH.patch, "cells": [{"row": 1}]}
    return {"head_sha": head, "sections": [{"check": "generated_docs", "findings": [finding]}]}


@pytest.fixture
def fixer(world, tmp_path):
    """A handler context on the test server, a stored report with the fix, and a fix job."""
    gh, number, head, _, _ = world
    gh.set_permission(REPO, "maintainer", "write")
    key = tmp_path / "app.pem"
    key.write_text(gh.private_key_pem)
    settings = Settings(
        webhook_secrets=("s",),
        app_id=str(gh.app_id),
        private_key_path=key,
        github_api_url=gh.url,
        data_dir=tmp_path / "data",
        github_request_interval=0,
        github_write_interval=0,
    )
    engine = make_engine(f"sqlite:///{tmp_path / 'prbot.sqlite'}")
    migrate(engine)
    ctx = HandlerContext(settings, engine, Queue(engine), GitHubApp(settings))
    state.save_report(engine, REPO, number, head, "fail", _report(head), "")
    job = {
        "repo": REPO,
        "clone_url": gh.git_url(REPO),
        "installation_id": 1,
        "number": number,
        "requester": "maintainer",
        "kinds": ["docs"],
        "head_sha": None,
        "request": "comment-1",
    }
    yield gh, ctx, job, number, head
    engine.dispose()


def _bodies(gh, number):
    return [c["body"] for c in gh.comments(REPO, number)]


def test_a_job_that_crashed_after_pushing_records_the_push_and_pushes_nothing_more(
    fixer, monkeypatch
):
    gh, ctx, job, number, head = fixer
    finish = state.finish_effect

    def crash(engine_, key_, *args, **kwargs):
        if key_.startswith("fix_push:"):
            raise RuntimeError("worker killed")
        return finish(engine_, key_, *args, **kwargs)

    monkeypatch.setattr(state, "finish_effect", crash)
    with pytest.raises(RuntimeError, match="worker killed"):
        run_fix(ctx, job)
    [(_, _, pushed)] = gh.pushes(REPO)
    monkeypatch.setattr(state, "finish_effect", finish)
    run_fix(ctx, job)  # the retry: the pushed commit is recognised, not pushed again
    assert gh.pushes(REPO) == [("feature", head, pushed)]
    effect = state.get_effect(ctx.engine, f"fix_push:{REPO}#{number}@{head}")
    assert (effect.state, effect.external_id) == ("done", pushed)
    [reply] = _bodies(gh, number)
    assert f"prbot pushed `{pushed[:12]}`" in reply
    # Asked again in another comment: the head's one push is named, nothing is pushed.
    run_fix(ctx, {**job, "request": "comment-2"})
    assert len(gh.pushes(REPO)) == 1
    assert f"prbot pushed `{pushed[:12]}`" in _bodies(gh, number)[1]


def test_a_patch_that_no_longer_applies_is_posted_not_pushed(fixer):
    gh, ctx, job, number, head = fixer
    stale = unified_patch("docs/modules.md", "something else\n", FIXED)
    report = _report(head)
    report["sections"][0]["findings"][0]["patch"] = stale
    state.save_report(ctx.engine, REPO, number, head, "fail", report, "")
    run_fix(ctx, job)
    assert gh.pushes(REPO) == []
    [reply] = _bodies(gh, number)
    assert "did not push the fix: the patch for docs/modules.md does not apply" in reply
    assert state.get_effect(ctx.engine, f"fix_push:{REPO}#{number}@{head}") is None


def test_no_report_for_the_head_and_no_app(fixer):
    gh, ctx, job, number, _ = fixer
    run_fix(ctx, {**job, "head_sha": "c" * 40})
    assert "the latest report for `cccccccccccc` has no docs fix" in _bodies(gh, number)[0]
    run_fix(ctx, {**job, "installation_id": None, "request": "comment-3"})  # dry run: nothing
    assert gh.pushes(REPO) == [] and len(_bodies(gh, number)) == 1
