"""The gateway of challenge-hooks as the plugin calls it: settings, owners,
player tokens and the few routes of docs/gateway-api.md the plugin needs.

Player tokens are HS256 JWTs made here with the standard library (hmac,
hashlib, base64): a CTFd installed from its requirements.txt has no JWT
library, and an HS256 token is three base64url parts and one HMAC, which the
gateway verifies with jose.
"""

import base64
import hashlib
import hmac
import json
import os
import time

import requests
from flask import current_app

# name: (setting, default). Read from CTFd's app.config first (config.ini's
# [extra] section lands there), then from the environment.
SETTINGS = {
    "url": ("CHALLENGE_HOOKS_GATEWAY_URL", None),
    "public_url": ("CHALLENGE_HOOKS_GATEWAY_PUBLIC_URL", None),
    "key": ("CHALLENGE_HOOKS_GATEWAY_KEY", None),
    "token_key": ("CHALLENGE_HOOKS_TOKEN_KEY", None),
    "audience": ("CHALLENGE_HOOKS_AUDIENCE", None),
    "platform": ("CHALLENGE_HOOKS_PLATFORM", "ctfd"),
    "token_seconds": ("CHALLENGE_HOOKS_TOKEN_SECONDS", "300"),
}

# The gateway refuses a token whose exp is more than 10 minutes ahead.
MAX_TOKEN_SECONDS = 600
TIMEOUT_SECONDS = 10


class GatewayError(Exception):
    """The gateway could not be reached, or answered with an error."""


def setting(name):
    key, default = SETTINGS[name]
    value = current_app.config.get(key) or os.environ.get(key) or default
    if value is None:
        raise GatewayError(f"{key} is not set (CTFd's config or environment)")
    return str(value)


def public_url():
    """The gateway's origin as browsers reach it (the player page)."""
    try:
        return setting("public_url").rstrip("/")
    except GatewayError:
        return setting("url").rstrip("/")


def owner_of(kind, account_id):
    """`Team:<id>` or `User:<id>`: a CTFd id is a positive integer, which is
    already a DNS label, as spec.owner.id must be."""
    return f"{kind}:{int(account_id)}"


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def player_token(owner, now=None):
    """A short-lived HS256 token for `owner`, minted on the server: the key
    never reaches the browser."""
    now = int(time.time() if now is None else now)
    seconds = min(int(setting("token_seconds")), MAX_TOKEN_SECONDS)
    header = {"alg": "HS256", "typ": "JWT"}
    claims = {
        "iss": setting("platform"),
        "aud": setting("audience"),
        "sub": owner,
        "iat": now,
        "exp": now + seconds,
    }
    signing_input = ".".join(
        _b64(json.dumps(part, separators=(",", ":")).encode("utf-8"))
        for part in (header, claims)
    )
    signature = hmac.new(
        setting("token_key").encode("utf-8"),
        signing_input.encode("ascii"),
        hashlib.sha256,
    ).digest()
    return f"{signing_input}.{_b64(signature)}"


def call(method, path, owner=None, body=None):
    """One call with the platform key; returns (status, JSON body)."""
    headers = {"Authorization": f"Bearer {setting('key')}"}
    if owner is not None:
        headers["Challenge-Owner"] = owner
    try:
        answer = requests.request(
            method,
            setting("url").rstrip("/") + path,
            headers=headers,
            json=body,
            timeout=TIMEOUT_SECONDS,
        )
    except requests.RequestException as error:
        raise GatewayError(f"the gateway cannot be reached: {error}") from error
    try:
        data = answer.json()
    except ValueError:
        data = {"message": answer.text[:200]}
    if answer.status_code >= 500:
        raise GatewayError(
            f"the gateway answered {answer.status_code}: {data.get('message')}"
        )
    return answer.status_code, data


def verify(definition, flag, owner, stop_on_correct):
    status, data = call(
        "POST",
        "/v1/flags/verify",
        owner=owner,
        body={
            "definition": definition,
            "flag": flag,
            "owner": owner,
            "stopOnCorrect": bool(stop_on_correct),
        },
    )
    if status != 200:
        raise GatewayError(f"the gateway answered {status}: {data.get('message')}")
    return data


def definitions():
    """The definitions of the platform's namespace (GET /v1/definitions)."""
    status, data = call("GET", "/v1/definitions")
    if status != 200:
        raise GatewayError(f"the gateway answered {status}: {data.get('message')}")
    return data


def instances(owner):
    status, data = call("GET", "/v1/instances", owner=owner)
    if status != 200:
        raise GatewayError(f"the gateway answered {status}: {data.get('message')}")
    return data


def action(definition, name, owner):
    """stop or restart; returns (status, message)."""
    status, data = call("POST", f"/v1/instances/{definition}/{name}", owner=owner)
    return status, data.get("message", "")
