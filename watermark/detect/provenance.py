"""What a text was made with, written beside it, and what detection makes of a difference.

A watermark's :class:`Identity` holds three public values, none of them secret:

* ``fingerprint``: what generation and detection share (:func:`watermark.core.identity.
  fingerprint`: the models, the mapper, the rule, the sentence layer; never a key);
* ``token_fingerprint``: the same with the sentence layer left out, so the token level alone
  (equal to ``fingerprint`` where the layer is off);
* ``key_ids``: the public id of each key it tests (:func:`watermark.config.keys.key_id`), the
  config's ``key`` first (generation's), then its ``old_keys``.

Generation writes :meth:`Identity.record` with each text (the command line's JSONL). At
detection :meth:`Identity.compare` reads a record back and says what differs and what the result
then means: another key, or another token level, and the text does not test as watermarked here;
the same token level with another sentence-layer setting, and the token-level test holds. A
plain string carries no record, so nothing can be compared: keep the record with the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace

from watermark.config.keys import DEMO_KEY, key_id
from watermark.config.sections import Sentences
from watermark.core.identity import fingerprint
from watermark.core.scoring import WatermarkCore

DEMO_KEY_ID = key_id(DEMO_KEY)


@dataclass(frozen=True)
class Identity:
    """The public identity of a loaded watermark (module docstring)."""

    fingerprint: str
    token_fingerprint: str
    key_ids: tuple[str, ...]

    @classmethod
    def of(cls, core: WatermarkCore, full: str) -> Identity:
        """The identity of ``core``'s config, whose fingerprint is ``full`` (with the sentence
        layer's own parts, where it has them)."""
        found = core.semantic.digests
        token_level = replace(core.config, sentences=Sentences())  # the layer off
        token = fingerprint(token_level, core.vocab_size, found["mapper"], found["embedder"])
        return cls(full, token, tuple(key_id(k) for k in core.config.secret_keys()))

    @property
    def sentence_layer(self) -> bool:
        """Whether the sentence layer is on (it enters the fingerprint then)."""
        return self.fingerprint != self.token_fingerprint

    def record(self) -> dict[str, str]:
        """What to keep with a text this watermark made: ``fingerprint``, ``token_fingerprint``
        and ``key_id`` (the current key's)."""
        return {
            "fingerprint": self.fingerprint,
            "token_fingerprint": self.token_fingerprint,
            "key_id": self.key_ids[0],
        }

    def public(self) -> dict[str, object]:
        """Everything it holds, as JSON (the service's ``/v1/config``)."""
        return {**asdict(self), "key_ids": list(self.key_ids)}

    def compare(self, made_with: Mapping[str, object]) -> dict[str, object]:
        """What a text's record (``made_with``: a JSONL row, or :meth:`record`) says against
        this watermark: ``fingerprint_matches`` and ``key_matches`` where the record has them,
        and ``mismatch``, one line of what differs and what the result means, where something
        does. Empty for a record without any of the fields."""
        found: dict[str, object] = {}
        if "fingerprint" in made_with:
            found["fingerprint_matches"] = made_with["fingerprint"] == self.fingerprint
        if "key_id" in made_with:
            found["key_matches"] = made_with["key_id"] in self.key_ids
        message = self.mismatch(made_with)
        return {**found, "mismatch": message} if message else found

    def mismatch(self, made_with: Mapping[str, object]) -> str | None:
        """One line: what differs between the record and this watermark, and what the result
        then means; ``None`` where nothing recorded differs."""
        made_key, made = made_with.get("key_id"), made_with.get("fingerprint")
        other_key = made_key is not None and made_key not in self.key_ids
        if other_key:
            tested = ", ".join(self.key_ids)
            return (
                f"made under another key ({describe(made_key)}; this config tests {tested}): "
                "its green lists are others, so it does not test as watermarked here whatever "
                "the rest; detect it with the config that holds that key (or add the key to "
                "keys.old_keys)"
            )
        if made is None or made == self.fingerprint:
            return None
        token = made_with.get("token_fingerprint")
        if token is None:  # a record of 0.10 or earlier: the fingerprint alone
            return (
                f"made under another config (fingerprint {made}; this config's "
                f"{self.fingerprint}); the record does not say which part differs: if only the "
                "sentence layer does, the token-level p_value holds; if the mapper, embedder, "
                "generator or rule does, a watermark made that way does not test as watermarked "
                "here: detect it with its own config"
            )
        if token != self.token_fingerprint:
            return (
                f"made with another token level (mapper, embedder, generator, gate or rule: "
                f"{token}; this config's {self.token_fingerprint}): a watermark made that way "
                "does not test as watermarked here; detect it with its own config"
            )
        made_layer = made != token
        if made_layer and not self.sentence_layer:
            return (
                "made with the same token level and the sentence layer on, which this config "
                "has off: only the token-level test ran, and it holds (p_value, window_p_value); "
                "detect it with its own config to add the sentence test"
            )
        if not made_layer:
            return (
                "made with the same token level and without the sentence layer this config "
                "tests: the sentence test finds no mark, so read the token-level p_value (and "
                "window_p_value); the combined verdict stays valid, with less power"
            )
        return (
            "made with the same token level and another sentence-layer setting: the token-level "
            "p_value (and window_p_value) holds, the sentence test does not read that mark; "
            "detect it with its own config for the combined test"
        )


def describe(kid: object) -> str:
    """A key id for a message, naming the public demo key."""
    return f"{kid}, the public demo key" if kid == DEMO_KEY_ID else str(kid)
