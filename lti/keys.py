"""The tool's RSA key pair: made on first use and kept in the database (never in the repository)."""

from __future__ import annotations

import json
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.db import IntegrityError, transaction
from jwcrypto.jwk import JWK

from lti.models import ToolKey


def _new_key() -> ToolKey:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private_pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    kid = JWK.from_pem(public_pem.encode()).thumbprint()
    return ToolKey(kid=kid, private_key=private_pem, public_key=public_pem)


def current_key() -> ToolKey:
    """The newest key, made now if there is none (two processes racing keep one each, both valid)."""
    key = ToolKey.objects.order_by("-created", "-pk").first()
    if key is not None:
        return key
    key = _new_key()
    try:
        with transaction.atomic():
            key.save()
    except IntegrityError:  # pragma: no cover - the same thumbprint twice cannot happen in practice
        return ToolKey.objects.order_by("-created", "-pk").first() or key
    return key


def public_jwk(key: ToolKey) -> dict[str, Any]:
    jwk = json.loads(JWK.from_pem(key.public_key.encode()).export_public())
    jwk.update({"kid": key.kid, "alg": "RS256", "use": "sig"})
    return jwk


def jwks() -> dict[str, list[dict[str, Any]]]:
    """Every key the tool holds (an old key stays listed while platforms may still verify with it)."""
    current_key()
    return {"keys": [public_jwk(key) for key in ToolKey.objects.order_by("-created", "-pk")]}
