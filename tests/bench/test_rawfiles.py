"""bench.rawfiles: a run's raw measurements round-trip through its files, byte-stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import noise_curve, rawfiles, report
from bench.run import write_outputs


@pytest.fixture
def written(raw_run, tmp_path) -> Path:
    out = tmp_path / "run"
    out.mkdir()
    write_outputs(raw_run, out)
    return out


def test_the_raw_files_hold_every_rollout_and_reference_pair(written, constructed_raws) -> None:
    run = rawfiles.read(written / rawfiles.RAW_DIR)
    original = constructed_raws["research/uncooperative"]
    back = run.cells["research/uncooperative"]
    assert back["conditions"]["naive"].rollouts == original["conditions"]["naive"].rollouts
    assert back["reference"].worse_coupled == original["reference"].worse_coupled
    assert back["reference"].attention_coefficient == original["reference"].attention_coefficient
    assert run.faults is not None and run.recorded["figures"]


def test_the_same_run_writes_the_same_bytes(raw_run, tmp_path) -> None:
    run = raw_run
    first = rawfiles.write(run, tmp_path / "a")
    second = rawfiles.write(run, tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_the_noise_curve_rows_follow_from_its_raw_conditions(
    small_config, constructed_raws, raw_run, tmp_path
) -> None:
    conditions = constructed_raws["research/uncooperative"]["conditions"]
    curve = [(0.0, {"naive": conditions["naive"], "groundhog": conditions["groundhog"]})]
    run = raw_run
    run.noise_curve = curve
    rawfiles.write(run, tmp_path / "raw")
    back = rawfiles.read(tmp_path / "raw")
    assert back.noise_curve is not None
    assert report.clean(noise_curve.points(small_config, back.noise_curve)) == report.clean(
        noise_curve.points(small_config, curve)
    )
    assert rawfiles.derive(back)["noise_curve"][0]["worlds"] == len(
        conditions["naive"].matrix("reward")
    )


def test_a_raw_directory_of_another_format_is_refused(written) -> None:
    manifest = written / rawfiles.RAW_DIR / rawfiles.MANIFEST
    manifest.write_text(manifest.read_text().replace('"format": 1', '"format": 99'))
    with pytest.raises(ValueError, match="raw format 99"):
        rawfiles.read(written / rawfiles.RAW_DIR)
