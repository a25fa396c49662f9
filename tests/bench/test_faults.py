"""The faults row: through real services, shared faults leave no same-policy reward noise."""

from __future__ import annotations

import pytest

from bench import faults
from bench.harness import started_services
from bench.report import _faults_lines
from groundhog.client import Groundhog


def test_contrast_is_patient_minus_impatient_advantage() -> None:
    assert faults.GroupResult([1.0, 1.0, 0.5, 0.5], 2).contrast == 0.5
    assert faults.GroupResult([0.5, 0.5, 0.5, 0.5], 0).contrast == 0.0


@pytest.mark.slow
def test_shared_faults_give_same_policy_branches_identical_rewards(tmp_path) -> None:
    with (
        started_services(data_dir=tmp_path, cells=()) as services,
        Groundhog(services.resolver_url, proxy_url=services.proxy_url) as admin,
    ):
        # Only the world the row uses was started (the cooperative research world).
        assert services.uncooperative_world_url is None and services.shop_world_url is None
        # At the row's own rate two groups meet no shared fault about once in 400 runs (the
        # draw hashes the world's ephemeral port); at 0.6, about once in 60,000.
        row = faults.measure(
            services.proxy_url, services.world_url, admin, groups=2, fault_rate=0.6
        )
    shared, independent = row["shared"], row["independent"]
    assert shared["faults_injected"] > 0 and independent["faults_injected"] > 0
    assert shared["same_policy_reward_variance"] == 0.0
    assert row["fault_rate"] == 0.6
    assert (shared["mode"], independent["mode"]) == ("groundhog", "naive")
    (line,) = _faults_lines(row)
    assert "same-policy reward variance shared 0.0000" in line
    assert _faults_lines(None) == ["- (9) faults shared vs independent: not measured"]


def test_the_row_follows_from_the_raw_groups() -> None:
    """The row a run commits is summarize(raw): shared faults give identical same-policy rewards."""
    raw = {
        "groups": 2,
        "group_size": 4,
        "fault_rate": 0.4,
        "shared": {
            "mode": "groundhog",
            "groups": [{"rewards": [1, 1, 0.5, 0.5], "injected": 2}] * 2,
        },
        "independent": {
            "mode": "naive",
            "groups": [
                {"rewards": [1, 0.5, 0.5, 0.25], "injected": 3},
                {"rewards": [0.5, 1, 0.5, 0.5], "injected": 4},
            ],
        },
    }
    row = faults.summarize(raw)
    assert row["shared"]["same_policy_reward_variance"] == 0.0
    assert row["shared"]["contrast_variance"] == 0.0 and row["variance_reduction"] == 1.0
    assert row["independent"]["faults_injected"] == 7
    assert row["independent"]["same_policy_reward_variance"] > 0
