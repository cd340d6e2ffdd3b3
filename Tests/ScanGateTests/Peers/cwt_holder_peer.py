#!/usr/bin/env python3
"""Holder-bound CWT passes and their presentations made with the `cwt` package (COSE_Sign1, RFC 8392/9052,
cnf with a COSE_Key, RFC 8747), not by ScanGate.

A presentation is "SG2:" + base45 of the CBOR array [pass, proof], both byte strings: the pass is the
tagged COSE_Sign1 an "SG1:" code carries; the proof is a COSE_Sign1 by the holder key over {3: aud,
6: iat, 7: nonce}, with the SHA-256 of the pass as external_aad.

  cwt_holder_peer.py cases DIR   writes DIR/peer-cwt-holder.jwks (the issuer's Ed25519 key, kid "cwt-site") and prints
                                 {"jwks", "cases": [...]} with the verdict a kiosk with credential-audience
                                 "north" and credential-holder-binding accept must give ("require": under require)
  cwt_holder_peer.py seeds DIR   writes the sdjwt fuzz target's SG2 seeds to DIR (passes valid at its fixed time
                                 1800000000, proofs an hour old, for another door, by another key) and prints
                                 the issuer's JWKS (kid cwt-seed) for Tests/Fuzz/Sources
  cwt_holder_peer.py verify JWKS PRESENTATION AUD
                                 verifies a presentation ScanGate made (credential present on an SG1 pass with
                                 cnf): prints the pass's claims as JSON, or "refused: ..." and exits 1
"""
import hashlib, json, os, sys, time

import cbor2
import cwt
from cwt import COSE, COSEKey

from cwt_peer import base45_decode, base45_encode

LABELS = {"iss": 1, "sub": 2, "aud": 3, "exp": 4, "nbf": 5, "iat": 6, "cti": 7, "cnf": 8}


def cose_key_map(key):
    """The public COSE_Key of a cwt COSEKey as a CBOR map (kty, crv, x, y)."""
    full = key.to_dict()
    return {k: v for k, v in full.items() if k in (1, -1, -2, -3)}


def make_pass(issuer, claims, holder=None):
    labelled = {LABELS[k]: v for k, v in claims.items()}
    if holder is not None:
        labelled[8] = {1: cose_key_map(holder)}
    return cwt.encode(labelled, issuer)


def make_proof(pass_bytes, holder, aud="north", iat=None, nonce=None):
    payload = cbor2.dumps({3: aud, 6: int(time.time()) if iat is None else iat, 7: nonce or os.urandom(8)})
    return COSE.new().encode(payload, holder, protected={1: holder.alg}, unprotected={},
                             external_aad=hashlib.sha256(pass_bytes).digest())


def presentation(pass_bytes, proof):
    return "SG2:" + base45_encode(cbor2.dumps([pass_bytes, proof]))


def generate(kty, kid=None):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519
    private = ed25519.Ed25519PrivateKey.generate() if kty == "OKP" else ec.generate_private_key(ec.SECP256R1())
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    key = COSEKey.from_pem(pem, alg="EdDSA" if kty == "OKP" else "ES256", kid=kid)
    return key, private


