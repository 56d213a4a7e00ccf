"""The spine end to end over HTTP: signed deliveries in, one comment and one check run out,
against the local GitHub test server, real git and SQLite."""

from __future__ import annotations

import json

import httpx
import pytest

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.report.render import MARKER
from bot.store import deliveries
from bot.store.queue import Queue

REPO = "acme/widgets"


@pytest.fixture
def bare_stack(tmp_path):
    """prbot and the local GitHub test server, with no repository yet."""
    with LocalStack(tmp_path / "stack") as running:
        yield running


@pytest.fixture
def stack(bare_stack):
    bare_stack.github.create_repo(
        REPO,
        installation_id=INSTALLATION_ID,
        files={"README.md": "# widgets\n", "widgets/core.py": "x = 1\n"},
    )
    return bare_stack


def _open_pr(stack, title="Speed up core", author="alice", association="CONTRIBUTOR"):
    gh = stack.github
    gh.commit(REPO, "feature", {"widgets/core.py": "x = 2\n"}, "speed up")
    pull = gh.open_pull_request(
        REPO,
        head_branch="feature",
        title=title,
        body="Makes it fast.",
        author=author,
        author_association=association,
    )
    return pull["number"]


def _reported_pr(stack):
    """Open a PR, deliver `opened`, wait for its report; (number, report body)."""
    number = _open_pr(stack)
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, "opened"))
    body = wait_for(lambda: _bot_comments(stack, number), what="first report")[0]["body"]
    wait_for(stack.idle, what="idle queue")
    return number, body


def _bot_comments(stack, number):
    return [
        c
        for c in stack.github.comments(REPO, number)
        if MARKER in c["body"] and c["user"]["type"] == "Bot"
    ]


def _comment_for_head(stack, number, sha):
    comments = _bot_comments(stack, number)
    return comments if comments and f"prbot:head={sha}" in comments[0]["body"] else None


def test_opened_then_synchronize_edits_one_comment(stack):
    number = _open_pr(stack)
    head = stack.github.pull_request_event(REPO, number, "opened")["pull_request"]["head"]["sha"]
    response = stack.deliver(
        "pull_request", stack.github.pull_request_event(REPO, number, "opened")
    )
    assert response.status_code == 202
    comments = wait_for(lambda: _comment_for_head(stack, number, head), what="first report")
    assert len(comments) == 1
    assert "Changed files" in comments[0]["body"]
    # The run exists from the start (in progress); it completes right after the comment.
    wait_for(
        lambda: [r for r in stack.github.check_runs(REPO, head) if r["status"] == "completed"],
        what="completed check run",
    )
    assert len(stack.github.check_runs(REPO, head)) == 1

    new_head = stack.github.push(REPO, number, {"widgets/extra.py": "y = 1\n"}, "more")
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, "synchronize"))
    comments = wait_for(lambda: _comment_for_head(stack, number, new_head), what="second report")
    assert len(comments) == 1 and comments[0]["id"] == _bot_comments(stack, number)[0]["id"]
    assert "widgets/extra.py" in comments[0]["body"]
    wait_for(stack.idle, what="idle queue")
    assert len(stack.github.check_runs(REPO, new_head)) == 1


def test_steady_state_synchronize_costs_at_most_three_rest_calls(stack):
    number, _ = _reported_pr(stack)
    stack.github.reset_calls()
    new_head = stack.github.push(REPO, number, {"widgets/core.py": "x = 3\n"}, "again")
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, "synchronize"))
    wait_for(lambda: _comment_for_head(stack, number, new_head), what="report for new head")
    wait_for(stack.idle, what="idle queue")
    rest = [c for c in stack.github.calls if ".git/" not in c.path]
    assert len(rest) <= 3, rest


def test_recheck_by_author_reruns_and_reacts(stack):
    number = _open_pr(stack)
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, "opened"))
    first = wait_for(lambda: _bot_comments(stack, number), what="first report")[0]
    comment = stack.github.add_user_comment(REPO, number, "alice", "/recheck please")
    assert (
        stack.deliver(
            "issue_comment", stack.github.issue_comment_event(REPO, number, comment)
        ).status_code
        == 202
    )
    wait_for(lambda: "rocket" in stack.github.reactions(REPO, comment["id"]), what="rocket")
    assert "eyes" in stack.github.reactions(REPO, comment["id"])
    comments = _bot_comments(stack, number)
    assert len(comments) == 1 and comments[0]["id"] == first["id"]


