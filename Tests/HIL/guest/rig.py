"""What the HIL checks share inside the VM: the check registry and runner, processes with deadlines,
and one small helper per device (vivid, gpio-sim, the ALSA loopback, the UART, the scangate daemon).

Every wait has a deadline; nothing synchronises on a fixed sleep.
"""
import collections
import fcntl
import json
import mmap
import os
import select
import struct
import signal
import subprocess
import threading
import time
import zlib

# ---------------------------------------------------------------------------------------------------
# Checks

CHECKS = []  # (name, function) in the order they run


class CheckFailed(Exception):
    """A check's one-line reason for failing."""


def check(name):
    """Registers `fn(rig) -> str` as a check; it returns a short detail or raises."""
    def register(fn):
        CHECKS.append((name, fn))
        return fn
    return register


def require(condition, message):
    if not condition:
        raise CheckFailed(message)


def wait_until(predicate, timeout, what, interval=0.02):
    """Polls `predicate` until it returns something truthy; raises CheckFailed naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def run(*argv, timeout=30, check_status=True, input=None):
    """Runs a command to completion; returns its stdout (text). Raises CheckFailed with its stderr."""
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, input=input,
                              text=not isinstance(input, bytes))
    except subprocess.TimeoutExpired:
        raise CheckFailed(f"{' '.join(argv)}: no exit within {timeout} s")
    out = done.stdout if isinstance(done.stdout, str) else done.stdout.decode(errors="replace")
    err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
    if check_status and done.returncode != 0:
        raise CheckFailed(f"{' '.join(argv)} exited {done.returncode}: {err.strip()[-300:]}")
    return out


class Rig:
    """Paths and the processes a check starts (all stopped when the check ends)."""

    def __init__(self, scangate, ko_dir, run_dir):
        self.scangate = scangate
        self.ko_dir = ko_dir
        self.run_dir = run_dir
        self.log_dir = os.path.join(run_dir, "logs")
        os.makedirs(self.log_dir, exist_ok=True)
        self.uart = Uart("/dev/ttyS1", os.path.join(run_dir, "uart.out"))
        self.check_name = "rig"
        self._processes = []
        self._cleanups = []

    def spawn(self, argv, **kwargs):
        p = subprocess.Popen(argv, **kwargs)
        self._processes.append(p)
        return p

    def on_cleanup(self, fn):
        """`fn()` runs when the check ends, however it ends (after its processes are killed)."""
        self._cleanups.append(fn)

    def stop_all(self):
        for p in self._processes:
            if p.poll() is None:
                p.kill()
                try:
                    p.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
        self._processes.clear()
        for fn in reversed(self._cleanups):
            try:
                fn()
            except Exception as e:
                print(f"INFO cleanup after {self.check_name} failed: {e}", flush=True)
        self._cleanups.clear()

    def log_path(self, suffix):
        return os.path.join(self.log_dir, f"{self.check_name}.{suffix}")


class _CheckTimeout(Exception):
    pass


def run_checks(rig, selected, results_path, per_check_timeout=150):
    """Runs every registered check whose name starts with one of `selected` (all when empty)."""
    def on_alarm(signum, frame):
        raise _CheckTimeout()
    signal.signal(signal.SIGALRM, on_alarm)
    with open(results_path, "a") as results:
        for name, fn in CHECKS:
            if selected and not any(name.startswith(s) for s in selected):
                continue
            rig.check_name = name
            started = time.monotonic()
            signal.alarm(per_check_timeout)
            try:
                detail = fn(rig)
                line = f"PASS {name}" + (f": {detail}" if detail else "")
            except CheckFailed as e:
                line = f"FAIL {name}: {e}"
            except _CheckTimeout:
                line = f"FAIL {name}: still running after {per_check_timeout} s (per-check limit)"
            except Exception as e:  # a bug in the check or an unexpected state: still one FAIL line
                line = f"FAIL {name}: {type(e).__name__}: {e}"
            finally:
                signal.alarm(0)
                rig.stop_all()
            line = f"{line} ({time.monotonic() - started:.1f} s)"
            print(line, flush=True)
            results.write(line + "\n")
            results.flush()


# ---------------------------------------------------------------------------------------------------
# Time in the guest, for boot figures.

def uptime():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


# ---------------------------------------------------------------------------------------------------
# Images: 8-bit luma frames as bytes, row-major.

def read_pgm(path):
    """Reads a binary PGM (P5, maxval 255): returns (width, height, bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    require(fields[0] == b"P5" and fields[3] == b"255", f"{path}: not an 8-bit binary PGM")
    width, height = int(fields[1]), int(fields[2])
    pixels = data[pos + 1:pos + 1 + width * height]
    require(len(pixels) == width * height, f"{path}: truncated PGM")
    return width, height, pixels


def read_png_rgb(path, rows=None):
    """A tiny PNG reader for what `scangate status --snapshot` writes (8-bit RGB, not interlaced): returns
    (width, height, rows), rows[y] the RGB bytes of row y; `rows` decodes only that many from the top."""
    with open(path, "rb") as f:
        data = f.read()
    require(data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG")
    pos, idat, header = 8, [], None
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    require(header is not None, f"{path}: no IHDR")
    width, height, depth, colour, _, _, interlace = header
    require(depth == 8 and colour == 2 and interlace == 0,
            f"{path}: depth {depth}, colour type {colour}, interlace {interlace}; want 8-bit RGB, not interlaced")
    raw = zlib.decompress(b"".join(idat))
    stride, bpp = width * 3, 3
    require(len(raw) == height * (stride + 1), f"{path}: {len(raw)} bytes of rows for {width}x{height}")
    out, previous = [], bytearray(stride)
    for y in range(height if rows is None else min(rows, height)):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:      # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:    # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, previous))
        elif kind == 3:    # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + previous[i]) >> 1)) & 255
        elif kind == 4:    # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = previous[i]
                c = previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        else:
            require(kind == 0, f"{path}: row {y} has PNG filter {kind}")
        out.append(bytes(line))
        previous = line
    return width, height, out


def canvas(width, height, image=None, background=255):
    """A width x height luma frame, white, with `image` = (w, h, bytes) pasted in the middle."""
    frame = bytearray([background]) * (width * height)
    if image:
        w, h, pixels = image
        x0, y0 = (width - w) // 2, (height - h) // 2
        for y in range(h):
            start = (y0 + y) * width + x0
            frame[start:start + w] = pixels[y * w:(y + 1) * w]
    return bytes(frame)


def to_yuyv(luma):
    """Y0 U Y1 V: the luma with neutral chroma."""
    out = bytearray(len(luma) * 2)
    out[0::2] = luma
    out[1::2] = b"\x80" * len(luma)
    return bytes(out)


def to_rgb24(luma):
    """R G B bytes: the luma as navy (dark) to yellow (light), so only correctly weighted RGB → luma
    (ITU-R BT.601: 0.299 R + 0.587 G + 0.114 B) gives back the contrast (dark ≈ 16, light ≈ 213); a
    reader taking one channel, or the mean, sees a washed-out or inverted code."""
    dark, light = (0, 0, 140), (255, 225, 40)
    out = bytearray(len(luma) * 3)
    for channel in range(3):
        table = bytes(round(dark[channel] + (light[channel] - dark[channel]) * v / 255) for v in range(256))
        out[channel::3] = luma.translate(table)
    return bytes(out)


# ---------------------------------------------------------------------------------------------------
# vivid: /dev/video0 (HDMI capture) shows what is streamed into /dev/video1 (HDMI output).

VIVID_PARAMS = ("n_devs=1 node_types=0x101 num_inputs=1 input_types=0x3 num_outputs=1 output_types=0x1 "
                "vid_cap_nr=0 vid_out_nr=1 no_error_inj=1").split()


class Vivid:
    capture = "/dev/video0"
    output = "/dev/video1"
    width, height = 640, 480

    @classmethod
    def configure(cls, pixel_format):
        """640x480p59.94 on both sides, the same pixel format, loopback on, no OSD text."""
        for dev in (cls.capture, cls.output):
            run("v4l2-ctl", "-d", dev, "--set-dv-bt-timings", "index=0")
        size = f"width={cls.width},height={cls.height},pixelformat={pixel_format}"
        run("v4l2-ctl", "-d", cls.capture, "-v", size)
        run("v4l2-ctl", "-d", cls.output, "-x", size)
        run("v4l2-ctl", "-d", cls.capture, "-c", "loop_video=1,osd_text_mode=2")

    @classmethod
    def load(cls):
        run("modprobe", "vivid", *VIVID_PARAMS)
        wait_until(lambda: os.path.exists(cls.capture) and os.path.exists(cls.output), 10, "vivid's device nodes")

    @classmethod
    def ensure_loaded(cls):
        """After a check that unloads vivid: loaded and bound again, whatever state it was left in."""
        if not os.path.exists(cls.capture):
            subprocess.run(["rmmod", "vivid"], capture_output=True)
            cls.load()

    @classmethod
    def unbind(cls):
        """The device goes away under its users (as a USB camera being unplugged does)."""
        with open("/sys/bus/platform/drivers/vivid/unbind", "w") as f:
            f.write("vivid.0")

    @classmethod
    def unload(cls, timeout=10):
        """rmmod vivid, retried while something still holds it open."""
        def attempt():
            return subprocess.run(["rmmod", "vivid"], capture_output=True).returncode == 0
        wait_until(attempt, timeout, "rmmod vivid (a process still holds the device open?)", interval=0.2)


def _iowr(nr, size, write=True, read=True):
    """The Linux _IOC request number for V4L2 ioctl `nr` ('V') with an argument of `size` bytes."""
    return ((write << 30) | (read << 31)) | (size << 16) | (ord("V") << 8) | nr


# struct v4l2_requestbuffers (20 bytes) and struct v4l2_buffer (88 bytes on x86_64), single-planar mmap.
REQBUFS_FORMAT = "=IIIIB3x"
BUFFER_FORMAT = "=IIIII4x16x16xII8sIII4x"  # index type bytesused flags field, timestamp, timecode, sequence memory m length ...
VIDIOC_REQBUFS = _iowr(8, struct.calcsize(REQBUFS_FORMAT))
VIDIOC_QUERYBUF = _iowr(9, struct.calcsize(BUFFER_FORMAT))
VIDIOC_QBUF = _iowr(15, struct.calcsize(BUFFER_FORMAT))
VIDIOC_DQBUF = _iowr(17, struct.calcsize(BUFFER_FORMAT))
VIDIOC_STREAMON = _iowr(18, 4, read=False)
VIDIOC_STREAMOFF = _iowr(19, 4, read=False)
BUF_TYPE_VIDEO_OUTPUT, MEMORY_MMAP = 2, 1


class OutputStream:
    """Streams frames into vivid's output node (mmap streaming, paced by the driver at 59.94 fps) from a
    thread that takes the next frame from `frames`, an iterator of bytes, for every buffer the driver
    returns. A buffer is only rewritten when its frame changes, so holding a picture costs no copying."""

    BUFFERS = 4

    def __init__(self, rig, frames, name="out"):
        self.frames = iter(frames)
        self.written = 0        # frames queued so far
        self.error = None
        self._stop = threading.Event()
        self.fd = os.open(Vivid.output, os.O_RDWR | os.O_NONBLOCK)
        self.maps, self.holding = [], []
        try:
            self._ioctl(VIDIOC_REQBUFS, struct.pack(REQBUFS_FORMAT, self.BUFFERS, BUF_TYPE_VIDEO_OUTPUT, MEMORY_MMAP, 0, 0))
            for i in range(self.BUFFERS):
                b = struct.unpack(BUFFER_FORMAT, self._ioctl(VIDIOC_QUERYBUF, self._buffer(i)))
                offset, length = struct.unpack("=I4x", b[7])[0], b[8]
                self.maps.append(mmap.mmap(self.fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                                           offset=offset))
                self.holding.append(None)
                self._queue(i)
            self._ioctl(VIDIOC_STREAMON, struct.pack("=I", BUF_TYPE_VIDEO_OUTPUT))
        except BaseException:
            self._close()
            raise
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self._thread.start()
        rig.on_cleanup(self.stop)

    def _ioctl(self, request, arg):
        buf = bytearray(arg)
        fcntl.ioctl(self.fd, request, buf, True)
        return bytes(buf)

    def _buffer(self, index, bytesused=0):
        return struct.pack(BUFFER_FORMAT, index, BUF_TYPE_VIDEO_OUTPUT, bytesused, 0, 1, 0, MEMORY_MMAP,
                           b"\0" * 8, 0, 0, 0)

    def _queue(self, index):
        frame = next(self.frames)
        if frame is not self.holding[index]:
            self.maps[index][:len(frame)] = frame
            self.holding[index] = frame
        self._ioctl(VIDIOC_QBUF, self._buffer(index, len(frame)))
        self.written += 1

    def _feed(self):
        try:
            while not self._stop.is_set():
                _, ready, _ = select.select([], [self.fd], [], 0.5)
                if not ready:
                    continue
                done = struct.unpack(BUFFER_FORMAT, self._ioctl(VIDIOC_DQBUF, self._buffer(0)))
                self._queue(done[0])
        except (OSError, StopIteration) as e:
            if not self._stop.is_set():
                self.error = e

    def wait_streaming(self, timeout=20):
        """Returns once the driver has taken back a few buffers: the output is streaming."""
        wait_until(lambda: self.written > self.BUFFERS + 2 or self.error, timeout, "vivid's output to stream")
        require(self.error is None, f"streaming into {Vivid.output} failed: {self.error}")

    def stop(self):
        if self.fd is None:
            return
        self._stop.set()
        self._thread.join(timeout=5)
        self._close()

    def _close(self):
        try:
            fcntl.ioctl(self.fd, VIDIOC_STREAMOFF, struct.pack("=I", BUF_TYPE_VIDEO_OUTPUT))
        except OSError:
            pass
        for m in self.maps:
            m.close()
        self.maps = []
        os.close(self.fd)
        self.fd = None


def capture_frames(count, path, timeout=30):
    """Captures `count` frames from vivid's capture node into `path`; returns the bytes."""
    run("v4l2-ctl", "-d", Vivid.capture, "--stream-mmap", f"--stream-count={count}", f"--stream-to={path}",
        timeout=timeout)
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------------------------------
# gpio-sim: one bank "scangate-sim" made by setup-drivers; the value a consumer drives on line N reads
# back from sysfs; every value gpiolib drives is also recorded, with a timestamp, by the gpio_value
# tracepoint (which sees the last level driven before a line is released, when sysfs no longer can).

GPIO_LABEL = "scangate-sim"
GPIO_CONFIG = "/sys/kernel/config/gpio-sim/scangate"
TRACING = "/sys/kernel/tracing"


class GpioSim:
    def __init__(self):
        with open(f"{GPIO_CONFIG}/bank0/chip_name") as f:
            self.chip = f.read().strip()
        with open(f"{GPIO_CONFIG}/dev_name") as f:
            self.dev = f.read().strip()
        self.sysfs = f"/sys/devices/platform/{self.dev}/{self.chip}"
        self.base = None  # gpiolib's global number of offset 0, which the tracepoint prints
        for entry in os.listdir("/sys/class/gpio"):
            if entry.startswith("gpiochip"):
                with open(f"/sys/class/gpio/{entry}/label") as f:
                    if f.read().strip() == GPIO_LABEL:
                        with open(f"/sys/class/gpio/{entry}/base") as b:
                            self.base = int(b.read())
        require(self.base is not None, f"no /sys/class/gpio/gpiochip* labelled {GPIO_LABEL}")

    def value(self, offset):
        with open(f"{self.sysfs}/sim_gpio{offset}/value") as f:
            return int(f.read())

    def set_pull(self, offset, pull):
        with open(f"{self.sysfs}/sim_gpio{offset}/pull", "w") as f:
            f.write(pull)

    def lines(self):
        """{offset: (name or None, consumer or None)} as gpioinfo shows them."""
        out = {}
        for line in run("gpioinfo", GPIO_LABEL).splitlines():
            parts = line.split()   # line 17: "GPIO17" "gpioset" output active-high [used]
            if len(parts) >= 4 and parts[0] == "line" and parts[1].endswith(":"):
                name, consumer = (None if p == "unnamed" or p == "unused" else p.strip('"') for p in parts[2:4])
                out[int(parts[1][:-1])] = (name, consumer)
        return out

    def consumer(self, offset):
        """The consumer name gpioinfo shows for a line, or None when unused."""
        lines = self.lines()
        require(offset in lines, f"gpioinfo {GPIO_LABEL}: no line {offset}")
        return lines[offset][1]


# The rig's timer jitter, measured side by side with the daemon: while a check runs, guest/gpio-reference
# pulses a spare line (REFERENCE_LINE) 10 ms on / 10 ms off, sleeping on CLOCK_MONOTONIC as the daemon's
# LED thread does, and the trace stamps those pulses like the daemon's. A daemon pulse may be off by
# JITTER_FACTOR times the reference's worst error in the same run, plus DAEMON_PATH_S for its own path
# (mailbox, timeline player, the second line of a pair).
REFERENCE_LINE = 30
REFERENCE_PULSE_S = 0.010
JITTER_FACTOR = 3
DAEMON_PATH_S = 0.005


class GpioTrace:
    """Records every level gpiolib drives on the sim chip: [(monotonic seconds, offset, value)]. With
    `rig`, also runs the reference pulser for `tolerance()`, stopped with the check."""

    def __init__(self, sim, rig=None):
        self.sim = sim
        if not os.path.exists(f"{TRACING}/trace"):
            run("mount", "-t", "tracefs", "nodev", TRACING)
        self._write("trace_clock", "mono")
        self._write("events/gpio/gpio_value/enable", "1")
        self._write("trace", "")  # clears
        self._write("tracing_on", "1")
        self.reference = None
        if rig is not None:
            ms = str(round(REFERENCE_PULSE_S * 1000))
            self.reference = rig.spawn([os.path.join(rig.run_dir, "gpio-reference"), "pulses", GPIO_LABEL,
                                        str(REFERENCE_LINE), ms, ms, "100000"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def tolerance(self):
        """(seconds, text): how far a daemon pulse may be from its configured length in this check,
        from the reference pulses recorded so far (at least 20 of them)."""
        if self.reference is None:
            raise CheckFailed("GpioTrace(sim, rig) runs the reference pulser; this trace has none")
        if self.reference.poll() is not None:
            raise CheckFailed(f"the reference pulser exited {self.reference.returncode}: "
                              f"{self.reference.stderr.read().decode(errors='replace').strip()}")
        done = [length for _, length in pulses(self.levels(REFERENCE_LINE), 1)]
        if len(done) < 20:
            raise CheckFailed(f"only {len(done)} reference pulses on line {REFERENCE_LINE} in this check (want 20)")
        worst = max(abs(length - REFERENCE_PULSE_S) for length in done)
        tol = JITTER_FACTOR * worst + DAEMON_PATH_S
        return tol, (f"tolerance {tol * 1000:.1f} ms = {JITTER_FACTOR} x the worst of {len(done)} reference pulses "
                     f"({worst * 1000:.1f} ms off) + {DAEMON_PATH_S * 1000:.0f} ms")

    def _write(self, name, text):
        with open(f"{TRACING}/{name}", "w") as f:
            f.write(text)

    def events(self):
        out = []
        with open(f"{TRACING}/trace") as f:
            for line in f:
                if "gpio_value:" not in line or " set " not in line:
                    continue
                head, _, tail = line.partition("gpio_value:")
                stamp = float(head.split()[-1].rstrip(":"))
                gpio, _, value = tail.split()
                offset = int(gpio) - self.sim.base
                if 0 <= offset < 64:
                    out.append((stamp, offset, int(value)))
        return out

    def levels(self, offset):
        return [(t, v) for t, o, v in self.events() if o == offset]


def pulses(levels, active):
    """[(start, length)] of the runs at level `active`, from a list of (time, level) transitions."""
    out, start = [], None
    for t, v in levels:
        if v == active and start is None:
            start = t
        elif v != active and start is not None:
            out.append((start, t - start))
            start = None
    return out


# ---------------------------------------------------------------------------------------------------
# ALSA loopback: played on hw:Loopback,0,0 → captured on hw:Loopback,1,0.

RATE = 48000


def write_tone_wav(path, hz, seconds, amplitude=12000):
    import math
    import struct
    import wave
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        n = int(RATE * seconds)
        w.writeframes(b"".join(struct.pack("<h", int(amplitude * math.sin(2 * math.pi * hz * i / RATE)))
                               for i in range(n)))


class Recorder:
    """arecord on the loopback's capture side, started before anything plays."""

    def __init__(self, rig, path, seconds):
        self.path = path
        self.process = rig.spawn(["arecord", "-q", "-D", "hw:Loopback,1,0", "-f", "S16_LE", "-r", str(RATE),
                                  "-c", "1", "-d", str(seconds), path],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # arecord has the PCM once it has written the WAV header.
        wait_until(lambda: os.path.exists(path) and os.path.getsize(path) >= 44 or self.process.poll() is not None,
                   10, "arecord to start")
        if self.process.poll() is not None:
            raise CheckFailed(f"arecord failed: {self.process.stderr.read().decode().strip()}")

    def finish(self, timeout=10):
        """Stops recording (SIGINT: arecord completes the WAV header) and returns the tones it heard."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        return self.wait(timeout)

    def wait(self, timeout):
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"arecord did not finish within {timeout} s")
        if self.process.returncode not in (0, 1, -signal.SIGINT):
            raise CheckFailed(f"arecord exited {self.process.returncode}: {self.process.stderr.read().decode().strip()}")
        return tones(self.path)


Tone = collections.namedtuple("Tone", "start duration hz peak gaps")


def tones(path, threshold=0.02):
    """The tones in a mono S16 WAV: [Tone(start s, duration s, frequency Hz, peak 0..1, gaps)]: runs of
    samples above `threshold` (of full scale; the loopback carries digital silence between tones)
    split at silences of 5 ms or more. The frequency is the median of the periods between rising zero
    crossings, so a short gap inside a tone (an underrun: the player fell behind) does not bend it;
    `gaps` counts such silences of 1 ms or more inside the tone."""
    import struct
    import wave
    with wave.open(path) as w:
        require(w.getsampwidth() == 2 and w.getnchannels() == 1, f"{path}: not mono S16")
        rate = w.getframerate()
        n = w.getnframes()
        samples = struct.unpack(f"<{n}h", w.readframes(n))
    level = threshold * 32768
    split, short = int(0.005 * rate), int(0.001 * rate)
    segments, start, last_loud, gaps = [], None, None, 0
    for i, s in enumerate(samples):
        if abs(s) >= level:
            if start is None:
                start = i
            elif i - last_loud > short:
                gaps += 1
            last_loud = i
        elif start is not None and i - last_loud > split:
            segments.append((start, last_loud, gaps))
            start, gaps = None, 0
    if start is not None:
        segments.append((start, last_loud, gaps))
    out = []
    for a, b, g in segments:
        part = samples[a:b + 1]
        # Rising crossings, placed between the two samples by linear interpolation.
        rising = [i - 1 + -part[i - 1] / (part[i] - part[i - 1])
                  for i in range(1, len(part)) if part[i - 1] < 0 <= part[i]]
        periods = sorted(q - p for p, q in zip(rising, rising[1:]))
        hz = rate / periods[len(periods) // 2] if periods else 0.0
        out.append(Tone(a / rate, (b - a + 1) / rate, hz, max(abs(s) for s in part) / 32768, g))
    return out


# ---------------------------------------------------------------------------------------------------
# libcamera: vimc (built out of tree by Tests/HIL/prepare, loaded by setup-drivers) is a camera libcamera
# drives through its media-controller pipeline, as it drives a Raspberry Pi camera module. libcamera finds
# media devices through udev, which the rest of the rig does without: udevd runs only for these checks
# (SYSTEMD_IGNORE_CHROOT: the guest's root is a chroot into the host's, over 9p).

class Libcamera:
    @staticmethod
    def start_udev(rig):
        env = dict(os.environ, SYSTEMD_IGNORE_CHROOT="1")
        udevd = rig.spawn(["/lib/systemd/systemd-udevd"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
        wait_until(lambda: os.path.exists("/run/udev/control"), 10, "systemd-udevd's control socket")
        subprocess.run(["udevadm", "trigger", "--action=add", "--subsystem-match=media",
                        "--subsystem-match=video4linux"], env=env, check=True, timeout=20)
        subprocess.run(["udevadm", "settle", "--timeout=20"], env=env, check=True, timeout=30)
        rig.on_cleanup(lambda: udevd.poll() is None and udevd.terminate())

    @staticmethod
    def capture_node(entity="RGB/YUV Capture"):
        """vimc's processed-output video node (the one libcamera's vimc pipeline streams from)."""
        for name in sorted(os.listdir("/sys/class/video4linux")):
            try:
                with open(f"/sys/class/video4linux/{name}/name") as f:
                    if f.read().strip() == entity:
                        return f"/dev/{name}"
            except OSError:
                continue
        raise CheckFailed(f"no video node named {entity!r} (is vimc loaded?)")


# ---------------------------------------------------------------------------------------------------
# UART: what the guest writes to /dev/ttyS1 lands in the host file QEMU writes (the run directory,
# seen here at /hil over 9p without caching).

class Uart:
    def __init__(self, device, host_file):
        self.device = device
        self.host_file = host_file

    def mark(self):
        """The position after which new bytes will be read."""
        return os.path.getsize(self.host_file)

    def received(self, mark):
        with open(self.host_file, "rb") as f:
            f.seek(mark)
            return f.read()

    def wait_for(self, mark, predicate, timeout, what):
        return wait_until(lambda: predicate(self.received(mark)) and self.received(mark), timeout, what)


# ---------------------------------------------------------------------------------------------------
# The scangate daemon, run exactly as a user runs it: `scangate run FLAGS...`.

class Daemon:
    def __init__(self, rig, args, name="daemon", wrapper=()):
        """`wrapper`: a command that runs scangate (e.g. ["libcamerify"])."""
        self.argv = [*wrapper, rig.scangate, "run", *args]
        self.stdout = []             # every stdout line so far (bytes, without the newline)
        self.stderr = []             # every stderr line so far (text)
        self.stderr_at = []          # when each stderr line was read (time.monotonic())
        self._stderr_log = open(rig.log_path(f"{name}.stderr"), "w")
        self._stderr_log.write("$ " + " ".join(self.argv) + "\n")
        self.process = rig.spawn(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for t in self._readers:
            t.start()

    def _read_stdout(self):
        for line in self.process.stdout:
            self.stdout.append(line.rstrip(b"\n"))

    def _read_stderr(self):
        for line in self.process.stderr:
            text = line.decode(errors="replace").rstrip("\n")
            self.stderr_at.append(time.monotonic())
            self.stderr.append(text)
            self._stderr_log.write(text + "\n")
            self._stderr_log.flush()

    def alive(self):
        return self.process.poll() is None

    def _exited(self):
        """True once the process has exited and everything it printed has been read."""
        if self.process.poll() is None:
            return False
        for t in self._readers:
            t.join(timeout=5)
        return True

    def events(self):
        """The JSON events printed so far, parsed (a line that is not JSON fails the check)."""
        out = []
        for line in list(self.stdout):
            try:
                out.append(json.loads(line))
            except ValueError:
                raise CheckFailed(f"stdout line is not JSON: {line[:120]!r}")
        return out

    def payloads(self):
        return [e.get("data") for e in self.events()]

    def last_stderr(self, n=3):
        return " | ".join(self.stderr[-n:]) or "(nothing on stderr)"

    def _wait(self, seen, timeout, what):
        """Waits until `seen()`; fails early, with its last log lines, if scangate exits first."""
        def done():
            if seen():
                return True
            if self._exited():
                require(seen(), f"scangate exited with status {self.process.returncode} before {what}: "
                        f"{self.last_stderr()}")
                return True
            return False
        wait_until(done, timeout, what)

    def wait_for_payload(self, payload, timeout):
        self._wait(lambda: payload in self.payloads(), timeout, f"it reported {payload!r}")

    def wait_for_events(self, count, timeout):
        self._wait(lambda: len(self.stdout) >= count, timeout, f"it reported {count} codes")

    def wait_for_stderr(self, needle, timeout):
        self._wait(lambda: any(needle.lower() in line.lower() for line in self.stderr), timeout,
                   f"it logged {needle!r}")

    def stderr_time(self, needle, after=0.0):
        """When the first stderr line containing `needle` was read at or after `after`; None if none yet."""
        for at, line in zip(list(self.stderr_at), list(self.stderr)):
            if at >= after and needle.lower() in line.lower():
                return at
        return None

    def wait_exit(self, timeout):
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise CheckFailed(f"scangate did not exit within {timeout} s")
        self._exited()
        return self.process.returncode

    def terminate(self, timeout=5):
        """SIGTERM; returns the exit status. Fails when it does not exit in time."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)
