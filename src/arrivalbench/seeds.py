"""Stable seed derivation: every random choice in the harness descends from a base seed by hashing.

A run has a public base seed (the visible log, which the agent sees and anyone may rebuild) and,
for an official run, a secret: the hidden logs then descend from a base seed hashed from the
secret's content, and what is stored or printed is only a SHA-256 commitment of the secret, so
nobody can rebuild the hidden logs (and their oracle) without the seed file.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from arrivalbench.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

DEFAULT_SEED = 20260101
SEED_FILE_ENV = "ARRIVALBENCH_SEED_FILE"
"""Environment variable naming a seed file; the secret itself never goes on a command line."""
SECRET_BYTES = 32
MIN_SECRET_HEX = 32
"""A secret holds at least 128 bits (32 hex digits), so a guessable one such as '42' is refused."""
_HEX = re.compile(r"[0-9a-f]+")
MAX_SEED = 2**63 - 1
"""Seeds are stored as signed 64-bit integers (verdict rows, Parquet) and mixed into sha256-derived seeds."""
SEED_RANGE = "an integer from 0 to 2**63 - 1"
GATE_SEED_COUNT = 3
"""The gate admits every task at this many seeds (gate_seeds); a declaration must hold at each."""


def gate_seeds(count: int = GATE_SEED_COUNT, base: int = DEFAULT_SEED) -> list[int]:
    """The seeds the gate admits tasks at: the base seed and the next `count - 1` integers.

    Consecutive integers keep them readable where a task scopes its declarations to some of them
    (`seeds:` in task.yaml); each one's logs are as unrelated to the others' as any two seeds',
    since every log descends from its seed by hashing.
    """
    if count < 1:
        raise UsageError(f"--seeds must be at least 1, not {count}.")
    return [base + i for i in range(count) if base + i <= MAX_SEED]


def is_seed(value: object) -> bool:
    """Whether a value can be a public base seed (the one rule for --seed, run manifests and
    schedule files); a private seed is a hash of a seed file's secret and never passes through here."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SEED


def derive_seed(*parts: object, bits: int = 63) -> int:
    """Derive a seed from parts joined with '|': the top `bits` bits (at most 256) of their sha256,
    never Python's hash()."""
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest(), "big") >> (256 - bits)


def rng(*parts: object) -> np.random.Generator:
    """A numpy generator seeded from derive_seed(parts) (numpy imported here: the CLI imports
    this module for its seed options, and answers --help without numpy)."""
    import numpy as np

    return np.random.default_rng(derive_seed(*parts))


@dataclass(frozen=True)
class PrivateSeed:
    """The hidden logs' base seed, hashed from a seed file's secret, with the secret's commitment.

    `seed` is never written or printed (it is left out of the repr); `commitment` is what runs,
    records and schedule files store to say which secret they need.
    """

    seed: int = field(repr=False)
    commitment: str
    path: str
    """Where the secret was read from, for the replay hints; a path, never the secret."""

    @property
    def short(self) -> str:
        """The commitment's first 12 hex digits, for messages and titles."""
        return self.commitment[:12] + "…"


def commitment_of(secret: str) -> str:
    """The SHA-256 commitment of a secret: sha256 of its hex text (lower case, no whitespace)."""
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def private_seed(secret: str, path: str = "<secret>") -> PrivateSeed:
    """The hidden logs' base seed of a secret: a stable hash of its content, never the content itself.

    It keeps 255 bits, not derive_seed's 63: a schedule file or a verdict carries values derived
    from it cheaply (a schedule's own seed), and 2**63 candidates can be searched, 2**255 cannot.
    """
    return PrivateSeed(
        seed=derive_seed("arrivalbench-private-base-seed", secret, bits=255),
        commitment=commitment_of(secret),
        path=path,
    )


def read_seed_file(path: Path | str, fix: str | None = None) -> PrivateSeed:
    """The private seed held by a seed file; a missing, unreadable or weak file is a UsageError.

    Messages name the file, end with `fix` (default: how to make a new one) and never echo the
    file's content.
    """
    path = Path(path)
    fix = fix or "make a new one with 'arrivalbench new-seed --out FILE'"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: seed file not found; {fix}.") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the seed file ({exc.strerror}).") from None
    try:
        secret = raw.decode("ascii").strip().lower()
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a seed file (not hex text); {fix}.") from None
    if not _HEX.fullmatch(secret) or len(secret) < MIN_SECRET_HEX:
        raise UsageError(
            f"{path}: not a seed file (expected one line of at least {MIN_SECRET_HEX} hex digits, "
            f"found {len(secret)} characters); {fix}."
        )
    return private_seed(secret, str(path))


def resolve_seed_file(path: Path | None, fix: str | None = None) -> PrivateSeed | None:
    """The private seed of --seed-file, else of $ARRIVALBENCH_SEED_FILE, else None (a public run)."""
    if path is not None:
        return read_seed_file(path, fix)
    from_env = os.environ.get(SEED_FILE_ENV)
    return read_seed_file(from_env, fix) if from_env else None


def write_seed_file(path: Path | str) -> PrivateSeed:
    """Write a fresh random secret (mode 0600) to a new file; an existing file is never overwritten."""
    path = Path(path)
    secret = secrets.token_hex(SECRET_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise UsageError(
            f"{path}: already exists; a seed file is never overwritten (runs made with it need it). "
            "Choose a new --out."
        ) from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot create the seed file ({exc.strerror}).") from None
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secret + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        path.unlink(missing_ok=True)
        raise UsageError(f"{path}: cannot write the seed file ({exc.strerror}).") from None
    return private_seed(secret, str(path))
