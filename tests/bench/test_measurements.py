"""The oracle's counts: reads are summed, but a group is one trial of the lie and blind rates."""

from __future__ import annotations

from bench.assemble import assemble_cell
from bench.groups import Grades
from bench.measurements import OracleCounts


def test_a_group_with_many_stale_reads_is_one_stale_group() -> None:
    counts = OracleCounts()
    counts.add_group(
        [
            Grades(reads=5, stale=3, reads_after_write=2, stale_after_write=2),
            Grades(reads=5, stale=2),
        ]
    )
    counts.add_group([Grades(reads=4, reads_after_write=1), Grades(reads=4)])
    counts.add_group([Grades(reads=4), Grades(reads=4)])
    assert (counts.reads, counts.stale) == (26, 5)
    assert (counts.groups, counts.groups_stale) == (3, 1)
    assert (counts.groups_reading_after_write, counts.groups_blind) == (2, 1)
    assert (counts.rollouts_reading_after_write, counts.rollouts_blind) == (2, 1)


def test_the_lie_interval_counts_groups_not_reads(small_config, constructed_raw) -> None:
    groundhog = constructed_raw["conditions"]["groundhog"]
    groundhog.oracle = OracleCounts(reads=1824, groups=96, groups_reading_after_write=96)
    rows = assemble_cell(small_config, constructed_raw, cooperative=True, margin=0.1)["conditions"]
    lies = rows["groundhog"]["lies"]
    # 0 of 96 groups: the exact upper bound is 3.8%, not the 0.2% of 0 of 1824 reads.
    assert (lies["k"], lies["n"], lies["unit"]) == (0, 96, "groups")
    assert 0.037 < lies["high"] < 0.039
    assert rows["groundhog"]["stale_reads"]["n"] == 1824
    assert rows["groundhog"]["blind"]["n"] == 96
