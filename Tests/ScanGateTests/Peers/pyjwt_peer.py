#!/usr/bin/env python3
"""An issuer and verifier of JWT passes that is not ScanGate: PyJWT with cryptography (Tests/python-requirements.txt).

  pyjwt_peer.py cases DIR             writes DIR/peer.jwks (an Ed25519 and a P-256 key) and prints a JSON list
                                      of passes, each with the verdict a kiosk with aud "front-door" must give
  pyjwt_peer.py batch DIR COUNT TTL [OFFSET] [--aud X]
                                      prints COUNT one-time passes (Ed25519, kid "batch", a jti each), one a line,
                                      valid from now + OFFSET s for TTL s; the key is made once in DIR/batch.pem
                                      and published in DIR/batch.jwks
  pyjwt_peer.py issue DIR [--aud X] [--iss X] [--kid X] [--key-kid X] [--sub X]
                                      writes DIR/peer.jwks (one Ed25519 key, kid --key-kid, default peer-ed) and
                                      prints {"jwks", "token"}: one EdDSA pass for sub 4711 valid 10 minutes,
                                      whose header names kid --kid (default the key's) and whose aud and iss
                                      are as given (absent when not given), strings exactly as given
  pyjwt_peer.py verify JWKS TOKEN [--aud X] [--iss X]
                                      verifies a token ScanGate issued; prints its claims as JSON, or
                                      "refused: ..." and exits 1
"""
import base64, hmac, hashlib, json, os, sys, time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def public_jwk(private_key, kid):
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        jwk = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(private_key.public_key()))
    else:
        jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(private_key.public_key()))
    jwk["kid"] = kid
    return jwk


