#!/usr/bin/env python3
"""An issuer and verifier of CWT passes that is not ScanGate: the `cwt` package (COSE_Sign1, RFC 8392/9052),
with cbor2 and cryptography (Tests/python-requirements.txt). Passes travel as "SG1:" + base45 (RFC 9285).

  cwt_peer.py cases DIR              writes DIR/peer-cwt.jwks (an Ed25519 and a P-256 key) and prints a JSON list
                                     of passes with the verdict a kiosk with aud "front-door" must give
  cwt_peer.py issue DIR [--aud X] [--iss X] [--kid X] [--key-kid X] [--status-idx N --status-uri U]
                                     writes DIR/peer-cwt.jwks (one Ed25519 key, kid --key-kid, default peer-ed) and
                                     prints {"jwks", "token"}: one EdDSA pass for sub 4711 valid 10 minutes whose
                                     header kid is --kid (default the key's, as UTF-8 bytes) and whose aud and iss
                                     are as given (absent when not given), and with --status-uri the status
                                     claim (65535) naming entry N of the status list U
  cwt_peer.py verify JWKS PASS [--aud X]
                                     verifies a pass ScanGate issued; prints its claims as JSON, or
                                     "refused: ..." and exits 1
"""
import base64, hashlib, hmac, json, os, sys, time

import cbor2
import cwt
from cwt import COSEKey
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

PREFIX = "SG1:"
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:"


