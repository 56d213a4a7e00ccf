"""Hardware a backend declares, read statically from supports_compute_capability."""

import pytest

from bot.jobs.hardware import Capability, backend_hardware

KNOWN = [Capability.parse(c) for c in ("8.0", "8.9", "9.0", "10.0", "10.3", "12.0", "12.1")]


def caps(source: str) -> set[str] | None:
    found, problems = backend_hardware(source, "backend.py", KNOWN)
    assert problems == []
    if not found:
        return None
    (one,) = found
    return {str(cap) for cap in one.capabilities}


def method(body: str, parameter: str = "capability") -> str:
    return (
        "class Backend(AttentionBackend):\n"
        "    @classmethod\n"
        f"    def supports_compute_capability(cls, {parameter}: DeviceCapability) -> bool:\n"
        f"        {body}\n"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("return capability.major == 10", {"10.0", "10.3"}),
        ("return capability.major in [9, 10]", {"9.0", "10.0", "10.3"}),
        ("return capability.major in (9, 10) and capability.minor == 0", {"9.0", "10.0"}),
        ("return (capability.major, capability.minor) in ((12, 0), (12, 1))", {"12.0", "12.1"}),
        ("return capability >= DeviceCapability(9, 0)", {"9.0", "10.0", "10.3", "12.0", "12.1"}),
        ("return capability.to_int() >= 90 and capability.major < 12", {"9.0", "10.0", "10.3"}),
        ("return not capability.major == 8", {"9.0", "10.0", "10.3", "12.0", "12.1"}),
        ("return 9 <= capability.major <= 10", {"9.0", "10.0", "10.3"}),
    ],
)
def test_a_single_returned_comparison_is_evaluated(body: str, expected: set[str]) -> None:
    assert caps(method(body)) == expected


def test_a_prefill_backend_with_an_optional_capability() -> None:
    body = "return device_capability is not None and device_capability.major == 10"
    assert caps(method(body, "device_capability")) == {"10.0", "10.3"}


@pytest.mark.parametrize(
    "body",
    [
        "return True",  # every GPU: narrows nothing
        "return capability >= DeviceCapability(8, 0)",  # every known GPU
        "return current_platform.is_rocm()",  # a call into the platform
        "return capability.major == MIN_MAJOR",  # a name we cannot see
        "return is_blackwell(capability)",
        'return capability.major == "10"',
    ],
)
def test_what_cannot_be_told_or_accepts_everything_narrows_nothing(body: str) -> None:
    assert caps(method(body)) is None


def test_an_if_chain_is_unknown_not_guessed() -> None:
    source = method("if capability.major == 10:\n            return True\n        return False")
    assert caps(source) is None


def test_the_finding_names_the_class_line_and_majors() -> None:
    source = "import x\n\n" + method("return capability.major == 10")
    (found,), _ = backend_hardware(source, "vllm/v1/attention/backends/mla/fast.py", KNOWN)
    assert found.class_name == "Backend" and found.line == 5
    assert found.describe() == "Backend runs only on compute capability 10.x"


def test_unparsable_and_deep_sources_are_problems() -> None:
    found, problems = backend_hardware("class (:\n", "broken.py", KNOWN)
    assert found == [] and problems == ["`broken.py` does not parse (line 1): invalid syntax"]
    deep = "x = " + "(" * 3000 + "1" + ")" * 3000 + "\n"
    found, problems = backend_hardware(deep, "deep.py", KNOWN)
    assert found == [] and len(problems) == 1 and problems[0].startswith("`deep.py`")
