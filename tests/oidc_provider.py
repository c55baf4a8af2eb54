"""A small OpenID Connect provider on loopback for the tests: discovery, JWKS (its own RSA and EC
keys), authorize (redirects back with a code), token (checks the client and the PKCE verifier, and
answers with an ID token built as the test says), userinfo.

A test shapes the next ID token with ``provider.claims`` (merged over the defaults; a value of
``DROP`` removes a claim) and ``provider.sign_with`` ("rsa", "ec", "stranger" for a key that is not
in the JWKS, "none", "hs256"), or makes the token endpoint redirect with ``token_redirect``.
"""

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

DROP = object()
CLIENT_ID = "groundrule"
CLIENT_SECRET = "provider-issued-secret"


def _public_jwk(key, kid: str, alg: str) -> dict:
    algorithm = jwt.algorithms.RSAAlgorithm if alg == "RS256" else jwt.algorithms.ECAlgorithm
    jwk = json.loads(algorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": alg, "use": "sig"}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # quiet
        pass

    def _json(self, status: int, body: dict, headers: dict | None = None):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        provider: OidcProvider = self.server.provider
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        provider.hits.append(("GET", url.path))
        if url.path == "/.well-known/openid-configuration":
            return self._json(200, provider.discovery())
        if url.path == "/jwks":
            return self._json(200, {"keys": provider.published_keys()})
        if url.path == "/authorize":
            code = secrets.token_urlsafe(16)
            provider.codes[code] = query
            location = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if url.path == "/userinfo":
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
            info = provider.access_tokens.get(token)
            return self._json(200, info) if info is not None else self._json(401, {"error": "invalid_token"})
        return self._json(404, {"error": "not_found"})

    def do_POST(self):
        provider: OidcProvider = self.server.provider
        length = int(self.headers.get("Content-Length") or 0)
        form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
        provider.hits.append(("POST", self.path))
        provider.token_requests.append({"form": form, "authorization": self.headers.get("Authorization")})
        if self.path != "/token":
            return self._json(404, {"error": "not_found"})
        if provider.token_redirect:
            self.send_response(307)
            self.send_header("Location", provider.token_redirect)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        basic = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if self.headers.get("Authorization") != f"Basic {basic}":
            return self._json(401, {"error": "invalid_client"})
        asked = provider.codes.pop(form.get("code", ""), None)
        if asked is None or form.get("redirect_uri") != asked["redirect_uri"]:
            return self._json(400, {"error": "invalid_grant"})
        challenge = base64.urlsafe_b64encode(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
        if asked.get("code_challenge_method") != "S256" or challenge.rstrip(b"=").decode() != asked["code_challenge"]:
            return self._json(400, {"error": "invalid_grant", "error_description": "PKCE verifier does not match"})
        claims = provider.id_claims(asked)
        access = secrets.token_urlsafe(16)
        provider.access_tokens[access] = {**provider.userinfo, "sub": claims.get("sub")}
        return self._json(200, {"access_token": access, "token_type": "Bearer", "id_token": provider.sign(claims)})


class OidcProvider:
    def __init__(self):
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.claims: dict = {}
        self.userinfo: dict = {}
        self.sign_with = "rsa"
        self.token_redirect = ""
        self.codes: dict[str, dict] = {}
        self.access_tokens: dict[str, dict] = {}
        self.token_requests: list[dict] = []
        self.hits: list[tuple[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.provider = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def discovery(self) -> dict:
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "userinfo_endpoint": f"{self.issuer}/userinfo",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "code_challenge_methods_supported": ["S256"],
        }

    def published_keys(self) -> list[dict]:
        return [_public_jwk(self.rsa, "rsa-1", "RS256"), _public_jwk(self.ec, "ec-1", "ES256")]

    def id_claims(self, asked: dict) -> dict:
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": CLIENT_ID,
            "sub": "person-1",
            "email": "erin@example.com",
            "email_verified": True,
            "nonce": asked.get("nonce"),
            "iat": now,
            "exp": now + 300,
        }
        claims.update(self.claims)
        return {k: v for k, v in claims.items() if v is not DROP}

    def sign(self, claims: dict) -> str:
        if self.sign_with == "ec":
            return jwt.encode(claims, self.ec, algorithm="ES256", headers={"kid": "ec-1"})
        if self.sign_with == "stranger":
            return jwt.encode(claims, self.stranger, algorithm="RS256", headers={"kid": "rsa-1"})
        if self.sign_with == "hs256":
            # The old confusion attack: the public key's bytes as an HMAC secret.
            return _unsigned(claims, "HS256", lambda data: _hmac(self, data))
        if self.sign_with == "none":
            return _unsigned(claims, "none", lambda data: b"")
        return jwt.encode(claims, self.rsa, algorithm="RS256", headers={"kid": "rsa-1"})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(claims: dict, alg: str, mac) -> str:
    head = _b64(json.dumps({"alg": alg, "typ": "JWT", "kid": "rsa-1"}).encode())
    body = _b64(json.dumps(claims).encode())
    return f"{head}.{body}.{_b64(mac(f'{head}.{body}'.encode()))}"


def _hmac(provider: OidcProvider, data: bytes) -> bytes:
    import hmac

    from cryptography.hazmat.primitives import serialization

    secret = provider.rsa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hmac.new(secret, data, hashlib.sha256).digest()


def configure(settings, provider: "OidcProvider") -> None:
    """Points Groundrule at ``provider`` (pytest-django's ``settings``) and resets what a test shapes."""
    from tenants import oidc

    provider.claims, provider.userinfo = {}, {}
    provider.sign_with, provider.token_redirect = "rsa", ""
    provider.token_requests.clear()
    settings.OIDC_ISSUER = provider.issuer
    settings.OIDC_CLIENT_ID = CLIENT_ID
    settings.OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_NAME = "Example ID"
    settings.OIDC_ALLOWED_DOMAINS = ["partner.example"]
    settings.OIDC_ONLY = False
    oidc.forget_cached()


def provider_fixtures(email: str):
    """The two fixtures a test module needs to sign ``email`` in through a provider on loopback: bind
    both in the module, ``provider_server, provider = provider_fixtures("alice@example.com")``. One
    provider per module; each test gets the settings pointing at it and the person's claims."""
    import pytest

    from tenants import oidc

    @pytest.fixture(scope="module")
    def provider_server():
        with OidcProvider() as provider:
            yield provider

    @pytest.fixture
    def provider(provider_server, settings):
        configure(settings, provider_server)
        provider_server.claims = {"email": email}
        yield provider_server
        oidc.forget_cached()

    return provider_server, provider
