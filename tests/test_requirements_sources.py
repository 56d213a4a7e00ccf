"""Where uv may fetch from: a PR's index options and URL lines, against a real uv and a real
HTTP server on 127.0.0.1 that must never be asked anything."""

import dataclasses
import http.server
import json
import threading

import pytest

from bot.checks.base import CheckContext, MemoryCache
from bot.checks.requirements import run
from bot.core.snapshot import snapshot_from_checkout
from bot.local.sandbox import SandboxRunner
from bot.report import rules as rules_module
from bot.report.render import Report, render_markdown
from bot.requirements.localwheels import write_index
from bot.requirements.parser import OptionLine
from bot.requirements.resolve import UvResolver, failure_cause, scrub_paths, uv_binary
from bot.requirements.sources import SourcePolicy, refused_location


@pytest.mark.parametrize(
    "url",
    [
        "http://pypi.example.org/simple",
        "file:///etc",
        "file:/etc/passwd",
        "/etc",
        "./wheels",
        "https://127.0.0.1/simple",
        "https://127.1/simple",
        "https://2130706433/simple",
        "https://0x7f.0.0.1/simple",
        "https://0177.0.0.1/simple",
        "https://localhost/simple",
        "https://LOCALHOST./simple",
        "https://pkgs.localhost/simple",
        "https://[::1]/simple",
        "https://[::ffff:127.0.0.1]/simple",
        "https://169.254.169.254/latest/meta-data",
        "https://10.0.0.5/simple",
        "https://192.168.1.1/simple",
        "https://172.16.0.1/simple",
        "https://100.64.0.1/simple",
        "https://0.0.0.0/simple",
        "https://user:pw@127.0.0.1:8443/simple",
        "https://pypi.org\\@127.0.0.1/simple",
        "https://127.0.0.1\\@pypi.org/simple",
        "https://%31%32%37.0.0.1/simple",
        "https://１２７.0.0.1/simple",
        "https://${HOST}/simple",
        "git+ssh://git@github.com/org/x.git",
        "git+https://127.0.0.1/org/x.git",
        "ftp://mirror.example.org/",
        "https:///simple",
    ],
)
def test_internal_and_non_https_locations_are_refused(url):
    assert refused_location(url) is not None


@pytest.mark.parametrize(
    "url",
    [
        "https://download.pytorch.org/whl/cu130",
        "https://pypi.org/simple",
        "https://user@wheels.vllm.ai/nightly",
        "git+https://github.com/org/fast.git@0.2.2",
        "https://8.8.8.8/simple",
    ],
)
def test_public_https_locations_pass(url):
    assert refused_location(url) is None


def test_untrusted_author_keeps_only_the_base_revisions_index_options():
    at_base = OptionLine("cpu.txt", 1, "extra-index-url", "https://a.org/", "--extra-index-url A")
    added = OptionLine("cpu.txt", 2, "extra-index-url", "https://b.org/", "--extra-index-url B")
    policy = SourcePolicy.for_author(False, [at_base], [])
    assert policy.check_option(at_base) is None
    ignored = policy.check_option(added)
    assert ignored is not None and "come from the rules" in ignored.reason
    assert (ignored.file, ignored.line) == ("cpu.txt", 2)
    assert SourcePolicy.for_author(True, [], []).check_option(added) is None
    trusted_host = OptionLine("cpu.txt", 3, "trusted-host", "a.org", "--trusted-host a.org")
    assert SourcePolicy(trusted=True).check_option(trusted_host) is not None


def test_uv_error_text_keeps_no_local_path():
    stderr = (
        "error: Failed to read `/tmp/prbot-work/uv-runs/ab12/requirements.in`\n"
        "  cause: failed to read from file /etc/passwd/index.html: Not a directory (os error 20)\n"
        "  cause: see file:///etc/passwd and https://pypi.org/simple/passwd/\n"
    )
    cause = failure_cause(stderr, limit=3)
    assert "/etc" not in cause and "/tmp" not in cause and "file:" not in cause
    assert "https://pypi.org/simple/passwd/" in cause
    assert scrub_paths("at ~/.netrc or ../../etc/shadow") == "at <local path> or <local path>"


