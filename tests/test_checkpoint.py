"""Signed tree heads: the signed bytes, round trips, tampering, wrong keys and key loading."""

from __future__ import annotations

import base64
import os
import re
import stat
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from assay.errors import AssayError, CheckpointError, SigningKeyError
from assay.ledger.checkpoint import (
    Checkpoint,
    SigningKey,
    checkpoint_message,
    key_id,
    load_public_key,
    verify_checkpoint,
)
from assay.ledger.merkle import MerkleTree, leaf_hash

# RFC 8032 §7.1, TEST 1: an Ed25519 seed and the public key it must give.
RFC8032_SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
RFC8032_PUBLIC = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
ROOT = bytes(range(32))
WHEN = "2026-07-23T16:49:52.123456Z"


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return SigningKey.generate()


def test_the_signed_bytes_are_the_documented_ones() -> None:
    signer = SigningKey.from_seed(RFC8032_SEED)
    assert signer.public_key.public_bytes_raw().hex() == RFC8032_PUBLIC
    checkpoint = signer.sign(3, ROOT, WHEN)
    message = (
        b"assay-checkpoint/v1\n3\n"
        b"000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
        b"2026-07-23T16:49:52.123456Z\n"
    )
    assert checkpoint_message(3, ROOT.hex(), WHEN) == message
    assert checkpoint.message() == message
    # Verified with the RFC's public key directly, not through assay's code.
    Ed25519PublicKey.from_public_bytes(bytes.fromhex(RFC8032_PUBLIC)).verify(
        base64.b64decode(checkpoint.signature), message
    )
    assert checkpoint.model_dump() == {
        "size": 3,
        "root": ROOT.hex(),
        "timestamp": WHEN,
        "key_id": "21fe31dfa154a261",
        "signature": "U7NLMrWRZXa06gnSLZb+YPUyWHnkDL0jgT4gPsUvtM3aHfU3m7K6TMYEdcYxh29I"
        "zOq/lU7zkFH0qunQt/OTCA==",
    }


def test_round_trip_through_json(key: SigningKey) -> None:
    tree = MerkleTree(leaf_hash(bytes([i])) for i in range(10))
    checkpoint = key.sign(tree.size, tree.root(), datetime(2026, 7, 23, 16, 49, 52, tzinfo=UTC))
    assert checkpoint.root == tree.root().hex()
    assert checkpoint.timestamp == "2026-07-23T16:49:52.000000Z"
    assert checkpoint.key_id == key_id(key.public_key) == key.key_id
    copy = Checkpoint.model_validate_json(checkpoint.model_dump_json())
    assert copy == checkpoint
    verify_checkpoint(copy, key.public_key)
    verify_checkpoint(copy, key.public_key_pem())
    verify_checkpoint(copy, key.public_key_pem().encode())


def test_a_timestamp_in_another_zone_is_signed_in_utc(key: SigningKey) -> None:
    paris = timezone(timedelta(hours=2))
    checkpoint = key.sign(1, ROOT, datetime(2026, 7, 23, 18, 0, 0, 250, tzinfo=paris))
    assert checkpoint.timestamp == "2026-07-23T16:00:00.000250Z"
    verify_checkpoint(checkpoint, key.public_key)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("size", 4),
        ("size", 0),
        ("root", "ff" + ROOT.hex()[2:]),
        ("timestamp", "2026-07-23T16:49:52.123457Z"),
        ("timestamp", "2026-07-23T16:49:52.12345Z"),
    ],
)
def test_tampering_a_signed_field_breaks_the_signature(
    key: SigningKey, field: str, value: Any
) -> None:
    checkpoint = key.sign(3, ROOT, WHEN)
    for tampered in [
        checkpoint.model_copy(update={field: value}),
        Checkpoint.model_validate({**checkpoint.model_dump(), field: value}),
    ]:
        with pytest.raises(CheckpointError) as caught:
            verify_checkpoint(tampered, key.public_key)
        assert caught.value.field == "signature"
        assert str(caught.value) == (
            f"the signature does not match this size, root and timestamp under key "
            f"{key.key_id}: the checkpoint was altered after signing"
        )


