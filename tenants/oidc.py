"""OpenID Connect sign-in, the protocol half: discovery, the authorization request, the callback's
checks, the ID token. Which account the verified person gets is tenants/sso.py's business.

Hand-written on httpx and PyJWT rather than django-allauth: allauth's OpenID Connect provider skips
the ID token's signature check when the token came straight from the token endpoint and carries no
nonce, and here both the signature and the nonce are required, always. Authlib would serve too, but
the flow is small enough to audit in this one file, and every check below is one a security review
asks about by name:

- discovery from ``{OIDC_ISSUER}/.well-known/openid-configuration``, whose ``issuer`` must equal
  OIDC_ISSUER exactly, cached for DISCOVERY_TTL;
- the authorization code flow with PKCE (S256), a fresh ``state`` and ``nonce`` per attempt, kept in
  the session and spent on the first callback that names them, whatever its outcome;
- the token exchange authenticated as discovery says (client_secret_basic, else client_secret_post);
- the ID token: RS256 or ES256 only (``none`` and HS* refused before any key is looked at), signed by
  a key of the issuer's JWKS, then ``iss``, ``aud`` (and ``azp`` when there are several audiences),
  ``exp`` and ``iat`` with LEEWAY, ``nonce``, and ``email_verified`` true (from the ID token, or from
  userinfo for the same ``sub``).

The identity provider is the operator's configuration, so core/outbound.py's guard for tenant URLs
does not apply; still, back-channel calls never follow a redirect to another origin, a POST (which
carries the client secret) follows none, and only https is spoken except to loopback.
"""

import base64
import hashlib
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

import httpx
import jwt
from django.conf import settings
from django.urls import reverse

log = logging.getLogger(__name__)

ALGORITHMS = ("RS256", "ES256")
LEEWAY = 60  # seconds of clock skew tolerated on exp and iat
DISCOVERY_TTL = 300  # seconds a discovery document and its JWKS are reused
PENDING_TTL = 600  # seconds between the button and the callback
PENDING_MAX = 5  # sign-in attempts one session may have in flight (tabs); the oldest is dropped
SESSION_KEY = "oidc_pending"
TIMEOUT = httpx.Timeout(10.0)
MAX_REDIRECTS = 3
LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}


class Refused(Exception):
    """A sign-in that must not go on. ``reason`` is a short code (audited and logged); ``message`` is
    what the person reads; ``claims`` are the ID token's once its signature checked out (None before:
    nothing in an unverified token is believed, not even the email it names)."""

    def __init__(self, reason: str, message: str, *, status: int = 403, claims: dict | None = None):
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        self.status = status
        self.claims = claims


def configured() -> bool:
    return bool(settings.OIDC_ISSUER and settings.OIDC_CLIENT_ID)


# --- back-channel HTTP ---------------------------------------------------------------------------


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, (parts.hostname or "").lower(), parts.port


def _check_url(url: str, what: str) -> None:
    scheme, host, _ = _origin(url)
    if scheme == "https" or (scheme == "http" and host in LOOPBACK_HOSTS):
        return
    raise Refused("provider_error", f"The identity provider's {what} is not an https URL ({url}).", status=502)


def _send(method: str, url: str, what: str, **kwargs) -> httpx.Response:
    """One back-channel call. GETs follow up to MAX_REDIRECTS redirects within the same origin; a
    POST follows none. Anything else, or no answer, is a provider error."""
    _check_url(url, what)
    with httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client:
        for _ in range(MAX_REDIRECTS + 1):
            try:
                response = client.request(method, url, **kwargs)
            except httpx.HTTPError as exc:
                raise Refused(
                    "provider_error",
                    f"The identity provider's {what} did not answer ({type(exc).__name__}).",
                    status=502,
                ) from None
            if not response.is_redirect:
                return response
            target = urljoin(url, response.headers.get("location", ""))
            if method != "GET" or _origin(target) != _origin(url):
                log.warning("OIDC %s at %s redirected to %s: not followed", what, url, target)
                raise Refused(
                    "provider_error",
                    f"The identity provider's {what} answered with a redirect to {target}, which is not followed.",
                    status=502,
                )
            url = target
    raise Refused("provider_error", f"The identity provider's {what} redirected too many times.", status=502)


