"""The duplicate audit on real duplicate PRs (DupPR, Yu et al., MSR 2018), beside TF-IDF.

    # once: the corpus as hydrated with titles and bodies, from two public repositories
    git clone --bare https://github.com/lizzy-0323/Dup-Hunter ~/dups/Dup-Hunter.git
    git clone --bare https://github.com/luyaor/INTRUDE ~/dups/INTRUDE.git
    uv run python benchmarks/duplicates_real.py extract \
        --dup-hunter ~/dups/Dup-Hunter.git --intrude ~/dups/INTRUDE.git \
        --out ~/dups/duppr
    # then
    uv run python benchmarks/duplicates_real.py run ~/dups/duppr [--write]

Nothing of the corpus is committed. ``extract`` reads the pairs (``owner/repo later earlier``:
INTRUDE's ``data/clf/first_msr_pairs.txt``, aligned line by line with Dup-Hunter's
``data/clf/first_msr_pairs_pull_info_X.txt``, and Dup-Hunter's per-repository
``*/dup_*.txt`` with ``*/dup_*_pull_info_X.txt``) and keeps only the selected repositories,
deciding on the pair line's repository before its record is read.

The default selection is the 13 development repositories; the other 13 of the corpus are
held out, and only ``--repos`` (for a held-out run) names them. ``run`` filters by repository
again as it loads, so a data directory extracted with more repositories still gives the
development figures by default.

Setting: every PR of the selected repositories that the corpus has text for is a record of
number, title and body (no dates, no files). PRs are replayed in number order per repository;
each is queried against the same repository's PRs with lower numbers, then added. A query's
true duplicates are the earlier PRs of its duplicate group (pairs joined transitively). PRs
with no earlier duplicate (the first PR of every group) are the negatives: whatever they
flag is a false alert. The corpus carries text only for PRs in a duplicate pair, so there are
no other negatives to draw.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _duppr_curve import Curve, leave_one_repo_out  # noqa: E402
from _duppr_report import POOL_QUERIES, RULES_TEXT_ONLY, RULES_THRESHOLD, markdown  # noqa: E402
from _duppr_systems import (  # noqa: E402
    EmbeddingCache,
    Outcome,
    embeddings_available,
    mixed_pool,
    prbot_text,
    query_times,
    run_prbot,
    run_tfidf,
    run_vllm,
    template_free_texts,
    vllm_text,
)

from bot.duplicates.clusters import clusters  # noqa: E402
from bot.duplicates.scoring import ScoringConfig  # noqa: E402

DEVELOPMENT_REPOS = (
    "symfony/symfony",
    "rails/rails",
    "twbs/bootstrap",
    "rust-lang/rust",
    "ceph/ceph",
    "symfony/symfony-docs",
    "scikit-learn/scikit-learn",
    "docker/docker",
    "django/django",
    "servo/servo",
    "pydata/pandas",
    "emberjs/ember.js",
    "mozilla-b2g/gaia",
)
KS = (1, 5, 10, 20)
OUT = ROOT / "docs" / "benchmarks" / "duplicates_real.md"
TUNE_OUT = ROOT / "docs" / "benchmarks" / "duplicates_real_weights.md"
MAX_TEXT_CHARS = 100_000


# -- extraction -------------------------------------------------------------------------------
def _git_show(git_dir: Path, path: str) -> str | None:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"HEAD:{path}"],
        capture_output=True,
        text=True,
        errors="replace",
    )
    return done.stdout if done.returncode == 0 else None


def _git_paths(git_dir: Path) -> list[str]:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


def _pair_lines(text: str, selected: frozenset[str]) -> list[tuple[int, str, int, int]]:
    """(line index, repo, first, second) for the pair lines of selected repositories only."""
    out = []
    for i, line in enumerate(text.splitlines()):
        parts = line.split()
        if len(parts) != 3 or parts[0] not in selected:
            continue  # decided on the repository alone: nothing else of the line is read
        if parts[1].isdigit() and parts[2].isdigit():
            out.append((i, parts[0], int(parts[1]), int(parts[2])))
    return out


def _clip(value: object) -> str:
    return value[:MAX_TEXT_CHARS] if isinstance(value, str) else ""


def extract(
    dup_hunter: Path, intrude: Path, selected: frozenset[str]
) -> tuple[dict[tuple[str, int], dict], list[tuple[str, int, int]]]:
    """PR texts and pairs of the selected repositories, from the two git directories."""
    sources: list[tuple[str, str, Path]] = [
        ("data/clf/first_msr_pairs.txt", "data/clf/first_msr_pairs_pull_info_X.txt", intrude)
    ]
    for path in _git_paths(dup_hunter):
        match = re.fullmatch(r"([^/]+)/dup_([^/]+)\.txt", path)
        if match and "_pull_info" not in match[2]:
            sources.append((path, f"{match[1]}/dup_{match[2]}_pull_info_X.txt", dup_hunter))
    texts: dict[tuple[str, int], dict] = {}
    pairs: list[tuple[str, int, int]] = []
    for pairs_path, records_path, pairs_repo in sources:
        raw_pairs = _git_show(pairs_repo, pairs_path)
        if raw_pairs is None:
            continue
        lines = _pair_lines(raw_pairs, selected)
        if not lines:
            continue  # no selected repository here: its records are never read
        raw_records = _git_show(dup_hunter, records_path)
        records = json.loads(raw_records) if raw_records else []
        if len(records) != len(raw_pairs.splitlines()):
            raise SystemExit(f"{records_path} is not aligned with {pairs_path}")
        for i, repo, first, second in lines:
            record = records[i]
            for number, side in ((first, "A"), (second, "B")):
                texts.setdefault(
                    (repo, number),
                    {
                        "repo": repo,
                        "number": number,
                        "title": _clip(record.get(f"{side}_title")),
                        "body": _clip(record.get(f"{side}_body")),
                    },
                )
            pairs.append((repo, first, second))
    return texts, sorted(set(pairs))


def write_data(out: Path, texts: dict, pairs: list) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "prs.jsonl").open("w") as f:
        for key in sorted(texts):
            f.write(json.dumps(texts[key]) + "\n")
    with (out / "pairs.jsonl").open("w") as f:
        for repo, a, b in pairs:
            f.write(json.dumps({"repo": repo, "pair": [a, b]}) + "\n")


# -- loading ----------------------------------------------------------------------------------
@dataclass
class Repo:
    name: str
    prs: dict[int, dict] = field(default_factory=dict)
    pairs: list[tuple[int, int]] = field(default_factory=list)

    def earlier_duplicates(self) -> dict[int, set[int]]:
        """Every PR -> the lower-numbered PRs of its duplicate group."""
        known = [(a, b) for a, b in self.pairs if a in self.prs and b in self.prs]
        group_of = {n: group for group in clusters(known) for n in group}
        return {n: {m for m in group_of.get(n, ()) if m < n} for n in self.prs}


def load(data: Path, selected: frozenset[str]) -> dict[str, Repo]:
    """The selected repositories' PRs and pairs; other lines are dropped on their repo field."""
    if not (data / "prs.jsonl").is_file():
        raise SystemExit(f"{data}: no prs.jsonl (see the top of this script for how to get it)")
    repos: dict[str, Repo] = {}
    for name, handle in (("prs", data / "prs.jsonl"), ("pairs", data / "pairs.jsonl")):
        skipped: list[int] = []
        raw = handle.read_bytes().decode("utf-8", "replace") if handle.is_file() else ""
        for line_number, line in enumerate(raw.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                if not isinstance(item, dict):
                    raise TypeError("not a record")
                if item.get("repo") not in selected:
                    continue
                if name == "prs":
                    number = int(item["number"])
                    item = {
                        **item,
                        "title": _clip(item.get("title")),
                        "body": _clip(item.get("body")),
                    }
                else:
                    first, second = (int(n) for n in item["pair"])
            except (ValueError, TypeError, KeyError):
                skipped.append(line_number)  # not JSON, or not a record of this layout
                continue
            repo = repos.setdefault(item["repo"], Repo(item["repo"]))
            if name == "prs":
                repo.prs[number] = item
            else:
                repo.pairs.append((first, second))
        if skipped:
            print(
                f"{handle}: {len(skipped)} line(s) skipped, not a record "
                f"(first: line {skipped[0]})",
                file=sys.stderr,
            )
    for repo in repos.values():
        template_free_texts(repo.prs)
    return dict(sorted(repos.items()))


# -- metrics ----------------------------------------------------------------------------------
@dataclass
class Figures:
    queries: int
    negatives: int
    hits: dict[int, int]
    flagged: int
    flagged_right: int
    false_alerts: int
    seconds: list[float]

    @classmethod
    def of(cls, outcome: Outcome, truth: dict[int, set[int]]) -> Figures:
        positives = [n for n, dups in truth.items() if dups]
        negatives = [n for n, dups in truth.items() if not dups]
        hits = {k: sum(1 for n in positives if set(outcome.rankings[n][:k]) & truth[n]) for k in KS}
        flagged = [n for n, alert in outcome.alerts.items() if alert is not None]
        right = sum(1 for n in flagged if outcome.alerts[n] in truth[n])
        false = sum(1 for n in negatives if outcome.alerts[n] is not None)
        return cls(
            len(positives), len(negatives), hits, len(flagged), right, false, outcome.seconds
        )

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            self.queries + other.queries,
            self.negatives + other.negatives,
            {k: self.hits[k] + other.hits[k] for k in KS},
            self.flagged + other.flagged,
            self.flagged_right + other.flagged_right,
            self.false_alerts + other.false_alerts,
            self.seconds + other.seconds,
        )

    def recall(self, k: int) -> float:
        return self.hits[k] / self.queries if self.queries else 0.0

    @property
    def precision(self) -> float:
        return self.flagged_right / self.flagged if self.flagged else 1.0

    @property
    def false_alert_rate(self) -> float:
        return self.false_alerts / self.negatives if self.negatives else 0.0

    def to_json(self) -> dict[str, object]:
        ms = sorted(s * 1000 for s in self.seconds) or [0.0]
        return {
            "queries_with_duplicates": self.queries,
            "queries_without": self.negatives,
            "recall": {f"@{k}": round(self.recall(k), 3) for k in KS},
            "hits": {f"@{k}": self.hits[k] for k in KS},  # for ratios not of rounded recalls
            "flagged": self.flagged,
            "flagged_right": self.flagged_right,
            "precision": round(self.precision, 3),
            "false_alerts": self.false_alerts,
            "false_alert_rate": round(self.false_alert_rate, 3),
            "median_query_ms": round(statistics.median(ms), 2),
            "p95_query_ms": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
        }


