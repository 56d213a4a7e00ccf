"""silent-optional-import: a swallowed import failure, undeclared and unlogged."""

from __future__ import annotations

from review_helpers import flags, line_of, patterns, vllm_review_rules

from bot.review.optional_import import declared_distributions

PROBE_RETURNS_FALSE = """
class SwiftPrefillBackend(MLAPrefillBackend):
    @classmethod
    def is_available(cls) -> bool:
        try:
            from swift_attn import swift_prefill  # noqa: F401

            return True
        except ImportError:
            return False
"""

REASON_STRING_FALLBACK = """
class SwiftMLABackend(MLACommonBackend):
    @classmethod
    def supports_combination(cls, head_size, dtype, kv_cache_dtype, block_size, use_mla,
                             has_sink, use_sparse, device_capability):
        try:
            import swift_attn  # noqa: F401
        except ImportError:
            return "swift_attn is not installed"
        return None
"""

LOGS_A_WARNING = """
def load_swift():
    try:
        import swift_attn
    except ImportError:
        logger.warning_once("swift_attn missing; falling back to Triton")
        return None
    return swift_attn
"""

RERAISES_WITH_HINT = """
def load_swift():
    try:
        import swift_attn
    except ImportError as exc:
        raise ImportError("pip install swift-attn for SwiftMLA") from exc
    return swift_attn
"""

PASSES_THE_REASON_ON = """
def swift_state():
    try:
        import swift_attn
    except ImportError as error:
        return False, str(error)
    return True, swift_attn.__version__
"""

VERSION_FALLBACK = """
try:
    from swift_attn.layout import NewLayout as Layout
except ImportError:
    from swift_attn.legacy import OldLayout as Layout
"""

MODULE_SENTINEL_CHECKED = """
try:
    from swift_attn import SwiftMethod
except ModuleNotFoundError:
    SwiftMethod = None


def make_method(config):
    assert SwiftMethod is not None, "install swift-attn to use this quantization"
    return SwiftMethod(config)
"""

FIRST_PARTY_EXTENSION = """
def has_swift_ops() -> bool:
    try:
        import vllm._swift_C  # noqa: F401
    except ImportError:
        return False
    return True
"""

STDLIB_PROBE = """
def has_fcntl() -> bool:
    try:
        import fcntl  # noqa: F401
    except ImportError:
        return False
    return True
"""


def test_a_probe_that_swallows_an_undeclared_import_is_flagged():
    found = flags(PROBE_RETURNS_FALSE)
    assert patterns(found) == ["silent-optional-import"]
    assert found[0].line == line_of(PROBE_RETURNS_FALSE, "from swift_attn import")
    assert "swift-attn" in found[0].why


def test_a_returned_reason_is_not_silent():
    # TOKENSPEED_MLA's supports_combination: the install hint is the reason vLLM's platform
    # raises (ValueError) when the backend is chosen, so nothing is lost.
    assert flags(REASON_STRING_FALLBACK) == []
    for reason in ('f"{name} is not installed"', '"swift_attn " + "missing"', '("x", "y")'):
        assert flags(REASON_STRING_FALLBACK.replace('"swift_attn is not installed"', reason)) == []


def test_a_swallowed_import_says_what_the_handler_does_and_claims_no_behaviour():
    [found] = flags(PROBE_RETURNS_FALSE)
    assert "handler returns False" in found.why and "no reason returned" in found.why
    assert "silent" not in found.why and "falls back" not in found.why
    assert "`" not in found.why  # plain text: the report escapes it


def test_a_declared_distribution_is_not_flagged():
    declared = declared_distributions(
        {"requirements/cuda.txt": "-r common.txt\ntorch==2.9.0\nswift-attn==0.1.2\n"}
    )
    assert "swift-attn" in declared
    assert flags(PROBE_RETURNS_FALSE, declared=declared) == []


def test_extras_in_pyproject_and_setup_count_as_declared():
    pyproject = (
        '[project]\nname = "x"\n[project.optional-dependencies]\nswift = ["swift_attn>=0.1"]\n'
    )
    setup = 'setup(name="x", extras_require={"swift": ["swift-attn >= 0.1"]}, version="1")\n'
    assert "swift-attn" in declared_distributions({"pyproject.toml": pyproject})
    assert "swift-attn" in declared_distributions({"setup.py": setup})
    assert declared_distributions({"setup.py": "def broken(:\n"}) == set()
    assert declared_distributions({"pyproject.toml": "[project\n"}) == set()


def test_imports_that_speak_or_are_not_third_party_are_not_flagged():
    for source in (
        LOGS_A_WARNING,
        RERAISES_WITH_HINT,
        PASSES_THE_REASON_ON,
        VERSION_FALLBACK,
        MODULE_SENTINEL_CHECKED,
        FIRST_PARTY_EXTENSION,
        STDLIB_PROBE,
    ):
        assert flags(source) == [], source


FEATURE_PROBE_OF_AN_INSTALLED_PACKAGE = """
@functools.cache
def swift_topk_ops():
    try:
        from swift_attn.ops.topk import top_k_decode, top_k_prefill
    except ImportError:
        return None
    return top_k_prefill, top_k_decode
"""


def test_a_feature_probe_of_a_submodule_is_not_an_optional_dependency():
    assert flags(FEATURE_PROBE_OF_AN_INSTALLED_PACKAGE) == []
    deeper = vllm_review_rules().model_copy(deep=True)
    deeper.silent_optional_import.max_module_depth = 3
    found = flags(FEATURE_PROBE_OF_AN_INSTALLED_PACKAGE, review_rules=deeper)
    assert patterns(found) == ["silent-optional-import"]


BROAD_PROBE_FAILS_CLOSED = """
def swift_fused_path_available() -> bool:
    try:
        import swift_attn

        return os.path.exists(os.path.join(os.path.dirname(swift_attn.__file__), "tuned.csv"))
    except Exception:
        return False
"""


def test_a_broad_probe_that_fails_closed_is_not_about_the_dependency():
    assert flags(BROAD_PROBE_FAILS_CLOSED) == []


GATED_BY_A_DECORATOR = """
class SwiftOps:
    @classmethod
    @if_swift_attn_supported
    def topk_supports_fused_sigmoid(cls) -> bool:
        try:
            from swift_attn import topk_softmax
        except ImportError:
            return False
        return "num_shared_experts" in inspect.signature(topk_softmax).parameters
"""


def test_an_import_in_a_function_gated_on_the_package_is_a_symbol_probe():
    assert flags(GATED_BY_A_DECORATOR) == []


PROBE_SURFACED_BY_VALIDATION = """
class SwiftPrefillBackend(MLAPrefillBackend):
    _HINT = "swift_attn is not installed: uv pip install swift-attn"

    @classmethod
    def is_available(cls) -> bool:
        try:
            from swift_attn import swift_prefill  # noqa: F401

            return True
        except ImportError:
            return False

    @classmethod
    def validate_configuration(cls, device_capability, selector_config) -> list[str]:
        reasons = super().validate_configuration(device_capability, selector_config)
        return [cls._HINT if r == "required dependencies not available" else r for r in reasons]
"""


def test_a_probe_its_class_turns_into_a_returned_reason_is_not_silent():
    # TOKENSPEED_MLA's prefill backend (0.21.0): is_available() returns False, and the
    # class's validate_configuration returns the install hint the selector reports.
    assert flags(PROBE_SURFACED_BY_VALIDATION) == []
    assert patterns(flags(PROBE_RETURNS_FALSE)) == ["silent-optional-import"]