def _json(response: httpx.Response, what: str) -> dict:
    try:
        data = response.json()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise Refused("provider_error", f"The identity provider's {what} did not answer with JSON.", status=502)
    return data


# --- discovery and keys --------------------------------------------------------------------------


@dataclass
class _Cached:
    value: Any
    at: float = field(default_factory=time.monotonic)

    def fresh(self) -> bool:
        return time.monotonic() - self.at < DISCOVERY_TTL


_cache: dict[str, _Cached] = {}
_cache_lock = threading.Lock()


def forget_cached() -> None:
    """Drops cached discovery documents and keys (tests; a rotated configuration)."""
    with _cache_lock:
        _cache.clear()


def _cached_get(key: str, load):
    with _cache_lock:
        entry = _cache.get(key)
    if entry is not None and entry.fresh():
        return entry.value
    value = load()
    with _cache_lock:
        _cache[key] = _Cached(value)
    return value


def discovery() -> dict:
    issuer = settings.OIDC_ISSUER

    def load() -> dict:
        response = _send("GET", issuer.rstrip("/") + "/.well-known/openid-configuration", "discovery document")
        if response.status_code != 200:
            raise Refused(
                "provider_error",
                f"The identity provider's discovery document answered HTTP {response.status_code}.",
                status=502,
            )
        doc = _json(response, "discovery document")
        if doc.get("issuer") != issuer:
            raise Refused(
                "provider_error",
                f"The identity provider calls itself {doc.get('issuer')!r}, not {issuer!r} as configured.",
                status=502,
            )
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(doc.get(name), str) or not doc[name]:
                raise Refused("provider_error", f"The discovery document has no {name}.", status=502)
        return doc

    return _cached_get(f"discovery:{issuer}", load)


def _jwks(uri: str, *, refresh: bool = False) -> list[dict]:
    def load() -> list[dict]:
        response = _send("GET", uri, "key set (JWKS)")
        keys = _json(response, "key set (JWKS)").get("keys") if response.status_code == 200 else None
        if not isinstance(keys, list):
            raise Refused("provider_error", "The identity provider's key set (JWKS) could not be read.", status=502)
        return [k for k in keys if isinstance(k, dict)]

    if refresh:
        with _cache_lock:
            _cache.pop(f"jwks:{uri}", None)
    return _cached_get(f"jwks:{uri}", load)


def _signing_key(doc: dict, header: dict):
    """The issuer's key for this token: by ``kid`` (refetching the set once, for a rotated key),
    else the only key of the token's type."""
    kty = "RSA" if header["alg"] == "RS256" else "EC"
    for refresh in (False, True):
        candidates = [
            k for k in _jwks(doc["jwks_uri"], refresh=refresh) if k.get("kty") == kty and k.get("use", "sig") == "sig"
        ]
        kid = header.get("kid")
        if kid is not None:
            candidates = [k for k in candidates if k.get("kid") == kid]
        if len(candidates) == 1:
            try:
                return jwt.PyJWK(candidates[0], algorithm=header["alg"]).key
            except jwt.PyJWTError:
                raise Refused("bad_signature", "The identity provider's signing key could not be read.") from None
        if len(candidates) > 1:
            break
    raise Refused("bad_signature", "The ID token is not signed by a key of the identity provider.")


# --- the front channel ---------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def redirect_uri(request) -> str:
    path = reverse("oidc_callback")
    return settings.PUBLIC_URL + path if settings.PUBLIC_URL else request.build_absolute_uri(path)


