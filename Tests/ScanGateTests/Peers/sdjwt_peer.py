#!/usr/bin/env python3
"""Holder-bound passes made by the IETF SD-JWT reference implementation (PyPI sd-jwt, with jwcrypto), not by ScanGate.

  sdjwt_peer.py cases DIR     writes DIR/peer.jwks (the issuer's Ed25519 key, kid "site") and prints
                              {"jwks", "cases": [...]}: SD-JWT passes with cnf (RFC 7800) and their
                              presentations with a key-binding JWT, each with the verdict a kiosk with
                              credential-audience "north" and credential-holder-binding accept must give.
                              A case with "require" set gives that verdict under holder-binding require.
  sdjwt_peer.py seeds DIR      writes the sdjwt fuzz target's seeds to DIR (passes valid at the target's fixed
                              time 1800000000 whose presentations are an hour old, for another door, or by
                              another key) and prints the issuer's JWKS for Tests/Fuzz/Sources
  sdjwt_peer.py verify JWKS PRESENTATION AUD NONCE
                              verifies a presentation ScanGate made (credential issue --holder-key, credential
                              present) with the reference verifier: prints the disclosed claims as JSON, or
                              "refused: ..." and exits 1
"""
import json, os, sys, time

from jwcrypto.jwk import JWK
import sd_jwt.holder
import sd_jwt.issuer
from sd_jwt.common import SDObj
from sd_jwt.holder import SDJWTHolder
from sd_jwt.issuer import SDJWTIssuer


def issue(issuer_key, claims, holder_key=None, decoys=False):
    return SDJWTIssuer(claims, issuer_key, holder_key=holder_key, sign_alg="EdDSA", add_decoy_claims=decoys,
                       extra_header_parameters={"kid": issuer_key.get("kid", "site")}).sd_jwt_issuance


def present(issuance, holder_key, aud="north", disclose=None, alg=None, iat=None):
    holder = SDJWTHolder(issuance)
    saved = sd_jwt.holder.time
    if iat is not None:
        sd_jwt.holder.time = lambda: iat
    try:
        holder.create_presentation(disclose or {}, os.urandom(8).hex(), aud, holder_key,
                                   alg or ("EdDSA" if holder_key.get("kty") == "OKP" else "ES256"))
    finally:
        sd_jwt.holder.time = saved
    return holder.sd_jwt_presentation


def cases(directory):
    now = int(time.time())
    site = JWK.generate(kty="OKP", crv="Ed25519", kid="site")
    phone = JWK.generate(kty="EC", crv="P-256")
    phone_ed = JWK.generate(kty="OKP", crv="Ed25519")
    thief = JWK.generate(kty="EC", crv="P-256")
    jwks_path = os.path.join(directory, "peer.jwks")
    public = json.loads(site.export_public())
    public["kid"] = "site"
    with open(jwks_path, "w") as f:
        json.dump({"keys": [public]}, f)
    os.chmod(jwks_path, 0o644)

    def claims(number, extra=None):
        c = {"iss": "https://hq.example", "sub": number, "aud": "north", "iat": now, "exp": now + 30 * 86400}
        c.update(extra or {})
        return c

    out = []

    def add(name, token, expect, number=None, require=None):
        out.append({"name": name, "token": token, "expect": expect, "number": number, "require": require or expect})

    bound = issue(site, claims("8001"), holder_key=phone)
    add("bound pass, P-256 holder, presented", present(bound, phone), "accepted", "8001")
    bound_ed = issue(site, claims("8002"), holder_key=phone_ed)
    add("bound pass, Ed25519 holder, presented", present(bound_ed, phone_ed), "accepted", "8002")
    disclosed = issue(site, claims("8003", {SDObj("grp"): "staff", SDObj("name"): "Ada"}), holder_key=phone, decoys=True)
    add("disclosed grp, undisclosed name, decoy digests", present(disclosed, phone, disclose={"grp": True}), "accepted", "8003")
    hidden_sub = issue(site, {SDObj("sub"): "8004", "iss": "https://hq.example", "aud": "north", "iat": now, "exp": now + 86400},
                       holder_key=phone)
    add("the number itself selectively disclosed", present(hidden_sub, phone, disclose={"sub": True}), "accepted", "8004")
    add("presented for another door", present(bound, phone, aud="south"), "wrong-door")
    add("signed by another key than cnf names", present(bound, thief), "bad-holder-signature")
    # 45 s, not 31: the kiosk judges these a moment after they are made (31 s exactly is tested with its clock).
    add("made 45 s ago", present(bound, phone, iat=now - 45), "stale-presentation")
    add("made 45 s ahead", present(bound, phone, iat=now + 45), "stale-presentation")
    add("the pass alone (a screenshot of the issuance)", bound, "holder-binding-required")
    add("the pass's JWT alone", bound.split("~")[0], "holder-binding-required")
    # A key-binding JWT made for one pass, put after another pass of the same holder: its sd_hash differs.
    other = issue(site, claims("8005"), holder_key=phone)
    kb = present(bound, phone).split("~")[-1]
    add("a key-binding JWT lifted from another presentation", other.split("~")[0] + "~" + kb, "bad-holder-signature")
    tampered = present(disclosed, phone, disclose={"grp": True}).split("~")
    tampered[1] = tampered[1][:-2] + ("AA" if tampered[1][-2:] != "AA" else "BB")
    add("a disclosure changed", "~".join(tampered), "malformed")
    bearer = issue(site, claims("8006"))
    add("a pass with no holder key, as an SD-JWT without key binding", bearer, "accepted", "8006",
        require="holder-binding-required")
    add("a key-binding JWT for a pass with no holder key", present(bearer, phone), "malformed", require="holder-binding-required")
    forged = issue(JWK.generate(kty="OKP", crv="Ed25519", kid="site"), claims("8007"), holder_key=phone)
    add("a pass not signed by the site", present(forged, phone), "bad-signature")
    print(json.dumps({"jwks": jwks_path, "cases": out}))


