import socket
import stat

import pytest

from bot.checks.base import MemoryCache
from bot.local.sandbox import SandboxRunner
from bot.requirements.localwheels import write_index
from bot.requirements.resolve import (
    CACHE_NAMESPACE,
    ResolutionRequest,
    UvResolver,
    failure_cause,
    network_cause,
    parse_pins,
)

PACKAGES = {
    "alpha": {"1.0": [], "2.0": []},
    "beta": {"1.0": ["alpha>=2; platform_machine == 'aarch64'"]},
    "gamma": {"3.0": ["alpha"]},
}


@pytest.fixture
def wheels(tmp_path):
    return write_index(tmp_path / "wheels", PACKAGES)


def offline(wheels):
    return ("--no-index", "--find-links", str(wheels))


def request(text, wheels, platform="x86_64-manylinux_2_28", constraints=""):
    return ResolutionRequest(text, constraints, "3.12", platform, offline(wheels))


def resolver(tmp_path, runner, cache=None, **kwargs):
    return UvResolver(runner, cache or MemoryCache(), tmp_path / "work", **kwargs)


def test_resolves_offline_per_platform_and_caches(tmp_path, wheels):
    runner, cache = SandboxRunner(timeout=60), MemoryCache()
    requests = [
        request("beta\nalpha<2\n", wheels, "x86_64-manylinux_2_28"),
        request("beta\nalpha<2\n", wheels, "aarch64-manylinux_2_28"),
        request("gamma\n", wheels, constraints="alpha==1.0\n"),
    ]
    x86, arm, gamma = resolver(tmp_path, runner, cache).resolve_all(requests)
    assert (x86.status, x86.pins) == ("ok", {"alpha": "1.0", "beta": "1.0"})
    assert arm.status == "failed"
    assert "alpha" in arm.detail and "unsatisfiable" in arm.detail
    assert gamma.pins == {"alpha": "1.0", "gamma": "3.0"}
    assert runner.invocations == 3

    again = resolver(tmp_path, runner, cache)
    results = again.resolve_all(requests)
    assert [r.status for r in results] == ["ok", "failed", "ok"]
    assert all(r.cached for r in results)
    assert runner.invocations == 3 and again.uv_runs == 0


def test_identical_requests_share_one_run(tmp_path, wheels):
    runner = SandboxRunner(timeout=60)
    same = request("alpha\n", wheels)
    results = resolver(tmp_path, runner).resolve_all([same, same])
    assert [r.pins for r in results] == [{"alpha": "2.0"}] * 2
    assert runner.invocations == 1


def test_missing_package_fails_with_uvs_cause(tmp_path, wheels):
    (result,) = resolver(tmp_path, SandboxRunner(timeout=60)).resolve_all(
        [request("delta\n", wheels)]
    )
    assert result.status == "failed"
    assert "delta" in result.detail and "\n" not in result.detail


def test_a_cached_failure_is_retried_once_it_is_old_and_a_success_is_kept(tmp_path, wheels):
    now = [1000.0]
    runner, cache = SandboxRunner(timeout=60), MemoryCache()
    missing = request("delta\n", wheels)
    fine = request("alpha\n", wheels)
    first = resolver(tmp_path, runner, cache, failure_ttl=600, clock=lambda: now[0])
    assert [r.status for r in first.resolve_all([missing, fine])] == ["failed", "ok"]
    assert runner.invocations == 2
    now[0] += 599  # within the TTL: both from the cache
    again = resolver(tmp_path, runner, cache, failure_ttl=600, clock=lambda: now[0])
    assert [r.cached for r in again.resolve_all([missing, fine])] == [True, True]
    assert runner.invocations == 2
    # Past it: "delta" may have been published meanwhile; only the failure is asked again.
    now[0] += 2
    later = resolver(tmp_path, runner, cache, failure_ttl=600, clock=lambda: now[0])
    failed, ok = later.resolve_all([missing, fine])
    assert (failed.status, failed.cached, ok.cached) == ("failed", False, True)
    assert runner.invocations == 3 and later.uv_runs == 1


def test_unreachable_index_is_skipped_and_not_cached(tmp_path):
    with socket.socket() as sock:  # a port nothing listens on: connection refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cache = MemoryCache()
    unreachable = ResolutionRequest(
        "alpha\n", "", "3.12", None, ("--index-url", f"http://127.0.0.1:{port}/simple")
    )
    (result,) = resolver(tmp_path, SandboxRunner(timeout=60), cache).resolve_all([unreachable])
    assert result.status == "skipped"
    # The host and the innermost cause, not the per-package URL: cells cut off from the same
    # index read the same line (and fold together in the comment).
    expected = f"index unreachable: 127.0.0.1:{port}: Connection refused (os error 111)"
    assert result.detail == expected
    assert cache._data == {}


