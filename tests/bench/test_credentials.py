"""The interchangeable-credentials setting is read from the resolver's OpenAPI document."""

from __future__ import annotations

from bench import credentials


def _openapi(properties: dict) -> dict:
    return {"components": {"schemas": {"TapeConfig": {"properties": properties}}}}


def test_a_host_list_setting_names_the_world_host() -> None:
    document = _openapi({"name": {}, "interchangeable_credential_hosts": {"type": "array"}})
    assert credentials.interchangeable_settings(document, "w") == {
        "interchangeable_credential_hosts": ["w"]
    }


def test_a_boolean_setting_is_switched_on() -> None:
    document = _openapi({"credentials_interchangeable": {"type": "boolean"}})
    assert credentials.interchangeable_settings(document, "w") == {
        "credentials_interchangeable": True
    }


def test_no_setting_means_nothing_to_declare() -> None:
    assert credentials.interchangeable_settings(_openapi({"rules": {}}), "w") == {}
    assert credentials.detect("http://127.0.0.1:9", "w", timeout=0.5) == {}
