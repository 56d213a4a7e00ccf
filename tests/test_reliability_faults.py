"""GitHub failing on 20% of calls (5xx before and after the effect, secondary rate limits and
429s with Retry-After, answers later than the client waits, connections dropped halfway
through the answer): every PR still ends with exactly one current report comment and one
check run, and no call is retried beyond its bound."""

from __future__ import annotations

from collections import Counter

from bot.cli.demo_stack import INSTALLATION_ID, LocalStack, wait_for
from bot.report.render import MARKER
from bot.testing.chaos import FAULTS, SLOW

REPO = "acme/widgets"
PRS = 4
# PyGithub's retry (bot/github/app.py: total=5) per call, times the queue's attempts per job.
MAX_TRIES_PER_CALL = 6


def _retries() -> float:
    from bot.runtime.metrics import GITHUB_RETRIES

    return sum(
        s.value for m in GITHUB_RETRIES.collect() for s in m.samples if s.name.endswith("_total")
    )


def _reports(gh, number):
    return [
        c for c in gh.comments(REPO, number) if MARKER in c["body"] and c["user"]["type"] == "Bot"
    ]


def test_every_pr_ends_with_one_current_comment_under_20_percent_faults(tmp_path):
    # A 1 s client timeout, so the "slow" answers (2 s) time out as a hung GitHub would.
    with LocalStack(tmp_path / "stack", github_timeout=1) as stack:
        gh = stack.github
        gh.create_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
        numbers = []
        for index in range(PRS):
            gh.commit(REPO, f"b{index}", {f"m{index}.py": "y = 1\n"})
            pull = gh.open_pull_request(REPO, head_branch=f"b{index}", title=f"Add m{index}")
            numbers.append(pull["number"])
        retries_before = _retries()
        chaos = gh.chaos(0.2, seed=1, kinds=(*FAULTS, SLOW), slow_seconds=2)
        for number in numbers:
            stack.deliver("pull_request", gh.pull_request_event(REPO, number, "opened"))
        heads = {n: gh.push(REPO, n, {f"m{n}.py": "y = 2\n"}) for n in numbers[:2]}
        for number in heads:
            stack.deliver("pull_request", gh.pull_request_event(REPO, number, "synchronize"))

        def current(number):
            comments = _reports(gh, number)
            head = heads.get(number) or gh.repos[REPO].pulls[number].head_sha
            return comments and f"prbot:head={head}" in comments[-1]["body"]

        wait_for(lambda: all(current(n) for n in numbers), timeout=240, what="current reports")
        wait_for(stack.idle, timeout=120, what="idle queue")
        gh.chaos(0, seed=0)
        assert sum(chaos.injected.values()) > 0
        for number in numbers:
            assert len(_reports(gh, number)) == 1, f"#{number}"
            head = gh.repos[REPO].pulls[number].head_sha
            assert len(gh.check_runs(REPO, head)) == 1
        # Retries stay within their bounds: no (method, path) asked more than the bound
        # allows per job attempt, however often GitHub failed it.
        tries = Counter((c.method, c.path) for c in gh.calls if not c.path.endswith(".git"))
        worst = max(tries.values())
        assert worst <= MAX_TRIES_PER_CALL * stack.settings.max_attempts * 2, tries.most_common(3)
        # PyGithub retried exactly the calls the policy says, and /metrics counted each.
        retryable = {"500", "502", "503", "403_secondary", "429"}
        expected = sum(
            1
            for kind, method, _ in chaos.calls
            # reads on 5xx and rate limits; writes on rate limits (Retry-After) only
            if (method == "GET" and kind in retryable) or kind in ("403_secondary", "429")
        )
        assert _retries() - retries_before == expected, chaos.calls


def test_a_read_is_retried_and_counted_a_write_is_left_to_the_job(github_server, tmp_path):
    import pytest
    from github import GithubException

    from bot.github.app import GitHubApp
    from bot.runtime.settings import Settings

    gh = github_server
    gh.add_installation(INSTALLATION_ID, "acme")
    gh.create_repo(REPO, installation_id=INSTALLATION_ID)
    gh.commit(REPO, "f", {"b.py": "1\n"})
    number = gh.open_pull_request(REPO, head_branch="f", title="T")["number"]
    key = tmp_path / "app.pem"
    key.write_text(gh.private_key_pem)
    settings = Settings(
        webhook_secrets=("s",),
        app_id=str(gh.app_id),
        private_key_path=key,
        github_api_url=gh.url,
        github_request_interval=0,
        github_write_interval=0,
    )
    client = GitHubApp(settings).installation(INSTALLATION_ID)
    before = _retries()
    gh.inject("GET", rf"/pulls/{number}$", status=502, times=2)
    assert client.get_pull(REPO, number).number == number
    assert _retries() - before == 2
    # A 502 after GitHub created the comment is not resent by PyGithub: one comment.
    gh.inject("POST", r"/issues/\d+/comments$", status=502, after_effect=True)
    with pytest.raises(GithubException):
        client.create_comment(REPO, number, "hello")
    assert len(gh.comments(REPO, number)) == 1
    assert _retries() - before == 2
    # A rate limit with Retry-After on a write: GitHub did nothing, so it is sent again.
    for status in (429, 403):
        gh.inject(
            "POST",
            r"/issues/\d+/comments$",
            status=status,
            message="You have exceeded a secondary rate limit.",
            headers={"Retry-After": "1"},
        )
        client.create_comment(REPO, number, f"after {status}")
    assert [c["body"] for c in gh.comments(REPO, number)][1:] == ["after 429", "after 403"]
    assert _retries() - before == 4