def test_unauthorized_recheck_is_refused_once_per_head(stack):
    number = _open_pr(stack)
    stack.github.set_permission(REPO, "mallory", "read")
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, "opened"))
    wait_for(lambda: _bot_comments(stack, number), what="first report")
    wait_for(stack.idle, what="idle queue")
    runs_before = len(stack.github.check_runs(REPO))
    for text in ("/recheck", "/recheck again"):
        comment = stack.github.add_user_comment(REPO, number, "mallory", text)
        stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, comment))
    wait_for(stack.idle, what="idle queue")
    replies = [
        c
        for c in stack.github.comments(REPO, number)
        if c["user"]["type"] == "Bot" and MARKER not in c["body"]
    ]
    assert len(replies) == 1 and "mallory" in replies[0]["body"]
    assert len(stack.github.check_runs(REPO)) == runs_before


def test_commands_in_code_blocks_and_bot_comments_do_nothing(stack):
    number, _ = _reported_pr(stack)
    queue = Queue(stack.service.engine)
    done_before = queue.depth()["done"]
    quoted = stack.github.add_user_comment(REPO, number, "alice", "> /recheck\n```\n/recheck\n```")
    stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, quoted))
    wait_for(stack.idle, what="idle queue")
    # Only the delivery job itself ran; no pipeline was queued.
    assert queue.depth()["done"] == done_before + 1
    assert stack.github.reactions(REPO, quoted["id"]) == []


def _store_size(stack):
    return deliveries.count_deliveries(stack.service.engine), sum(
        Queue(stack.service.engine).depth().values()
    )


def test_bad_requests_are_refused_and_store_no_work(stack):
    before = _store_size(stack)
    body = json.dumps({"action": "opened"}).encode()
    http = stack.http
    bad_sig = http.post(
        stack.webhook_url,
        content=body,
        headers={
            "X-GitHub-Event": "pull_request",
            "X-GitHub-Delivery": "d1",
            "X-Hub-Signature-256": "sha256=" + "0" * 64,
            "Content-Type": "application/json",
        },
    )
    assert bad_sig.status_code == 401
    unsigned = http.post(
        stack.webhook_url,
        content=body,
        headers={"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d2"},
    )
    assert unsigned.status_code == 401
    from bot.cli.demo_stack import WEBHOOK_SECRET
    from bot.cli.replay import send

    malformed = send(stack.webhook_url, "pull_request", b"{oops", WEBHOOK_SECRET, "d3", client=http)
    assert malformed.status_code == 400
    unknown = send(
        stack.webhook_url, "watch", b'{"action": "started"}', WEBHOOK_SECRET, "d4", client=http
    )
    assert unknown.status_code == 200 and unknown.json()["status"] == "ignored"
    ping = send(
        stack.webhook_url,
        "ping",
        json.dumps(stack.github.ping_event()).encode(),
        WEBHOOK_SECRET,
        "d5",
        client=http,
    )
    assert ping.status_code == 200
    huge = b'{"pad": "' + b"x" * (25 * 1024 * 1024) + b'"}'
    assert _status_before_body(stack.webhook_url, huge, WEBHOOK_SECRET, "d6") == 413
    # Only the signed but malformed delivery is kept: as rejected, with its reason, no job.
    stored, jobs = _store_size(stack)
    assert (stored, jobs) == (before[0] + 1, before[1])
    [rejected] = deliveries.rejected_deliveries(stack.service.engine)
    assert rejected.guid == "d3" and rejected.reason.startswith("body is not valid JSON")


