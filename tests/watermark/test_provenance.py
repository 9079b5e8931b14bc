"""What a text was made with against what detects it (watermark.detect.provenance): the key's
public id, the token level's fingerprint, and the one line that says what differs and what the
result then means."""

from __future__ import annotations

import hashlib
import hmac
import re
from types import SimpleNamespace

import pytest

from watermark.config.keys import DEMO_KEY, KEY_ID_LABEL, key_id
from watermark.detect.provenance import Identity

DEFAULT = Identity("wm-aaa", "wm-aaa", (key_id("mine"), key_id("older")))
ROBUST = Identity("wm-bbb", "wm-aaa", (key_id("mine"),))  # the same token level, the layer on


def test_a_key_id_is_a_truncated_hmac_of_a_fixed_label() -> None:
    kid = key_id("mine")
    full = hmac.new(b"mine", KEY_ID_LABEL, hashlib.sha256).hexdigest()
    assert kid == "key-" + full[:12] and kid != key_id("mine ") and "mine" not in kid
    assert key_id(DEMO_KEY) == key_id(DEMO_KEY)  # stable: the same key, the same id


@pytest.mark.parametrize(
    "made,detector,matches,says",
    [
        (DEFAULT.record(), DEFAULT, (True, True), None),
        ({**DEFAULT.record(), "key_id": key_id("older")}, DEFAULT, (True, True), None),  # rotated
        ({**DEFAULT.record(), "key_id": key_id(DEMO_KEY)}, DEFAULT, (True, False),
         r"another key \(key-[0-9a-f]{12}, the public demo key; this config tests key-"),
        (ROBUST.record(), DEFAULT, (False, True),
         "same token level and the sentence layer on, which this config has off: only the "
         "token-level test ran, and it holds"),
        (DEFAULT.record(), ROBUST, (False, True),
         "same token level and without the sentence layer this config tests"),
        (Identity("wm-ccc", "wm-aaa", ROBUST.key_ids).record(), ROBUST, (False, True),
         "another sentence-layer setting: the token-level p_value"),
        (Identity("wm-ddd", "wm-ddd", DEFAULT.key_ids).record(), DEFAULT, (False, True),
         "another token level .*does not test as watermarked here"),
        ({"fingerprint": "wm-bbb"}, DEFAULT, (False, None), "does not say which part differs"),
    ],
)  # fmt: skip
def test_a_record_against_a_detector_names_what_differs(
    made: dict, detector: Identity, matches: tuple, says: str | None
) -> None:
    found = detector.compare(made)
    assert (found.get("fingerprint_matches"), found.get("key_matches")) == matches
    if says is None:
        assert "mismatch" not in found
    else:
        assert "\n" not in found["mismatch"]
        assert re.search(says, found["mismatch"]), found["mismatch"]
    assert detector.compare({}) == {}  # a plain string carries no record


def test_a_loaded_watermark_writes_its_record(tiny: SimpleNamespace) -> None:
    plain, layered = tiny.make(), tiny.make(sentence_bits=8)
    assert plain.identity.fingerprint == plain.fingerprint == plain.identity.token_fingerprint
    assert layered.identity.token_fingerprint == plain.fingerprint != layered.fingerprint
    assert plain.identity.key_ids == (key_id("test-key"),)
    assert plain.identity.record() == {
        "fingerprint": plain.fingerprint,
        "token_fingerprint": plain.fingerprint,
        "key_id": key_id("test-key"),
    }
    assert tiny.make(key="other").identity.key_ids != plain.identity.key_ids
