"""machine.csv: nvidia-smi's answer read as GPUs, and every other file refused in one line."""

import pytest

from bot.jobs.gpu_identity import QUERY, MachineError, parse_machine_csv, same_gpus
from bot.local.bench_job import GPU_QUERY
from tests.bench_helpers import HEADER, UUID_A, UUID_B, machine_csv


def test_the_h200_answer_is_read() -> None:
    (gpu,) = parse_machine_csv(machine_csv(UUID_A, sm=1980, temperature=41).encode())
    assert (gpu.name, gpu.uuid, gpu.driver) == ("NVIDIA H200", UUID_A, "580.159.04")
    assert (gpu.sm_mhz, gpu.mem_mhz, gpu.temperature_c) == (1980.0, 3201.0, 41.0)
    assert gpu.describe() == "NVIDIA H200 GPU-3f81f7ad"


def test_values_the_card_does_not_give_are_none() -> None:
    text = HEADER + f"NVIDIA H200, {UUID_A}, 580.159.04, [N/A], [Not Supported], [N/A]\n"
    (gpu,) = parse_machine_csv(text)
    assert gpu.sm_mhz is None and gpu.temperature_c is None


def test_the_uuid_tells_two_cards_of_one_model_apart() -> None:
    a, b = parse_machine_csv(machine_csv(UUID_A)), parse_machine_csv(machine_csv(UUID_B))
    assert not same_gpus(a, b)
    assert same_gpus(a, parse_machine_csv(machine_csv(UUID_A, sm=345, temperature=30)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("garbage\n", "the header is not nvidia-smi's answer"),
        (HEADER, "a header and no GPU"),
        (HEADER + "NVIDIA H200, GPU-1, 580\n", "line 2 has 3 fields, not 6"),
        (HEADER + "NVIDIA H200, 0, 580, 1 MHz, 2 MHz, 3\n", "'0' is not a GPU uuid"),
        ("x" * 70_000, "over 64 kB"),
        (b"\xff\xfe", "not UTF-8 text"),
    ],
)
def test_a_file_that_is_not_the_answer_is_one_line(text, message) -> None:
    with pytest.raises(MachineError) as raised:
        parse_machine_csv(text, "head/machine.csv")
    assert str(raised.value).startswith("head/machine.csv: ") and message in str(raised.value)


def test_the_job_asks_what_the_reader_reads() -> None:
    assert GPU_QUERY == QUERY
