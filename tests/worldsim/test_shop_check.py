"""worldsim.shop_check: the shop's strategies in process, the tables SG1 is sized on."""

from __future__ import annotations

import numpy as np

from worldsim import shop_agent, shop_check

DAYS = range(7_100_000, 7_100_120)


def test_the_tables_have_a_row_per_day_and_a_column_per_strategy() -> None:
    tables = shop_check.reward_tables(range(7_100_000, 7_100_005))
    for rows in tables.values():
        assert np.asarray(rows).shape == (5, len(shop_agent.Strategy))
        assert np.isfinite(rows).all()


def test_shared_reads_make_the_groups_quotes_agree_and_leave_writes_live() -> None:
    """Under (C) two `compare` branches read the same quotes, so they buy the same item; live,
    each reads its own jittered quotes and some days they part. Checkouts stay live in both."""
    strategies = (shop_agent.Strategy.COMPARE, shop_agent.Strategy.COMPARE)
    parted = {True: 0, False: 0}
    for day in DAYS:
        for shared in (True, False):
            first, second = shop_check.group_rollouts(day, shared=shared, strategies=strategies)
            parted[shared] += first.item != second.item
            assert first.total != second.total  # shipping is drawn by each checkout
    assert parted[True] == 0
    assert parted[False] > 0


def test_deal_is_the_best_strategy_and_coupon_sits_between_deal_and_compare() -> None:
    days = range(7_200_000, 7_200_600)  # the gaps are about 4 standard errors at 600 days
    means = np.mean([shop_check.group_rewards(day, shared=False) for day in days], axis=0)
    by_name = dict(zip((str(s) for s in shop_agent.Strategy), means, strict=True))
    assert by_name["deal"] > by_name["coupon"] > by_name["compare"]
