"""The jobs handlers' steps over real adapters: keep the report, dispatch a head, take in a
build's news, re-render and republish. Each takes its services explicitly, so the handlers
stay one call each and tests drive the same code with the local GitHub and Buildkite.

1. ``keep_report`` (after the pipeline made a head's report): the whole report and where to
   publish it are stored, so later news re-renders it without running the checks.
2. ``dispatch_head`` (a ``jobs_dispatch`` queue job: after the report, an approval, a
   /recheck): trust, approvals and records -> plan -> execute -> republish.
3. ``republish``: the kept report re-rendered with the records (after a build's news,
   bot/worker/ci/build_news.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from github import GithubException

from bot.core.features import FEATURES
from bot.engines.base import Engine, make_engine
from bot.events.permissions import effective_level
from bot.github.app import InstallationClient
from bot.github.publish import Publisher, check_run_fields
from bot.jobs.compare import DEFAULT_ALPHA, DEFAULT_FACTOR, DEFAULT_ROUNDS
from bot.jobs.config import DEFAULT_CHECK_NAMES, DEFAULT_FAIL_ON
from bot.jobs.planner import Head, Mode, WantedJob, job_spec, plan
from bot.jobs.repository_builds import SeenStep
from bot.jobs.repository_builds import from_json as repository_from_json
from bot.jobs.repository_checks import StepName, named, names_for, shard_counts
from bot.jobs.selection import BENCHMARK, GPU_SMOKE
from bot.local.git import GitError, run_git
from bot.report.render import Report, render_markdown
from bot.report.runner import decide_trust
from bot.runtime.settings import Settings
from bot.store import jobs as store
from bot.store import state
from bot.store.queue import Queue
from bot.worker.ci.dispatch import Outcome, PullContext, execute
from bot.worker.ci.observed import observe_github_checks, observe_repository_builds
from bot.worker.ci.stored_report import (
    jobs_section,
    report_from_json,
    report_to_json,
    with_job_progress,
)

log = logging.getLogger(__name__)

TRUSTED_LEVELS = ("write", "maintain", "admin")
DISPATCH_JOB = "jobs_dispatch"
REFRESH_JOB = "jobs_refresh"


@dataclass(frozen=True)
class Services:
    """What the steps reach out through: the database, settings, GitHub, the engines."""

    db: sa.Engine
    settings: Settings
    client: InstallationClient | None
    bot_login: str | None
    engines: Callable[[str], Engine]

    @property
    def lock_dir(self) -> Path:
        return self.settings.data_dir / "locks"

    @property
    def may_write(self) -> bool:
        return self.client is not None and not self.settings.dry_run


def services_for(ctx: Any, installation_id: Any) -> Services:
    """The services of a handler's context (bot.worker.handlers.context.HandlerContext) for one
    installation: its GitHub client and the engines, Actions' through that client."""
    client = ctx.client(installation_id)
    login = ctx.app.bot_login() if ctx.app is not None and client is not None else None
    return Services(
        ctx.engine, ctx.settings, client, login, engines_from_settings(ctx.settings, client)
    )


def engines_from_settings(
    settings: Settings, client: InstallationClient | None = None
) -> Callable[[str], Engine]:
    """A factory for the configured engines (one instance each); EngineError for the rest.
    GitHub Actions runs with the installation's own client."""
    made: dict[str, Engine] = {}

    def get(name: str) -> Engine:
        if name not in made:
            made[name] = make_engine(name, settings, client)
        return made[name]

    return get


def dispatch_mode(reason: str | None) -> Mode:
    """What a pipeline run was asked for: ``/recheck`` re-runs failed jobs, ``/recheck all``
    every one; anything else (a push, an edit) runs only what never ran."""
    words = (reason or "").split()
    if not words or not words[0].startswith("/"):
        return "event"
    return "recheck_all" if words[1:2] == ["all"] else "recheck"


