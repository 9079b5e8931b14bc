"""Who may ask the detection service, and how much: client tokens, quotas and the audit log.

The detector holds the deployment's secret key, so an open service is an oracle: a client that
may query it freely can edit a text until its p-value rises past the threshold, or learn which
tokens are green where. ``serve --tokens-file`` therefore admits only listed clients:

* **Tokens file**: one client per line, ``NAME TOKEN [texts_per_minute=N] [chars_per_day=N]``;
  ``TOKEN`` is the bearer token itself (at least 16 characters) or ``sha256:<hex>`` of it;
  ``#`` starts a comment. The file must not be readable by group or others. It is read at start
  and again on SIGHUP (:meth:`Clients.reload`), so tokens rotate without a restart.
* **Authentication**: ``Authorization: Bearer <token>``; the SHA-256 of the presented token is
  compared with every client's in constant time (:func:`hmac.compare_digest`).
* **Quotas**: per client, two token buckets, texts per minute and characters per day; a request
  over either is refused with the seconds until it would fit (HTTP 429, ``Retry-After``).
* **Audit log**: one JSON line per request: time, client, endpoint, status, texts, characters,
  windows, texts flagged as watermarked, seconds. Never a text, a token or a key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import os
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from watermark.base import UserError

audit_logger = logging.getLogger("watermark.audit")

TEXTS_PER_MINUTE = 120  # an honest user of one service never waits on these
CHARS_PER_DAY = 2_000_000
MIN_TOKEN_CHARS = 16
QUOTA_FIELDS = ("texts_per_minute", "chars_per_day")


@dataclass
class Bucket:
    """A token bucket: ``capacity`` units, refilled at ``rate`` units per second."""

    capacity: float
    rate: float
    stamp: float
    level: float = field(init=False)

    def __post_init__(self) -> None:
        self.level = self.capacity

    def wait(self, units: float, now: float) -> float:
        """Seconds until ``units`` fit (0: now); refills first."""
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
        self.stamp = now
        if units > self.capacity:
            return math.inf
        return max(0.0, (units - self.level) / self.rate)


@dataclass
class Client:
    """One line of the tokens file."""

    name: str
    token_hash: bytes
    texts_per_minute: int = TEXTS_PER_MINUTE
    chars_per_day: int = CHARS_PER_DAY


class QuotaExceededError(Exception):
    """A client is over its quota; ``retry_after`` in whole seconds."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def parse_tokens(text: str, source: str) -> list[Client]:
    """The clients of a tokens file's text; a malformed line is a UserError naming it."""
    clients, names = [], set()
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{source}:{n}"
        parts = line.split()
        if len(parts) < 2:
            raise UserError(
                f"{where}: expected 'NAME TOKEN [texts_per_minute=N] [chars_per_day=N]'"
            )
        name, token, options = parts[0], parts[1], parts[2:]
        if name in names:
            raise UserError(f"{where}: client {name!r} is listed twice")
        if token.startswith("sha256:"):
            try:
                digest = bytes.fromhex(token[7:])
            except ValueError:
                digest = b""
            if len(digest) != 32:
                raise UserError(f"{where}: a hashed token is sha256: and 64 hex digits")
        elif len(token) < MIN_TOKEN_CHARS:
            raise UserError(
                f"{where}: the token of {name!r} is shorter than {MIN_TOKEN_CHARS} characters"
            )
        else:
            digest = token_hash(token)
        quotas = {}
        for option in options:
            key, _, value = option.partition("=")
            if key not in QUOTA_FIELDS or not value.isdigit() or int(value) < 1:
                raise UserError(
                    f"{where}: unknown option {option!r}; use "
                    "texts_per_minute=N or chars_per_day=N (N >= 1)"
                )
            quotas[key] = int(value)
        clients.append(Client(name, digest, **quotas))
        names.add(name)
    if not clients:
        raise UserError(f"{source}: no clients listed")
    return clients


def read_tokens_file(path: str | os.PathLike[str]) -> list[Client]:
    """Reads a tokens file, refusing one that group or others may read (UserError)."""
    path = Path(path).expanduser()
    mode = path.stat().st_mode  # FileNotFoundError: a user mistake on the command line
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise UserError(
            f"tokens file {path} is readable by group or others (mode "
            f"{stat.S_IMODE(mode):04o}); run chmod 600 {path}"
        )
    return parse_tokens(path.read_text(encoding="utf-8"), str(path))


class Clients:
    """The admitted clients, their quotas and the audit log of a service.

    Args:
        path: The tokens file (re-read by :meth:`reload`).
        clock: Seconds, monotonic (the quotas' time; tests pass their own).
    """

    def __init__(self, path: str | os.PathLike[str], clock=time.monotonic) -> None:
        self.path, self.clock = Path(path), clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[Bucket, Bucket]] = {}
        self.clients = read_tokens_file(self.path)

    def reload(self) -> None:
        """Reads the tokens file again (SIGHUP); on a bad file, keeps the current clients."""
        try:
            clients = read_tokens_file(self.path)
        except (UserError, OSError) as err:
            audit_logger.error(json.dumps({"event": "reload failed", "error": str(err)}))
            return
        with self._lock:
            self.clients = clients
            known = {c.name for c in clients}
            self._buckets = {k: v for k, v in self._buckets.items() if k in known}
        audit_logger.info(json.dumps({"event": "reloaded", "clients": len(clients)}))

    def authenticate(self, header: str | None) -> Client | None:
        """The client whose token the ``Authorization`` header bears, else None."""
        if not header or not header.startswith("Bearer "):
            return None
        presented = token_hash(header[len("Bearer ") :].strip())
        found = None
        for client in self.clients:  # every client compared: no early exit
            if hmac.compare_digest(presented, client.token_hash):
                found = client
        return found

    def charge(self, client: Client, texts: int, chars: int) -> None:
        """Takes ``texts`` and ``chars`` from the client's quotas, or raises
        :class:`QuotaExceededError` and takes nothing."""
        now = self.clock()
        with self._lock:
            buckets = self._buckets.get(client.name)
            if buckets is None or buckets[0].capacity != client.texts_per_minute:
                per_text = Bucket(client.texts_per_minute, client.texts_per_minute / 60, now)
                buckets = (
                    per_text,
                    Bucket(client.chars_per_day, client.chars_per_day / 86400, now),
                )
                self._buckets[client.name] = buckets
            per_minute, per_day = buckets
            waits = per_minute.wait(texts, now), per_day.wait(chars, now)
            if max(waits) > 0:
                which = "texts per minute" if waits[0] >= waits[1] else "characters per day"
                if math.isinf(max(waits)):
                    raise QuotaExceededError(
                        f"request is larger than {client.name}'s quota of {which}",
                        retry_after=86400,
                    )
                raise QuotaExceededError(
                    f"over the quota of {which} of client {client.name}",
                    retry_after=math.ceil(max(waits)),
                )
            per_minute.level -= texts
            per_day.level -= chars


def audit(record: dict) -> None:
    """Writes one audit line (the caller passes counts and names only, never text or tokens)."""
    audit_logger.info(json.dumps(record, sort_keys=True))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (a host name other than localhost is not)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def audit_to(path: str | None) -> None:
    """Sends the audit log to ``path`` (created mode 0600) or to stderr."""
    audit = logging.getLogger("watermark.audit")
    audit.setLevel(logging.INFO)
    audit.propagate = False
    if path:
        os.close(os.open(path, os.O_CREAT | os.O_APPEND | os.O_WRONLY, 0o600))
        handler: logging.Handler = logging.FileHandler(path, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    audit.addHandler(handler)