def test_tampering_the_signature_or_key_id_fails(key: SigningKey) -> None:
    checkpoint = key.sign(3, ROOT, WHEN)
    raw = bytearray(base64.b64decode(checkpoint.signature))
    raw[10] ^= 1
    with pytest.raises(CheckpointError) as caught:
        verify_checkpoint(
            checkpoint.model_copy(update={"signature": base64.b64encode(raw).decode()}),
            key.public_key,
        )
    assert caught.value.field == "signature"

    with pytest.raises(CheckpointError) as caught:
        verify_checkpoint(checkpoint.model_copy(update={"key_id": "0" * 16}), key.public_key)
    assert caught.value.field == "key_id"


def test_only_the_canonical_base64_of_a_signature_is_accepted(key: SigningKey) -> None:
    checkpoint = key.sign(3, ROOT, WHEN)
    signature = checkpoint.signature
    # The last digit before "==" carries 2 bits; its low 4 bits must be zero to be canonical.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = alphabet.index(signature[-3])
    variant = signature[:-3] + alphabet[last | 1] + "=="
    assert base64.b64decode(variant) == base64.b64decode(signature)
    with pytest.raises(CheckpointError) as caught:
        verify_checkpoint(checkpoint.model_copy(update={"signature": variant}), key.public_key)
    assert caught.value.field == "signature"
    assert "canonical standard base64" in str(caught.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("size", -1),
        ("size", "3"),
        ("root", ROOT.hex().upper()),
        ("root", ROOT.hex()[:-2]),
        ("timestamp", "2026-02-30T00:00:00Z"),
        ("timestamp", "2026-07-23T16:49:52+00:00"),
        ("timestamp", "2026-07-23 16:49:52Z"),
        ("key_id", "21FE31DFA154A261"),
        ("signature", "not base64"),
        ("signature", base64.b64encode(bytes(63)).decode()),
    ],
)
def test_malformed_fields_are_named(key: SigningKey, field: str, value: Any) -> None:
    checkpoint = key.sign(3, ROOT, WHEN)
    with pytest.raises(CheckpointError) as caught:
        verify_checkpoint(checkpoint.model_copy(update={field: value}), key.public_key)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"checkpoint field {field!r} is malformed: ")
    with pytest.raises(ValueError, match=field):
        Checkpoint.model_validate({**checkpoint.model_dump(), field: value})


def test_a_wrong_key_fails(key: SigningKey) -> None:
    checkpoint = key.sign(3, ROOT, WHEN)
    other = SigningKey.generate()
    with pytest.raises(CheckpointError) as caught:
        verify_checkpoint(checkpoint, other.public_key)
    assert caught.value.field == "key_id"
    assert str(caught.value) == (
        f"the checkpoint names signing key {key.key_id}, but the public key given is "
        f"{other.key_id}; verify with the key that signed it"
    )
    # Relabelled with the other key's id, the signature itself still gives it away.
    relabelled = checkpoint.model_copy(update={"key_id": other.key_id})
    with pytest.raises(CheckpointError) as caught:
        verify_checkpoint(relabelled, other.public_key)
    assert caught.value.field == "signature"


def test_signing_rejects_bad_arguments(key: SigningKey) -> None:
    with pytest.raises(CheckpointError) as caught:
        key.sign(3, ROOT[:31], WHEN)
    assert str(caught.value) == "root must be a 32-byte SHA-256 digest, not 31 bytes"
    with pytest.raises(CheckpointError) as caught:
        key.sign(3, ROOT, datetime(2026, 7, 23, 16, 49, 52))
    assert caught.value.field == "timestamp"
    assert str(caught.value) == ("timestamp must be timezone-aware, not naive 2026-07-23T16:49:52")
    with pytest.raises(CheckpointError) as caught:
        key.sign(-1, ROOT, WHEN)
    assert caught.value.field == "size"
    with pytest.raises(CheckpointError) as caught:
        key.sign(1, ROOT, "yesterday")
    assert caught.value.field == "timestamp"


def test_pem_save_and_load(key: SigningKey, tmp_path: Path) -> None:
    path = tmp_path / "ledger.pem"
    key.save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    loaded = SigningKey.from_file(path)
    assert loaded.key_id == key.key_id
    verify_checkpoint(loaded.sign(5, ROOT, WHEN), key.public_key)
    with pytest.raises(FileExistsError):
        key.save(path)
    public = load_public_key(key.public_key_pem())
    assert public.public_bytes_raw() == key.public_key.public_bytes_raw()
    assert key.public_key_pem().startswith("-----BEGIN PUBLIC KEY-----\n")


