"""Stable seed derivation: every random choice in the harness descends from a base seed by hashing."""

from __future__ import annotations

import hashlib

import numpy as np

DEFAULT_SEED = 20260101


def derive_seed(*parts: object) -> int:
    """Derive a 63-bit seed from parts joined with '|', via sha256, never Python's hash()."""
    text = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def rng(*parts: object) -> np.random.Generator:
    """A numpy generator seeded from derive_seed(parts)."""
    return np.random.default_rng(derive_seed(*parts))