def base45_encode(data):
    out = []
    for i in range(0, len(data) - 1, 2):
        n = data[i] * 256 + data[i + 1]
        c, n = n % 45, n // 45
        d, e = n % 45, n // 45
        out += [ALPHABET[c], ALPHABET[d], ALPHABET[e]]
    if len(data) % 2:
        out += [ALPHABET[data[-1] % 45], ALPHABET[data[-1] // 45]]
    return "".join(out)


def base45_decode(text):
    values = [ALPHABET.index(ch) for ch in text]
    out = bytearray()
    for i in range(0, len(values) - 2, 3):
        n = values[i] + values[i + 1] * 45 + values[i + 2] * 2025
        out += bytes([n >> 8, n & 0xFF])
    if len(values) % 3 == 2:
        out.append(values[-2] + values[-1] * 45)
    return bytes(out)


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def pem(private_key):
    return private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption())


def public_jwk(private_key, kid):
    public = private_key.public_key()
    if isinstance(private_key, ed25519.Ed25519PrivateKey):
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return {"kty": "OKP", "crv": "Ed25519", "x": b64url(raw), "kid": kid}
    numbers = public.public_numbers()
    return {"kty": "EC", "crv": "P-256", "x": b64url(numbers.x.to_bytes(32, "big")),
            "y": b64url(numbers.y.to_bytes(32, "big")), "kid": kid}


def as_pass(cose_bytes):
    return PREFIX + base45_encode(cose_bytes)


def cases(directory):
    now = int(time.time())
    ed = ed25519.Ed25519PrivateKey.generate()
    es = ec.generate_private_key(ec.SECP256R1())
    foreign = ed25519.Ed25519PrivateKey.generate()
    jwks_path = os.path.join(directory, "peer-cwt.jwks")
    with open(jwks_path, "w") as f:
        json.dump({"keys": [public_jwk(ed, "peer-ed"), public_jwk(es, "peer-es")]}, f)
    os.chmod(jwks_path, 0o644)
    ed_key = COSEKey.from_pem(pem(ed), kid="peer-ed")
    es_key = COSEKey.from_pem(pem(es), alg="ES256", kid="peer-es")
    foreign_key = COSEKey.from_pem(pem(foreign), kid="peer-ed")
    unknown_key = COSEKey.from_pem(pem(ed), kid="nobody")

    def claims(**extra):
        c = {"sub": "4711", "aud": "front-door", "iat": now, "nbf": now, "exp": now + 600, "cti": os.urandom(8)}
        c.update(extra)
        return c

    out = []

    def add(name, cose_bytes, expect, number=None):
        out.append({"name": name, "token": as_pass(cose_bytes), "expect": expect, "number": number})

    add("valid EdDSA", cwt.encode(claims(), ed_key), "accepted", "4711")
    add("valid ES256", cwt.encode(claims(sub="0815"), es_key), "accepted", "0815")
    add("valid, CWT tag 61", cwt.encode(claims(), ed_key, tagged=True), "accepted", "4711")
    add("expired", cwt.encode(claims(iat=now - 7200, nbf=now - 7200, exp=now - 3600), ed_key), "expired")
    add("not yet valid", cwt.encode(claims(nbf=now + 3600, exp=now + 7200), ed_key), "not-yet-valid")
    add("wrong audience", cwt.encode(claims(aud="other-door"), ed_key), "wrong-audience")
    message = cbor2.loads(cwt.encode(claims(), ed_key))
    signature = bytearray(message.value[3])
    signature[10] ^= 0x01
    message.value[3] = bytes(signature)
    add("flipped signature byte", cbor2.dumps(message), "bad-signature")
    add("foreign key", cwt.encode(claims(), foreign_key), "bad-signature")
    add("unknown kid", cwt.encode(claims(), unknown_key), "unknown-key")
    # COSE has no "none"; the nearest attacks: a COSE_Sign1 whose alg is HMAC 256/256 (5), keyed with the
    # verifier's public key, and one whose protected header has no alg at all.
    raw_public = ed.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    payload = cbor2.dumps({2: "4711", 3: "front-door", 4: now + 600, 7: os.urandom(8)})
    protected = cbor2.dumps({1: 5})
    to_mac = cbor2.dumps(["Signature1", protected, b"", payload])
    mac = hmac.new(raw_public, to_mac, hashlib.sha256).digest()
    add("HMAC alg with the public key as the secret",
        cbor2.dumps(cbor2.CBORTag(18, [protected, {4: b"peer-ed"}, payload, mac])), "algorithm-not-allowed")
    add("ES256 alg on the Ed25519 kid", cbor2.dumps(cbor2.CBORTag(18, [cbor2.dumps({1: -7}), {4: b"peer-ed"}, payload, mac * 2])),
        "algorithm-not-allowed")
    print(json.dumps({"jwks": jwks_path, "cases": out}))


def issue(directory, options):
    now = int(time.time())
    ed = ed25519.Ed25519PrivateKey.generate()
    jwks_path = os.path.join(directory, "peer-cwt.jwks")
    key_kid = options.get("--key-kid", "peer-ed")
    with open(jwks_path, "w") as f:
        json.dump({"keys": [public_jwk(ed, key_kid)]}, f)
    os.chmod(jwks_path, 0o644)
    claims = {"sub": "4711", "iat": now, "nbf": now, "exp": now + 600}
    for option, claim in (("--aud", "aud"), ("--iss", "iss")):
        if option in options:
            claims[claim] = options[option]
    if "--status-uri" in options:
        # draft-ietf-oauth-status-list: the status claim (65535) of a Referenced Token in CWT form.
        # The cwt package drops an unknown claim from a dict keyed by names, so every claim goes by its label.
        labels = {"iss": 1, "sub": 2, "aud": 3, "exp": 4, "nbf": 5, "iat": 6}
        claims = {labels[k]: v for k, v in claims.items()}
        claims[65535] = {"status_list": {"idx": int(options["--status-idx"]), "uri": options["--status-uri"]}}
    key = COSEKey.from_pem(pem(ed), kid=options.get("--kid", key_kid))
    print(json.dumps({"jwks": jwks_path, "token": as_pass(cwt.encode(claims, key))}))


def verify(jwks_path, text, audience=None):
    if not text.startswith(PREFIX):
        print(f"refused: does not start with {PREFIX}")
        return 1
    data = base45_decode(text[len(PREFIX):])
    with open(jwks_path) as f:
        keys = [COSEKey.from_jwk(k) for k in json.load(f)["keys"]]
    try:
        decoded = cwt.decode(data, keys=keys)
    except cwt.CWTError as e:
        print(f"refused: {type(e).__name__}: {e}")
        return 1
    if audience is not None and decoded.get(3) != audience:
        print(f"refused: aud {decoded.get(3)!r} is not {audience!r}")
        return 1
    print(json.dumps({str(k): (v.hex() if isinstance(v, bytes) else v) for k, v in decoded.items()}))
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "cases":
        cases(argv[1])
        return 0
    if len(argv) >= 2 and argv[0] == "issue":
        issue(argv[1], dict(zip(argv[2::2], argv[3::2])))
        return 0
    if len(argv) >= 3 and argv[0] == "verify":
        options = dict(zip(argv[3::2], argv[4::2]))
        return verify(argv[1], argv[2], audience=options.get("--aud"))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
