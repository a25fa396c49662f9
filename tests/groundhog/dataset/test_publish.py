"""`tape publish` end to end: a tape recorded through the real proxy becomes a folder that
pandas and Hugging Face `datasets` load, and that `tape import DIR` takes back, digest intact."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from groundhog.cli import app
from groundhog.client import Groundhog
from groundhog.dataset.audit_gate import AuditRefused, audit_gate
from groundhog.dataset.folder import TABLES, table_file
from tests.groundhog.test_tape_verify import edit_recorded_urls, record_a_group
from tests.groundhog.upstream import Upstream
from tests.support.servers import ServerProcess


def cli(resolver: ServerProcess, *args: str) -> tuple[int, str]:
    env = {"GROUNDHOG_RESOLVER_URL": resolver.url, "COLUMNS": "200"}
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.output


def test_publish_refuses_a_tape_the_secrets_audit_flags(
    gh_proxied: Groundhog, resolver: ServerProcess, data_dir: Path, tape_name: str,
    http_upstream: Upstream, tmp_path: Path,
) -> None:  # fmt: skip
    record_a_group(gh_proxied, tape_name, http_upstream)
    # A token in clear, as a tape recorded before redaction knew its shape would hold it.
    token = "ghp_" + "Zq7" * 12
    edit_recorded_urls(data_dir, tape_name, f"request_url || '&t={token}'", "%/own/%")
    folder = tmp_path / "dataset"
    code, output = cli(resolver, "tape", "publish", tape_name, str(folder))
    assert code == 1 and "secrets audit found" in output and "--allow-unscrubbed" in output
    assert token not in output
    assert not folder.exists() and not (tmp_path / "dataset.partial").exists()
    with pytest.raises(AuditRefused):
        audit_gate(gh_proxied, tape_name, allow_unscrubbed=False)
    allowed = audit_gate(gh_proxied, tape_name, allow_unscrubbed=True)
    assert allowed.clean is False and allowed.findings >= 1


def test_a_published_folder_loads_with_pandas_and_datasets_and_imports_back(
    gh_proxied: Groundhog, resolver: ServerProcess, tape_name: str, http_upstream: Upstream,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    record_a_group(gh_proxied, tape_name, http_upstream)
    digest = gh_proxied.digest(tape_name).digest
    folder = tmp_path / "dataset"
    code, output = cli(resolver, "tape", "publish", tape_name, str(folder))
    assert code == 0, output
    assert digest in output

    exchanges = pd.read_parquet(folder / "exchanges")
    assert len(exchanges) == gh_proxied.digest(tape_name).exchanges
    assert set(exchanges["decision"]) == {"recorded"}
    news = exchanges[exchanges["url"].str.contains("/news/")]
    # Children continue the parent's occurrences: root's read (0), its text/plain read, the
    # children's shared next read (1), the grandchild's (2).
    assert sorted(news["served"]) == [1, 1, 1, 2]
    bodies = pd.read_parquet(folder / "bodies").set_index("sha256")
    for row in exchanges.itertuples():
        data = bodies.loc[row.response_body_sha256, "data"]
        assert hashlib.sha256(data).hexdigest() == row.response_body_sha256
        assert len(data) == row.response_body_size
    events = pd.read_parquet(folder / "events")
    assert set(events["branch"]) == {"root", "root/b0", "root/b1", "root/b1/b0"}
    for _, branch_events in events.groupby("branch"):
        assert list(branch_events["seq"]) == sorted(branch_events["seq"])
    assert (events["decision"] == "shared").any()

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    from datasets import load_dataset

    loaded = load_dataset("parquet", data_dir=str(folder / "events"), split="train")
    assert loaded.num_rows == len(events)
    assert loaded[0]["branch"] == "root" and loaded[0]["seq"] == 1
    by_config = load_dataset(str(folder), "exchanges", split="train")
    assert by_config.num_rows == len(exchanges)

    card = (folder / "README.md").read_text()
    assert digest in card and "world seed | `11`" in card and "`root/b1/b0`" in card
    assert "secrets audit | clean" in card and "with the world closed, 0 live connections" in card

    code, output = cli(resolver, "tape", "import", str(folder), "--name", f"{tape_name}-back")
    assert code == 0, output
    assert gh_proxied.digest(f"{tape_name}-back").digest == digest


def test_import_names_the_missing_table_of_a_folder(
    resolver: ServerProcess, gh: Groundhog, tape_name: str, tmp_path: Path
) -> None:
    folder = tmp_path / "dataset"
    gh.open_tape(tape_name, 1)
    gh.export_tape(tape_name, tmp_path / "tape.sqlite3")
    folder.mkdir()
    shutil.copy(tmp_path / "tape.sqlite3", folder / "tape.sqlite3")
    for table in TABLES:
        table_file(folder, table).parent.mkdir()
        table_file(folder, table).write_bytes(b"PAR1")
    table_file(folder, "events").unlink()
    before = [tape.name for tape in gh.list_tapes()]
    code, output = cli(resolver, "tape", "import", str(folder), "--name", f"{tape_name}-back")
    assert code == 1 and "events/events.parquet" in output and "missing" in output
    assert [tape.name for tape in gh.list_tapes()] == before


def test_publish_refuses_a_tape_that_does_not_verify(
    gh_proxied: Groundhog, resolver: ServerProcess, data_dir: Path, tape_name: str,
    http_upstream: Upstream, tmp_path: Path,
) -> None:  # fmt: skip
    record_a_group(gh_proxied, tape_name, http_upstream)
    edit_recorded_urls(data_dir, tape_name, "request_url || '&edited=1'", "%/own/%")
    folder = tmp_path / "dataset"
    code, output = cli(resolver, "tape", "publish", tape_name, str(folder), "--allow-unscrubbed")
    assert code == 1 and "does not replay as recorded" in output
    assert "first mismatch" in output and "edited=1" in output
    assert not folder.exists()


def test_push_to_hub_without_huggingface_hub_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from groundhog.dataset.hub import HubUnavailable, push_to_hub

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # as if not installed
    with pytest.raises(HubUnavailable, match=r"groundhog-rl\[hub\]"):
        push_to_hub(tmp_path, "someone/tape")


def _edit_parquet(path: Path, column: str, change) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    values = table.column(column).to_pylist()
    values[0] = change(values[0])
    index = table.schema.get_field_index(column)
    field = table.schema.field(index)
    pq.write_table(table.set_column(index, field, pa.array(values, type=field.type)), path)


def test_a_published_folder_verifies_whole_and_any_edit_is_refused(
    gh_proxied: Groundhog, resolver: ServerProcess, tape_name: str, http_upstream: Upstream,
    tmp_path: Path,
) -> None:  # fmt: skip
    record_a_group(gh_proxied, tape_name, http_upstream)
    folder = tmp_path / "dataset"
    code, output = cli(resolver, "tape", "publish", tape_name, str(folder))
    assert code == 0, output
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("tape.")) == [
        "tape.sqlite3"
    ]
    code, output = cli(resolver, "tape", "verify", str(folder))
    assert code == 0 and "every branch replays" in output, output
    assert not (folder / "tape.sqlite3-wal").exists() and not (folder / "tape.sqlite3-shm").exists()
    before = sorted(tape.name for tape in gh_proxied.list_tapes())

    def edited(name: str, edit) -> Path:
        copy = tmp_path / name
        shutil.copytree(folder, copy)
        edit(copy)
        return copy

    body = edited("body", lambda f: _edit_parquet(
        table_file(f, "bodies"), "data", lambda data: b"X" + data[1:]
    ))  # fmt: skip
    status = edited("status", lambda f: _edit_parquet(
        table_file(f, "exchanges"), "response_status", lambda _s: 200 if _s != 200 else 503
    ))  # fmt: skip

    def other_card_digest(f: Path) -> None:
        card = f / "README.md"
        text = card.read_text()
        digest = gh_proxied.digest(tape_name).digest
        card.write_text(text.replace(digest, "0" * 64))

    card = edited("card", other_card_digest)
    for copy, named in (
        (body, "bodies.parquet row 0 column 'data'"),
        (status, "exchanges.parquet row 0 column 'response_status'"),
        (card, "the card states " + "0" * 64),
    ):
        for command in ("import", "verify"):
            args = ["tape", command, str(copy)]
            if command == "import":
                args += ["--name", f"{tape_name}-{copy.name}"]
            code, output = cli(resolver, *args)
            assert code == 1 and named in " ".join(output.split()), (command, output)
    assert sorted(tape.name for tape in gh_proxied.list_tapes()) == before
