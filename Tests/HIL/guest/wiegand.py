#!/usr/bin/env python3
"""Wiegand as a panel sees it, written from the published format definitions and independently of
ScanGate's Swift code: the frame formats, a decoder that turns a gpio_value trace of D0/D1 into frames
(bits, pulse widths, intervals, gaps), the checks the HIL Wiegand checks apply, and the timing
histogram they print.

Command line (used by the unit tests, Tests/ScanGateTests/Outputs/Wiegand/WiegandFormatTests.swift):
  python3 wiegand.py vectors [--seed N] [--count N]   reference frames as JSON lines:
                                                       {"format", "facility", "card", "bits"}
  python3 wiegand.py selftest                          the decoder and checks on synthetic traces, and the
                                                       formats against published vectors; exit 1 on failure

Bit positions count from 1, the first bit sent. Sources of the definitions:
  26 H10301    SIA/HID: P(even, 2-13) FC(2-9) CN(10-25) P(odd, 14-25)
  34 N10002    HID: P(even, 2-17) FC(2-17) CN(18-33) P(odd, 18-33)
  35 Corp 1000 HID Corporate 1000: company code 3-14, card 15-34; bit 2 even parity over the pairs
               (3,4), (6,7), ..., (33,34); bit 35 odd parity over the pairs (2,3), (5,6), ..., (32,33)
               (bit 2 included); bit 1 odd parity over bits 2-35 (both other parity bits included)
  37 H10304    HID: P(even, 2-19) FC(2-17) CN(18-36) P(odd, 19-36)
  37 H10302    HID: P(even, 2-19) CN(2-36) P(odd, 19-36)
  raw:N        the number in N bits, most significant first, no parity
"""
import json
import random
import sys


def span(first, last):
    return list(range(first, last + 1))


def pairs(first, count):
    """(first, first+1), (first+3, first+4), ...: `count` pairs, flattened."""
    out = []
    for k in range(count):
        out += [first + 3 * k, first + 1 + 3 * k]
    return out


class Format:
    def __init__(self, name, length, facility, card, parities):
        self.name = name
        self.length = length
        self.facility = facility      # (first, last) or None
        self.card = card              # (first, last)
        self.parities = parities      # [(position, "even" | "odd", [covered positions])], in computing order

    def width(self, field):
        return 0 if field is None else field[1] - field[0] + 1

    def encode(self, facility, card):
        """'0101...' for the facility and card; ValueError when one does not fit its field."""
        if self.facility is None and facility:
            raise ValueError(f"{self.name} has no facility field")
        if facility >= 1 << self.width(self.facility) if self.facility else False:
            raise ValueError("facility out of range")
        if card >= 1 << self.width(self.card):
            raise ValueError("card out of range")
        bits = [0] * (self.length + 1)           # index 0 unused: positions are 1-based
        for field, value in ((self.facility, facility), (self.card, card)):
            if field is None:
                continue
            w = self.width(field)
            for i in range(w):
                bits[field[0] + i] = (value >> (w - 1 - i)) & 1
        for position, kind, covered in self.parities:
            ones = sum(bits[p] for p in covered)
            bits[position] = ones % 2 if kind == "even" else 1 - ones % 2
        return "".join(str(b) for b in bits[1:])

    def decode(self, text):
        """(parity ok, facility or None, card) of a bit string; raises ValueError for a wrong length."""
        if len(text) != self.length or set(text) - {"0", "1"}:
            raise ValueError(f"{self.name} has {self.length} bits, got {len(text)}: {text}")
        bits = [0] + [int(c) for c in text]
        ok = all((bits[position] + sum(bits[p] for p in covered)) % 2 == (0 if kind == "even" else 1)
                 for position, kind, covered in self.parities)

        def field(f):
            if f is None:
                return None
            return int(text[f[0] - 1:f[1]], 2)
        return ok, field(self.facility), field(self.card)


FORMATS = {
    "26": Format("26", 26, (2, 9), (10, 25), [(1, "even", span(2, 13)), (26, "odd", span(14, 25))]),
    "34": Format("34", 34, (2, 17), (18, 33), [(1, "even", span(2, 17)), (34, "odd", span(18, 33))]),
    "35": Format("35", 35, (3, 14), (15, 34), [(2, "even", pairs(3, 11)), (35, "odd", pairs(2, 11)),
                                               (1, "odd", span(2, 35))]),
    "37": Format("37", 37, (2, 17), (18, 36), [(1, "even", span(2, 19)), (37, "odd", span(19, 36))]),
    "37-h10302": Format("37-h10302", 37, None, (2, 36), [(1, "even", span(2, 19)), (37, "odd", span(19, 36))]),
}


