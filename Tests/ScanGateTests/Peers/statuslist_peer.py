#!/usr/bin/env python3
"""A Token Status List issuer that is not ScanGate (draft-ietf-oauth-status-list): Python's zlib packs the
bits, PyJWT signs the JWT form and the `cwt` package (COSE.encode, as the draft's own src/status_token.py
does) the CWT form (Tests/python-requirements.txt). The site key is made once in DIR/site.pem (Ed25519,
kid "site") and published in DIR/site.jwks.

  statuslist_peer.py vectors         prints the draft's two example lists as Python's zlib inflates them:
                                     {"one": {"lst", "bytes"}, "two": {"lst", "bytes"}} (bytes in hex)
  statuslist_peer.py list DIR OUT --uri U --size N [--bits B] [--set I=V,...] [--iat T] [--exp T] [--ttl S]
                                     [--typ T] [--bomb MB]
                                     writes a status list token (statuslist+jwt) to OUT: N entries of B bits
                                     (default 1), all 0 but those --set gives; iat/exp absolute (default now,
                                     now + 1 day); --bomb: lst is MB megabytes of zeros instead
                                     [--form cwt [--encoding bin|hex] [--typ-header protected|unprotected|none]
                                     [--tag61 yes] [--omit-status-list yes] [--flip-signature yes]]
                                     --form cwt: a COSE_Sign1 (tag 18) with typ (16) application/statuslist+cwt
                                     in the protected header (or --typ T, or where --typ-header says), claims
                                     2, 6, 4, 65534, 65533 {"bits", "lst"}; written as raw bytes (bin, the
                                     default) or hex text; --tag61 wraps it in the CWT tag, --omit-status-list
                                     leaves 65533 out, --flip-signature changes one signature byte
  statuslist_peer.py pass DIR --sub X --idx I --uri U [--typ T] [--form cwt]
                                     prints one EdDSA pass (exp in 10 minutes) whose status claim names
                                     entry I of the list U; --form cwt: a CWT pass ("SG1:" + base45, the
                                     status claim 65535) signed by the `cwt` package
"""
import base64, json, os, sys, time, zlib

import cbor2
import cwt
import jwt
from cwt import COSE, COSEKey
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519


def b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def site_key(directory):
    pem_path = os.path.join(directory, "site.pem")
    if os.path.exists(pem_path):
        with open(pem_path, "rb") as f:
            return serialization.load_pem_private_key(f.read(), password=None)
    key = ed25519.Ed25519PrivateKey.generate()
    with open(pem_path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    os.chmod(pem_path, 0o600)
    jwk = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(key.public_key()))
    jwk["kid"] = "site"
    jwks_path = os.path.join(directory, "site.jwks")
    with open(jwks_path, "w") as f:
        json.dump({"keys": [jwk]}, f)
    os.chmod(jwks_path, 0o644)
    return key


def pack(size, bits, values):
    """The draft's packing: entry i takes bits [i*bits, (i+1)*bits) counted from the least significant bit of byte 0."""
    per_byte = 8 // bits
    out = bytearray((size + per_byte - 1) // per_byte)
    for i, v in values.items():
        out[i // per_byte] |= (v & ((1 << bits) - 1)) << ((i % per_byte) * bits)
    return bytes(out)


def options(argv):
    return dict(zip(argv[0::2], argv[1::2]))


def make_list(directory, out, opts):
    key = site_key(directory)
    now = int(time.time())
    bits = int(opts.get("--bits", "1"))
    size = int(opts["--size"])
    values = {}
    for item in filter(None, opts.get("--set", "").split(",")):
        i, v = item.split("=")
        values[int(i)] = int(v)
    if "--bomb" in opts:
        raw = bytes(int(opts["--bomb"]) << 20)
    else:
        raw = pack(size, bits, values)
    if opts.get("--form") == "cwt":
        data = cwt_list(key, raw, bits, now, opts)
        with open(out, "wb") as f:
            f.write(data.hex().encode() + b"\n" if opts.get("--encoding") == "hex" else data)
        os.chmod(out, 0o644)
        print(json.dumps({"jwks": os.path.join(directory, "site.jwks"), "file": out, "bytes": raw[:64].hex()}))
        return
    claims = {"sub": opts["--uri"], "iat": int(opts.get("--iat", now)), "exp": int(opts.get("--exp", now + 86400)),
              "status_list": {"bits": bits, "lst": b64url(zlib.compress(raw, 9))}}
    if "--ttl" in opts:
        claims["ttl"] = int(opts["--ttl"])
    token = jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": "site", "typ": opts.get("--typ", "statuslist+jwt")})
    with open(out, "w") as f:
        f.write(token + "\n")
    os.chmod(out, 0o644)
    print(json.dumps({"jwks": os.path.join(directory, "site.jwks"), "file": out, "bytes": raw[:64].hex()}))


def cose_key(key):
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return COSEKey.from_pem(pem, kid="site")


def cwt_list(key, raw, bits, now, opts):
    """The draft's Status List Token in CWT form, built as its src/status_token.py buildCWT does."""
    claims = {2: opts["--uri"], 6: int(opts.get("--iat", now)), 4: int(opts.get("--exp", now + 86400))}
    if "--ttl" in opts:
        claims[65534] = int(opts["--ttl"])
    if opts.get("--omit-status-list") != "yes":
        claims[65533] = {"bits": bits, "lst": zlib.compress(raw, 9)}
    typ = opts.get("--typ", "application/statuslist+cwt")
    protected, unprotected = {1: -8}, {4: b"site"}
    where = opts.get("--typ-header", "protected")
    if where == "protected":
        protected[16] = typ
    elif where == "unprotected":
        unprotected[16] = typ
    data = COSE.new().encode(payload=cbor2.dumps(claims), key=cose_key(key), protected=protected, unprotected=unprotected)
    message = cbor2.loads(data)
    if opts.get("--flip-signature") == "yes":
        signature = bytearray(message.value[3])
        signature[10] ^= 0x01
        message.value[3] = bytes(signature)
        data = cbor2.dumps(message)
    if opts.get("--tag61") == "yes":
        data = cbor2.dumps(cbor2.CBORTag(61, message))
    return data


def make_pass(directory, opts):
    key = site_key(directory)
    now = int(time.time())
    if opts.get("--form") == "cwt":
        from cwt_peer import as_pass
        claims = {2: opts["--sub"], 6: now, 4: now + 600,
                  65535: {"status_list": {"idx": int(opts["--idx"]), "uri": opts["--uri"]}}}
        print(as_pass(cwt.encode(claims, cose_key(key))))
        return
    claims = {"sub": opts["--sub"], "iat": now, "exp": now + 600,
              "status": {"status_list": {"idx": int(opts["--idx"]), "uri": opts["--uri"]}}}
    headers = {"kid": "site"}
    if "--typ" in opts:
        headers["typ"] = opts["--typ"]
    print(jwt.encode(claims, key, algorithm="EdDSA", headers=headers))


def vectors():
    out = {}
    for name, lst in (("one", "eNrbuRgAAhcBXQ"), ("two", "eNo76fITAAPfAgc")):
        raw = zlib.decompress(base64.urlsafe_b64decode(lst + "=" * (-len(lst) % 4)))
        out[name] = {"lst": lst, "bytes": raw.hex()}
    print(json.dumps(out))


def main(argv):
    if argv[:1] == ["vectors"]:
        vectors()
        return 0
    if len(argv) >= 3 and argv[0] == "list":
        make_list(argv[1], argv[2], options(argv[3:]))
        return 0
    if len(argv) >= 2 and argv[0] == "pass":
        make_pass(argv[1], options(argv[2:]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