def _status_before_body(url: str, body: bytes, secret: str, delivery: str) -> int:
    """The status the intake answers to a signed head announcing ``body``, none of it sent.

    An over-limit body is refused from its Content-Length, before a byte is read. A client
    that kept uploading (httpx writes the whole body before it reads) races the intake's
    close: the kernel resets a socket closed with unread bytes, and the 413 can be lost
    with it. So the head goes alone, as a client using ``Expect: 100-continue`` would send it.
    """
    import socket

    from bot.events.webhooks import signature_for

    target = httpx.URL(url)
    head = [
        f"POST {target.raw_path.decode()} HTTP/1.1",
        f"Host: {target.host}",
        "Content-Type: application/json",
        "X-GitHub-Event: pull_request",
        f"X-GitHub-Delivery: {delivery}",
        f"X-Hub-Signature-256: {signature_for(body, secret)}",
        f"Content-Length: {len(body)}",
    ]
    with socket.create_connection((target.host, target.port), timeout=30) as sock:
        sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
        answer = b""
        while b"\r\n" not in answer and (data := sock.recv(4096)):
            answer += data
    return int(answer.split(b" ")[1])


def test_repeated_delivery_is_processed_once(stack):
    number = _open_pr(stack)
    payload = stack.github.pull_request_event(REPO, number, "opened")
    assert stack.deliver("pull_request", payload, guid="same-guid").status_code == 202
    again = stack.deliver("pull_request", payload, guid="same-guid")
    assert again.status_code == 200 and again.json()["status"] == "duplicate"
    assert deliveries.count_deliveries(stack.service.engine) == 1


def test_a_raising_check_becomes_an_error_section(stack, monkeypatch):
    import bot.checks.changed_files as changed_files

    def explode(*args, **kwargs):
        raise RuntimeError("area table exploded")

    monkeypatch.setattr(changed_files, "group_by_area", explode)
    number = _open_pr(stack)
    stack.deliver("pull_request", stack.github.pull_request_event(REPO, number, "opened"))
    body = wait_for(lambda: _bot_comments(stack, number), what="report")[0]["body"]
    assert "area table exploded" in body
    assert "💥" in body


def test_health_ready_and_metrics(stack):
    assert stack.http.get(f"{stack.server.url}/healthz").status_code == 200
    assert stack.http.get(f"{stack.server.url}/readyz").status_code == 200
    stack.deliver("watch", {"action": "started"})
    metrics = stack.http.get(f"{stack.server.url}/metrics").text
    # Events outside the known set share one label.
    assert 'prbot_deliveries_total{event="other",outcome="ignored"}' in metrics
    assert "watch" not in metrics
    assert "prbot_queue_jobs" in metrics

    _reported_pr(stack)  # a report published: GitHub calls and job latency are counted
    metrics = stack.http.get(f"{stack.server.url}/metrics").text
    assert 'prbot_github_calls_total{endpoint="/repos/{repo}/check-runs",method="POST"' in metrics
    assert 'prbot_job_latency_seconds_count{kind="pipeline",outcome="done"}' in metrics


def test_readyz_says_503_when_the_database_is_unreachable(tmp_path):
    import httpx

    from bot.intake.server import create_app
    from bot.runtime.settings import Settings
    from bot.service import ThreadedServer
    from bot.store import db

    engine = db.make_engine("postgresql://postgres@127.0.0.1:9/nothing")  # nothing listens
    with ThreadedServer(create_app(Settings(webhook_secrets=("s",)), engine)) as server:
        assert httpx.get(f"{server.url}/healthz").status_code == 200
        assert httpx.get(f"{server.url}/readyz").status_code == 503


def test_repository_rules_decide_the_command_policy(bare_stack):
    gh = bare_stack.github
    policy = "commands:\n  recheck:\n    allow: [admin]\n"
    gh.create_repo(
        REPO,
        installation_id=INSTALLATION_ID,
        files={"a.py": "x = 1\n", ".github/prbot.yml": policy},
    )
    number, _ = _reported_pr(bare_stack)
    comment = gh.add_user_comment(REPO, number, "alice", "/recheck")  # the author
    bare_stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, comment))
    wait_for(bare_stack.idle, what="idle queue")
    assert gh.reactions(REPO, comment["id"]) == []
    replies = [
        c
        for c in gh.comments(REPO, number)
        if c["user"]["type"] == "Bot" and MARKER not in c["body"]
    ]
    assert len(replies) == 1