def report_context(
    job: Mapping[str, Any], pull: Mapping[str, Any], ruleset: Any, mirror_path: Path | None
) -> dict[str, Any]:
    """Where and how to publish and dispatch this head later, from the pipeline's job."""
    merge_base = None
    if mirror_path is not None:
        try:
            found = run_git(mirror_path, ["merge-base", pull["base_sha"], pull["head_sha"]])
            merge_base = found.decode().strip() or None
        except GitError:
            merge_base = None  # unrelated histories: the base tip stands in
    rules = ruleset.checks.jobs
    return {
        "installation_id": job.get("installation_id"),
        "html_base": job.get("html_base") or "https://github.com",
        "author": pull.get("author"),
        "trusted": decide_trust(pull.get("author_association"), ruleset),
        "merge_base": merge_base or pull["base_sha"],
        "base_branch": pull.get("base_ref"),
        "mode": dispatch_mode(job.get("reason")),
        "benchmark": rules.benchmark.model_dump(),
        "ci_signal": rules.ci_signal.model_dump(),
        "repository_checks": rules.repository_checks.model_dump(),
        "trusted_teams": list(rules.trusted_teams),
        "features": list(ruleset.features.on()),
    }


def features_of(context: Mapping[str, Any]) -> frozenset[str]:
    """The features the head's rules switched on. A report kept before features existed was
    made under rules that dispatched, so it keeps doing so."""
    if "features" not in context:
        return frozenset({"dispatch", "actions", "autofix"})
    return frozenset(str(f) for f in context.get("features") or [])


def _observe_and_keep(
    services: Services,
    repo: str,
    number: int,
    head_sha: str,
    report_json: dict[str, Any],
    context: dict[str, Any],
    wanted: list[WantedJob],
) -> tuple[dict[str, SeenStep], list[str]]:
    seen, notes = observe_repository_builds(services.db, services.engines, repo, head_sha, wanted)
    if services.client is not None:
        # Other apps' check runs and statuses, for the smoke steps the builds did not show.
        checks_rules = context.get("repository_checks") or {}
        checks, more = observe_github_checks(
            services.client,
            repo,
            head_sha,
            [w for w in wanted if w.step_key not in seen],
            checks_rules.get("names", DEFAULT_CHECK_NAMES),
            own_app_id=services.settings.app_id,
            bot_login=services.bot_login,
            # A report stored before the setting had none: statuses only, as its default.
            check_run_apps=checks_rules.get("check_run_apps") or (),
        )
        seen.update(checks)
        notes += more
    store.save_full_report(
        services.db,
        repo,
        number,
        head_sha,
        report_json,
        {
            **context,
            "repository_builds": {k: v.to_json() for k, v in seen.items()},
            "repository_notes": notes,
        },
    )
    return seen, notes


def queue_refresh(
    queue: Queue, repo: str, head_sha: str, installation_id: Any, *, delay_seconds: float = 2
) -> int:
    """Queue a redraw of a head's smoke steps from the repository's own CI (coalesced per
    head: a build posting a status per job is one redraw, a little after the burst)."""
    payload = {"repo": repo, "head_sha": head_sha, "installation_id": installation_id}
    key = f"{REFRESH_JOB}:{repo}@{head_sha}"
    return queue.enqueue(REFRESH_JOB, payload, dedupe_key=key, delay_seconds=delay_seconds)


def _smoke_steps(report_json: Mapping[str, Any]) -> list[WantedJob]:
    section = jobs_section(report_from_json(report_json))
    findings = section.findings if section is not None else []
    smoke = [f for f in findings if f.get("kind") == GPU_SMOKE and f.get("step_key")]
    return [WantedJob.from_finding(f) for f in smoke]


