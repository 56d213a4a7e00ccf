"""Which GPU ran a benchmark, from ``nvidia-smi --query-gpu=... --format=csv``.

The query is ``name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu``; nvidia-smi
answers with a header (``name, uuid, driver_version, clocks.current.sm [MHz], ...``) and one
line per GPU (``NVIDIA H200, GPU-5f0c..., 580.159.04, 1980 MHz, 3201 MHz, 34``). A value it
cannot read is ``[N/A]`` or ``[Not Supported]``. The uuid is what tells two GPUs apart: two
cards of one model on one host share the name and the driver.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

QUERY = "name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu"
MAX_CSV_BYTES = 64_000
MAX_GPUS = 64
_UUID = re.compile(r"^(GPU|MIG)-[0-9A-Za-z-]{8,80}$")
_NUMBER = re.compile(r"^(\d+(?:\.\d+)?)(?:\s*(?:MHz|C))?$")


class MachineError(ValueError):
    """A machine.csv that cannot be read; ``str()`` says why in one line."""


@dataclass(frozen=True)
class Gpu:
    name: str
    uuid: str
    driver: str
    sm_mhz: float | None
    mem_mhz: float | None
    temperature_c: float | None

    def describe(self) -> str:
        return f"{self.name} {self.uuid[:12]}"

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "uuid": self.uuid,
            "driver": self.driver,
            "sm_mhz": self.sm_mhz,
            "mem_mhz": self.mem_mhz,
            "temperature_c": self.temperature_c,
        }


def _number(text: str) -> float | None:
    match = _NUMBER.match(text.strip())
    return float(match.group(1)) if match else None


def parse_machine_csv(data: bytes | str, source: str = "machine.csv") -> list[Gpu]:
    """The GPUs a machine.csv lists, in its order; MachineError when it is not that output."""
    if len(data) > MAX_CSV_BYTES:
        raise MachineError(f"{source}: over {MAX_CSV_BYTES // 1000} kB")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise MachineError(f"{source}: not UTF-8 text") from None
    try:
        rows = [row for row in csv.reader(io.StringIO(data)) if any(c.strip() for c in row)]
    except csv.Error as exc:
        raise MachineError(f"{source}: not CSV ({exc})") from None
    if not rows:
        raise MachineError(f"{source}: empty")
    header = [cell.strip().lower() for cell in rows[0]]
    if len(header) != 6 or header[0] != "name" or header[1] != "uuid":
        raise MachineError(
            f"{source}: the header is not nvidia-smi's answer to --query-gpu={QUERY}"
        )
    gpus = []
    for number, row in enumerate(rows[1 : MAX_GPUS + 1], start=2):
        cells = [cell.strip() for cell in row]
        if len(cells) != 6:
            raise MachineError(f"{source}: line {number} has {len(cells)} fields, not 6")
        if not _UUID.match(cells[1]):
            raise MachineError(f"{source}: line {number}: {cells[1][:40]!r} is not a GPU uuid")
        gpus.append(
            Gpu(
                cells[0][:80],
                cells[1],
                cells[2][:40],
                _number(cells[3]),
                _number(cells[4]),
                _number(cells[5]),
            )
        )
    if not gpus:
        raise MachineError(f"{source}: a header and no GPU")
    return gpus


def same_gpus(base: list[Gpu], head: list[Gpu]) -> bool:
    return {g.uuid for g in base} == {g.uuid for g in head}