# The ranking as `prbot duplicates --min-score 0` gives it (the sweep's default floor hides
# candidates below 0.05; TF-IDF ranks every earlier PR); likely_duplicate at the rules'
# default threshold.
RANKING = ScoringConfig(
    min_score=0.0, likely_duplicate=RULES_THRESHOLD, text_only_alert_chance=RULES_TEXT_ONLY
)
# The same without PR numbers as a clock: how much of the figures that signal carries.
NO_CLOCK = ScoringConfig(
    min_score=0.0,
    likely_duplicate=RULES_THRESHOLD,
    text_only_alert_chance=RULES_TEXT_ONLY,
    number_clock=False,
)
# prbot's text-only alerts are on the alert model's chance (scoring.alert_chance).
PRBOT_THRESHOLDS = tuple(round(0.5 + 0.025 * i, 3) for i in range(20))  # 0.5 .. 0.975
VLLM_THRESHOLDS = tuple(round(0.45 + 0.05 * i, 2) for i in range(8))  # 0.45 .. 0.80
POOL_SIZE = 2_000
LARGE_POOL_SIZE = 50_000


def evaluate(repos: dict[str, Repo], data: Path, embeddings: bool) -> dict[str, dict]:
    """Every system per repository and overall, the alert curves, and query times."""
    cache = EmbeddingCache(data / "embeddings.cache") if embeddings else None
    if cache is not None:
        cache.ensure(
            [
                f(pr)
                for repo in repos.values()
                for pr in repo.prs.values()
                for f in (prbot_text, vllm_text)
            ]
        )
    out: dict[str, dict] = {}
    totals: dict[str, Figures] = {}
    curves: dict[str, dict[str, Curve]] = {}
    leaders: dict[str, dict[str, tuple]] = {}  # system -> repository -> (leaders, truth)
    for name, repo in repos.items():
        truth = repo.earlier_duplicates()
        row: dict = {"prs": len(repo.prs)}
        systems = [
            ("prbot", run_prbot(repo.prs, RANKING, None), PRBOT_THRESHOLDS),
            ("prbot_no_clock", run_prbot(repo.prs, NO_CLOCK, None), PRBOT_THRESHOLDS),
            ("tfidf", run_tfidf(repo.prs), ()),
        ]
        if cache is not None:
            systems += [
                ("prbot_embeddings", run_prbot(repo.prs, RANKING, cache), PRBOT_THRESHOLDS),
                ("vllm", run_vllm(repo.prs, cache), VLLM_THRESHOLDS),
            ]
        for system, outcome, thresholds in systems:
            figures = Figures.of(outcome, truth)
            totals[system] = totals[system] + figures if system in totals else figures
            row[system] = figures.to_json()
            if thresholds:
                curves.setdefault(system, {})[name] = Curve.of(outcome, truth, thresholds)
            if outcome.leaders and system != "prbot_no_clock":
                leaders.setdefault(system, {})[name] = (outcome.leaders, truth)
        out[name] = row
    overall: dict = {
        "prs": sum(len(r.prs) for r in repos.values()),
        **{system: f.to_json() for system, f in totals.items()},
    }
    overall["curves"] = {}
    for system, per_repo in curves.items():
        combined = None
        for c in per_repo.values():
            combined = c if combined is None else combined + c
        assert combined is not None
        overall["curves"][system] = {
            "points": [combined.row(t) for t in sorted(combined.points)],
            "best": combined.best(),
            "leave_one_repo_out": leave_one_repo_out(per_repo),
        }
    overall["alert_model"] = alert_model(leaders) if leaders else None
    everything = [pr for repo in repos.values() for pr in repo.prs.values()]
    pool = everything[:POOL_SIZE]
    if len(pool) >= POOL_QUERIES * 2:
        times = query_times(pool, POOL_QUERIES, RANKING, cache)
        overall["query_ms_at_pool"] = {
            "open_prs": len(pool),
            **{name: _ms(seconds) for name, seconds in times.items() if name != "scored_prbot"},
            "scored": _counts(times["scored_prbot"]),
        }
        large = mixed_pool(everything, LARGE_POOL_SIZE)
        # TF-IDF over 50,000 documents in pure Python would take hours: not measured there.
        times = query_times(large, POOL_QUERIES, RANKING, cache, baselines=False)
        overall["query_ms_at_large_pool"] = {
            "open_prs": len(large),
            **{name: _ms(seconds) for name, seconds in times.items() if name != "scored_prbot"},
            "scored": _counts(times["scored_prbot"]),
        }
    if cache is not None:
        overall["embedding"] = {
            "texts_encoded_this_run": cache.encoded,
            "cpu_ms_per_text": round(1000 * cache.encode_seconds / cache.encoded, 1)
            if cache.encoded
            else None,
        }
    out["overall"] = overall
    return out


