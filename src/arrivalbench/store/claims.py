"""Imported verdicts are claims: a grade record is kept only with a tag this grader made.

An Inspect log is a file anyone can write. The scorer (agent.inspect_task) tags each grade record
with an HMAC-SHA256 under a key only this machine's grader holds; `import-inspect` keeps a record
whose tag verifies and grades every other cell again. The key is 32 random bytes, made once with
0600 permissions at $ARRIVALBENCH_GRADER_KEY_FILE, else grader.key in the verdict cache folder
(cache.default_cache_dir). It never leaves the machine: a log scored elsewhere is re-graded here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path
from typing import Any

from arrivalbench.store.errors import RunStoreError

KEY_FILE_ENV = "ARRIVALBENCH_GRADER_KEY_FILE"
DOMAIN = b"arrivalbench grade record v1\0"
"""Prefixed to what is tagged, so a tag over a record is never a tag over anything else."""


def key_path() -> Path:
    explicit = os.environ.get(KEY_FILE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    from arrivalbench.cache import default_cache_dir

    return default_cache_dir() / "grader.key"


def grader_key(path: Path | None = None) -> bytes:
    """This grader's key, made on first use; a key file others can read, or a symlink, is refused."""
    path = path or key_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32) + "\n")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise RunStoreError(
            f"{path}: the grader's key cannot be read ({exc.strerror}); remove it (a new one is "
            f"made) or point {KEY_FILE_ENV} at a regular file."
        ) from None
    with os.fdopen(fd, "r") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
            raise RunStoreError(
                f"{path}: the grader's key is readable by others (mode "
                f"{stat.S_IMODE(info.st_mode):o}); run 'chmod 600 {path}', or remove it to make a "
                "new one (kept verdicts of older logs are then graded again)."
            )
        text = handle.read().strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 32:
        raise RunStoreError(
            f"{path}: not a grader key (64 hex digits); remove it and a new one is made."
        )
    return key


def canonical(record: dict[str, Any]) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign_record(record: dict[str, Any], key: bytes | None = None) -> str:
    """The tag of a grade record (hex HMAC-SHA256 of its canonical JSON)."""
    return hmac.new(key or grader_key(), DOMAIN + canonical(record), hashlib.sha256).hexdigest()


def record_is_authentic(record: dict[str, Any], tag: object, key: bytes | None = None) -> bool:
    """Whether `tag` is this grader's tag of `record` (compared in constant time)."""
    if not isinstance(tag, str):
        return False
    return hmac.compare_digest(sign_record(record, key), tag)