def fmt(name):
    if name in FORMATS:
        return FORMATS[name]
    if name.startswith("raw:"):
        n = int(name[4:])
        return Format(name, n, None, (1, n), [])
    raise ValueError(f"unknown format {name}")


# Published frames (each with where it was published), checked by `selftest` and by the unit tests.
PUBLISHED = [
    # door.md (the check vector)
    ("26", 90, 324, "00101101000000001010001000"),
    # Proxmark3 cheat sheet, `wiegand decode 2006f623ae`: the low 26 bits under HID's preamble
    ("26", 123, 4567, format(0x2006F623AE & ((1 << 26) - 1), "026b")),
    # a Doppelganger reader's card log: "C1k35s (C-1000), Bit_Length: 35, Hex_Value: 2D4A64FB8E,
    # Facility_Code: 2643, Card_Number: 163271" (the low 35 bits)
    ("35", 2643, 163271, format(0x2D4A64FB8E & ((1 << 35) - 1), "035b")),
    # Proxmark3 tutorial, `lf hid decode 10001fc656`: H10304 FC 1 CN 516907, and H10302 CN 1041195
    ("37", 1, 516907, format(0x10001FC656, "037b")),
    ("37-h10302", 0, 1041195, format(0x10001FC656, "037b")),
]


def vectors(seed=1, count=100):
    """Reference frames for every format: the edges of each field and random values."""
    rnd = random.Random(seed)
    out = []
    names = list(FORMATS) + ["raw:1", "raw:8", "raw:26", "raw:40", "raw:64"]
    for name in names:
        f = fmt(name)
        fw, cw = f.width(f.facility), f.width(f.card)
        cases = [(0, 0), ((1 << fw) - 1 if fw else 0, (1 << cw) - 1), (1 if fw else 0, 1)]
        cases += [(rnd.randrange(1 << fw) if fw else 0, rnd.randrange(1 << cw)) for _ in range(count)]
        for facility, card in cases:
            out.append({"format": name, "facility": facility, "card": card, "bits": f.encode(facility, card)})
    return out


# ---------------------------------------------------------------------------------------------------
# From a trace to frames

def line_pulses(events, offset, active):
    """[(start s, end s)] of the runs at level `active` on `offset`; `events` = [(time s, offset, level)].
    A run still active at the end of the trace is returned as (start, None)."""
    out, level, start = [], None, None
    for t, o, v in events:
        if o != offset:
            continue
        if v == active and level != active:
            start = t
        elif v != active and level == active and start is not None:
            out.append((start, t))
            start = None
        level = v
    if start is not None:
        out.append((start, None))
    return out


def analyse(events, d0, d1, active=0, split_s=0.030):
    """D0/D1 levels → {"frames": [{"bits", "starts", "widths_us", "intervals_us"}], "gaps_ms",
    "overlaps", "unterminated"}. A frame ends after `split_s` of idle (longer than the longest bit
    interval, 20 ms, and shorter than the least frame gap, 50 ms)."""
    pulses = [(s, e, "0") for s, e in line_pulses(events, d0, active)] + \
             [(s, e, "1") for s, e in line_pulses(events, d1, active)]
    unterminated = [p for p in pulses if p[1] is None]
    done = sorted(p for p in pulses if p[1] is not None)
    overlaps = 0
    for a, b in zip(done, done[1:]):
        if b[0] < a[1]:
            overlaps += 1   # the next pulse started before this one ended: both lines active
    frames, gaps = [], []
    for s, e, bit in done:
        if frames and s - frames[-1]["end"] <= split_s:
            f = frames[-1]
            f["intervals_us"].append((s - f["starts"][-1]) * 1e6)
        else:
            if frames:
                gaps.append((s - frames[-1]["end"]) * 1e3)
            f = {"bits": "", "starts": [], "widths_us": [], "intervals_us": []}
            frames.append(f)
        f["bits"] += bit
        f["starts"].append(s)
        f["widths_us"].append((e - s) * 1e6)
        f["end"] = e
    return {"frames": frames, "gaps_ms": gaps, "overlaps": overlaps, "unterminated": len(unterminated)}


PULSE_US = (20, 100)
INTERVAL_US = (200, 20000)


def histogram(values, edges):
    """'<20:0 20-40:3 ... >100:0' counts between consecutive edges."""
    parts = [f"<{edges[0]}:{sum(v < edges[0] for v in values)}"]
    for lo, hi in zip(edges, edges[1:]):
        parts.append(f"{lo}-{hi}:{sum(lo <= v < hi for v in values)}")
    parts.append(f">={edges[-1]}:{sum(v >= edges[-1] for v in values)}")
    return " ".join(parts)


