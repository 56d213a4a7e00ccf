"""Test doubles that are real servers: a local GitHub (REST, GraphQL subset, git over HTTP)."""

from bot.testing.github_server import Call, FakeGitHub
from bot.testing.state import FakeRepo

__all__ = ["Call", "FakeGitHub", "FakeRepo"]
