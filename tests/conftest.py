"""Suite-wide fixtures. Each package's own fixtures live in tests/<package>/conftest.py."""

from __future__ import annotations

import os

import pytest

POSTGRES_URL = os.environ.get(
    "GROUNDHOG_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def postgres_available() -> bool:
    try:
        import psycopg
    except ImportError:
        return False
    try:
        with psycopg.connect(
            POSTGRES_URL.replace("postgresql+psycopg://", "postgresql://"), connect_timeout=2
        ):
            return True
    except psycopg.Error:
        return False


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """A PostgreSQL URL for SQLAlchemy, or a visible skip naming what is missing."""
    if not postgres_available():
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL} (set GROUNDHOG_TEST_POSTGRES_URL)")
    return POSTGRES_URL