def share(values, window):
    inside = sum(window[0] <= round(v) <= window[1] for v in values)
    return inside, (100.0 * inside / len(values)) if values else 0.0


def median(values):
    s = sorted(values)
    return s[len(s) // 2] if s else 0.0


def timing_summary(analysis):
    """The histogram line the checks print: share in the spec's window and the max, for pulses and
    intervals, and the smallest frame gap."""
    widths = [w for f in analysis["frames"] for w in f["widths_us"]]
    intervals = [i for f in analysis["frames"] for i in f["intervals_us"]]
    n_w, pct_w = share(widths, PULSE_US)
    n_i, pct_i = share(intervals, INTERVAL_US)
    gaps = analysis["gaps_ms"]
    return (f"pulses {n_w}/{len(widths)} ({pct_w:.1f}%) in 20-100 us, p50 {median(widths):.0f} max "
            f"{max(widths, default=0):.0f} us [{histogram(widths, [20, 40, 60, 80, 100, 150, 300])}]; "
            f"intervals {n_i}/{len(intervals)} ({pct_i:.1f}%) in 200-20000 us, p50 {median(intervals):.0f} max "
            f"{max(intervals, default=0):.0f} us; frame gaps min {min(gaps, default=0):.1f} ms")


def check(analysis, expected, frame_gap_ms):
    """Failures (strings; empty when all is well) of the frames against `expected` =
    [(format, facility, card)]: the bits, the parity and the number of each frame (decoded here, not
    taken from the sender), every pulse within 20-100 us, every interval within 200 us-20 ms, every gap
    between frames at least `frame_gap_ms`, never both lines active."""
    failures = []
    frames = analysis["frames"]
    if analysis["overlaps"]:
        failures.append(f"D0 and D1 were active together {analysis['overlaps']} times")
    if analysis["unterminated"]:
        failures.append(f"{analysis['unterminated']} pulse(s) never ended (a line left active)")
    if len(frames) != len(expected):
        failures.append(f"{len(frames)} frames on the wire ({[f['bits'] for f in frames]}), expected {len(expected)}")
    for i, (f, (name, facility, card)) in enumerate(zip(frames, expected)):
        form = fmt(name)
        try:
            ok, got_facility, got_card = form.decode(f["bits"])
        except ValueError as e:
            failures.append(f"frame {i + 1}: {e}")
            continue
        if not ok:
            failures.append(f"frame {i + 1}: parity wrong in {f['bits']} ({name})")
        want_facility = facility if form.facility else None
        if (got_facility, got_card) != (want_facility, card):
            failures.append(f"frame {i + 1} ({name}): facility {got_facility} card {got_card}, expected "
                            f"{want_facility} / {card} ({f['bits']})")
        if f["bits"] != form.encode(facility if form.facility else 0, card):
            failures.append(f"frame {i + 1}: bits {f['bits']}, expected {form.encode(facility if form.facility else 0, card)}")
        # The trace stamps to the microsecond: compare whole microseconds.
        bad_w = [round(w) for w in f["widths_us"] if not PULSE_US[0] <= round(w) <= PULSE_US[1]]
        bad_i = [round(v) for v in f["intervals_us"] if not INTERVAL_US[0] <= round(v) <= INTERVAL_US[1]]
        if bad_w:
            failures.append(f"frame {i + 1}: {len(bad_w)} pulse(s) outside 20-100 us: {bad_w[:8]} us")
        if bad_i:
            failures.append(f"frame {i + 1}: {len(bad_i)} interval(s) outside 200-20000 us: {bad_i[:8]} us")
    short = [round(g, 3) for g in analysis["gaps_ms"] if round(g, 3) < frame_gap_ms]
    if short:
        failures.append(f"frame gap(s) below {frame_gap_ms} ms: {short} ms")
    return failures


# ---------------------------------------------------------------------------------------------------
# Self-test on synthetic traces

def synthetic(frames, d0=12, d1=13, pulse_us=50, interval_us=2000, gap_ms=100, active=0, t0=10.0, tweak=None):
    """The trace a correct sender makes for `frames` (bit strings): idle levels at t0, then the pulses.
    `tweak(frame, bit, start, end) -> (start, end)` perturbs one pulse."""
    idle = 1 - active
    events = [(t0, d0, idle), (t0, d1, idle)]
    t = t0 + 0.01
    for fi, bits in enumerate(frames):
        for bi, b in enumerate(bits):
            start, end = t + bi * interval_us * 1e-6, t + bi * interval_us * 1e-6 + pulse_us * 1e-6
            if tweak:
                start, end = tweak(fi, bi, start, end)
            line = d1 if b == "1" else d0
            events += [(start, line, active), (end, line, idle)]
        t = t + (len(bits) - 1) * interval_us * 1e-6 + pulse_us * 1e-6 + gap_ms * 1e-3
    return sorted(events)


def selftest():
    failures = []

    def expect(condition, what):
        if not condition:
            failures.append(what)

    for name, facility, card, bits in PUBLISHED:
        f = fmt(name)
        expect(f.encode(facility if f.facility else 0, card) == bits, f"published {name} {facility}/{card}: encode "
               f"{f.encode(facility if f.facility else 0, card)} != {bits}")
        ok, fa, ca = f.decode(bits)
        expect(ok and ca == card and (fa == facility or f.facility is None), f"published {name} {bits} decodes to {ok} {fa} {ca}")
    # A flipped data bit breaks a parity in every format with parity.
    for name in FORMATS:
        f = fmt(name)
        bits = f.encode(1 if f.facility else 0, 12345)
        for p in range(1, f.length + 1):
            flipped = bits[:p - 1] + ("1" if bits[p - 1] == "0" else "0") + bits[p:]
            expect(not f.decode(flipped)[0], f"{name}: flipping bit {p} of {bits} keeps the parity valid")

    want = [("26", 90, 324), ("37", 1, 516907)]
    frames = [fmt(n).encode(fa, c) for n, fa, c in want]
    good = analyse(synthetic(frames), 12, 13)
    expect(check(good, want, 100) == [], f"a clean trace fails: {check(good, want, 100)}")
    expect(good["frames"][0]["bits"] == "00101101000000001010001000", f"decoded {good['frames'][0]['bits']}")
    expect(len(good["gaps_ms"]) == 1 and round(good["gaps_ms"][0], 3) >= 100, f"gaps {good['gaps_ms']}")
    summary = timing_summary(good)
    expect("pulses 63/63 (100.0%)" in summary, f"summary: {summary}")
    # Active-high (an inverting board): the same frames with the levels inverted.
    high = analyse(synthetic(frames, active=1), 12, 13, active=1)
    expect(check(high, want, 100) == [], f"an active-high trace fails: {check(high, want, 100)}")

    def fails(events, what, expected=want, gap=100):
        got = check(analyse(events, 12, 13), expected, gap)
        expect(got != [], f"{what} was not caught")
        return got

    fails(synthetic(frames, tweak=lambda f, b, s, e: (s, s + 150e-6) if (f, b) == (0, 5) else (s, e)), "a 150 us pulse")
    fails(synthetic(frames, tweak=lambda f, b, s, e: (s, s + 15e-6) if (f, b) == (1, 0) else (s, e)), "a 15 us pulse")
    fails(synthetic(frames, interval_us=150, pulse_us=40), "150 us intervals")
    fails(synthetic(frames, tweak=lambda f, b, s, e: (s + 0.0215, e + 0.0215) if (f, b) == (0, 25) else (s, e)),
          "a 23.5 ms interval")
    fails(synthetic(frames, gap_ms=60), "a 60 ms frame gap (want 100)")
    fails(synthetic(frames, tweak=lambda f, b, s, e: (s - 1.99e-3, e) if (f, b) == (0, 3) else (s, e)), "overlapping pulses")
    fails(synthetic([frames[0][:-1] + ("0" if frames[0][-1] == "1" else "1"), frames[1]]), "a wrong parity bit")
    fails(synthetic([frames[0][:20], frames[1]]), "a frame cut at bit 20")
    fails(synthetic(frames), "a different number", expected=[("26", 90, 325), ("37", 1, 516907)])
    cut = synthetic(frames)[:-1]   # the last pulse never ends
    fails(cut, "a line left active")
    return failures


def main(argv):
    if len(argv) >= 2 and argv[1] == "vectors":
        seed, count = 1, 100
        if "--seed" in argv:
            seed = int(argv[argv.index("--seed") + 1])
        if "--count" in argv:
            count = int(argv[argv.index("--count") + 1])
        for v in vectors(seed, count):
            print(json.dumps(v))
        for name, facility, card, bits in PUBLISHED:
            print(json.dumps({"format": name, "facility": facility if fmt(name).facility else 0, "card": card,
                              "bits": bits, "published": True}))
        return 0
    if len(argv) >= 2 and argv[1] == "selftest":
        failures = selftest()
        for f in failures:
            print(f"FAIL {f}")
        print("selftest: " + ("ok" if not failures else f"{len(failures)} failure(s)"))
        return 1 if failures else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