def names_news(
    db: sa.Engine,
    repo: str | None,
    head_sha: str,
    *,
    name: str | None = None,
    step_key: str | None = None,
    app: str | None = None,
) -> list[tuple[str, int, Any]]:
    """``(repo, number, installation id)`` of each reported head whose selected smoke steps
    the news names: a check run's name or a status's context (by the rules' templates), or
    a build job's step key; with neither, every reported head with a smoke step. A status
    of a step nobody selected redraws nothing (vLLM posts hundreds a build). ``app``, a check
    run's or suite's app slug: news only where the head's rules count that app's runs
    (``check_run_apps``), else a PR's own workflow, its jobs named after a selected step,
    redrew the head on every job's news and spent the installation's API calls for nothing."""
    found = []
    for found_repo, number in store.heads_with_report(db, head_sha, repo=repo):
        kept = store.load_full_report(db, found_repo, number, head_sha)
        steps = _smoke_steps(kept[0]) if kept is not None else []
        if kept is None or not steps:
            continue
        context = kept[1]
        checks_rules = context.get("repository_checks") or {}
        if app is not None and app not in (checks_rules.get("check_run_apps") or ()):
            continue
        templates = checks_rules.get("names", DEFAULT_CHECK_NAMES)
        names: set[str] = set()
        shards: dict[str, int] = {}
        for step in steps:
            step_name = StepName(str(step.step_key), step.name, step.parallelism)
            names |= names_for(step_name, map(str, templates))
            shards.update(shard_counts(step_name, map(str, templates)))
        if name is not None and named(name, names, shards) is None:
            continue
        if step_key is not None and step_key not in {s.step_key for s in steps}:
            continue
        found.append((found_repo, number, context.get("installation_id")))
    return found


def queue_refresh_for_build(
    db: sa.Engine, queue: Queue, build: Mapping[str, Any], job: Mapping[str, Any] | None
) -> int:
    """Queue a redraw of each reported head a Buildkite build prbot did not make is of (the
    build names its commit, not its repository), when its job is of a selected smoke step
    (or the news is the build's); how many were queued."""
    commit = build.get("commit")
    if not isinstance(commit, str) or len(commit) != 40:
        return 0
    commit = commit.lower()
    key = job.get("step_key") if isinstance(job, Mapping) else None
    if isinstance(job, Mapping) and not isinstance(key, str):
        return 0  # a job of no step (a wait, a block) is of no selected step
    heads = names_news(db, None, commit, step_key=key)
    for repo, _, installation_id in heads:
        queue_refresh(queue, repo, commit, installation_id)
    return len(heads)


def refresh_head(services: Services, repo: str, number: int, head_sha: str) -> bool:
    """The kept report of a head with its smoke steps read again from the repository's own
    CI, re-rendered and republished when they changed; nothing is dispatched. False when
    nothing was redrawn."""
    loaded = store.load_full_report(services.db, repo, number, head_sha)
    if loaded is None:
        return False
    report_json, context = loaded
    wanted = _smoke_steps(report_json)
    if not wanted:
        return False
    seen, notes = _observe_and_keep(services, repo, number, head_sha, report_json, context, wanted)
    before = (context.get("repository_builds") or {}, context.get("repository_notes") or [])
    if ({k: v.to_json() for k, v in seen.items()}, notes) == before:
        return False  # the same states: the comment would be edited into itself
    republish(services, repo, number, head_sha)
    return True


def keep_report(db: sa.Engine, report: Report, context: Mapping[str, Any]) -> dict[str, Any] | None:
    """Store the head's whole report; the ``jobs_dispatch`` payload when it selected jobs."""
    if report.pr is None:
        return None
    store.save_full_report(
        db, report.repo, report.pr, report.head_sha, report_to_json(report), dict(context)
    )
    section = jobs_section(report)
    if section is None or not section.findings:
        return None
    return {
        "repo": report.repo,
        "number": report.pr,
        "head_sha": report.head_sha,
        "installation_id": context.get("installation_id"),
        "mode": context.get("mode", "event"),
    }


def queue_dispatch(queue: Queue, payload: Mapping[str, Any] | None) -> int | None:
    """Queue a head's dispatch (coalesced per head and mode: a burst is one job)."""
    if payload is None:
        return None
    key = f"{DISPATCH_JOB}:{payload['repo']}#{payload['number']}@{payload['head_sha']}"
    return queue.enqueue(DISPATCH_JOB, dict(payload), dedupe_key=f"{key}:{payload['mode']}")