def test_an_encrypted_pem_needs_its_password(key: SigningKey) -> None:
    private = serialization.load_pem_private_key(key.private_key_pem(), password=None)
    encrypted = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"hunter2"),
    )
    assert SigningKey.from_pem(encrypted, password=b"hunter2").key_id == key.key_id
    with pytest.raises(SigningKeyError) as caught:
        SigningKey.from_pem(encrypted, source="ledger.pem")
    assert str(caught.value) == (
        "ledger.pem: expected a PEM Ed25519 private key; it could not be loaded "
        "(Password was not given but private key is encrypted)"
    )
    with pytest.raises(SigningKeyError, match="Incorrect password"):
        SigningKey.from_pem(encrypted, password=b"wrong")


def test_a_malformed_key_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.pem"
    path.write_text("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
    with pytest.raises(SigningKeyError) as caught:
        SigningKey.from_file(path)
    assert caught.value.source == str(path)
    assert str(caught.value).startswith(
        f"{path}: expected a PEM Ed25519 private key; it could not be loaded ("
    )
    assert "bm90IGEga2V5" not in str(caught.value)

    path.write_text("just some text\n")
    with pytest.raises(
        SigningKeyError, match=f"^{re.escape(str(path))}: expected a PEM Ed25519 private key"
    ):
        SigningKey.from_file(path)

    other = ec.generate_private_key(ec.SECP256R1())
    path.write_bytes(
        other.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    with pytest.raises(SigningKeyError) as caught:
        SigningKey.from_file(path)
    assert str(caught.value) == (
        f"{path}: expected an Ed25519 private key, found ECPrivateKey; "
        f"checkpoints are signed with Ed25519 only"
    )
    with pytest.raises(SigningKeyError, match="expected an Ed25519 public key, found ECPublicKey"):
        load_public_key(
            other.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    with pytest.raises(SigningKeyError, match=r"^public key: expected a PEM Ed25519 public key"):
        verify_checkpoint(SigningKey.generate().sign(1, ROOT, WHEN), "not a key")


def test_seeds_from_hex_base64_and_the_environment() -> None:
    seed = bytes.fromhex(RFC8032_SEED)
    expected = SigningKey.from_seed(RFC8032_SEED).key_id
    assert SigningKey.from_seed(RFC8032_SEED.upper()).key_id == expected
    assert SigningKey.from_seed(base64.b64encode(seed).decode() + "\n").key_id == expected
    environ = {"LEDGER_KEY": RFC8032_SEED}
    assert SigningKey.from_env("LEDGER_KEY", environ).key_id == expected
    pem = SigningKey.from_seed(RFC8032_SEED).private_key_pem().decode()
    assert SigningKey.from_env("LEDGER_KEY", {"LEDGER_KEY": pem}).key_id == expected

    with pytest.raises(SigningKeyError) as caught:
        SigningKey.from_env("LEDGER_KEY", {})
    assert caught.value.source == "LEDGER_KEY"
    assert str(caught.value) == (
        "environment variable LEDGER_KEY is not set; set it to a PEM Ed25519 private key "
        "or a 32-byte seed in hex or base64"
    )
    short = RFC8032_SEED[:62]
    with pytest.raises(SigningKeyError) as caught:
        SigningKey.from_env("LEDGER_KEY", {"LEDGER_KEY": short})
    assert str(caught.value) == (
        "LEDGER_KEY: expected a 32-byte Ed25519 seed as 64 hex digits or base64, or a PEM "
        "private key; got 62 characters that are neither"
    )
    assert short not in str(caught.value)


def test_repr_hides_the_key(key: SigningKey) -> None:
    assert repr(key) == f"SigningKey(key_id={key.key_id!r})"
    private = serialization.load_pem_private_key(key.private_key_pem(), password=None)
    assert isinstance(private, Ed25519PrivateKey)
    assert private.private_bytes_raw().hex() not in repr(key)


def test_errors_are_assay_value_errors() -> None:
    for error in (CheckpointError, SigningKeyError):
        assert issubclass(error, AssayError)
        assert issubclass(error, ValueError)
