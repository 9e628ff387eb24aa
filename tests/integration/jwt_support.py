"""JWT test support: EC P-256 and RSA keys made by the test (python3-cryptography), a JWKS
file and a PEM file for sluice, and tokens signed with them (python3-jwt)."""
import json
import os
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

AUDIENCE = "sluice"
ISSUER = "https://idp.sluice.test"


def _b64url_uint(n, length=None):
    length = length or (n.bit_length() + 7) // 8
    return jwt.utils.base64url_encode(n.to_bytes(length, "big")).decode()


class Keys:
    """An EC key (kid ec-1, in the JWKS), an RSA key (kid rsa-1, in the JWKS), an RSA key kept
    as a PEM file (kid: its file stem, pem-1) and a stranger key sluice does not know."""

    def __init__(self, directory):
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.pem_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.stranger = ec.generate_private_key(ec.SECP256R1())
        ecn = self.ec.public_key().public_numbers()
        rsan = self.rsa.public_key().public_numbers()
        jwks = {"keys": [
            {"kty": "EC", "crv": "P-256", "kid": "ec-1", "use": "sig",
             "x": _b64url_uint(ecn.x, 32), "y": _b64url_uint(ecn.y, 32)},
            {"kty": "RSA", "kid": "rsa-1", "n": _b64url_uint(rsan.n), "e": _b64url_uint(rsan.e)},
        ]}
        self.jwks_path = os.path.join(directory, "jwks.json")
        with open(self.jwks_path, "w") as f:
            json.dump(jwks, f)
        self.pem_path = os.path.join(directory, "pem-1.pem")
        with open(self.pem_path, "wb") as f:
            f.write(self.pem_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))

    def settings(self):
        return {"sasl.oauthbearer.jwks.location": self.jwks_path,
                "sasl.oauthbearer.public.key.locations": self.pem_path,
                "sasl.oauthbearer.expected.audience": AUDIENCE,
                "sasl.oauthbearer.expected.issuer": ISSUER}

    def token(self, sub="alice", lifetime=300, kid="ec-1", aud=AUDIENCE, iss=ISSUER, key=None,
              extra=None):
        """A signed token; `lifetime` seconds from now (negative: already expired)."""
        now = int(time.time())
        claims = {"sub": sub, "iat": now, "exp": now + lifetime, "aud": aud, "iss": iss}
        claims.update(extra or {})
        if key is None:
            key = {"ec-1": self.ec, "rsa-1": self.rsa, "pem-1": self.pem_key}.get(kid, self.ec)
        alg = "ES256" if isinstance(key, ec.EllipticCurvePrivateKey) else "RS256"
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})
