"""ServiceAccount tokens: JWTs signed with the cluster's service account key, as kube-apiserver issues them.

pkg/serviceaccount/jwt.go (JWTTokenGenerator, the validator) and claims.go (the private ``kubernetes.io``
claims of bound tokens, their validation against the pod, node and ServiceAccount they are bound to). The
header's ``kid`` is upstream's keyIDFromPublicKey (base64url of the SHA-256 of the DER public key).

Why by hand: a JWS is base64url JSON and one signature; ``cryptography`` (already a dependency) signs and
verifies it, so no JWT library is added. The key is ECDSA P-256 (ES256), a key type kube-apiserver accepts
for ``--service-account-signing-key-file``: kubeadm generates RSA-2048, whose generation alone would cost a
cold ``gpulab cluster up`` about 0.4 s (docs/fidelity.md lists this deviation).
"""
from __future__ import annotations

import base64
import hashlib
import uuid
from dataclasses import dataclass
from pathlib import Path

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from ..privatefiles import write_private

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
# The kubelet's projected tokens ask for 3607 s; the apiserver extends them to a year and warns after the
# asked-for time (--service-account-extend-token-expiration, serviceaccount.WarnOnlyBoundTokenExpirationSeconds).
WARN_ONLY_EXPIRATION = 3607
EXTENDED_EXPIRATION = 365 * 24 * 3600
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600


class InvalidToken(Exception):
    """A bearer token that is not a valid ServiceAccount token (the request is then 401)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_signing_key(path: Path) -> ec.EllipticCurvePrivateKey:
    """The cluster's service account key (``pki/sa.key``), created on first use, 0600 from its creation."""
    if path.exists():
        return serialization.load_pem_private_key(path.read_bytes(), None)
    key = ec.generate_private_key(ec.SECP256R1())
    write_private(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return key


@dataclass(frozen=True)
class Binding:
    """What a bound token names: its pod (and the pod's node) or secret, by name and uid."""

    kind: str           # "Pod" or "Secret"
    name: str
    uid: str
    node_name: str = ""
    node_uid: str = ""


class TokenIssuer:
    def __init__(self, key: ec.EllipticCurvePrivateKey):
        self._key = key
        self._public = key.public_key()
        der = self._public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.key_id = _b64(hashlib.sha256(der).digest())
        self._header = _b64(orjson.dumps({"alg": "ES256", "kid": self.key_id}))

    def issue(self, namespace: str, sa_name: str, sa_uid: str, *, now: float, expiration: int,
              audiences: tuple[str, ...] = API_AUDIENCES, binding: Binding | None = None) -> tuple[str, int]:
        """A signed token and its expiry (seconds since the epoch), as TokenRequest's REST storage makes it."""
        iat = int(now)
        exp, warn_after = iat + expiration, None
        if binding is not None and binding.kind == "Pod" and expiration == WARN_ONLY_EXPIRATION:
            exp, warn_after = iat + EXTENDED_EXPIRATION, iat + expiration
        private: dict = {"namespace": namespace}
        if binding is not None:
            if binding.node_name:
                private["node"] = {"name": binding.node_name, "uid": binding.node_uid}
            private[binding.kind.lower()] = {"name": binding.name, "uid": binding.uid}
        private["serviceaccount"] = {"name": sa_name, "uid": sa_uid}
        if warn_after is not None:
            private["warnafter"] = warn_after
        claims = {"aud": list(audiences), "exp": exp, "iat": iat, "iss": ISSUER, "jti": str(uuid.uuid4()),
                  "kubernetes.io": private, "nbf": iat, "sub": f"system:serviceaccount:{namespace}:{sa_name}"}
        signing_input = f"{self._header}.{_b64(orjson.dumps(claims))}"
        der_sig = self._key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der_sig)
        return f"{signing_input}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}", exp

    def verify(self, token: str, *, now: float, audiences: tuple[str, ...] = API_AUDIENCES) -> dict:
        """The claims of a token this cluster signed, checked for issuer, audience and time; InvalidToken else."""
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("not a JWT")
        try:
            header = orjson.loads(_unb64(parts[0]))
            claims = orjson.loads(_unb64(parts[1]))
            signature = _unb64(parts[2])
        except (ValueError, orjson.JSONDecodeError) as exc:
            raise InvalidToken(f"malformed token: {exc}") from None
        if not isinstance(claims, dict) or claims.get("iss") != ISSUER:
            raise InvalidToken("token issuer is not this cluster's")  # left to other authenticators upstream
        if not isinstance(header, dict) or header.get("alg") != "ES256" or len(signature) != 64:
            raise InvalidToken("invalid signature")
        try:
            self._public.verify(encode_dss_signature(int.from_bytes(signature[:32], "big"),
                                                     int.from_bytes(signature[32:], "big")),
                                f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise InvalidToken("invalid signature") from None
        aud = claims.get("aud")
        aud = [aud] if isinstance(aud, str) else aud or []
        if not set(aud) & set(audiences):
            raise InvalidToken(f"token audiences {aud} is invalid for the target audiences {list(audiences)}")
        if not isinstance(claims.get("exp"), int) or now > claims["exp"]:
            raise InvalidToken("service account token has expired")
        if isinstance(claims.get("nbf"), int) and now < claims["nbf"]:
            raise InvalidToken("service account token is not valid yet")
        return claims
