"""Alembic migrations for bot.store (driven from code by ``bot.store.db.migrate``)."""