def _trusted(services: Services, repo: str, context: Mapping[str, Any]) -> bool:
    if context.get("trusted"):
        return True
    author = context.get("author")
    if not author or services.client is None:
        return False
    # Write access makes an author trusted even when the association does not say so.
    if effective_level(*services.client.permission(repo, str(author))) in TRUSTED_LEVELS:
        return True
    return any(
        _team_member(services.client, str(team), str(author))
        for team in context.get("trusted_teams") or []
    )


def _team_member(client: InstallationClient, team: str, login: str) -> bool:
    """An active member of ``org/slug`` (GitHub: 404 for anyone else, or a team not seen)."""
    org, _, slug = team.partition("/")
    if not org or not slug:
        return False
    try:
        _, data = client.gh.requester.requestJsonAndCheck(
            "GET", f"/orgs/{quote(org)}/teams/{quote(slug)}/memberships/{quote(login)}"
        )
    except GithubException as exc:
        if exc.status in (403, 404):
            return False
        raise
    return isinstance(data, dict) and data.get("state") == "active"


def _pull_now(
    services: Services, repo: str, number: int, context: Mapping[str, Any]
) -> tuple[PullContext, str | None]:
    """The PR as GitHub has it now (as vLLM's ``/ci run`` re-checks it before a build): its
    branch and labels for the build, and its head; a closed PR has no head to build."""
    if services.client is None:
        base = str(context.get("base_branch") or "")
        return PullContext("", base), state.current_head(services.db, repo, number)
    info = services.client.get_pull(repo, number)
    raw = info.payload
    labels = tuple(
        str(label.get("name")) for label in raw.get("labels") or [] if isinstance(label, dict)
    )
    pull = PullContext(str(raw["head"]["ref"]), str(raw["base"]["ref"]), labels)
    return pull, info.head_sha if info.state == "open" else "closed"


def _reusable_bases(
    db: sa.Engine, head: Head, wanted: list[WantedJob]
) -> dict[str, store.JobRecord]:
    found = {}
    for job in wanted:
        if job.kind != BENCHMARK:
            continue
        spec = job_spec(job, head, "base")
        record = store.base_results(db, head.repo, job.name, head.base_sha, spec.spec)
        if record is not None and record.key.head_sha != head.head_sha:
            found[job.name] = record
    return found


def dispatch_head(
    services: Services, repo: str, number: int, head_sha: str, mode: Mode = "event"
) -> Outcome | None:
    """Plan and dispatch a head's selected jobs, then republish; None when nothing is kept."""
    loaded = store.load_full_report(services.db, repo, number, head_sha)
    if loaded is None:
        log.info("%s#%s@%s: no report kept, nothing to dispatch", repo, number, head_sha[:12])
        return None
    report_json, context = loaded
    report = report_from_json(report_json)
    section = jobs_section(report)
    if section is None or not section.findings:
        return None
    # A benchmark whose step the pipeline lacks, or a new backend with no incumbent to run
    # against, has nothing to run (the section says so).
    wanted = [
        WantedJob.from_finding(f)
        for f in section.findings
        if not f.get("missing_step") and not f.get("no_incumbents")
    ]
    features = features_of(context)
    dispatching = "dispatch" in features
    # An engine a feature is named after (GitHub Actions: `actions`) needs that feature on.
    wanted = [w for w in wanted if w.engine not in FEATURES or w.engine in features]
    # The repository's own builds first: what they ran or scheduled is reported from them
    # and never built a second time.
    seen, _ = _observe_and_keep(services, repo, number, head_sha, report_json, context, wanted)
    covered = {key for key, step in seen.items() if step.ran}
    wanted = [w for w in wanted if not (w.kind == GPU_SMOKE and w.step_key in covered)]
    if not dispatching:
        republish(services, repo, number, head_sha)
        return Outcome()
    benchmark = context.get("benchmark") or {}
    head = Head(
        repo,
        number,
        head_sha,
        str(context.get("merge_base") or report.base_sha),
        trusted=_trusted(services, repo, context),
        approvers=tuple(store.approvers(services.db, repo, number, head_sha)),
        benchmark_runs=int(benchmark.get("runs", DEFAULT_ROUNDS)),
    )
    records = {
        (r.key.name, r.key.side): r
        for r in store.records_for_head(services.db, repo, number, head_sha)
    }
    reused = _reusable_bases(services.db, head, wanted)
    planned = plan(
        wanted,
        head,
        records,
        mode=mode,
        reusable_base=frozenset(reused),
        key_secret=services.settings.dispatch_key_secret(),
    )
    if services.settings.dry_run or not planned.dispatches and not planned.resume:
        # Dry run: recorded as selected, nothing sent. Nothing to send: no GitHub call.
        planned.selected.extend(spec for d in planned.dispatches for spec, _ in d.jobs)
        planned.dispatches.clear()
        planned.resume.clear()
        execute(
            services.db,
            planned,
            head,
            PullContext("", ""),
            engines=services.engines,
            current_head=lambda: head_sha,
            lock_dir=services.lock_dir,
        )
        republish(services, repo, number, head_sha)
        return Outcome()
    pull, head_now = _pull_now(services, repo, number, context)
    outcome = execute(
        services.db,
        planned,
        head,
        pull,
        engines=services.engines,
        current_head=lambda: head_now,
        lock_dir=services.lock_dir,
    )
    log.info(
        "%s#%s@%s: %d build(s) created, %d resumed, %d refused",
        repo,
        number,
        head_sha[:12],
        outcome.created,
        outcome.resumed,
        len(outcome.refused),
    )
    republish(services, repo, number, head_sha)
    return outcome