def cases(directory):
    import base64
    from cryptography.hazmat.primitives import serialization
    now = int(time.time())
    site_private, site_raw = generate("OKP", kid="cwt-site")
    x = site_raw.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    jwks_path = os.path.join(directory, "peer-cwt-holder.jwks")
    with open(jwks_path, "w") as f:
        json.dump({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "cwt-site",
                             "x": base64.urlsafe_b64encode(x).rstrip(b"=").decode()}]}, f)
    os.chmod(jwks_path, 0o644)
    phone = generate("EC2")[0]
    phone_ed = generate("OKP")[0]
    thief = generate("EC2")[0]

    def claims(number):
        return {"sub": number, "aud": "north", "iat": now, "exp": now + 30 * 86400}

    out = []

    def add(name, token, expect, number=None, require=None):
        out.append({"name": name, "token": token, "expect": expect, "number": number, "require": require or expect})

    bound = make_pass(site_private, claims("9001"), phone)
    add("CWT pass, P-256 holder, presented", presentation(bound, make_proof(bound, phone)), "accepted", "9001")
    bound_ed = make_pass(site_private, claims("9002"), phone_ed)
    add("CWT pass, Ed25519 holder, presented", presentation(bound_ed, make_proof(bound_ed, phone_ed)), "accepted", "9002")
    add("CWT presented for another door", presentation(bound, make_proof(bound, phone, aud="south")), "wrong-door")
    add("CWT proof by another key", presentation(bound, make_proof(bound, thief)), "bad-holder-signature")
    add("CWT proof made 45 s ago", presentation(bound, make_proof(bound, phone, iat=now - 45)), "stale-presentation")
    other = make_pass(site_private, claims("9003"), phone)
    add("CWT proof made for another pass", presentation(other, make_proof(bound, phone)), "bad-holder-signature")
    add("the CWT pass alone (SG1:)", "SG1:" + base45_encode(bound), "holder-binding-required")
    bearer = make_pass(site_private, claims("9004"))
    add("a CWT pass with no holder key, bare", "SG1:" + base45_encode(bearer), "accepted", "9004", require="holder-binding-required")
    add("a proof for a CWT pass with no holder key", presentation(bearer, make_proof(bearer, phone)), "malformed",
        require="holder-binding-required")
    print(json.dumps({"jwks": jwks_path, "cases": out}))


def seeds(directory):
    import base64
    from cryptography.hazmat.primitives import serialization
    at = 1800000000
    site, site_raw = generate("OKP", kid="cwt-seed")
    phone, phone_ed, thief = generate("EC2")[0], generate("OKP")[0], generate("EC2")[0]
    claims = {"sub": "9001", "aud": "north", "iat": at - 86400, "exp": at + 86400}
    bound = make_pass(site, claims, phone)
    bound_ed = make_pass(site, dict(claims, sub="9002"), phone_ed)
    out = {
        "sg2-stale-p256": presentation(bound, make_proof(bound, phone, iat=at - 3600)),
        "sg2-stale-ed25519": presentation(bound_ed, make_proof(bound_ed, phone_ed, iat=at - 3600)),
        "sg2-other-door": presentation(bound, make_proof(bound, phone, aud="south", iat=at)),
        "sg2-other-key": presentation(bound, make_proof(bound, thief, iat=at)),
        "sg1-bare-bound": "SG1:" + base45_encode(bound),
    }
    for name, text in out.items():
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
    x = site_raw.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    print(json.dumps({"kty": "OKP", "crv": "Ed25519", "kid": "cwt-seed", "x": base64.urlsafe_b64encode(x).rstrip(b"=").decode()}))


def verify(jwks_path, text, aud):
    if not text.startswith("SG2:"):
        print("refused: does not start with SG2:")
        return 1
    pass_bytes, proof = cbor2.loads(base45_decode(text[4:]))
    with open(jwks_path) as f:
        keys = [COSEKey.from_jwk(k) for k in json.load(f)["keys"]]
    try:
        claims = cwt.decode(pass_bytes, keys=keys)
        holder = COSEKey.new(claims[8][1])
        proof_claims = cbor2.loads(COSE.new().decode(proof, holder, external_aad=hashlib.sha256(pass_bytes).digest()))
    except (cwt.CWTError, KeyError, ValueError) as e:
        print(f"refused: {type(e).__name__}: {e}")
        return 1
    if proof_claims.get(3) != aud:
        print(f"refused: the proof is for {proof_claims.get(3)!r}")
        return 1
    print(json.dumps({str(k): (v.hex() if isinstance(v, bytes) else v) for k, v in claims.items() if k != 8}))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    if len(sys.argv) == 3 and sys.argv[1] == "cases":
        cases(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "seeds":
        seeds(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "verify":
        sys.exit(verify(*sys.argv[2:]))
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