def begin(request, next_url: str) -> str:
    """Where to send the browser: the provider's authorization endpoint, with a fresh state, nonce
    and PKCE challenge remembered in this session."""
    doc = discovery()
    _check_url(doc["authorization_endpoint"], "authorization endpoint")
    state, nonce, verifier = secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(64)
    now = time.time()
    pending = {
        s: p
        for s, p in (request.session.get(SESSION_KEY) or {}).items()
        if isinstance(p, dict) and now - p.get("at", 0) < PENDING_TTL
    }
    while len(pending) >= PENDING_MAX:
        pending.pop(min(pending, key=lambda s: pending[s]["at"]))
    pending[state] = {"nonce": nonce, "verifier": verifier, "next": next_url, "at": now}
    request.session[SESSION_KEY] = pending
    query = {
        "response_type": "code",
        "client_id": settings.OIDC_CLIENT_ID,
        "redirect_uri": redirect_uri(request),
        "scope": " ".join(settings.OIDC_SCOPES),
        "state": state,
        "nonce": nonce,
        "code_challenge": _b64(hashlib.sha256(verifier.encode()).digest()),
        "code_challenge_method": "S256",
    }
    endpoint = doc["authorization_endpoint"]
    return endpoint + ("&" if "?" in endpoint else "?") + urlencode(query)


def take_pending(request, state) -> dict:
    """The attempt this state names, removed from the session: a state works once, even when the
    sign-in it began is refused."""
    pending = request.session.get(SESSION_KEY) or {}
    attempt = pending.pop(state, None) if isinstance(state, str) and state else None
    request.session[SESSION_KEY] = pending
    if not isinstance(attempt, dict) or time.time() - attempt.get("at", 0) >= PENDING_TTL:
        raise Refused(
            "unknown_state",
            "This sign-in link has expired or was already used. Start again from the sign-in page.",
            status=400,
        )
    return attempt


# --- the back channel and the ID token -----------------------------------------------------------


def _token_request(doc: dict, code: str, verifier: str, request) -> dict:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri(request),
        "code_verifier": verifier,
    }
    auth = None
    secret = settings.OIDC_CLIENT_SECRET
    methods = doc.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    if not secret:
        data["client_id"] = settings.OIDC_CLIENT_ID
    elif "client_secret_basic" in methods or "client_secret_post" not in methods:
        # RFC 6749 2.3.1: both halves form-urlencoded before they are joined.
        auth = httpx.BasicAuth(quote(settings.OIDC_CLIENT_ID, safe=""), quote(secret, safe=""))
    else:
        data.update(client_id=settings.OIDC_CLIENT_ID, client_secret=secret)
    response = _send("POST", doc["token_endpoint"], "token endpoint", data=data, auth=auth)
    body = _json(response, "token endpoint")
    if response.status_code != 200:
        error = str(body.get("error") or f"HTTP {response.status_code}")[:100]
        raise Refused("provider_error", f"The identity provider refused the sign-in code ({error}).", status=502)
    if not isinstance(body.get("id_token"), str):
        raise Refused("provider_error", "The identity provider sent no ID token.", status=502)
    return body


def _claim_is_true(value) -> bool:
    return value is True or value == "true"  # some providers send the string


