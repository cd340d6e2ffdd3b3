#!/usr/bin/env python3
"""Scores the live-path frames with the reference decoder, zxing-cpp 3.1.1 from PyPI (all formats,
try_invert on; try_rotate and try_downscale off, as the bench runs zxing-cpp 1.4: on these frames they
read nothing more and double the CPU), as `scangate bench` scores its own decoders: a read is a symbol whose bytes equal the
frame's payload; any other symbol is a misread.

Usage: score_reference.py FRAMES_DIR [--out FILE] [--repeats N] [--check N]
Writes FILE (default FRAMES_DIR/reference.json):
  {"decoder": "zxing-cpp 3.1.1", "repeats": N,
   "frames": [{"file", "read": bool, "misreads": int, "cpu_ms": float}],
   "categories": {name: {"frames", "reads", "misreads"}}}
cpu_ms is the thread-CPU time of one read_barcodes call on the frame, best of N repeats (the image is
already in memory, as the Swift decoders' frames are).
--check N: the generator's self-check. Decodes the first N frames of each category and prints
{"checked", "read", "unread": [files], "mismatches": [reasons]}; exit 1 when any code read differs from
the manifest's payload or an empty scene reads anything (a frame the reference cannot read is listed,
not a failure). Exit 2 with one line on stderr on a bad or missing file.
"""
import argparse
import base64
import importlib.metadata
import json
import os
import re
import sys
import time

import numpy as np
import zxingcpp

DECODER = "zxing-cpp " + importlib.metadata.version("zxing-cpp")


def fail(message):
    print(f"score_reference.py: {message}", file=sys.stderr)
    sys.exit(2)


def read_pgm(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    # The header's last token is followed by exactly one whitespace byte; the pixels may start with
    # bytes that look like whitespace (a split would eat them).
    header = re.match(rb"P5\s+(\d+)\s+(\d+)\s+(\d+)\s", data)
    if header is None or header.group(3) != b"255":
        fail(f"{path}: not an 8-bit binary PGM (P5)")
    w, h = int(header.group(1)), int(header.group(2))
    pixels = data[header.end():]
    if len(pixels) < w * h:
        fail(f"{path}: {len(pixels)} bytes of pixels, want {w * h}")
    return np.frombuffer(pixels[: w * h], dtype=np.uint8).reshape(h, w)


def decode(luma):
    return zxingcpp.read_barcodes(luma, formats=zxingcpp.BarcodeFormat.All, try_invert=True, try_rotate=False,
                                  try_downscale=False)


def load_manifest(frames_dir):
    path = os.path.join(frames_dir, "manifest.json")
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path}: not JSON ({e})")


def expected(entry):
    b64 = entry.get("payload_b64")
    return None if b64 is None else base64.b64decode(b64)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("frames")
    p.add_argument("--out")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--check", type=int, default=0)
    a = p.parse_args()
    manifest = load_manifest(a.frames)
    frames = manifest.get("frames")
    if not isinstance(frames, list):
        fail(f"{a.frames}/manifest.json: no frames list")

    if a.check:
        seen, bad, unread, read = {}, [], [], 0
        for entry in frames:
            cat = entry["category"]
            if seen.get(cat, 0) >= a.check:
                continue
            seen[cat] = seen.get(cat, 0) + 1
            want = expected(entry)
            got = [bytes(r.bytes) for r in decode(read_pgm(os.path.join(a.frames, entry["file"])))]
            if want is None and got:
                bad.append(f"{entry['file']}: empty scene, read {got!r}")
            elif any(g != want for g in got):
                bad.append(f"{entry['file']}: read {got!r}, manifest says {want!r}")
            elif want is not None and not got:
                unread.append(entry["file"])
            elif want is not None:
                read += 1
        print(json.dumps({"checked": sum(seen.values()), "read": read, "unread": unread, "mismatches": bad}))
        sys.exit(1 if bad else 0)

    images = [read_pgm(os.path.join(a.frames, e["file"])) for e in frames]
    cpu = [float("inf")] * len(frames)
    results = [None] * len(frames)
    for rep in range(max(1, a.repeats)):
        print(f"score_reference.py: {DECODER}, pass {rep + 1}/{a.repeats}", file=sys.stderr)
        for i, img in enumerate(images):
            t0 = time.thread_time_ns()
            r = decode(img)
            cpu[i] = min(cpu[i], (time.thread_time_ns() - t0) / 1e6)
            if results[i] is None:
                results[i] = [bytes(x.bytes) for x in r]
    out_frames, cats = [], {}
    for entry, got, ms in zip(frames, results, cpu):
        want = expected(entry)
        read = want is not None and want in got
        mis = sum(1 for g in got if g != want)
        out_frames.append({"file": entry["file"], "read": read, "misreads": mis, "cpu_ms": round(ms, 4)})
        c = cats.setdefault(entry["category"], {"frames": 0, "reads": 0, "misreads": 0})
        c["frames"] += 1
        c["reads"] += int(read)
        c["misreads"] += mis
    out = {"decoder": DECODER, "options": "all formats, try_invert, no try_rotate or try_downscale", "repeats": a.repeats,
           "generator_key": manifest.get("generator", {}).get("key"), "frames": out_frames, "categories": cats}
    path = a.out or os.path.join(a.frames, "reference.json")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
