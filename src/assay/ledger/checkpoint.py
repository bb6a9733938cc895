"""Signed tree heads: a ledger's size and Merkle root at a moment, signed with Ed25519.

A ``Checkpoint`` signs exactly the bytes of ``checkpoint_message``::

    assay-checkpoint/v1\\n{size}\\n{root}\\n{timestamp}\\n

``size`` in decimal, ``root`` as 64 lowercase hex digits, ``timestamp`` as RFC 3339 UTC.
``key_id``, the first 16 hex digits of the SHA-256 of the raw public key, picks the key to
verify with and is not itself signed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from assay.errors import CheckpointError, SigningKeyError
from assay.ledger.entry import instant_problem

_FORMAT = "assay-checkpoint/v1"
_SEED_SIZE = 32
_SIGNATURE_SIZE = 64
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?Z")


class Checkpoint(BaseModel):
    """A signed tree head: the ledger had ``size`` entries with Merkle ``root`` at ``timestamp``."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    size: int = Field(ge=0, description="the number of entries the tree covers")
    root: str = Field(pattern=r"^[0-9a-f]{64}$", description="the Merkle root, lowercase hex")
    timestamp: str = Field(description="when it was signed, RFC 3339 UTC ending in Z")
    key_id: str = Field(
        pattern=r"^[0-9a-f]{16}$", description="SHA-256 of the raw public key, first 16 hex"
    )
    signature: str = Field(description="Ed25519 over checkpoint_message(), standard base64")

    @field_validator("timestamp")
    @classmethod
    def _rfc3339_utc(cls, value: str) -> str:
        if not _TIMESTAMP.fullmatch(value):
            raise ValueError("expected RFC 3339 UTC like 2026-07-23T16:49:52.123456Z")
        problem = instant_problem(value)
        if problem is not None:
            raise ValueError(f"the time {problem}")
        return value

    @field_validator("signature")
    @classmethod
    def _canonical_base64(cls, value: str) -> str:
        _signature_bytes(value)
        return value

    def message(self) -> bytes:
        """The exact bytes the signature covers."""
        return checkpoint_message(self.size, self.root, self.timestamp)


def checkpoint_message(size: int, root: str, timestamp: str) -> bytes:
    """The canonical byte string a checkpoint's Ed25519 signature is made over."""
    return f"{_FORMAT}\n{size}\n{root}\n{timestamp}\n".encode()


def key_id(public_key: Ed25519PublicKey) -> str:
    """The id of a public key: the first 16 hex digits of SHA-256 of its raw 32 bytes."""
    return hashlib.sha256(public_key.public_bytes_raw()).hexdigest()[:16]