def alert_model(leaders: dict[str, dict[str, tuple]]) -> dict[str, object]:
    """The text-only alert model refitted and judged by repository (benchmarks/_duppr_alert)."""
    import _duppr_alert  # numpy: prbot[embeddings] or the dev group

    def judged(system: str):
        found = leaders.get(system)
        if found is None:
            return None
        return {name: _duppr_alert.examples(top, truth) for name, (top, truth) in found.items()}

    return _duppr_alert.evaluate(judged("prbot"), judged("prbot_embeddings"), RULES_TEXT_ONLY)


def fit_alert(data: Path, selected: frozenset[str], embeddings: bool) -> dict[str, object]:
    """Only what the alert model needs: prbot's rankings, with and without the extra."""
    repos = load(data, selected)
    cache = EmbeddingCache(data / "embeddings.cache") if embeddings else None
    if cache is not None:
        cache.ensure([prbot_text(pr) for r in repos.values() for pr in r.prs.values()])
    leaders: dict[str, dict[str, tuple]] = {}
    for name, repo in repos.items():
        truth = repo.earlier_duplicates()
        leaders.setdefault("prbot", {})[name] = (run_prbot(repo.prs, RANKING, None).leaders, truth)
        if cache is not None:
            outcome = run_prbot(repo.prs, RANKING, cache)
            leaders.setdefault("prbot_embeddings", {})[name] = (outcome.leaders, truth)
    return alert_model(leaders)


