#!/usr/bin/env python3
"""The live-path table as a picture: read rate per category, one bar per decoder, zbar first.

Usage: chart.py BENCH_JSON OUT_PNG
BENCH_JSON is what `scangate bench --json` printed (or its "live_frames" object alone; "-" reads stdin).
Exit 2 with one line on stderr when the file is missing or has no live-path table.
"""
import json
import sys

from PIL import Image, ImageDraw, ImageFont

COLOURS = [(110, 110, 110), (52, 120, 200), (30, 70, 140), (220, 120, 30), (60, 160, 80), (160, 60, 160)]


def fail(message):
    print(f"chart.py: {message}", file=sys.stderr)
    sys.exit(2)


def main():
    if len(sys.argv) != 3:
        fail("usage: chart.py BENCH_JSON OUT_PNG")
    source, out = sys.argv[1], sys.argv[2]
    try:
        data = json.load(sys.stdin if source == "-" else open(source))
    except OSError as e:
        fail(f"{source}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{source}: not JSON ({e})")
    live = data.get("live_frames", data) if isinstance(data, dict) else None
    if not isinstance(live, dict) or not live.get("decoders"):
        fail(f"{source}: no live-path table (run scangate bench with --live-frames DIR)")
    categories = [c for c in live["categories"] if c.get("format")]
    decoders = live["decoders"]

    font = ImageFont.load_default(size=14)
    small = ImageFont.load_default(size=11)
    label_w, bar_w, bar_h, gap = 190, 360, 9, 8
    row_h = bar_h * len(decoders) + gap
    top = 40 + 18 * len(decoders)
    img = Image.new("RGB", (label_w + bar_w + 80, top + row_h * len(categories) + 40), "white")
    d = ImageDraw.Draw(img)
    d.text((10, 10), f"live-path frames: read rate per category ({live.get('frames')} frames)", fill="black", font=font)
    for k, dec in enumerate(decoders):
        y = 32 + 18 * k
        d.rectangle([10, y + 3, 24, y + 13], fill=COLOURS[k % len(COLOURS)])
        cpu = dec.get("cpu_vs_zbar", {}).get("all")
        note = "" if cpu is None else f", CPU {cpu:.2f}x zbar" + ("" if dec.get("in_process", True) else " (timed apart)")
        d.text((30, y), f"{dec['name']}: {dec['reads_total']}/{live.get('frames_with_code')}{note}", fill="black", font=small)
    for i, c in enumerate(categories):
        y0 = top + i * row_h
        d.text((10, y0 + row_h / 2 - 9), c["name"], fill="black", font=font)
        for k, dec in enumerate(decoders):
            frames = c.get("frames") or 1
            reads = dec["reads"].get(c["name"], 0)
            y = y0 + k * bar_h
            w = int(bar_w * reads / frames)
            d.rectangle([label_w, y, label_w + max(w, 1), y + bar_h - 2], fill=COLOURS[k % len(COLOURS)])
            d.text((label_w + w + 4, y - 2), f"{reads}", fill="black", font=small)
    for f in (0, 0.5, 1):
        x = label_w + int(bar_w * f)
        d.line([x, top - 4, x, top + row_h * len(categories)], fill=(200, 200, 200))
        d.text((x - 10, top + row_h * len(categories) + 4), f"{int(f * 100)}%", fill="black", font=small)
    img.save(out)


if __name__ == "__main__":
    main()