def verify_id_token(token: str, *, doc: dict, nonce: str, now: float | None = None) -> dict:
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise Refused("bad_token", "The ID token could not be read.") from None
    if header.get("alg") not in ALGORITHMS:
        raise Refused(
            "bad_algorithm", f"The ID token is signed with {header.get('alg')!r}; only RS256 and ES256 are accepted."
        )
    key = _signing_key(doc, header)
    try:
        # The signature alone; every claim is checked below, each refusal with its own reason.
        claims = jwt.decode(
            token,
            key,
            algorithms=[header["alg"]],
            options={
                "verify_signature": True,
                "verify_aud": False,
                "verify_iss": False,
                "verify_exp": False,
                "verify_iat": False,
                "verify_nbf": False,
            },
        )
    except jwt.PyJWTError:
        raise Refused("bad_signature", "The ID token's signature does not match the identity provider's key.") from None

    def refuse(reason: str, message: str):
        return Refused(reason, message, claims=claims)

    if claims.get("iss") != settings.OIDC_ISSUER:
        raise refuse("wrong_issuer", "The ID token was issued by another identity provider.")
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if settings.OIDC_CLIENT_ID not in audiences:
        raise refuse("wrong_audience", "The ID token was issued for another application.")
    if len(audiences) > 1 and claims.get("azp") != settings.OIDC_CLIENT_ID:
        raise refuse("wrong_audience", "The ID token was issued for another application (azp).")
    moment = time.time() if now is None else now
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int | float) or not isinstance(iat, int | float):
        raise refuse("bad_token", "The ID token has no expiry or issue time.")
    if moment > exp + LEEWAY:
        raise refuse("expired", "The ID token has expired. Start again from the sign-in page.")
    if iat > moment + LEEWAY:
        raise refuse("bad_token", "The ID token claims to be issued in the future; check the server clocks.")
    if not isinstance(claims.get("nonce"), str) or not secrets.compare_digest(claims["nonce"], nonce):
        raise refuse("wrong_nonce", "The ID token was not issued for this sign-in. Start again from the sign-in page.")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise refuse("bad_token", "The ID token names no subject.")
    return claims


def _userinfo(doc: dict, access_token, claims: dict) -> dict:
    endpoint = doc.get("userinfo_endpoint")
    if not endpoint or not isinstance(access_token, str):
        return {}
    response = _send("GET", endpoint, "userinfo endpoint", headers={"Authorization": f"Bearer {access_token}"})
    if response.status_code != 200:
        raise Refused(
            "provider_error",
            f"The identity provider's userinfo answered HTTP {response.status_code}.",
            status=502,
            claims=claims,
        )
    info = _json(response, "userinfo endpoint")
    if info.get("sub") != claims["sub"]:  # OIDC Core 5.3.2: otherwise it describes someone else
        raise Refused(
            "provider_error", "The identity provider's userinfo is about another person.", status=502, claims=claims
        )
    return info


@dataclass(frozen=True)
class Identity:
    issuer: str
    subject: str
    email: str
    claims: dict
    next_url: str


def finish(request, params) -> Identity:
    """The callback: the attempt the state names (spent now), the code exchanged, the ID token
    verified, a verified email. Raises Refused for every way this can fail."""
    attempt = take_pending(request, params.get("state"))
    if params.get("error"):
        error = str(params.get("error"))[:100]
        description = str(params.get("error_description") or "")[:300]
        raise Refused("provider_error", f"The identity provider did not sign you in: {error}. {description}".strip())
    code = params.get("code")
    if not isinstance(code, str) or not code:
        raise Refused("provider_error", "The identity provider sent no sign-in code.", status=400)
    doc = discovery()
    tokens = _token_request(doc, code, attempt["verifier"], request)
    claims = verify_id_token(tokens["id_token"], doc=doc, nonce=attempt["nonce"])
    email, verified = claims.get("email"), claims.get("email_verified")
    groups_claim = settings.OIDC_GROUPS_CLAIM
    if not email or verified is None or (groups_claim and groups_claim not in claims):
        info = _userinfo(doc, tokens.get("access_token"), claims)
        if not email or verified is None:
            # Both from one source: an email from the token is never vouched for by userinfo's flag
            # about another address.
            email, verified = info.get("email"), info.get("email_verified")
        claims = {**info, **claims, "email": email, "email_verified": verified}
    if not isinstance(email, str) or not email.strip():
        raise Refused(
            "no_email", "The identity provider did not say your email address; ask for the email scope.", claims=claims
        )
    if not _claim_is_true(verified):
        raise Refused(
            "email_not_verified",
            f"The identity provider has not verified {email.strip().lower()}. Verify it there, then sign in again.",
            claims=claims,
        )
    return Identity(
        issuer=claims["iss"],
        subject=claims["sub"],
        email=email.strip().lower(),
        claims=claims,
        next_url=attempt["next"],
    )