SAMPLE_RIGHT = 30
BODY_CHARS = 600


def sample_alerts(data: Path, selected: frozenset[str], out: Path, seed: int = 25) -> str:
    """Every alert prbot (no extra, the rules' default) raises that the labels call wrong,
    and SAMPLE_RIGHT it gets right, shuffled, for judging by hand blind to the labels:
    OUT/alerts_blind.json (ids, titles, bodies cut to BODY_CHARS) and OUT/alerts_key.json
    (id -> repository, query, candidate, label). Nothing of it belongs in the repository."""
    import random

    repos = load(data, selected)
    rows = []
    for name, repo in repos.items():
        truth = repo.earlier_duplicates()
        for query, candidate in run_prbot(repo.prs, RANKING, None).alerts.items():
            if candidate is None:
                continue
            right = candidate in truth[query]
            label = "right" if right else ("wrong_candidate" if truth[query] else "false_alert")
            rows.append((name, query, candidate, label, repo.prs[query], repo.prs[candidate]))
    rng = random.Random(seed)
    right = [r for r in rows if r[3] == "right"]
    sample = [r for r in rows if r[3] != "right"] + rng.sample(right, min(SAMPLE_RIGHT, len(right)))
    rng.shuffle(sample)
    blind, key = [], {}
    for i, (name, query, candidate, label, q, c) in enumerate(sample, start=1):
        blind.append(
            {
                "id": i,
                "repo": name,
                "query_title": q["title"],
                "query_body": (q["body"] or "")[:BODY_CHARS],
                "candidate_title": c["title"],
                "candidate_body": (c["body"] or "")[:BODY_CHARS],
            }
        )
        key[i] = [name, query, candidate, label]
    out.mkdir(parents=True, exist_ok=True)
    (out / "alerts_blind.json").write_text(json.dumps(blind, indent=1))
    (out / "alerts_key.json").write_text(json.dumps(key, indent=1))
    return f"{len(rows)} alerts, {len(sample)} sampled -> {out}"


