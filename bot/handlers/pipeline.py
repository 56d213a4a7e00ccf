"""``pipeline`` jobs: run the checks on a PR's head and publish the report (bot/pipeline.py)."""

from __future__ import annotations

from typing import Any

from bot.handlers.context import HandlerContext
from bot.handlers.registry import on_job
from bot.pipeline import Pipeline


@on_job("pipeline")
def run_pipeline(ctx: HandlerContext, job: dict[str, Any]) -> None:
    Pipeline(ctx).run(job)
