"""Where uv may fetch from: index options and URL requirements a PR's files name.

A requirement file can point uv anywhere: ``--index-url``, ``--extra-index-url``,
``--find-links``, ``--trusted-host``, ``pkg @ https://…``, ``file:`` and path lines. Left as
they are, a PR makes prbot's host send requests to services next to it (``127.0.0.1``, cloud
metadata at ``169.254.169.254``) or read its disk (``--index-url file:///etc``). So:

- for everyone, a location uv is told to fetch from must be ``https`` to a public host: never
  ``file:``, never a loopback, link-local, private or reserved *literal* address, never
  ``localhost``. Host names are not resolved here (uv resolves them again later, so a check
  now proves nothing against DNS rebinding); the deployment's egress policy covers names.
- for an untrusted author, only index options and URL lines that the base revision already
  had in the same file are kept; whatever the PR added is ignored, and the report names it
  by file and line. Index options the rules give (``uv_options``) are the operator's and
  always apply.
"""

from __future__ import annotations

import ipaddress
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from bot.requirements.parser import INDEX_OPTIONS, OptionLine, RequirementLine

# Host names that always mean this machine, whatever DNS says.
_LOCAL_NAMES = re.compile(r"^(localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$")
# What a host may look like: letters, digits, dots and dashes (IDN in its punycode form).
# Anything else (percent escapes, backslashes, full-width digits) is parsed differently by
# uv's WHATWG URL parser than by Python's, and is refused rather than guessed.
_PLAIN_HOST = re.compile(r"^[a-z0-9.-]+$")
_VCS_PREFIX = re.compile(r"^(git|hg|svn|bzr)\+", re.I)


@dataclass(frozen=True)
class Ignored:
    """An index option or URL line that did not reach uv, and why."""

    file: str
    line: int
    text: str
    reason: str

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "line": self.line, "text": self.text, "reason": self.reason}

    def note(self) -> str:
        return f"ignored `{self.text}` ({self.file}:{self.line}): {self.reason}"


def _whatwg_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address uv's URL parser reads in ``host`` (``2130706433``, ``0x7f.1``…)."""
    parts = host.rstrip(".").split(".")
    if not parts or not parts[-1] or not re.fullmatch(r"(0x[0-9a-f]*|[0-9]+)", parts[-1]):
        return None
    numbers = []
    for part in parts:
        try:
            if part.startswith("0x"):
                numbers.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                numbers.append(int(part, 8))
            else:
                numbers.append(int(part, 10))
        except ValueError:
            return None
    if len(numbers) > 4 or any(n > 255 for n in numbers[:-1]):
        return None
    value = 0
    for number in numbers[:-1]:
        value = value * 256 + number
    value = value * 256 ** (5 - len(numbers)) + numbers[-1]
    try:
        return ipaddress.IPv4Address(value) if value < 2**32 else None
    except ipaddress.AddressValueError:
        return None


def _internal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (
        address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_reserved
        or address.is_multicast
        or address.is_unspecified
        or not address.is_global
    )


def refused_location(url: str) -> str | None:
    """Why uv must not fetch ``url``, or None when it is an ``https`` URL to a public host."""
    if any(c in url for c in "\\\t\r\n ") or "${" in url:
        return "URL with characters uv reads differently (backslash, space or ${…})"
    target = _VCS_PREFIX.sub("", url)
    try:
        parts = urlsplit(target)
        hostname = parts.hostname
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        return "malformed URL"
    scheme = parts.scheme.lower()
    if scheme == "file" or not scheme:
        return "a local path or file: URL; indexes must be https"
    if scheme != "https":
        return f"{scheme}: is not https"
    netloc_host = parts.netloc.rsplit("@", 1)[-1]
    if not hostname:
        return "no host"
    if netloc_host.startswith("["):
        try:
            address: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.IPv6Address(
                hostname.split("%", 1)[0]
            )
        except ipaddress.AddressValueError:
            return "malformed IPv6 host"
        return f"{hostname} is not a public address" if _internal(address) else None
    if not _PLAIN_HOST.match(hostname):
        return f"host {hostname!r} is not a plain DNS name"
    name = hostname.rstrip(".")
    if _LOCAL_NAMES.match(name) or name.endswith(".localhost"):
        return f"{name} is this machine"
    ipv4 = _whatwg_ipv4(name)
    if ipv4 is not None and _internal(ipv4):
        return f"{name} is not a public address ({ipv4})"
    return None


def option_text(option: OptionLine) -> str:
    """One option as one line (``--extra-index-url URL``), whatever else shared its line."""
    if not option.value:
        return f"--{option.option}"
    return f"--{option.option} {shlex.quote(option.value)}"


def option_location(option: OptionLine) -> str | None:
    """Why an index option may not reach uv (for everyone), or None."""
    if option.option in ("index-url", "extra-index-url", "find-links"):
        return refused_location(option.value or "")
    if option.option == "trusted-host":
        # uv's --trusted-host turns off TLS checks for that host: never from a file.
        return "--trusted-host turns off certificate checks; only rules may set it"
    return None


def requirement_location(line: RequirementLine) -> str | None:
    """Why a URL requirement may not reach uv (for everyone), or None for a plain one."""
    if line.url is None:
        return None
    return refused_location(line.url)


@dataclass
class SourcePolicy:
    """What the PR's files may tell uv about where packages come from."""

    trusted: bool
    # (file, text) of index options and URL lines at base: not the PR's doing.
    base_lines: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def for_author(
        cls, trusted: bool, base_options: Iterable[OptionLine], base_urls: Iterable[RequirementLine]
    ) -> SourcePolicy:
        lines = {(o.file, o.text) for o in base_options}
        lines |= {(r.file, r.text) for r in base_urls if r.url is not None}
        return cls(trusted, frozenset(lines))

    def _from_pr(self, file: str, text: str) -> bool:
        return not self.trusted and (file, text) not in self.base_lines

    def check_option(self, option: OptionLine) -> Ignored | None:
        """None when the option may go to uv, else what is ignored and why."""
        if option.option not in INDEX_OPTIONS:
            return None
        text = option_text(option)
        if self._from_pr(option.file, option.text):
            return Ignored(
                option.file,
                option.line,
                text,
                "index options come from the rules for authors without write access",
            )
        refused = option_location(option)
        return Ignored(option.file, option.line, text, refused) if refused else None

    def check_requirement(self, line: RequirementLine) -> Ignored | None:
        """None when the line may go to uv as it is, else what is ignored and why."""
        if line.url is None:
            return None
        if self._from_pr(line.file, line.text):
            return Ignored(
                line.file,
                line.line,
                line.text,
                "URL requirements from authors without write access are not fetched",
            )
        refused = requirement_location(line)
        return Ignored(line.file, line.line, line.text, refused) if refused else None
