"""Failure patterns from real CI, as cases for the CI-signal classifier (tests, benchmark).

Each case is one step: its letters on the head build and on the base branch's builds
(newest first, as ``bot.testing.buildkite_shapes.history`` spells them), where the merge
base sits, and the classification a maintainer would give it. The patterns are the ones
PyTorch's Dr. CI and vLLM's CI show: a PR breaking a healthy step, a flaky step failing
alone between passes (PyTorch's green/red/green), a failure that passes on a retry of the
same commit, a main broken at the merge base (and fixed since), a main broken after the
merge base by something outside the code, a step the PR adds, a step main rarely runs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    step: str
    head: str  # one letter: the step's attempts on the head build
    main: str  # letters, newest first
    expected: str
    pattern: str  # what real failure it is modelled on
    merge_base_at: int | None = None  # index into ``main`` of the merge base's build
    label: str | None = None  # the label a keyless main build names the step by
    keyless_on_main: bool = False
    # GitHub Actions only: letters of workflow_dispatch runs on main (newest first, newer
    # than main's own runs): PR heads' runs that name main as their ref.
    dispatched_on_main: str = ""

    @property
    def on_actions(self) -> bool:
        """Whether GitHub Actions can show the pattern: it has no soft-failed job (S) and
        names a job by its name alone (no keyless label)."""
        return "S" not in self.head + self.main and not self.keyless_on_main


CASES: tuple[Case, ...] = (
    Case(
        "kernels-attention",
        "X",
        "P" * 20,
        "new",
        "the PR breaks a step that passes on main; it fails again on a retry",
        0,
    ),
    Case(
        "basic-correctness",
        "F",
        "P" * 20,
        "new",
        "the PR breaks a healthy step, seen once (no retry yet: the CLI's view)",
        0,
    ),
    Case(
        "entrypoints-api-server",
        "T",
        "P" * 20,
        "new",
        "the PR makes a healthy step hang until its timeout",
        0,
    ),
    Case(
        "lora-tp",
        "R",
        "P" * 20,
        "flaky",
        "an agent lost mid-run: the job fails, then passes on a retry of the same commit",
        0,
    ),
    Case(
        "distributed-2-gpus",
        "X",
        "PPFPPPFPPPPFPPPPPPPP",
        "flaky",
        "an NCCL timeout that fails now and then on main (green, red, green, 3 times)",
        0,
    ),
    Case(
        "v1-e2e-engine",
        "X",
        "PRPPPPRPPPPPPPPPPPPP",
        "flaky",
        "a test main keeps passing only on a retry of the same commit",
        0,
    ),
    Case(
        "quantization",
        "F",
        "FFFFPPPPPPPPPPPPPPPP",
        "broken_trunk",
        "main broken at the merge base and still broken",
        0,
    ),
    Case(
        "spec-decode",
        "X",
        "PPFFFPPPPPPPPPPPPPPP",
        "broken_trunk",
        "main broken at the merge base, fixed since: a rebase fixes the PR",
        2,
    ),
    Case(
        "models-hub",
        "F",
        "FFFPPPPPPPPPPPPPPPPP",
        "broken_trunk",
        "main broken after the merge base by something outside the code (a model on the hub)",
        4,
    ),
    Case(
        "samplers",
        "X",
        "PPPFFFFPPPPPPPPPPPPP",
        "new",
        "main was broken once but was fixed before the merge base",
        0,
    ),
    Case(
        "merge-base-red",
        "X",
        "PPFPPPPPPPPPPPPPPPPP",
        "broken_trunk",
        "the merge base's own build failed the step (Dr. CI's exact rule)",
        2,
    ),
    Case(
        "latest-red-once",
        "X",
        "FPPPPPPPPPPPPPPPPPPP",
        "unknown",
        "main's latest build failed once too: broken or flaky cannot be told yet",
        None,
    ),
    Case("new-step", "X", "", "unknown", "a step the PR itself adds: main never ran it", 0),
    Case(
        "nightly-only",
        "X",
        "--P-------C---------",
        "unknown",
        "an optional step main runs rarely: one completed run",
        None,
    ),
    Case(
        "v1-attention-b200",
        "X",
        "P" * 20,
        "new",
        "a keyless step on main (0.20.x step files: label only), keyed on the head",
        0,
        "V1 attention (B200)",
        True,
    ),
    Case(
        "soft-fail-lint",
        "S",
        "SSSSSSSSSS",
        "none",
        "a soft_fail step failing everywhere: not a failure at all",
    ),
)

# Patterns only GitHub Actions shows, classified through the same code.
ACTIONS_CASES: tuple[Case, ...] = (
    Case(
        "gpu-smoke-dispatched",
        "F",
        "P" * 20,
        "new",
        "prbot's workflow is dispatched with ref main for every PR head: ten newer runs on "
        "main that failed for other PRs are not main's history",
        0,
        dispatched_on_main="F" * 10,
    ),
    Case(
        "gpu-smoke-concurrency",
        "F",
        "PCPCPCPCPCPCPCPCPCPC",
        "new",
        "main's runs cancelled by a newer push (concurrency: cancel-in-progress) between "
        "passes: cancelled is not a failure",
        0,
    ),
    Case(
        "gpu-smoke-runner-lost",
        "R",
        "P" * 20,
        "flaky",
        "a self-hosted runner lost mid-job (the runner received a shutdown signal): the job "
        "fails, and passes on a re-run of the failed jobs",
        0,
    ),
)
