#!/usr/bin/env python3
"""Live-path frames: synthetic 640x480 8-bit luma camera frames, by category, for `scangate bench`.

The codes come from independent encoders: segno (QR, Micro QR) and Debian's zint (DataMatrix, Aztec,
PDF417, EAN-13, Code 128). Each code's modules are rendered through a pinhole camera (position,
in-plane rotation, perspective tilt), onto a label or a phone screen in a scene with an illumination
gradient, then blurred (lens) and given sensor noise, as a camera sees them. Everything follows from
the seed: the same seed, N and encoders give the same bytes.

Usage: generate.py OUT_DIR [--per-category N] [--seed S]
Writes OUT_DIR/frames/<category>-<i>.pgm (P5, 640x480) and OUT_DIR/manifest.json:
  {"generator": {...}, "width": 640, "height": 480, "per_category": N,
   "categories": [{"name", "format", "description"}],
   "frames": [{"file", "category", "format", "payload_b64", "payload_text"?}]}
`format` and `payload_b64` are null for empty scenes; `payload_text` is there when the payload is ASCII.
Exit 2 with one line on stderr on bad arguments or a missing encoder.
"""
import argparse
import base64
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import segno

W, H = 640, 480

# name, format, description. The order is the table's.
CATEGORIES = [
    ("empty", None, "no code: sensor noise, illumination gradients, texture, text-like stripes (counts misreads)"),
    ("qr-centre", "QRCode", "QR on a paper label near the centre, 3-5 px per module, small rotation and tilt"),
    ("qr-offcentre", "QRCode", "QR near an edge or a corner of the frame, fully in view"),
    ("qr-tilt", "QRCode", "QR tilted 20-40 deg away from the camera (perspective), any axis"),
    ("qr-rotated", "QRCode", "QR rotated 20-70 deg in the image plane"),
    ("qr-blur", "QRCode", "QR out of focus: Gaussian blur sigma 0.22-0.34 of a module, 3-5 px per module"),
    ("qr-lowcontrast", "QRCode", "QR with 32-96 grey levels between dark and light modules, dim light"),
    ("qr-inverted", "QRCode", "QR light-on-dark, as a phone in dark mode shows it"),
    ("qr-screen", "QRCode", "QR on a phone screen: the screen's pixel grid (moire) and a glare spot"),
    ("qr-noise", "QRCode", "QR under heavy sensor noise (sigma 7-12 grey levels), low light, 4-6 px per module"),
    ("qr-binary", "QRCode", "QR in byte mode with a binary payload (any byte value), to check byte-exact reads"),
    ("microqr", "MicroQRCode", "Micro QR (M2-M4) on a label, 4-6 px per module"),
    ("datamatrix-centre", "DataMatrix", "DataMatrix near the centre"),
    ("datamatrix-offcentre", "DataMatrix", "DataMatrix near an edge or a corner, rotated up to 30 deg"),
    ("aztec-centre", "Aztec", "Aztec near the centre"),
    ("aztec-offcentre", "Aztec", "Aztec near an edge or a corner, rotated up to 30 deg"),
    ("pdf417", "PDF417", "PDF417 (zint's default columns), 2 px per module, rows 3 modules high"),
    ("ean13", "EAN13", "EAN-13, 2-3 px per module, small rotation"),
    ("code128", "Code128", "Code 128 (ASCII payload), 2-3 px per module, small rotation"),
]

GENERATOR_VERSION = 1


