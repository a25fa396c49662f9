"""Resolver settings from the environment (prefix `GROUNDHOG_`) and explicit overrides.

Built by `load_settings()` at start-up, never at import time, so tests and the CLI can run
several resolvers with different databases in one interpreter.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from resolver.capabilities import BranchCapabilities

logger = logging.getLogger(__name__)

DEFAULT_DATA_DIR = Path("./.groundhog")
# The environment names of `claim_seconds`, the first set winning: the second is its name from
# before claims were told apart from branch leases, kept as a deprecated alias.
CLAIM_SECONDS_VARIABLES = ("GROUNDHOG_CLAIM_SECONDS", "GROUNDHOG_CLAIM_LEASE_SECONDS")


class Settings(BaseSettings):
    # populate_by_name: `claim_seconds`, read through its aliases, is still an override by name.
    model_config = SettingsConfigDict(
        env_prefix="GROUNDHOG_", extra="ignore", populate_by_name=True
    )

    data_dir: Path = DEFAULT_DATA_DIR
    database_url: str = ""
    ca_dir: Path | None = None
    # The HMAC key of redaction placeholders; replicas sharing a store must share it.
    redaction_key_file: Path | None = None
    # Or the key itself, hex (at least 32 digits): how replicas in a cluster share one.
    redaction_key: SecretStr | None = None
    admin_token: str | None = None
    # Whether a tape that does not say requires branch capabilities (resolver/capabilities.py);
    # None: `required` when python -m resolver listens beyond loopback, else `optional`.
    branch_capabilities: BranchCapabilities | None = None
    proxy_token: str | None = None
    # The proxy workers should use, announced at GET /v1/info so `groundhog env` never guesses.
    proxy_url: str | None = None
    max_body_bytes: int = Field(default=8 * 1024 * 1024, gt=0)
    # A single-flight claim (store/claims.py) lasts this long unless its live holder renews it
    # (/v1/renew, every third of it); a waiter takes a lapsed one over. `GROUNDHOG_CLAIM_SECONDS`;
    # the deprecated `GROUNDHOG_CLAIM_LEASE_SECONDS` is still read when the new name is not set.
    claim_seconds: float = Field(
        default=30.0, gt=0, validation_alias=AliasChoices(*CLAIM_SECONDS_VARIABLES)
    )
    # A sidecar's branch lease (resolver/lease_service.py) lasts this long unless renewed; its
    # holder renews every third of it, and a dead holder's branches wait this long at most.
    branch_lease_seconds: float = Field(default=6.0, gt=0)
    # How long past its lapse a lease's holder may still ship and release before a fork or a
    # seal goes on without its hits (a restarted sidecar ships its log then); None: one lease.
    branch_lease_grace_seconds: float | None = Field(default=None, gt=0)
    # One `/v1/wait` call holds at most this long before answering `wait` again.
    resolve_wait_seconds: float = Field(default=20.0, gt=0)
    # A waiter not woken by an event looks at the store this often (a record through a replica
    # whose notification was lost).
    wait_poll_seconds: float = Field(default=0.5, gt=0)
    # Free bytes the store's disk must keep before a live call is handed out; None: twice
    # max_body_bytes, so records already in flight still fit.
    disk_reserve_bytes: int | None = Field(default=None, ge=0)
    max_tape_config_bytes: int = Field(default=256 * 1024, gt=0)
    # NORMAL survives a process crash; FULL also survives power loss (an fsync per commit).
    sqlite_synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    # A resolve's (and a small record's) SQLite transaction runs on the event loop when it need
    # not wait for another writer (store/loop_writes.py), sparing a thread hop; False: always
    # on a worker thread.
    resolve_on_event_loop: bool = True
    # The proxy's hot routes answered inside uvicorn's HTTP protocol, ahead of all ASGI
    # (resolver/hot_protocol.py); False: every request goes through the ASGI app.
    hot_protocol: bool = True
    # False: refuse a store whose schema is not current instead of migrating it (store/migrate.py).
    migrate_on_start: bool = True
    # Crash injection for tests (engine/failpoints.py): `name[@N],…`; empty, as in production,
    # arms nothing.
    failpoints: str = ""

    @model_validator(mode="after")
    def _derive_paths(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{self.data_dir / 'groundhog.sqlite3'}"
        if self.ca_dir is None:
            self.ca_dir = self.data_dir / "ca"
        if self.redaction_key_file is None:
            self.redaction_key_file = self.data_dir / "redaction.key"
        if self.disk_reserve_bytes is None:
            self.disk_reserve_bytes = 2 * self.max_body_bytes
        return self

    @property
    def lease_grace_seconds(self) -> float:
        """`branch_lease_grace_seconds`, or one lease length when it is not set."""
        return self.branch_lease_grace_seconds or self.branch_lease_seconds


def load_settings(**overrides: Any) -> Settings:
    """Settings from GROUNDHOG_* variables, with `overrides` (None values ignored) on top."""
    deprecated = CLAIM_SECONDS_VARIABLES[1]
    if deprecated in os.environ and CLAIM_SECONDS_VARIABLES[0] not in os.environ:
        logger.warning("%s is deprecated: set %s instead", deprecated, CLAIM_SECONDS_VARIABLES[0])
    return Settings(**{name: value for name, value in overrides.items() if value is not None})