# uv's stderr, as printed when an index or a git host cannot be reached.
DNS_FAILURE = """\
warning: A managed Python download is available for Python 3.12, but an error occurred.
  cause: Failed to download `https://github.com/astral-sh/python-build-standalone/x.tar.gz`
  cause: dns error
error: Failed to fetch: https://download.pytorch.org/whl/cu130/torch/
  cause: error sending request for url (https://download.pytorch.org/whl/cu130/torch/)
  cause: client error (Connect)
  cause: dns error
  cause: failed to lookup address information: Name or service not known
"""
GIT_FAILURE = """\
error: Failed to download and build `fast @ git+https://user@github.com/org/fast.git@0.2.2`
  cause: Git operation failed
  cause: failed to fetch branch or tag `0.2.2`
         --- stderr
         fatal: unable to access 'https://github.com/org/fast.git/': Could not resolve host
"""


def test_network_cause_names_the_host_and_the_innermost_cause():
    assert network_cause(DNS_FAILURE) == (
        "download.pytorch.org: failed to lookup address information: Name or service not known"
    )
    assert network_cause(GIT_FAILURE) == (
        "github.com: fatal: unable to access 'https://github.com/org/fast.git/': "
        "Could not resolve host"
    )


def test_timeout_is_skipped(tmp_path):
    fake_uv = tmp_path / "slow-uv"
    fake_uv.write_text("#!/bin/sh\nsleep 30\n")
    fake_uv.chmod(fake_uv.stat().st_mode | stat.S_IEXEC)
    slow = resolver(tmp_path, SandboxRunner(), timeout=0.5, uv=str(fake_uv))
    (result,) = slow.resolve_all([ResolutionRequest("alpha\n", "", "3.12", None)])
    assert (result.status, result.detail) == ("skipped", "uv timed out after 0.5s")


def test_no_runner_means_skipped(tmp_path):
    (result,) = resolver(tmp_path, None).resolve_all([ResolutionRequest("a\n", "", "3.12", None)])
    assert result.status == "skipped" and "runner" in result.detail


def test_cache_key_covers_options_and_uv_version(wheels):
    one = request("alpha\n", wheels)
    other = ResolutionRequest("alpha\n", "", "3.12", "x86_64-manylinux_2_28", ("--pre",))
    assert one.cache_key("0.13.9") != other.cache_key("0.13.9")
    assert one.cache_key("0.13.9") != one.cache_key("0.14.0")
    assert CACHE_NAMESPACE == "uv-resolution"


def test_failure_cause_and_pins_parsing():
    stderr = (
        "warning: The requested Python version 3.12 is not available\n"
        "error: No solution found when resolving dependencies\n"
        "  cause: Because you require a<1 and a>2, we can conclude that your requirements are"
        " unsatisfiable.\n"
    )
    assert failure_cause(stderr).startswith("Because you require a<1")
    assert parse_pins("alpha==2.0\n    # via x\nbeta[x]==1.0 ; sys_platform == 'linux'\n") == {
        "alpha": "2.0",
        "beta": "1.0",
    }


class BrokenCache:
    def get(self, namespace, key):
        raise RuntimeError("database is down")

    def put(self, namespace, key, value):
        raise RuntimeError("database is down")


def test_a_broken_cache_costs_uv_runs_not_the_result(tmp_path, wheels):
    runner = SandboxRunner(timeout=60)
    (result,) = resolver(tmp_path, runner, BrokenCache()).resolve_all([request("alpha\n", wheels)])
    assert result.status == "ok" and runner.invocations == 1


def test_missing_uv_binary_is_skipped(tmp_path):
    missing = resolver(tmp_path, SandboxRunner(), uv=str(tmp_path / "no-such-uv"))
    (result,) = missing.resolve_all([ResolutionRequest("alpha\n", "", "3.12", None)])
    assert result.status == "skipped" and result.detail.startswith("cannot run uv")
    assert str(tmp_path) not in result.detail  # no server path in a public report


def test_resolver_for_takes_runner_caches_and_limits_from_context_and_rules(tmp_path):
    from bot.core.sections import CheckContext
    from bot.requirements.config import RequirementsRules
    from bot.requirements.resolve import resolver_for

    runner, cache = SandboxRunner(), MemoryCache()
    rules = RequirementsRules(
        uv_timeout_seconds=7, uv_http_timeout_seconds=3, max_parallel=2, uv_failure_cache_seconds=9
    )
    context = CheckContext(
        work_dir=tmp_path, cache=cache, runner=runner, uv_cache_dir=tmp_path / "kept"
    )
    resolver = resolver_for(context, rules)
    assert (resolver.runner, resolver.cache, resolver.work_dir) == (runner, cache, tmp_path)
    assert (resolver.timeout, resolver.http_timeout, resolver.max_parallel) == (7, 3, 2)
    assert resolver.failure_ttl == 9
    assert resolver.environment()["UV_CACHE_DIR"] == str(tmp_path / "kept")
    assert resolver.environment()["UV_HTTP_TIMEOUT"] == "3"
    # Without a kept cache, uv's cache lives (and dies) with the run's work dir.
    scratch = resolver_for(CheckContext(work_dir=tmp_path), rules)
    assert scratch.environment()["UV_CACHE_DIR"] == str(tmp_path / "uv-cache")
