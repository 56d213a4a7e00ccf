"""The ``checks.review`` rule block: each pattern switchable, with its parameters.

Every pattern has a stable id (``lazy-cache``, ...) used in findings and in the waiver
comment ``# prbot: ignore[<id>]`` on the flagged line.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.core.sections import CheckRules, valid_regex


class PatternRules(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True


class LazyCacheRules(PatternRules):
    # Methods that run on every step (globs over the method name).
    hot_methods: list[str] = ["forward", "forward_*", "_forward*", "__call__"]
    # Attributes of an argument that stay the same from call to call: a value built from
    # only these (``q.device``) is a lazy allocation, not a value frozen from the first call.
    stable_attributes: list[str] = ["device", "dtype", "is_cuda"]


class CapabilityRules(PatternRules):
    # Class-level declarations that promise every request has the same query length.
    uniform_declarations: list[str] = ["QueryLenSupport.UNIFORM", "QueryLenSupport.SINGLE_ONLY"]
    # Names whose values are query or decode lengths in a branch test.
    length_names: str = r"(?i)(query|q_len|decode|num_tokens|seq_len)"
    # ``supports_<feature>`` methods that return True are checked against rejections.
    supports_prefix: str = "supports_"
    # Exceptions that mean "not supported" (a ValueError on malformed input is validation).
    rejections: list[str] = ["NotImplementedError"]

    @field_validator("length_names")
    @classmethod
    def _length_names_compile(cls, value: str) -> str:
        return valid_regex(value)


class LiteralDimensionRules(PatternRules):
    # Functions that decide whether a backend or kernel applies (globs over the name).
    check_functions: list[str] = [
        "supports_*",
        "validate_configuration",
        "is_supported*",
        "check_*support*",
    ]
    # Model-config dimensions: pinning several to literals narrows to one model family.
    dimensions: list[str] = [
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
        "kv_lora_rank",
        "q_lora_rank",
        "hidden_size",
        "num_attention_heads",
        "num_key_value_heads",
        "intermediate_size",
        "moe_intermediate_size",
        "n_routed_experts",
        "num_experts",
    ]
    # One dimension pinned is a kernel constraint; this many in one check is a model's shape.
    min_pinned: int = Field(default=2, ge=1)
    # Sentinels such as "no rope" (0) are structure, not a model's size.
    ignore_values: list[int] = [0, 1]


class UnboundedCacheRules(PatternRules):
    # A store whose key (or the dict's annotated key type) names one of these can take
    # unboundedly many values (shapes, sizes, request-derived lengths). A device is not one of
    # them: a dict keyed by device holds at most one entry per GPU.
    key_names: str = r"(?i)(shape|size|numel|num_tokens|batch|seq_len|max_len)"
    # Calls that allocate a sized buffer; a cache of these is what never gives memory back.
    allocators: list[str] = [
        "empty",
        "zeros",
        "ones",
        "full",
        "empty_like",
        "zeros_like",
        "ones_like",
        "empty_strided",
        "new_empty",
        "new_zeros",
    ]

    @field_validator("key_names")
    @classmethod
    def _key_names_compile(cls, value: str) -> str:
        return valid_regex(value)


class OptionalImportRules(PatternRules):
    # Top-level modules that are the project's own (their failure is a build problem).
    first_party: list[str] = []
    # Modules never reported (shipped inside a declared package, typing-only).
    ignore: list[str] = []
    # How deep a guarded import may reach and still test that a package is there at all:
    # ``import pkg`` / ``from pkg import f`` is depth 1; ``from pkg.ops.topk import f`` probes
    # a feature of a version of a package that is installed, not an optional dependency.
    max_module_depth: int = Field(default=1, ge=1)
    # Where a dependency counts as declared (requirement files, pyproject.toml, setup.py).
    requirement_files: list[str] = [
        "requirements*.txt",
        "requirements*.in",
        "requirements/**/*.txt",
        "requirements/**/*.in",
        "pyproject.toml",
        "setup.py",
    ]
    # Import names that differ from their distribution names.
    distributions: dict[str, str] = {}
    # A class's selection checks: when one returns reasons, an is_available() probe in the
    # same class reaches the user through it (the selector reports its reason).
    reason_methods: list[str] = ["validate_configuration", "supports_combination"]
    # Handlers that mean "the package is missing" (``except Exception`` is a broader probe).
    import_errors: list[str] = ["ImportError", "ModuleNotFoundError"]
    # Calls (last attribute or name) that tell the user: a warning counts as not silent.
    warning_calls: list[str] = [
        "warning",
        "warning_once",
        "warn",
        "warn_once",
        "error",
        "error_once",
        "exception",
        "critical",
    ]


class ReviewRules(CheckRules):
    # Python files the review reads (globs); everything else in the diff is ignored.
    paths: list[str] = ["**/*.py"]
    lazy_cache: LazyCacheRules = Field(default_factory=LazyCacheRules)
    capability_contradiction: CapabilityRules = Field(default_factory=CapabilityRules)
    literal_dimensions: LiteralDimensionRules = Field(default_factory=LiteralDimensionRules)
    unbounded_cache: UnboundedCacheRules = Field(default_factory=UnboundedCacheRules)
    silent_optional_import: OptionalImportRules = Field(default_factory=OptionalImportRules)
    # Syntax nodes read per file; a larger file is reported, not reviewed.
    max_nodes: int = Field(default=400_000, ge=1)
    # Files reviewed per PR, hot ones first; each file past it is a not-reviewed finding.
    max_files: int = Field(default=300, ge=1)
    # Where the review points live (backend and kernel code, globs): read before the rest,
    # in the order listed, so a PR over max_files still gets its backend reviewed.
    hot_paths: list[str] = Field(default_factory=list)