class _Recorder(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def _serve():
    """An HTTP server on 127.0.0.1 recording every request it gets (it answers 404)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def listener():
    """The service next to prbot that a PR names."""
    yield from _serve()


@pytest.fixture
def rules_index():
    """The index the rules name."""
    yield from _serve()


def _url(server, path=""):
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


@pytest.fixture
def wheels(tmp_path):
    return write_index(tmp_path / "wheels", {"alpha": {"1.0": []}})


def _rules(tmp_path, wheels, rules_index):
    # No --no-index: uv would then honour no index at all, and the test would prove nothing.
    # The rules' own index is a second local server: an operator's choice, always applied.
    path = tmp_path / "rules.yaml"
    path.write_text(
        f"""
version: 1
checks:
  requirements:
    uv_options: [--index-url, "{_url(rules_index, "/simple/")}", --find-links, "{wheels}"]
    platforms:
      cuda: {{entries: [requirements/cuda.txt]}}
"""
    )
    return rules_module.load_file(path).checks.requirements


def _check(tmp_path, make_repo, head_text, trusted, ruleset):
    repo = make_repo()
    base = repo.commit({"requirements/cuda.txt": "alpha\n"})
    head = repo.commit({"requirements/cuda.txt": head_text})
    snapshot = snapshot_from_checkout(repo.path, base, head, trusted=True)
    snapshot = dataclasses.replace(snapshot, trusted=trusted)
    work = tmp_path / f"work-{trusted}"
    work.mkdir(exist_ok=True)
    runner = SandboxRunner(timeout=60)
    context = CheckContext(work_dir=work, runner=runner, cache=MemoryCache())
    section = run(snapshot, ruleset, context)
    report = Report("o/r", 1, snapshot.head_sha, snapshot.base_sha, [section])
    return section, render_markdown(report) + json.dumps(report.to_json()), runner


def test_the_listener_would_see_uv_if_it_were_named(tmp_path, listener, wheels):
    # The control: the same line given to uv directly does reach the server.
    run_dir = tmp_path / "direct"
    run_dir.mkdir()
    (run_dir / "r.in").write_text(f"--extra-index-url {_url(listener, '/extra/')}\nsecretpkg\n")
    env = UvResolver(None, None, tmp_path).environment()
    argv = [uv_binary(), "pip", "compile", "r.in", "--find-links", str(wheels)]
    SandboxRunner(timeout=60).run(argv, cwd=run_dir, env=env, timeout=60)
    assert listener.requests, "the control run should have asked the listener"


@pytest.mark.parametrize("trusted", [False, True])
def test_a_prs_index_on_loopback_gets_no_request(
    tmp_path, make_repo, listener, rules_index, wheels, trusted
):
    ruleset = _rules(tmp_path, wheels, rules_index)
    head_text = (
        f"--extra-index-url {_url(listener, '/extra/')}\n"
        f"--index-url https://127.0.0.1:{listener.server_address[1]}/simple/\n"
        f"--find-links {_url(listener, '/links/')}\n"
        f"--trusted-host 127.0.0.1\n"
        f"alpha\nsecretpkg\n"
        f"tokenpkg @ {_url(listener, '/tokenpkg-1.0-py3-none-any.whl')}\n"
    )
    section, text, runner = _check(tmp_path, make_repo, head_text, trusted, ruleset)
    assert runner.invocations >= 1  # uv really ran
    assert listener.requests == []
    assert rules_index.requests  # the rules' index was asked instead
    (finding,) = section.findings
    ignored = {(item["file"], item["line"]) for item in finding["ignored"]}
    assert ignored == {("requirements/cuda.txt", n) for n in (1, 2, 3, 4, 7)}
    reasons = " ".join(item["reason"] for item in finding["ignored"])
    if trusted:
        assert "is not https" in reasons and "127.0.0.1 is not a public address" in reasons
    else:
        assert "index options come from the rules" in reasons
    assert "not passed to uv: `--trusted-host 127.0.0.1` at" in text


def test_index_url_file_etc_puts_no_server_path_in_the_report(
    tmp_path, make_repo, rules_index, wheels
):
    ruleset = _rules(tmp_path, wheels, rules_index)
    for trusted in (False, True):
        section, text, runner = _check(
            tmp_path, make_repo, "--index-url file:///etc\npasswd\n", trusted, ruleset
        )
        assert runner.invocations >= 1  # head (and base, to tell whose failure it is)
        (finding,) = section.findings
        assert finding["resolution"] == "failed"  # passwd is not a package on the rules' index
        assert "/etc/passwd" not in text
        assert str(tmp_path) not in text