def seeds(directory):
    at = 1800000000
    site = JWK.generate(kty="OKP", crv="Ed25519", kid="sd-site")
    phone = JWK.generate(kty="EC", crv="P-256")
    phone_ed = JWK.generate(kty="OKP", crv="Ed25519")
    thief = JWK.generate(kty="EC", crv="P-256")
    claims = {"iss": "https://hq.example", "sub": "8001", "aud": "north", "iat": at - 86400, "exp": at + 86400}
    bound = issue(site, dict(claims), holder_key=phone)
    bound_ed = issue(site, dict(claims, sub="8002"), holder_key=phone_ed)
    disclosed = issue(site, dict(claims, **{}) | {SDObj("grp"): "staff", SDObj("name"): "Ada",
                                                   "roles": [SDObj("in"), "out"]}, holder_key=phone, decoys=True)
    bearer = issue(site, dict(claims, sub="8003"))
    out = {
        "stale-p256": present(bound, phone, iat=at - 3600),
        "stale-ed25519": present(bound_ed, phone_ed, iat=at - 3600),
        "stale-disclosed": present(disclosed, phone, disclose={"grp": True, "roles": [True, True]}, iat=at - 3600),
        "other-door": present(bound, phone, aud="south", iat=at),
        "other-key": present(bound, thief, iat=at),
        "bare-pass": bound,
        "bearer-sd-jwt": bearer,
    }
    for name, text in out.items():
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
    public = json.loads(site.export_public())
    public["kid"] = "sd-site"
    print(json.dumps({"keys": [public]}))


def verify(jwks_path, presentation, aud, nonce):
    from sd_jwt.verifier import SDJWTVerifier
    with open(jwks_path) as f:
        keys = [JWK(**k) for k in json.load(f)["keys"]]

    def issuer_key(issuer, header):
        wanted = header.get("kid")
        for k in keys:
            if wanted is None or k.get("kid") == wanted:
                return k
        raise ValueError("no key for kid %r" % wanted)

    try:
        verified = SDJWTVerifier(presentation, issuer_key, aud, nonce).get_verified_payload()
    except Exception as e:  # the reference verifier raises plain exceptions for every refusal
        print("refused: %s" % e)
        sys.exit(1)
    print(json.dumps(verified))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "cases":
        cases(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "seeds":
        seeds(sys.argv[2])
    elif len(sys.argv) == 6 and sys.argv[1] == "verify":
        verify(*sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
