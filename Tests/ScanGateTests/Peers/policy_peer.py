#!/usr/bin/env python3
"""A site policy issuer that is not ScanGate: PyJWT signs the JWS form (typ scangate-policy+jwt) and the
`cwt` package's COSE the COSE_Sign1 form (typ application/scangate-policy+cwt), with the site key of
statuslist_peer.py (DIR/site.pem, kid "site", published in DIR/site.jwks). Python's zoneinfo says what
local time an instant is in the site's zone, to check the daemon's hours against.

  policy_peer.py policy DIR OUT --doc JSON [--form cwt] [--encoding bin|hex] [--typ T]
                              signs the claims JSON (ver, iat, exp, tz, door, groups, holidays,
                              antipassback, deny) and writes the document to OUT; --form cwt: a COSE_Sign1
                              whose payload is the claims as a CBOR map (iat and exp as the labels 6 and 4)
  policy_peer.py pass DIR --sub X [--grp G] [--iat T] [--exp T]
                              prints one EdDSA pass (PyJWT) with grp G
  policy_peer.py inside DOC_JSON GROUP T...
                              for each instant T (seconds since 1970): "1" when GROUP may pass at T in the
                              document's tz as Python's zoneinfo reads it, else "0"; then the local time
"""
import datetime, json, os, sys, time
import zoneinfo

import cbor2
import jwt
from cwt import COSE

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from statuslist_peer import cose_key, options, site_key  # noqa: E402

DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]


def make_policy(directory, out, opts):
    key = site_key(directory)
    claims = json.loads(opts["--doc"])
    if opts.get("--form") == "cwt":
        body = dict(claims)
        for name, label in (("iat", 6), ("exp", 4)):
            if name in body:
                body[label] = body.pop(name)
        protected = {1: -8, 16: opts.get("--typ", "application/scangate-policy+cwt")}
        data = COSE.new().encode(payload=cbor2.dumps(body), key=cose_key(key), protected=protected, unprotected={4: b"site"})
        with open(out, "wb") as f:
            f.write(data.hex().encode() + b"\n" if opts.get("--encoding") == "hex" else data)
    else:
        token = jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": "site", "typ": opts.get("--typ", "scangate-policy+jwt")})
        with open(out, "w") as f:
            f.write(token + "\n")
    os.chmod(out, 0o644)
    print(json.dumps({"jwks": os.path.join(directory, "site.jwks"), "file": out}))


def make_pass(directory, opts):
    key = site_key(directory)
    now = int(time.time())
    claims = {"sub": opts["--sub"], "iat": int(opts.get("--iat", now)), "exp": int(opts.get("--exp", now + 600))}
    if "--grp" in opts:
        claims["grp"] = opts["--grp"]
    print(jwt.encode(claims, key, algorithm="EdDSA", headers={"kid": "site"}))


def minutes(text):
    h, m = text.split(":")
    return int(h) * 60 + int(m)


def inside(doc, group, t):
    """The issue's rule, written again here against zoneinfo: a window from-to on its days (to at or
    before from runs past midnight), no hours on a holiday, no `default` group: not restricted."""
    local = datetime.datetime.fromtimestamp(t, zoneinfo.ZoneInfo(doc["tz"]))
    groups = doc.get("groups", {})
    if group not in groups:
        return group == "default", local
    if local.date().isoformat() in doc.get("holidays", []):
        return False, local
    day, minute = local.weekday(), local.hour * 60 + local.minute
    for w in groups[group]["schedule"]:
        days = {DAYS.index(d) for d in w["days"]}
        a, b = minutes(w["from"]), minutes(w["to"])
        if a < b:
            if day in days and a <= minute < b:
                return True, local
        elif (day in days and minute >= a) or ((day - 1) % 7 in days and minute < b):
            return True, local
    return False, local


def main(argv):
    if len(argv) >= 3 and argv[0] == "policy":
        make_policy(argv[1], argv[2], options(argv[3:]))
        return 0
    if len(argv) >= 2 and argv[0] == "pass":
        make_pass(argv[1], options(argv[2:]))
        return 0
    if len(argv) >= 4 and argv[0] == "inside":
        doc = json.loads(argv[1])
        for t in argv[3:]:
            ok, local = inside(doc, argv[2], int(t))
            print("1" if ok else "0", local.isoformat(), local.tzname())
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
