"""Tiny wheels in a local find-links directory, so uv can resolve offline.

Tests and benchmarks describe packages (name, version, Requires-Dist with markers) and get
a directory of real, minimal wheels: ``METADATA``, ``WHEEL`` and ``RECORD`` in a zip.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Iterable
from pathlib import Path


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def write_wheel(
    directory: Path,
    name: str,
    version: str,
    requires: Iterable[str] = (),
    tag: str = "py3-none-any",
) -> Path:
    """Write ``name-version-tag.whl`` into ``directory`` and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_name = name.replace("-", "_")
    dist_info = f"{dist_name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {requirement}\n" for requirement in requires)
    wheel = f"Wheel-Version: 1.0\nGenerator: prbot-tests\nRoot-Is-Purelib: true\nTag: {tag}\n"
    files = {
        f"{dist_name}/__init__.py": b"",
        f"{dist_info}/METADATA": metadata.encode(),
        f"{dist_info}/WHEEL": wheel.encode(),
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    target = directory / f"{dist_name}-{version}-{tag}.whl"
    with zipfile.ZipFile(target, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return target


def write_index(directory: Path, packages: dict[str, dict[str, list[str]]]) -> Path:
    """``{name: {version: [requires...]}}`` as wheels in ``directory``."""
    for name, versions in packages.items():
        for version, requires in versions.items():
            write_wheel(directory, name, version, requires)
    return directory