def test_invalid_repository_rules_are_a_finding_not_a_crash(bare_stack):
    broken = "checks:\n  changed_files:\n    areas: 12\n"
    bare_stack.github.create_repo(
        REPO,
        installation_id=INSTALLATION_ID,
        files={"a.py": "x = 1\n", ".github/prbot.yml": broken},
    )
    _, body = _reported_pr(bare_stack)
    assert ".github/prbot.yml:3" in body and "checks.changed\\_files.areas" in body
    assert "Changed files" in body  # the checks still ran, on the defaults


def test_whole_path_on_each_database(tmp_path, database_url):
    # The same webhook path on SQLite and on PostgreSQL (queue leases, effects, the
    # per-PR publish lock), so replicas on Postgres behave like the embedded default.
    with LocalStack(tmp_path / "stack", database_url=database_url) as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        number = _open_pr(stack)
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        wait_for(lambda: _bot_comments(stack, number), what="first report")
        new_head = gh.push(REPO, number, {"b.py": "y = 1\n"}, "more")
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "synchronize"))
        wait_for(lambda: _comment_for_head(stack, number, new_head), what="second report")
        wait_for(stack.idle, what="idle queue")
        assert len(_bot_comments(stack, number)) == 1
        assert len(gh.check_runs(REPO, new_head)) == 1


def test_deleted_report_comment_is_posted_anew(stack):
    number = _open_pr(stack)
    gh = stack.github
    stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
    first = wait_for(lambda: _bot_comments(stack, number), what="first report")[0]
    token = gh.create_installation_token(INSTALLATION_ID)
    deleted = stack.http.delete(
        f"{gh.url}/repos/{REPO}/issues/comments/{first['id']}",
        headers={"Authorization": f"token {token}"},
    )
    assert deleted.status_code == 204
    new_head = gh.push(REPO, number, {"b.py": "y = 1\n"}, "more")
    stack.deliver("pull_request", gh.pull_request_event(REPO, number, "synchronize"))
    comments = wait_for(lambda: _comment_for_head(stack, number, new_head), what="new report")
    assert len(comments) == 1 and comments[0]["id"] != first["id"]


def test_installation_events_are_recorded(stack):
    from bot.store import state

    payload = stack.github.installation_event(INSTALLATION_ID, "created")
    assert stack.deliver("installation", payload).status_code == 202
    installation = wait_for(
        lambda: state.get_installation(stack.service.engine, INSTALLATION_ID),
        what="installation row",
    )
    assert (installation.account, installation.repositories) == ("acme", [REPO])
    assert not installation.deleted
    # Each repository of the new installation gets its open PRs listed into the index.
    reconciles = wait_for(
        lambda: [j for j in Queue(stack.service.engine).jobs(limit=100) if j.kind == "reconcile"],
        what="a reconcile job",
    )
    # (Once run, a reconcile queues its own next round, with the same payload.)
    expected = {"repo": REPO, "installation_id": INSTALLATION_ID}
    assert all(j.payload == expected for j in reconciles), [j.payload for j in reconciles]
    wait_for(stack.idle, what="idle queue")


def test_reconcile_finds_prs_opened_before_install_and_warm_pushes_list_nothing(stack):
    gh = stack.github
    # A PR opened while prbot was not watching: no event ever reached the index.
    gh.commit(REPO, "older", {"widgets/core.py": "x = 2  # faster core\n"}, "speed up core")
    older = gh.open_pull_request(
        REPO,
        head_branch="older",
        title="Speed up the core loop",
        body="Makes core faster.",
        author="bob",
    )["number"]
    number = _open_pr(stack, title="Speed up core")
    stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
    body = wait_for(lambda: _bot_comments(stack, number), what="report")[0]["body"]
    wait_for(stack.idle, what="idle queue")
    assert f"**#{older}**" in body  # listed under Duplicate work, found by the reconcile
    assert gh.count_calls("GET", f"/repos/{REPO}/pulls") >= 1

    gh.reset_calls()
    new_head = gh.push(REPO, number, {"widgets/more.py": "z = 1\n"}, "more")
    stack.deliver("pull_request", gh.pull_request_event(REPO, number, "synchronize"))
    wait_for(lambda: _comment_for_head(stack, number, new_head), what="second report")
    wait_for(stack.idle, what="idle queue")
    listings = [c for c in gh.calls if c.path == f"/repos/{REPO}/pulls" or c.path == "/graphql"]
    assert listings == []