def cases(directory):
    now = int(time.time())
    ed = ed25519.Ed25519PrivateKey.generate()
    es = ec.generate_private_key(ec.SECP256R1())
    foreign = ed25519.Ed25519PrivateKey.generate()
    jwks_path = os.path.join(directory, "peer.jwks")
    with open(jwks_path, "w") as f:
        json.dump({"keys": [public_jwk(ed, "peer-ed"), public_jwk(es, "peer-es")]}, f)
    os.chmod(jwks_path, 0o644)
    ed_public_pem = ed.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def claims(**extra):
        c = {"sub": "4711", "aud": "front-door", "iat": now, "exp": now + 600, "jti": os.urandom(8).hex()}
        c.update(extra)
        return {k: v for k, v in c.items() if v is not None}

    out = []

    def add(name, token, expect, number=None):
        out.append({"name": name, "token": token, "expect": expect, "number": number})

    add("valid EdDSA", jwt.encode(claims(), ed, algorithm="EdDSA", headers={"kid": "peer-ed"}), "accepted", "4711")
    add("valid ES256", jwt.encode(claims(sub="0815"), es, algorithm="ES256", headers={"kid": "peer-es"}), "accepted", "0815")
    add("valid, aud array", jwt.encode(claims(aud=["back-door", "front-door"]), ed, algorithm="EdDSA",
                                       headers={"kid": "peer-ed"}), "accepted", "4711")
    add("expired", jwt.encode(claims(iat=now - 7200, exp=now - 3600), ed, algorithm="EdDSA", headers={"kid": "peer-ed"}), "expired")
    add("not yet valid", jwt.encode(claims(nbf=now + 3600, exp=now + 7200), ed, algorithm="EdDSA", headers={"kid": "peer-ed"}),
        "not-yet-valid")
    add("wrong audience", jwt.encode(claims(aud="other-door"), ed, algorithm="EdDSA", headers={"kid": "peer-ed"}), "wrong-audience")
    good = jwt.encode(claims(), ed, algorithm="EdDSA", headers={"kid": "peer-ed"})
    head, body, sig = good.split(".")
    raw = bytearray(base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)))
    raw[10] ^= 0x01
    add("flipped signature byte", ".".join([head, body, b64url(bytes(raw))]), "bad-signature")
    good_es = jwt.encode(claims(), es, algorithm="ES256", headers={"kid": "peer-es"})
    head, body, sig = good_es.split(".")
    raw = bytearray(base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)))
    raw[40] ^= 0x80
    add("flipped ES256 signature byte", ".".join([head, body, b64url(bytes(raw))]), "bad-signature")
    add("foreign key", jwt.encode(claims(), foreign, algorithm="EdDSA", headers={"kid": "peer-ed"}), "bad-signature")
    add("unknown kid", jwt.encode(claims(), ed, algorithm="EdDSA", headers={"kid": "nobody"}), "unknown-key")
    add("alg none", jwt.encode(claims(), None, algorithm=None, headers={"kid": "peer-ed"}), "algorithm-not-allowed")
    # The classic confusion: HS256 with the verifier's public key (its PEM text) as the HMAC secret.
    # PyJWT refuses to do this itself, so the MAC is made with the standard library.
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "peer-ed"}).encode())
    payload = b64url(json.dumps(claims()).encode())
    mac = hmac.new(ed_public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    add("HS256 with the public key as the secret", f"{header}.{payload}.{b64url(mac)}", "algorithm-not-allowed")
    x = public_jwk(ed, "peer-ed")["x"].encode()
    mac = hmac.new(x, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    add("HS256 with the JWK x as the secret", f"{header}.{payload}.{b64url(mac)}", "algorithm-not-allowed")
    add("ES256 header on the Ed25519 kid", jwt.encode(claims(), es, algorithm="ES256", headers={"kid": "peer-ed"}),
        "algorithm-not-allowed")
    print(json.dumps({"jwks": jwks_path, "cases": out}))


def batch(directory, count, ttl, offset=0, audience=None):
    pem_path = os.path.join(directory, "batch.pem")
    if os.path.exists(pem_path):
        with open(pem_path, "rb") as f:
            key = serialization.load_pem_private_key(f.read(), password=None)
    else:
        key = ed25519.Ed25519PrivateKey.generate()
        with open(pem_path, "wb") as f:
            f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
        os.chmod(pem_path, 0o600)
        jwks_path = os.path.join(directory, "batch.jwks")
        with open(jwks_path, "w") as f:
            json.dump({"keys": [public_jwk(key, "batch")]}, f)
        os.chmod(jwks_path, 0o644)
    start = int(time.time()) + offset
    for n in range(count):
        claims = {"sub": str(100000 + n), "iat": start, "exp": start + ttl,
                  "jti": b64url(os.urandom(12))}
        if audience is not None:
            claims["aud"] = audience
        print(jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": "batch"}))
def issue(directory, options):
    now = int(time.time())
    ed = ed25519.Ed25519PrivateKey.generate()
    jwks_path = os.path.join(directory, "peer.jwks")
    key_kid = options.get("--key-kid", "peer-ed")
    with open(jwks_path, "w") as f:
        json.dump({"keys": [public_jwk(ed, key_kid)]}, f)
    os.chmod(jwks_path, 0o644)
    claims = {"sub": options.get("--sub", "4711"), "iat": now, "exp": now + 600}
    for option, claim in (("--aud", "aud"), ("--iss", "iss")):
        if option in options:
            claims[claim] = options[option]
    token = jwt.encode(claims, ed, algorithm="EdDSA", headers={"kid": options.get("--kid", key_kid)})
    print(json.dumps({"jwks": jwks_path, "token": token}))


def verify(jwks_path, token, audience=None, issuer=None):
    with open(jwks_path) as f:
        keyset = jwt.PyJWKSet.from_json(f.read())
    kid = jwt.get_unverified_header(token).get("kid")
    key = next((k for k in keyset.keys if k.key_id == kid), None)
    if key is None:
        print(f"refused: kid {kid!r} not in {jwks_path}")
        return 1
    try:
        decoded = jwt.decode(token, key.key, algorithms=["EdDSA", "ES256"], audience=audience, issuer=issuer,
                             options={"require": ["exp", "sub"]})
    except jwt.PyJWTError as e:
        print(f"refused: {type(e).__name__}: {e}")
        return 1
    print(json.dumps(decoded))
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "cases":
        cases(argv[1])
        return 0
    if len(argv) >= 4 and argv[0] == "batch":
        rest = argv[4:]
        audience = None
        if "--aud" in rest:
            i = rest.index("--aud")
            audience = rest[i + 1]
            rest = rest[:i] + rest[i + 2:]
        batch(argv[1], int(argv[2]), int(argv[3]), int(rest[0]) if rest else 0, audience)
        return 0
    if len(argv) >= 2 and argv[0] == "issue":
        issue(argv[1], dict(zip(argv[2::2], argv[3::2])))
        return 0
    if len(argv) >= 3 and argv[0] == "verify":
        options = dict(zip(argv[3::2], argv[4::2]))
        return verify(argv[1], argv[2], audience=options.get("--aud"), issuer=options.get("--iss"))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
