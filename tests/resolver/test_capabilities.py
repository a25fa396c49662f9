"""Branch capabilities: derivation, the tape's policy and the check (resolver/capabilities.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.tape_settings import TapeSettings, stored_settings
from resolver.capabilities import (
    CAPABILITY_LENGTH,
    BranchCapabilities,
    Capabilities,
    CapabilityRefused,
    capability_digest,
    default_for,
)

KEY = bytes(range(32))
REQUIRED = TapeSettings(branch_capabilities=BranchCapabilities.REQUIRED)


def test_a_capability_is_stable_and_url_safe() -> None:
    first = Capabilities(KEY).of(7, "root/b0")
    again = Capabilities(KEY).of(7, "root/b0")  # another process with the same key
    assert first == again
    assert len(first) == CAPABILITY_LENGTH
    assert set(first) <= set("0123456789abcdef")


def test_every_tape_branch_and_key_has_its_own() -> None:
    book = Capabilities(KEY)
    seen = {
        book.of(7, "root/b0"),
        book.of(7, "root/b1"),  # sibling
        book.of(7, "root/b0/b0"),  # child
        book.of(7, "root"),  # parent
        book.of(8, "root/b0"),  # another tape
        book.of(70, "root/b0"),
        Capabilities(bytes(32)).of(7, "root/b0"),  # another deployment
    }
    assert len(seen) == 7


def test_a_capability_is_not_the_redaction_placeholder_of_the_same_text() -> None:
    import hashlib
    import hmac

    plain = hmac.new(KEY, b"7\x00root/b0", hashlib.sha256).hexdigest()[:CAPABILITY_LENGTH]
    assert Capabilities(KEY).of(7, "root/b0") != plain


def test_required_opens_exactly_its_own_branch() -> None:
    book = Capabilities(KEY)
    own = book.of(7, "root/b0")
    book.check(tape_id=7, tape="t", settings=REQUIRED, branch="root/b0", presented=own)
    for tape_id, branch, presented in [
        (7, "root/b1", own),
        (7, "root/b0/b0", own),
        (7, "root", own),
        (8, "root/b0", own),
        (7, "root/b0", None),
        (7, "root/b0", ""),
        (7, "root/b0", own.upper()),
        (7, "root/b0", own[:-1]),
        (7, "root/b0", "ÿ" * 32),
    ]:
        with pytest.raises(CapabilityRefused) as refused:
            book.check(
                tape_id=tape_id, tape="t", settings=REQUIRED, branch=branch, presented=presented
            )
        assert refused.value.status == 403
        assert refused.value.extras["decision"] == "refused"
        assert own not in refused.value.detail  # the refusal never tells a capability


def test_the_refusal_says_what_is_missing_and_how_to_give_it() -> None:
    book = Capabilities(KEY)
    with pytest.raises(CapabilityRefused) as missing:
        book.check(tape_id=7, tape="t", settings=REQUIRED, branch="root/b0", presented=None)
    assert "presented none" in missing.value.detail
    assert "X-Groundhog-Capability" in missing.value.detail
    assert "TAPE:BRANCH:CAPABILITY" in missing.value.detail
    with pytest.raises(CapabilityRefused) as wrong:
        book.check(tape_id=7, tape="t", settings=REQUIRED, branch="root/b0", presented="00" * 16)
    assert "not this branch's" in wrong.value.detail


def test_optional_checks_nothing_and_the_tape_overrides_the_default() -> None:
    optional_default = Capabilities(KEY)
    optional_default.check(
        tape_id=7, tape="t", settings=TapeSettings(), branch="root", presented=None
    )
    optional_default.check(
        tape_id=7, tape="t", settings=TapeSettings(), branch="root", presented="junk"
    )
    with pytest.raises(CapabilityRefused):
        optional_default.check(
            tape_id=7, tape="t", settings=REQUIRED, branch="root", presented=None
        )
    required_default = Capabilities(KEY, default=BranchCapabilities.REQUIRED)
    with pytest.raises(CapabilityRefused):
        required_default.check(
            tape_id=7, tape="t", settings=TapeSettings(), branch="root", presented=None
        )
    opted_out = TapeSettings(branch_capabilities=BranchCapabilities.OPTIONAL)
    required_default.check(tape_id=7, tape="t", settings=opted_out, branch="root", presented=None)


def test_a_stored_value_that_is_no_policy_is_refused_not_read_as_optional() -> None:
    with pytest.raises(ValidationError, match="'required' or 'optional'"):
        stored_settings({"branch_capabilities": "maybe"})


def test_the_policy_names_its_valid_values() -> None:
    with pytest.raises(ValueError, match="'required', 'optional'"):
        BranchCapabilities("sometimes")


def test_the_default_follows_the_listen_address() -> None:
    assert default_for(loopback_only=True) is BranchCapabilities.OPTIONAL
    assert default_for(loopback_only=False) is BranchCapabilities.REQUIRED


def test_the_digest_a_lease_holder_compares_is_not_the_capability() -> None:
    capability = Capabilities(KEY).of(7, "root/b0")
    digest = capability_digest(capability)
    assert digest != capability and capability not in digest
    assert digest == capability_digest(capability)
