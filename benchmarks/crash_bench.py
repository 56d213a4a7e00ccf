"""The crash run at scale: a real `prbot serve` killed with SIGKILL at random moments while the
local GitHub test server sends a burst of signed deliveries (bot/testing/crash.py).

    uv run python benchmarks/crash_bench.py            # 1,000 over 200 PRs, SQLite, 1 worker
    uv run python benchmarks/crash_bench.py --postgres URL --workers 2
    uv run python benchmarks/crash_bench.py --prs 20 --deliveries 100 --kills 3   # quick
    uv run python benchmarks/crash_bench.py --fault-rate 0.2    # GitHub failing 20% of calls too

Figures: deliveries sent, acknowledged (2xx), refused or sent while down, redelivered by the
repair job, stored, lost (acknowledged, not stored: must be 0), unrepaired, comments per PR
(must all be 1), stale PRs, doubled check runs and reactions, dead jobs by kind, and PRs
whose one comment is the repair's "could not check this head" (failure_reports). The
PostgreSQL run uses a scratch schema dropped afterwards.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.testing.crash import CrashRun  # noqa: E402
from bot.testing.pg_schema import scratch_schema  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prs", type=int, default=200)
    parser.add_argument("--deliveries", type=int, default=1000)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL (scratch schema)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settle-timeout", type=float, default=1800.0)
    parser.add_argument(
        "--fault-rate", type=float, default=0.0, help="GitHub faults on this share of calls"
    )
    args = parser.parse_args()
    drop = None
    database_url = None
    if args.postgres:
        database_url, drop = scratch_schema(args.postgres, "prbot_crash")
    try:
        with tempfile.TemporaryDirectory(prefix="prbot-crash-") as root:
            figures = CrashRun(
                Path(root),
                prs=args.prs,
                deliveries=args.deliveries,
                kills=args.kills,
                workers=args.workers,
                database_url=database_url,
                seed=args.seed,
                settle_timeout=args.settle_timeout,
                fault_rate=args.fault_rate,
            ).run()
    finally:
        if drop is not None:
            drop()
    result = asdict(figures)
    result["comments_per_pr"] = dict(figures.comments_per_pr)
    result["doubled_comments"] = figures.doubled_comments
    result["database"] = "postgresql" if args.postgres else "sqlite"
    result["workers"] = args.workers
    result["fault_rate"] = args.fault_rate
    print(json.dumps(result, indent=2))
    ok = figures.lost == 0 and figures.doubled_comments == 0 and figures.stale_prs == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
