"""GitHub App authentication as the test server enforces it: RS256 JWTs and installation tokens."""

from __future__ import annotations

import base64
import secrets
from datetime import UTC, datetime, timedelta

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.testing.state import Token

# GitHub refuses app JWTs that live longer than ten minutes; allow a minute of clock drift.
MAX_JWT_LIFETIME = 600
CLOCK_DRIFT = 60
TOKEN_LIFETIME = timedelta(hours=1)


class AuthError(Exception):
    """The request's credentials were refused; the message is what GitHub would say."""


def generate_private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def public_key_pem(private_key_pem: str) -> str:
    key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def verify_app_jwt(
    token: str, public_pem: str, app_id: int, *, now: datetime | None = None
) -> None:
    """Raise AuthError unless `token` is an RS256 JWT signed by the app, issued for `app_id`."""
    moment = int((now or datetime.now(UTC)).timestamp())
    try:
        claims = jwt.decode(
            token,
            public_pem,
            algorithms=["RS256"],
            options={"require": ["iat", "exp", "iss"], "verify_iss": False},
            leeway=CLOCK_DRIFT,
        )
    except jwt.ExpiredSignatureError as exc:
        raise AuthError(
            "'Expiration time' claim ('exp') must be a numeric value in the future"
        ) from exc
    except jwt.PyJWTError as exc:
        raise AuthError(f"A JSON web token could not be decoded ({exc})") from exc
    if str(claims["iss"]) != str(app_id):
        raise AuthError("'Issuer' claim ('iss') must match the app id")
    iat, exp = int(claims["iat"]), int(claims["exp"])
    if iat > moment + CLOCK_DRIFT:
        raise AuthError("'Issued at' claim ('iat') must be a time in the past")
    if exp - iat > MAX_JWT_LIFETIME + CLOCK_DRIFT:
        raise AuthError("'Expiration time' claim ('exp') is too far in the future")


def mint_installation_token(installation_id: int, *, now: datetime | None = None) -> Token:
    # Real installation tokens start with "ghs_" followed by 36 base62-ish characters.
    body = base64.b32encode(secrets.token_bytes(25)).decode().rstrip("=")[:36]
    return Token(
        value=f"ghs_{body}",
        installation_id=installation_id,
        expires_at=(now or datetime.now(UTC)) + TOKEN_LIFETIME,
    )


RATE_LIMIT = 5000


def rate_limit_status(token: Token | None, *, now: datetime | None = None) -> dict[str, int]:
    """The core rate-limit window for a token: 5000 requests an hour, as for installations."""
    used = token.used if token else 0
    reset = token.expires_at if token else (now or datetime.now(UTC)) + TOKEN_LIFETIME
    return {
        "limit": RATE_LIMIT,
        "remaining": max(0, RATE_LIMIT - used),
        "reset": int(reset.timestamp()),
        "used": used,
    }


def bearer_value(authorization: str | None) -> str | None:
    """The credential in an `Authorization: token X` or `Bearer X` header."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() in ("token", "bearer") and value.strip():
        return value.strip()
    return None


def basic_password(authorization: str | None) -> str | None:
    """The password of an `Authorization: Basic` header (git sends x-access-token:<token>)."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    _, sep, password = decoded.partition(":")
    return password if sep else None
