"""The CA is created once per directory, even when several starters race, and then kept."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from services.ca import CA_KEY_NAME, ensure_ca


def test_racing_starters_get_one_ca_and_it_is_kept(tmp_path: Path) -> None:
    ca_dir = tmp_path / "ca"
    with ThreadPoolExecutor(4) as pool:
        paths = list(pool.map(lambda _: ensure_ca(ca_dir), range(4)))
    certificates = {path.read_bytes() for path in paths}
    assert len(certificates) == 1
    assert b"BEGIN CERTIFICATE" in next(iter(certificates))
    assert (ca_dir / CA_KEY_NAME).exists()
    assert not [p for p in ca_dir.iterdir() if p.name.startswith(".ca-")]  # staging removed
    assert ensure_ca(ca_dir).read_bytes() in certificates