class SigningKey:
    """The Ed25519 private key that signs checkpoints; its ``repr`` never shows the key."""

    __slots__ = ("_key_id", "_private", "_public")

    def __init__(self, private_key: Ed25519PrivateKey) -> None:
        self._private = private_key
        self._public = private_key.public_key()
        self._key_id = key_id(self._public)

    @property
    def public_key(self) -> Ed25519PublicKey:
        """The public half, which verifies this key's checkpoints."""
        return self._public

    @property
    def key_id(self) -> str:
        """``key_id(public_key)``, written into every checkpoint this key signs."""
        return self._key_id

    @classmethod
    def generate(cls) -> SigningKey:
        """A new random key, for tests and for a first run that then saves it."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_pem(
        cls, data: bytes | str, *, password: bytes | None = None, source: str = "PEM data"
    ) -> SigningKey:
        """Load a PKCS#8 PEM private key, as ``save`` writes; ``source`` names it in errors."""
        raw = data.encode() if isinstance(data, str) else data
        try:
            key = serialization.load_pem_private_key(raw, password=password)
        except (ValueError, TypeError, UnsupportedAlgorithm) as error:
            raise SigningKeyError(
                f"{source}: expected a PEM Ed25519 private key; it could not be loaded "
                f"({_reason(error)})",
                source=source,
            ) from None
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError(
                f"{source}: expected an Ed25519 private key, found {type(key).__name__}; "
                f"checkpoints are signed with Ed25519 only",
                source=source,
            )
        return cls(key)

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], *, password: bytes | None = None
    ) -> SigningKey:
        """Load a PEM private key file, as written by ``save``."""
        return cls.from_pem(Path(path).read_bytes(), password=password, source=str(path))

    @classmethod
    def from_seed(cls, text: str, *, source: str = "seed") -> SigningKey:
        """Load a raw 32-byte Ed25519 seed given as 64 hex digits or as base64."""
        seed = _seed_bytes(text.strip())
        if seed is None:
            raise SigningKeyError(
                f"{source}: expected a 32-byte Ed25519 seed as 64 hex digits or base64, "
                f"or a PEM private key; got {len(text.strip())} characters that are neither",
                source=source,
            )
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @classmethod
    def from_env(cls, name: str, environ: Mapping[str, str] | None = None) -> SigningKey:
        """Load the key from environment variable ``name``: a PEM key, or a hex/base64 seed."""
        value = (os.environ if environ is None else environ).get(name)
        if value is None or not value.strip():
            raise SigningKeyError(
                f"environment variable {name} is not set; set it to a PEM Ed25519 private key "
                f"or a 32-byte seed in hex or base64",
                source=name,
            )
        if value.lstrip().startswith("-----BEGIN"):
            return cls.from_pem(value, source=name)
        return cls.from_seed(value, source=name)

    def private_key_pem(self) -> bytes:
        """The private key as unencrypted PKCS#8 PEM; keep it secret."""
        return self._private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``private_key_pem()`` to a new file readable by its owner only.

        Refuses (``FileExistsError``) to overwrite, since a lost key cannot sign again.
        """
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(self.private_key_pem())

    def public_key_pem(self) -> str:
        """The public key as SubjectPublicKeyInfo PEM, to hand to verifiers."""
        return self.public_key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ).decode()

    def sign(self, size: int, root: bytes | str, timestamp: datetime | str) -> Checkpoint:
        """Sign a tree head: ``root`` as 32 bytes or hex, ``timestamp`` aware or RFC 3339 UTC."""
        if isinstance(root, bytes):
            if len(root) != hashlib.sha256().digest_size:
                raise CheckpointError(
                    f"root must be a 32-byte SHA-256 digest, not {len(root)} bytes", field="root"
                )
            root = root.hex()
        if isinstance(timestamp, datetime):
            timestamp = _format_timestamp(timestamp)
        signature = self._private.sign(checkpoint_message(size, root, timestamp))
        return _checkpoint(
            {
                "size": size,
                "root": root,
                "timestamp": timestamp,
                "key_id": self.key_id,
                "signature": base64.b64encode(signature).decode(),
            }
        )

    def __repr__(self) -> str:
        return f"SigningKey(key_id={self.key_id!r})"


def load_public_key(data: bytes | str, *, source: str = "public key") -> Ed25519PublicKey:
    """Load an Ed25519 public key from SubjectPublicKeyInfo PEM (``public_key_pem()``)."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        key = serialization.load_pem_public_key(raw)
    except (ValueError, UnsupportedAlgorithm) as error:
        raise SigningKeyError(
            f"{source}: expected a PEM Ed25519 public key; it could not be loaded "
            f"({_reason(error)})",
            source=source,
        ) from None
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(
            f"{source}: expected an Ed25519 public key, found {type(key).__name__}",
            source=source,
        )
    return key


def verify_checkpoint(checkpoint: Checkpoint, public_key: Ed25519PublicKey | bytes | str) -> None:
    """Check that ``checkpoint`` is well formed and signed by ``public_key`` (a key or its PEM).

    Returns ``None`` when it holds; raises ``CheckpointError`` naming the field at fault.
    """
    if not isinstance(public_key, Ed25519PublicKey):
        public_key = load_public_key(public_key)
    # Re-validate: model_copy(update=...) and model_construct() skip the model's checks.
    checkpoint = _checkpoint({name: getattr(checkpoint, name) for name in Checkpoint.model_fields})
    expected_id = key_id(public_key)
    if checkpoint.key_id != expected_id:
        raise CheckpointError(
            f"the checkpoint names signing key {checkpoint.key_id}, but the public key given is "
            f"{expected_id}; verify with the key that signed it",
            field="key_id",
        )
    try:
        public_key.verify(_signature_bytes(checkpoint.signature), checkpoint.message())
    except InvalidSignature:
        raise CheckpointError(
            f"the signature does not match this size, root and timestamp under key "
            f"{expected_id}: the checkpoint was altered after signing",
            field="signature",
        ) from None


def _checkpoint(fields: dict[str, Any]) -> Checkpoint:
    try:
        return Checkpoint.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else "checkpoint"
        raise CheckpointError(
            f"checkpoint field {field!r} is malformed: {first['msg']}; got {first['input']!r}",
            field=field,
        ) from None


def _signature_bytes(value: str) -> bytes:
    """Decode a signature, accepting only the one canonical base64 spelling of 64 bytes."""
    try:
        decoded = base64.b64decode(value, validate=True)
    except binascii.Error:
        decoded = b""
    if len(decoded) != _SIGNATURE_SIZE or base64.b64encode(decoded).decode() != value:
        raise ValueError(f"expected {_SIGNATURE_SIZE} bytes in canonical standard base64")
    return decoded


def _seed_bytes(text: str) -> bytes | None:
    if re.fullmatch(r"[0-9a-fA-F]{64}", text):
        return bytes.fromhex(text)
    try:
        seed = base64.b64decode(text, validate=True)
    except binascii.Error:
        return None
    return seed if len(seed) == _SEED_SIZE else None


def _format_timestamp(moment: datetime) -> str:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise CheckpointError(
            f"timestamp must be timezone-aware, not naive {moment.isoformat()}",
            field="timestamp",
        )
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _reason(error: Exception) -> str:
    # cryptography's messages say what was wrong (format, password) and never quote the key.
    return str(error).split("\n", 1)[0] or type(error).__name__
