"""The environment every child process gets: an allowlist, never prbot's own environment.

prbot's environment holds the webhook secret, the App's key path and the database URL (with
its password). A git process, uv or a repository's generator needs none of them, and any
of them can run code a PR chose (a hook, an alias, a build backend), so children start from
the few variables listed here plus what prbot itself sets for that call.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# What a tool legitimately needs from the machine. TLS trust and proxy settings are the
# machine's, not secrets: without them git and uv cannot reach a host behind a corporate
# proxy or a private CA.
PASSED_THROUGH = frozenset(
    {
        "PATH",
        "HOME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "SYSTEMROOT",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
    }
)
# Locale categories (LC_ALL, LC_CTYPE, ...) pass by prefix.
PASSED_THROUGH_PREFIXES = ("LC_",)


def allowlisted_environment(
    extra: Mapping[str, str] | None = None, *, source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The allowlisted part of ``source`` (default ``os.environ``), then ``extra`` on top.

    ``extra`` is what prbot sets for this one call (``GIT_*`` config, a cache directory);
    nothing else from prbot's environment reaches the child.
    """
    environ = os.environ if source is None else source
    env = {
        key: value
        for key, value in environ.items()
        if key in PASSED_THROUGH or key.startswith(PASSED_THROUGH_PREFIXES)
    }
    if extra:
        env.update(extra)
    return env
