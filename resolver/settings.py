"""Resolver settings from the environment (prefix `GROUNDHOG_`) and explicit overrides.

Built by `load_settings()` at start-up, never at import time, so tests and the CLI can run
several resolvers with different databases in one interpreter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_DATA_DIR = Path("./.groundhog")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GROUNDHOG_", extra="ignore")

    data_dir: Path = DEFAULT_DATA_DIR
    database_url: str = ""
    ca_dir: Path | None = None
    # The HMAC key of redaction placeholders; replicas sharing a store must share it.
    redaction_key_file: Path | None = None
    # Or the key itself, hex (at least 32 digits): how replicas in a cluster share one.
    redaction_key: SecretStr | None = None
    admin_token: str | None = None
    proxy_token: str | None = None
    # The proxy workers should use, announced at GET /v1/info so `groundhog env` never guesses.
    proxy_url: str | None = None
    max_body_bytes: int = Field(default=8 * 1024 * 1024, gt=0)
    claim_lease_seconds: float = Field(default=30.0, gt=0)
    resolve_wait_seconds: float = Field(default=60.0, gt=0)
    # False: refuse a store whose schema is not current instead of migrating it (store/migrate.py).
    migrate_on_start: bool = True

    @model_validator(mode="after")
    def _derive_paths(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'groundhog.sqlite3'}"
        if self.ca_dir is None:
            self.ca_dir = self.data_dir / "ca"
        if self.redaction_key_file is None:
            self.redaction_key_file = self.data_dir / "redaction.key"
        return self


def load_settings(**overrides: Any) -> Settings:
    """Settings from GROUNDHOG_* variables, with `overrides` (None values ignored) on top."""
    return Settings(**{name: value for name, value in overrides.items() if value is not None})
