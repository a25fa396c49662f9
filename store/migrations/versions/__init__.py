"""Alembic revision scripts, oldest first by revision id (0001_…, 0002_…)."""