def fail(message):
    print(f"generate.py: {message}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------- encoders


def zint_matrix(symbology, data, extra=()):
    """Modules (1 = dark) of a zint symbol, from `zint --dump`; one row per symbol row."""
    try:
        out = subprocess.run(["zint", "-b", symbology, "--dump", *extra, "-d", data.decode("latin-1")],
                             check=True, capture_output=True).stdout.decode("ascii")
    except FileNotFoundError:
        fail("zint is not installed (apt package zint; scripts/install-deps bench)")
    except subprocess.CalledProcessError as e:
        fail(f"zint -b {symbology} refused {data!r}: {e.stderr.decode(errors='replace').strip()}")
    rows = []
    for line in out.splitlines():
        line = line.replace(" ", "")
        if not line:
            continue
        rows.append([int(b) for ch in line for b in format(int(ch, 16), "04b")])
    if not rows:
        fail(f"zint -b {symbology} printed no symbol for {data!r}")
    width = max(len(r) for r in rows)
    m = np.zeros((len(rows), width), dtype=np.uint8)
    for i, r in enumerate(rows):
        m[i, : len(r)] = r
    # The dump pads each row to whole hex digits: square symbols are as wide as they are high; the
    # others end on a bar (PDF417's stop pattern, the 1D codes' guard or stop), so drop empty columns.
    if symbology in ("DATAMATRIX", "AZTEC"):
        m = m[:, : m.shape[0]]
    else:
        cols = np.nonzero(m.any(axis=0))[0]
        m = m[:, : cols[-1] + 1]
    return m


def segno_matrix(code):
    return np.array([[1 if v else 0 for v in row] for row in code.matrix], dtype=np.uint8)


def ean13_check(digits12):
    s = sum(int(d) * (3 if i % 2 else 1) for i, d in enumerate(digits12))
    return str((10 - s % 10) % 10)


def make_payload(rng, category, i):
    """The payload bytes of frame i of a category, and the encoded module matrix."""
    tag = "".join(rng.choice(list("ABCDEFGHJKLMNPQRSTUVWXYZ23456789"), size=8))
    if category.startswith("qr-binary"):
        n = int(rng.integers(12, 40))
        data = bytes(int(b) for b in rng.integers(0, 256, size=n))
        code = segno.make_qr(data, error="m", mode="byte", boost_error=False)
        return data, segno_matrix(code), 4
    if category.startswith("qr"):
        text = f"SG-{category.upper()}-{i:04d}-{tag}"
        if i % 3 == 1:
            text = f"https://pass.example/t/{tag}{i:04d}"
        data = text.encode("ascii")
        code = segno.make_qr(data, error="m", boost_error=False)
        return data, segno_matrix(code), 4
    if category == "microqr":
        choice = i % 3
        if choice == 0:
            data = str(int(rng.integers(10**9, 10**12))).encode()
        elif choice == 1:
            data = f"MQ{tag[:6]}".encode()
        else:
            data = f"G{i:03d}-{tag[:4]}".encode()
        code = segno.make_micro(data, boost_error=False)
        return data, segno_matrix(code), 2
    if category.startswith("datamatrix"):
        data = f"DM-{i:04d}-{tag}".encode()
        return data, zint_matrix("DATAMATRIX", data, ["--square"]), 2
    if category.startswith("aztec"):
        data = f"AZ-{i:04d}-{tag}".encode()
        return data, zint_matrix("AZTEC", data), 2
    if category == "pdf417":
        data = f"PDF417 TICKET {i:04d} {tag} ROW 12 SEAT {int(rng.integers(1, 40))}".encode()
        return data, zint_matrix("PDF417", data), 2
    if category == "ean13":
        d12 = str(int(rng.integers(1, 10))) + "".join(str(int(d)) for d in rng.integers(0, 10, size=11))
        data = (d12 + ean13_check(d12)).encode()
        return data, zint_matrix("EANX", d12.encode(), ["--notext"]), 10
    if category == "code128":
        data = f"C128-{i:04d}-{tag[:6]}".encode()
        return data, zint_matrix("CODE128", data, ["--notext"]), 10
    raise ValueError(category)


# ---------------------------------------------------------------- rendering


def gaussian_blur(img, sigma):
    if sigma <= 0.05:
        return img
    r = max(1, int(math.ceil(3 * sigma)))
    x = np.arange(-r, r + 1, dtype=np.float64)
    k = np.exp(-0.5 * (x / sigma) ** 2)
    k /= k.sum()
    padded = np.pad(img, ((r, r), (0, 0)), mode="edge")
    out = np.zeros_like(img)
    for j, w in enumerate(k):
        out += w * padded[j : j + img.shape[0], :]
    padded = np.pad(out, ((0, 0), (r, r)), mode="edge")
    out2 = np.zeros_like(img)
    for j, w in enumerate(k):
        out2 += w * padded[:, j : j + img.shape[1]]
    return out2


def smooth_field(rng, scale, amplitude):
    """Low-frequency texture: noise at a coarse grid, bilinearly upsampled."""
    gh, gw = max(2, H // scale + 2), max(2, W // scale + 2)
    grid = rng.normal(0, amplitude, size=(gh, gw))
    ys = np.linspace(0, gh - 1.001, H)
    xs = np.linspace(0, gw - 1.001, W)
    y0, x0 = ys.astype(int), xs.astype(int)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    a = grid[y0][:, x0]
    b = grid[y0][:, x0 + 1]
    c = grid[y0 + 1][:, x0]
    d = grid[y0 + 1][:, x0 + 1]
    return a * (1 - fy) * (1 - fx) + b * (1 - fy) * fx + c * fy * (1 - fx) + d * fy * fx


def background(rng, kind=None):
    """A scene: a base level, a gradient, coarse texture, and sometimes stripes like printed text."""
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    base = rng.uniform(70, 170)
    angle = rng.uniform(0, 2 * math.pi)
    grad = rng.uniform(0, 60) * ((xx - W / 2) * math.cos(angle) + (yy - H / 2) * math.sin(angle)) / W
    img = base + grad + smooth_field(rng, int(rng.integers(40, 160)), rng.uniform(4, 18))
    kind = kind or rng.choice(["plain", "texture", "text"])
    if kind in ("texture", "text"):
        img += smooth_field(rng, int(rng.integers(6, 14)), rng.uniform(3, 10))
    if kind == "text":
        # Lines of dark dashes on a lighter patch: word-like runs that a 1D or 2D finder may try.
        x0, y0 = int(rng.integers(0, W // 2)), int(rng.integers(0, H // 2))
        pw, ph = int(rng.integers(160, 300)), int(rng.integers(100, 200))
        img[y0 : y0 + ph, x0 : x0 + pw] = rng.uniform(170, 220)
        y = y0 + 8
        while y < min(H, y0 + ph) - 10:
            x = x0 + 8
            while x < min(W, x0 + pw) - 12:
                wlen = int(rng.integers(6, 40))
                img[y : y + 6, x : min(x + wlen, x0 + pw - 8)] -= rng.uniform(90, 140)
                x += wlen + int(rng.integers(4, 9))
            y += int(rng.integers(12, 18))
    return img


def homography(corners_src, corners_dst):
    """3x3 H with dst ~ H src for four point pairs."""
    A = []
    for (x, y), (u, v) in zip(corners_src, corners_dst):
        A.append([x, y, 1, 0, 0, 0, -u * x, -u * y, -u])
        A.append([0, 0, 0, x, y, 1, -v * x, -v * y, -v])
    _, _, vt = np.linalg.svd(np.array(A, dtype=np.float64))
    return vt[-1].reshape(3, 3) / vt[-1][-1]


def place(width_px, height_px, centre, rotation_deg, tilt_deg, tilt_axis_deg, focal=700.0):
    """Image corners (TL, TR, BR, BL) of a width x height rectangle seen by a pinhole camera."""
    w, h = width_px / 2, height_px / 2
    pts = np.array([[-w, -h, 0], [w, -h, 0], [w, h, 0], [-w, h, 0]], dtype=np.float64)
    r = math.radians(rotation_deg)
    rz = np.array([[math.cos(r), -math.sin(r), 0], [math.sin(r), math.cos(r), 0], [0, 0, 1]])
    a = math.radians(tilt_axis_deg)
    axis = np.array([math.cos(a), math.sin(a), 0.0])
    t = math.radians(tilt_deg)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    rt = np.eye(3) + math.sin(t) * K + (1 - math.cos(t)) * K @ K
    world = (rt @ (rz @ pts.T)).T
    world[:, 2] += focal
    img = world[:, :2] * focal / world[:, 2:3]
    return img + np.array(centre)


def render_modules(img, modules, quiet, corners, dark, light, margin=0.0, supersample=3):
    """Draws the module matrix (with `quiet` (x, y) light modules around it, and `margin` more of label)
    onto img, through the homography to the given image corners. dark/light: levels."""
    mh, mw = modules.shape
    quiet_x, quiet_y = quiet if isinstance(quiet, tuple) else (quiet, quiet)
    qh, qw = mh + 2 * quiet_y, mw + 2 * quiet_x
    lo, hi = -margin, 1 + margin
    src = [(lo * qw, lo * qh), (hi * qw, lo * qh), (hi * qw, hi * qh), (lo * qw, hi * qh)]
    Hm = homography(corners, src)  # image -> module coordinates
    x0 = max(0, int(math.floor(corners[:, 0].min())) - 1)
    x1 = min(W, int(math.ceil(corners[:, 0].max())) + 2)
    y0 = max(0, int(math.floor(corners[:, 1].min())) - 1)
    y1 = min(H, int(math.ceil(corners[:, 1].max())) + 2)
    if x1 <= x0 or y1 <= y0:
        return
    acc = np.zeros((y1 - y0, x1 - x0))
    cover = np.zeros_like(acc)
    offs = (np.arange(supersample) + 0.5) / supersample
    yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float64)
    for oy in offs:
        for ox in offs:
            px, py = xx + ox, yy + oy
            den = Hm[2, 0] * px + Hm[2, 1] * py + Hm[2, 2]
            u = (Hm[0, 0] * px + Hm[0, 1] * py + Hm[0, 2]) / den
            v = (Hm[1, 0] * px + Hm[1, 1] * py + Hm[1, 2]) / den
            inside = (u >= lo * qw) & (u < hi * qw) & (v >= lo * qh) & (v < hi * qh)
            mu = np.floor(u).astype(int) - quiet_x
            mv = np.floor(v).astype(int) - quiet_y
            inmod = inside & (mu >= 0) & (mu < mw) & (mv >= 0) & (mv < mh)
            val = np.zeros_like(u)
            val[inmod] = modules[mv[inmod], mu[inmod]]
            acc += np.where(inside, val, 0)
            cover += inside
    n = supersample * supersample
    cover /= n
    darkness = acc / n
    region = img[y0:y1, x0:x1]
    label = light + (dark - light) * np.where(cover > 0, darkness / np.maximum(cover, 1e-9), 0)
    img[y0:y1, x0:x1] = region * (1 - cover) + label * cover


def fits(corners, pad=4):
    return (corners[:, 0].min() >= pad and corners[:, 0].max() <= W - pad
            and corners[:, 1].min() >= pad and corners[:, 1].max() <= H - pad)


def frame(rng, category, modules, quiet):
    """Renders one frame of a category with a code; returns float image."""
    img = background(rng)
    mh, mw = modules.shape
    linear = category in ("ean13", "code128")
    if linear:
        bar_h = int(rng.integers(26, 40))  # in modules
        modules = np.repeat(modules[:1], bar_h, axis=0)
        mh = bar_h
    if category == "pdf417":
        modules = np.repeat(modules, 3, axis=0)
        mh = modules.shape[0]
    q_v = quiet if not linear else 2
    qh, qw = mh + 2 * q_v, mw + 2 * quiet
    # module size in pixels, by category
    if linear or category == "pdf417":
        px = rng.uniform(2.0, 2.8) if category != "pdf417" else rng.uniform(1.9, 2.4)
    elif category == "microqr":
        px = rng.uniform(4.0, 6.0)
    elif category.startswith(("datamatrix", "aztec")):
        px = rng.uniform(3.5, 5.5)
    elif category == "qr-noise":
        px = rng.uniform(4.0, 6.0)
    else:
        px = rng.uniform(3.0, 5.0)
    rotation = rng.uniform(-8, 8)
    tilt = rng.uniform(0, 10)
    off = category.endswith("offcentre")
    if category == "qr-tilt":
        tilt = rng.uniform(20, 40)
    if category == "qr-rotated":
        rotation = rng.uniform(20, 70) * rng.choice([-1, 1])
    if category in ("datamatrix-offcentre", "aztec-offcentre"):
        rotation = rng.uniform(-30, 30)
    if linear:
        rotation = rng.uniform(-6, 6)
        tilt = rng.uniform(0, 12)
    dark, light = rng.uniform(15, 45), rng.uniform(175, 225)
    if category == "qr-lowcontrast":
        light = rng.uniform(100, 150)
        dark = light - rng.uniform(32, 96)
    if category == "qr-noise":
        light, dark = rng.uniform(90, 130), rng.uniform(15, 35)
    inverted = category == "qr-inverted"
    screen = category in ("qr-screen", "qr-inverted")
    for _ in range(200):
        if off:
            # Near an edge or a corner: the code's centre in the outer band of the frame.
            cx = rng.choice([rng.uniform(90, 170), rng.uniform(W - 170, W - 90), rng.uniform(90, W - 90)])
            cy = rng.choice([rng.uniform(80, 140), rng.uniform(H - 140, H - 80)])
            if rng.random() < 0.3:
                cx, cy = rng.choice([rng.uniform(80, 140), rng.uniform(W - 140, W - 80)]), rng.uniform(90, H - 90)
        else:
            cx, cy = W / 2 + rng.uniform(-50, 50), H / 2 + rng.uniform(-40, 40)
        axis = rng.uniform(0, 360)
        corners = place(qw * px, qh * px, (cx, cy), rotation, tilt, axis)
        if fits(corners):
            break
        px *= 0.97
    else:
        raise RuntimeError(f"{category}: the code does not fit the frame")
    if screen:
        # The phone: a dark bezel, a screen a little larger than the code, lit from inside.
        bezel = place(qw * px * 1.35, qh * px * 1.6, (cx, cy), rotation, tilt, axis)
        render_modules(img, np.zeros((1, 1), np.uint8), 0, bezel, 12, rng.uniform(8, 20))
        if inverted:
            dark, light = rng.uniform(190, 235), rng.uniform(18, 40)  # light modules on a dark screen
        else:
            dark, light = rng.uniform(20, 45), rng.uniform(200, 240)
        margin = 0.08
    else:
        margin = rng.uniform(0.05, 0.2)
    render_modules(img, modules, (quiet, q_v), corners, dark, light, margin=margin)
    if category == "qr-screen" or (inverted and rng.random() < 0.5):
        # The screen's pixel grid, sampled by the sensor at a pitch near one or two of its pixels and
        # slightly rotated: the beat between the two grids is the moire's broad bands.
        yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
        pitch = rng.choice([rng.uniform(0.88, 1.12), rng.uniform(1.8, 2.25)])
        a = math.radians(rotation + rng.uniform(-4, 4))
        gx = np.cos(2 * math.pi * (xx * math.cos(a) + yy * math.sin(a)) / pitch)
        gy = np.cos(2 * math.pi * (-xx * math.sin(a) + yy * math.cos(a)) / pitch)
        mask = np.zeros((H, W))
        render_modules(mask, np.zeros((1, 1), np.uint8), 0, corners, 1, 1, margin=margin)
        depth = rng.uniform(0.25, 0.45)
        img *= 1 - mask * depth * (0.5 - 0.25 * (gx + gy))
        # Glare: a bright soft spot on the glass, off the code's centre.
        gxc, gyc = cx + rng.uniform(-0.35, 0.35) * qw * px, cy + rng.uniform(-0.35, 0.35) * qh * px
        sig = rng.uniform(0.12, 0.25) * qw * px
        img += rng.uniform(80, 150) * np.exp(-(((xx - gxc) ** 2 + (yy - gyc) ** 2) / (2 * sig * sig)))
    # Light falls on the whole scene, label and all: a gradient across the frame and the lens's vignetting.
    img *= illumination(rng)
    # Lens blur, then sensor noise.
    if category == "qr-blur":
        sigma = rng.uniform(0.22, 0.34) * px
    else:
        sigma = rng.uniform(0.5, 0.9)
    img = gaussian_blur(img, sigma)
    noise = rng.uniform(7, 12) if category == "qr-noise" else rng.uniform(1.5, 4)
    img = img + rng.normal(0, noise, size=img.shape)
    return img


def illumination(rng):
    """A multiplicative light field: a linear gradient (0.8-1.1 across the frame) and vignetting (corners
    5-25% darker)."""
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    angle = rng.uniform(0, 2 * math.pi)
    t = ((xx - W / 2) * math.cos(angle) + (yy - H / 2) * math.sin(angle)) / (W / 2)
    lo, hi = rng.uniform(0.8, 0.95), rng.uniform(1.0, 1.1)
    gradient = lo + (hi - lo) * (t + 1) / 2
    r2 = ((xx - W / 2) ** 2 + (yy - H / 2) ** 2) / ((W / 2) ** 2 + (H / 2) ** 2)
    return gradient * (1 - rng.uniform(0.05, 0.25) * r2)


def empty_frame(rng, i):
    img = background(rng, ["plain", "texture", "text"][i % 3]) * illumination(rng)
    img = gaussian_blur(img, rng.uniform(0.5, 1.0))
    return img + rng.normal(0, rng.uniform(1.5, 6), size=img.shape)


def to_luma(img):
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def write_pgm(path, luma):
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (W, H))
        f.write(luma.tobytes())


def generator_key(per_category, seed):
    """What the frames depend on: this file, N, the seed and the encoders' versions."""
    h = hashlib.sha256()
    with open(__file__, "rb") as f:
        h.update(f.read())
    zint = subprocess.run(["zint", "--version"], capture_output=True).stdout if shutil.which("zint") else b"none"
    h.update(f"|{per_category}|{seed}|{segno.__version__}|{np.__version__}|".encode() + zint)
    return h.hexdigest()[:16]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--per-category", type=int, default=30)
    p.add_argument("--seed", type=int, default=20)
    p.add_argument("--key", action="store_true", help="print the cache key and exit")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args()
    if not 1 <= a.per_category <= 10000:
        fail(f"--per-category {a.per_category}: want 1-10000")
    if not shutil.which("zint"):
        fail("zint is not installed (apt package zint; scripts/install-deps bench)")
    key = generator_key(a.per_category, a.seed)
    if a.key:
        print(key)
        return
    os.makedirs(os.path.join(a.out, "frames"), exist_ok=True)
    frames = []
    for ci, (name, fmt, _) in enumerate(CATEGORIES):
        if not a.quiet:
            print(f"generate.py: {name} ({ci + 1}/{len(CATEGORIES)})", file=sys.stderr)
        for i in range(a.per_category):
            rng = np.random.default_rng([a.seed, ci, i])
            entry = {"file": f"frames/{name}-{i:03d}.pgm", "category": name, "format": fmt}
            if fmt is None:
                img = empty_frame(rng, i)
                entry["payload_b64"] = None
            else:
                data, modules, quiet = make_payload(rng, name, i)
                img = frame(rng, name, modules, quiet)
                entry["payload_b64"] = base64.b64encode(data).decode("ascii")
                if all(32 <= b < 127 for b in data):
                    entry["payload_text"] = data.decode("ascii")
            write_pgm(os.path.join(a.out, entry["file"]), to_luma(img))
            frames.append(entry)
    manifest = {
        "generator": {"key": key, "version": GENERATOR_VERSION, "seed": a.seed, "segno": segno.__version__,
                      "numpy": np.__version__,
                      "zint": subprocess.run(["zint", "--version"], capture_output=True).stdout.decode().strip()},
        "width": W, "height": H, "per_category": a.per_category,
        "categories": [{"name": n, "format": f, "description": d} for n, f, d in CATEGORIES],
        "frames": frames,
    }
    tmp = os.path.join(a.out, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(a.out, "manifest.json"))


if __name__ == "__main__":
    main()