def _counts(values: list[float]) -> dict[str, float]:
    ordered = sorted(values) or [0.0]
    return {"median": statistics.median(ordered), "max": ordered[-1]}


def _ms(seconds: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000 for s in seconds) or [0.0]
    return {
        "median": round(statistics.median(ms), 2),
        "p95": round(ms[min(len(ms) - 1, int(0.95 * len(ms)))], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ext = sub.add_parser("extract", help="write DIR/prs.jsonl and DIR/pairs.jsonl")
    ext.add_argument("--dup-hunter", type=Path, required=True, help="git dir of Dup-Hunter")
    ext.add_argument("--intrude", type=Path, required=True, help="git dir of INTRUDE")
    ext.add_argument("--out", type=Path, required=True)
    run = sub.add_parser("run", help="evaluate on an extracted data directory")
    run.add_argument("data", type=Path, help="the directory `extract` wrote")
    run.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(ROOT)}")
    run.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    tune = sub.add_parser("tune", help="choose the text-only weights leave-one-repository-out")
    tune.add_argument("data", type=Path, help="the directory `extract` wrote")
    tune.add_argument("--write", action="store_true", help=f"write {TUNE_OUT.relative_to(ROOT)}")
    tune.add_argument("--no-embeddings", action="store_true")
    run.add_argument(
        "--no-embeddings",
        action="store_true",
        help="skip vLLM's checker and prbot with embeddings (they need prbot[embeddings])",
    )
    fit = sub.add_parser("fit-alert", help="fit the text-only alert model; print its weights")
    fit.add_argument("data", type=Path, help="the directory `extract` wrote")
    fit.add_argument("--no-embeddings", action="store_true")
    sample = sub.add_parser("sample-alerts", help="alerts to judge by hand, blind to labels")
    sample.add_argument("data", type=Path, help="the directory `extract` wrote")
    sample.add_argument("--out", type=Path, required=True, help="a directory outside the repo")
    for p in (ext, run, tune, fit, sample):
        p.add_argument(
            "--repos",
            nargs="+",
            default=list(DEVELOPMENT_REPOS),
            help="owner/name list (default: the 13 development repositories)",
        )
    args = parser.parse_args()
    selected = frozenset(args.repos)
    if args.command == "extract":
        texts, pairs = extract(args.dup_hunter, args.intrude, selected)
        write_data(args.out, texts, pairs)
        print(f"{len(texts)} PRs, {len(pairs)} pairs -> {args.out}")
        return
    embeddings = embeddings_available() and not getattr(args, "no_embeddings", False)
    if args.command == "sample-alerts":
        print(sample_alerts(args.data, selected, args.out))
        return
    if args.command == "fit-alert":
        print(json.dumps(fit_alert(args.data, selected, embeddings), indent=2))
        return
    if args.command == "tune":
        import _duppr_tune  # numpy: prbot[embeddings] or the dev group

        repos = load(args.data, selected)
        cache = EmbeddingCache(args.data / "embeddings.cache") if embeddings else None
        if cache is not None:
            cache.ensure([prbot_text(pr) for r in repos.values() for pr in r.prs.values()])
        page = _duppr_tune.markdown(
            _duppr_tune.tune_all(repos, cache),
            "uv run python benchmarks/duplicates_real.py tune DATA_DIR --write",
        )
        if args.write:
            TUNE_OUT.write_text(page)
        print(page)
        return
    result = evaluate(load(args.data, selected), args.data, embeddings)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    command = "uv run python benchmarks/duplicates_real.py run DATA_DIR --write"
    text = markdown(result, command)
    if args.write:
        OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