class JobsPublisher(Publisher):
    """The publisher, with the check run kept in progress while GPU jobs are running."""

    def __init__(self, *args: Any, pending: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending = pending

    def _check_run(self, repo: str, report: Report, markdown: str) -> int:
        if not self.pending:
            return super()._check_run(repo, report, markdown)
        fields = check_run_fields(report, markdown, autofix=self.autofix)
        output = {**fields["output"], "title": "prbot: GPU jobs running"}
        return self._check_run_id(
            repo, report.head_sha, {"status": "in_progress", "output": output}, update=True
        )


def republish(services: Services, repo: str, number: int, head_sha: str) -> bool:
    """Re-render the kept report with the records, store it, and publish it when allowed."""
    loaded = store.load_full_report(services.db, repo, number, head_sha)
    if loaded is None:
        return False
    report_json, context = loaded
    kept = report_from_json(report_json)
    section = jobs_section(kept)
    wanted = [WantedJob.from_finding(f) for f in section.findings] if section else []
    benchmark = context.get("benchmark") or {}
    head = Head(
        repo,
        number,
        head_sha,
        str(context.get("merge_base") or kept.base_sha),
        trusted=bool(context.get("trusted")),
        benchmark_runs=int(benchmark.get("runs", DEFAULT_ROUNDS)),
    )
    report = with_job_progress(
        kept,
        store.records_for_head(services.db, repo, number, head_sha),
        reused_base=_reusable_bases(services.db, head, wanted),
        factor=float(benchmark.get("factor", DEFAULT_FACTOR)),
        alpha=float(benchmark.get("alpha", DEFAULT_ALPHA)),
        allow_different_gpus=bool(benchmark.get("allow_different_gpus", False)),
        fail_on=tuple((context.get("ci_signal") or {}).get("fail_on", DEFAULT_FAIL_ON)),
        repository=repository_from_json(context.get("repository_builds") or {}),
        notes=[str(n) for n in context.get("repository_notes") or []][:5],
        dispatching="dispatch" in features_of(context),
    )
    html_base = str(context.get("html_base") or "https://github.com")
    markdown = render_markdown(report, html_base=html_base)
    state.save_report(
        services.db, repo, number, head_sha, str(report.status), report.to_json(), markdown
    )
    if not services.may_write or services.bot_login is None:
        return False
    updated = jobs_section(report)
    publisher = JobsPublisher(
        services.db,
        services.client,
        services.bot_login,
        services.lock_dir,
        pending=bool(updated and updated.data.get("pending")),
        autofix="autofix" in features_of(context),
    )
    return publisher.publish(repo, number, report, markdown).published