def test_dry_run_stores_the_report_and_writes_nothing_to_github(tmp_path):
    from bot.store import state

    with LocalStack(tmp_path / "stack", dry_run=True) as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        number = _open_pr(stack)
        stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        stored = wait_for(
            lambda: state.latest_report(stack.service.engine, REPO, number), what="stored report"
        )
        wait_for(stack.idle, what="idle queue")
        assert stored["markdown"].startswith(MARKER)
        assert gh.comments(REPO, number) == [] and gh.check_runs(REPO) == []
        writes = [
            c
            for c in gh.calls
            if c.method in ("POST", "PATCH", "PUT", "DELETE")
            and "/access_tokens" not in c.path
            and ".git/" not in c.path
            and c.path != "/graphql"
        ]
        assert writes == []


def _replies(stack, number):
    return [
        c["body"]
        for c in stack.github.comments(REPO, number)
        if c["user"]["type"] == "Bot" and MARKER not in c["body"]
    ]


def test_help_and_near_misses_get_one_reply_per_comment(stack):
    number, _ = _reported_pr(stack)
    stack.github.set_permission(REPO, "mallory", "read")
    comment = stack.github.add_user_comment(REPO, number, "mallory", "/prbot help\n\n/rechek")
    event = stack.github.issue_comment_event(REPO, number, comment)
    for guid in ("first", "redelivered"):  # GitHub's redelivery has a new GUID
        stack.deliver("issue_comment", event, guid=f"help-{guid}")
        wait_for(stack.idle, what="idle queue")
    [reply] = _replies(stack, number)
    assert reply.startswith("@mallory ")
    assert "`/rechek` is not a command here; did you mean `/recheck`?" in reply
    # A reader may not re-run the checks, so help lists only what mallory may use.
    assert "`/prbot help`" in reply and "- `/recheck`" not in reply
    # Another bot's command is not ours to answer; nothing else was queued.
    other = stack.github.add_user_comment(REPO, number, "alice", "/assign @alice")
    stack.deliver("issue_comment", stack.github.issue_comment_event(REPO, number, other))
    wait_for(stack.idle, what="idle queue")
    assert len(_replies(stack, number)) == 1


def test_a_repository_keeps_its_own_command_spelling(bare_stack):
    gh = bare_stack.github
    policy = "commands:\n  recheck:\n    aliases: [rerun report, rerun]\n"
    gh.create_repo(
        REPO,
        installation_id=INSTALLATION_ID,
        files={"a.py": "x = 1\n", ".github/prbot.yml": policy},
    )
    number, _ = _reported_pr(bare_stack)
    comment = gh.add_user_comment(REPO, number, "alice", "/rerun report flaky runner")  # the author
    bare_stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, comment))
    wait_for(lambda: "rocket" in gh.reactions(REPO, comment["id"]), what="the re-run")
    typo = gh.add_user_comment(REPO, number, "alice", "/prbot frobnicate")
    bare_stack.deliver("issue_comment", gh.issue_comment_event(REPO, number, typo))
    wait_for(bare_stack.idle, what="idle queue")
    [reply] = _replies(bare_stack, number)
    assert "`/prbot frobnicate` is not a command." in reply
    assert "- `/recheck`, `/rerun report`, `/rerun`:" in reply


def test_a_pr_that_breaks_the_rule_file_is_told_before_merge(stack):
    gh = stack.github
    gh.commit(
        REPO, "feature", {".github/prbot.yml": "checks:\n  changed_files:\n    areas: 12\n"}, "x"
    )
    number = gh.open_pull_request(REPO, head_branch="feature", title="rules", author="alice")[
        "number"
    ]
    stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
    body = wait_for(lambda: _bot_comments(stack, number), what="the report")[0]["body"]
    assert ".github/prbot.yml:3: checks.changed\\_files.areas" in body
    assert "as changed by this PR is invalid" in body
    wait_for(stack.idle, what="idle queue")
    [run] = gh.check_runs(
        REPO, gh.pull_request_event(REPO, number, "opened")["pull_request"]["head"]["sha"]
    )
    assert run["conclusion"] == "failure"
    [annotation] = gh.check_run_annotations(REPO, run["id"])
    assert annotation["path"] == ".github/prbot.yml" and annotation["start_line"] == 3
