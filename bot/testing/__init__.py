"""Test doubles that are real servers: a local GitHub (REST, GraphQL subset, git over HTTP)."""

from bot.testing.github_server import FakeGitHub
from bot.testing.state import FakeRepo
from bot.testing.traffic import Call

__all__ = ["Call", "FakeGitHub", "FakeRepo"]
