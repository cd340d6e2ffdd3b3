"""Phase 2: the scangate binary, run exactly as users run it (`scangate run FLAGS...`, `list-cameras`,
`make-code`), against the real drivers. Codes come from the simulator's scenarios (docs/scenario-format.md)
for the GPIO, sound and serial checks, and from frames streamed into vivid for the camera checks."""
import base64
import os
import subprocess
import signal
import threading
import time

from rig import (GPIO_LABEL, Daemon, Libcamera, GpioSim, GpioTrace, OutputStream, Recorder, Vivid, canvas,
                 check, pulses, read_pgm, read_png_rgb, require, run, to_rgb24, to_yuyv, wait_until)

GREEN, RED, BUZZER, STATUS = 17, 27, 22, 23
ALL_LINES = (GREEN, RED, BUZZER, STATUS)
GPIO_BY_NAME = ["--gpio-chip", GPIO_LABEL, "--led-green", "GPIO17", "--led-red", "GPIO27",
                "--buzzer", "GPIO22", "--status-led", "GPIO23"]


def scenario(name, fps, frames, codes):
    """Writes a scenario file: `codes` = [(payload in scenario syntax, first frame, last frame)]."""
    path = f"/tmp/{name}.scenario"
    with open(path, "w") as f:
        f.write(f"size 640x480\nfps {fps}\nframes {frames}\nbackground 200\n")
        for payload, first, last in codes:
            f.write(f'code qr "{payload}" frames {first}-{last} module 4\n')
    return path


def one_code(name, payload="HIL-GPIO"):
    """A 4 s scenario at 10 fps: blank for 0.5 s, the code for 1 s, blank until the end (the daemon then exits)."""
    return scenario(name, 10, 40, [(payload, 5, 14)])


def within(measured, wanted, tolerance):
    """A GPIO pulse against its configured length, in seconds; `tolerance` comes from the rig's jitter
    measured in the same check (GpioTrace.tolerance)."""
    return abs(measured - wanted) <= tolerance


def ms(seconds):
    return f"{seconds * 1000:.0f} ms"


class SysfsSampler:
    """Reads the lines' values from sysfs every few ms while the daemon runs: [(time, offset, value)]
    at each change."""

    def __init__(self, sim, offsets):
        self.sim, self.offsets = sim, offsets
        self.changes = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self):
        last = {}
        while not self._stop.is_set():
            for o in self.offsets:
                v = self.sim.value(o)
                if last.get(o) != v:
                    last[o] = v
                    self.changes.append((time.monotonic(), o, v))
            time.sleep(0.003)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=5)

    def saw(self, offset, value):
        return any(o == offset and v == value for _, o, v in self.changes)

    def longest(self, offset, value):
        levels = [(t, v) for t, o, v in self.changes if o == offset] + [(time.monotonic(), None)]
        return max((length for _, length in pulses(levels, value)), default=0)


def run_to_end(rig, args, timeout=60, name="daemon"):
    """Runs scangate until it exits by itself (end of a scenario, --oneshot); requires exit status 0."""
    daemon = Daemon(rig, args, name=name)
    status = daemon.wait_exit(timeout)
    require(status == 0, f"scangate exited with status {status}: {daemon.last_stderr()}")
    return daemon


def final_levels(trace, offsets):
    """The last level gpiolib drove on each line, or None when it never drove it."""
    out = {}
    for o in offsets:
        levels = trace.levels(o)
        out[o] = levels[-1][1] if levels else None
    return out


def require_released(sim, offsets):
    for o in offsets:
        holder = sim.consumer(o)
        require(holder is None, f"line {o} is still held by {holder!r} after scangate exited")


# ---------------------------------------------------------------------------------------------------
# GPIO on gpio-sim

def good_read_pulses(rig, flags, green=GREEN, buzzer=BUZZER, active=1, led_ms=600, buzz_ms=200):
    """Runs one good read; returns (green pulses, buzzer pulses, sysfs sampler, trace, daemon)."""
    sim = GpioSim()
    trace = GpioTrace(sim, rig)
    sampler = SysfsSampler(sim, (green, buzzer))
    try:
        daemon = run_to_end(rig, ["--camera", f"sim:{one_code(rig.check_name)}", *flags,
                                  "--good-led-ms", str(led_ms), "--good-buzz-ms", str(buzz_ms)])
    finally:
        sampler.stop()
    require(daemon.payloads() == ["HIL-GPIO"], f"expected one read of HIL-GPIO, got {daemon.payloads()}")
    return pulses(trace.levels(green), active), pulses(trace.levels(buzzer), active), sampler, trace, daemon


@check("gpio-good-read-green-by-label-and-name")
def gpio_good_read_green(rig):
    green, _, sampler, trace, _ = good_read_pulses(rig, GPIO_BY_NAME)
    require(len(green) == 1, f"expected one green pulse on GPIO17, the trace shows {len(green)}: {green}")
    length = green[0][1]
    tol, said = trace.tolerance()
    require(within(length, 0.6, tol), f"green was active {ms(length)}, configured 600 ms ({said})")
    require(sampler.saw(GREEN, 1), "sysfs never read GPIO17 high while the pattern ran")
    require(final_levels(trace, [GREEN])[GREEN] == 0, "GPIO17 was left high")
    return (f"chip '{GPIO_LABEL}', line GPIO17: active {ms(length)} (configured 600 ms, {said}), sysfs saw it high for "
            f"{ms(sampler.longest(GREEN, 1))}, then low")


@check("gpio-chip-by-name-lines-by-offset")
def gpio_by_offset(rig):
    chip = GpioSim().chip
    green, buzz, _, _, _ = good_read_pulses(rig, ["--gpio-chip", chip, "--led-green", str(GREEN),
                                                   "--buzzer", str(BUZZER)])
    require(len(green) == 1 and len(buzz) == 1, f"expected one pulse each on lines 17 and 22: {green}, {buzz}")
    return f"chip '{chip}', lines 17 and 22 by offset: green {ms(green[0][1])}, buzzer {ms(buzz[0][1])}"


@check("gpio-buzzer-timing")
def gpio_buzzer_timing(rig):
    _, buzz, sampler, trace, _ = good_read_pulses(rig, GPIO_BY_NAME, buzz_ms=250)
    require(len(buzz) == 1, f"expected one buzz on GPIO22, the trace shows {len(buzz)}: {buzz}")
    length = buzz[0][1]
    tol, said = trace.tolerance()
    require(within(length, 0.25, tol), f"the buzz lasted {ms(length)}, configured 250 ms ({said})")
    require(final_levels(trace, [BUZZER])[BUZZER] == 0, "GPIO22 was left high")
    return f"one buzz of {ms(length)} (configured 250 ms, {said})"


@check("gpio-active-low")
def gpio_active_low(rig):
    green, buzz, sampler, trace, _ = good_read_pulses(rig, GPIO_BY_NAME + ["--gpio-active-low", "green,buzzer"],
                                                      active=0)
    tol, said = trace.tolerance()
    require(len(green) == 1 and within(green[0][1], 0.6, tol),
            f"expected GPIO17 low for 600 ms once, the trace shows low pulses {green} ({said})")
    require(len(buzz) == 1 and within(buzz[0][1], 0.2, tol),
            f"expected GPIO22 low for 200 ms once, the trace shows low pulses {buzz} ({said})")
    first = {o: trace.levels(o)[0][1] for o in (GREEN, BUZZER)}
    require(first == {GREEN: 1, BUZZER: 1}, f"active-low lines were first driven to {first}, not high (inactive)")
    require(final_levels(trace, [GREEN, BUZZER]) == {GREEN: 1, BUZZER: 1}, "active-low lines were not left high")
    require(sampler.saw(GREEN, 0), "sysfs never read GPIO17 low while the pattern ran")
    return f"idle high, green low {ms(green[0][1])}, buzzer low {ms(buzz[0][1])} (configured 600 and 200 ms, {said}), left high"


@check("gpio-inactive-after-sigterm")
def gpio_inactive_after_sigterm(rig):
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = Daemon(rig, ["--camera", f"sim:{scenario(rig.check_name, 10, 100, [('HIL-GPIO', 5, 14)])}",
                          *GPIO_BY_NAME, "--good-led-ms", "20000", "--good-buzz-ms", "5000"])
    daemon.wait_for_payload("HIL-GPIO", 30)
    wait_until(lambda: sim.value(GREEN) == 1 and sim.value(BUZZER) == 1, 10, "GPIO17 and GPIO22 to read high in sysfs")
    started = time.monotonic()
    status = daemon.terminate(timeout=5)
    took = time.monotonic() - started
    require(status == 0, f"scangate exited with status {status} on SIGTERM: {daemon.last_stderr()}")
    last = final_levels(trace, ALL_LINES)
    require(all(v == 0 for v in last.values()), f"last levels driven before release: {last} (want all 0)")
    require_released(sim, ALL_LINES)
    return f"SIGTERM during green+buzz: exit 0 after {ms(took)}, GPIO17/27/22/23 driven low, then released"


@check("gpio-inactive-after-oneshot")
def gpio_inactive_after_oneshot(rig):
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = run_to_end(rig, ["--camera", f"sim:{scenario(rig.check_name, 10, 100, [('HIL-GPIO', 5, 14)])}",
                              *GPIO_BY_NAME, "--oneshot", "--good-led-ms", "600"])
    require(daemon.payloads() == ["HIL-GPIO"], f"expected one read, got {daemon.payloads()}")
    last = final_levels(trace, ALL_LINES)
    require(all(v == 0 for v in last.values()), f"last levels driven before release: {last} (want all 0)")
    require_released(sim, ALL_LINES)
    green = pulses(trace.levels(GREEN), 1)
    return f"--oneshot: exit 0 after the read; green pulse {[ms(p[1]) for p in green]}, all lines low and released"


@check("gpio-line-busy")
def gpio_line_busy(rig):
    sim = GpioSim()
    holder = rig.spawn(["gpioset", "--mode=signal", GPIO_LABEL, "17=0"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    wait_until(lambda: sim.consumer(GREEN) == "gpioset", 10, "gpioset to hold GPIO17")
    daemon = run_to_end(rig, ["--camera", f"sim:{one_code(rig.check_name)}", *GPIO_BY_NAME])
    require(daemon.payloads() == ["HIL-GPIO"], f"scanning did not go on: stdout {daemon.payloads()}")
    said = [line for line in daemon.stderr if "GPIO17" in line and "busy" in line.lower()]
    require(said, f"no stderr line names GPIO17 as busy: {daemon.last_stderr(5)}")
    require(holder.poll() is None and sim.consumer(GREEN) == "gpioset", "gpioset lost GPIO17")
    return f"logged: {said[0].strip()[:150]}; the code was still reported"


# ---------------------------------------------------------------------------------------------------
# Sound on the ALSA loopback

def beep_tones(rig, pattern):
    """The tones heard on the loopback's capture side while scangate beeps `pattern` once, and what
    the daemon said about underruns (a gap in a tone is reported by both)."""
    recorder = Recorder(rig, "/tmp/beep.wav", 30)
    daemon = run_to_end(rig, ["--camera", f"sim:{one_code(rig.check_name)}", "--beep", pattern,
                              "--beep-device", "plughw:Loopback,0,0"])
    require(daemon.payloads() == ["HIL-GPIO"], f"expected one read, got {daemon.payloads()}")
    heard = recorder.finish()
    underruns = [line for line in daemon.stderr if "underrun" in line]
    gaps = sum(t.gaps for t in heard)
    note = f"; {gaps} gap(s) of 1 ms or more inside the tones, daemon: {underruns or 'no underrun logged'}" \
        if gaps or underruns else ""
    return heard, note


@check("sound-beep-frequency-duration")
def sound_beep(rig):
    tones, note = beep_tones(rig, "1500:200")
    require(len(tones) == 1, f"expected one tone on hw:Loopback,1,0, found {len(tones)}: {tones}{note}")
    tone = tones[0]
    require(abs(tone.hz - 1500) <= 0.02 * 1500,
            f"the beep came back at {tone.hz:.0f} Hz, configured 1500 Hz (±2%){note}")
    require(abs(tone.duration - 0.2) <= 0.1 * 0.2,
            f"the beep lasted {ms(tone.duration)}, configured 200 ms (±10%){note}")
    return f"--beep 1500:200 captured as {tone.hz:.0f} Hz for {ms(tone.duration)} (peak {tone.peak:.2f}){note}"


@check("sound-beep-pattern")
def sound_beep_pattern(rig):
    tones, note = beep_tones(rig, "1800:80,0:40,1800:80")
    require(len(tones) == 2, f"expected two tones, found {len(tones)}: {tones}{note}")
    gap = tones[1].start - (tones[0].start + tones[0].duration)
    for tone in tones:
        require(abs(tone.hz - 1800) <= 36, f"a tone came back at {tone.hz:.0f} Hz, configured 1800 Hz (±2%){note}")
        require(abs(tone.duration - 0.08) <= 0.008,
                f"a tone lasted {ms(tone.duration)}, configured 80 ms (±10%){note}")
    require(abs(gap - 0.04) <= 0.008, f"the pause lasted {ms(gap)}, configured 40 ms (±10%){note}")
    return (f"1800:80,0:40,1800:80 captured as {ms(tones[0].duration)} + {ms(gap)} pause + "
            f"{ms(tones[1].duration)}{note}")


# ---------------------------------------------------------------------------------------------------
# Serial line on the 8250 UART (ttyS1 → host file)

STX, ETX = b"\x02", b"\x03"


def lrc(data):
    x = 0
    for b in data:
        x ^= b
    return b"%02X" % x


def crc16_ccitt_false(data):
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return b"%04X" % crc


def serial_run(rig, codes, flags, fps=10):
    """Shows `codes` (scenario payloads) one after another, 1 s each with 0.5 s between, to scangate
    writing to the UART; returns the daemon once it has exited by itself."""
    frames = [(payload, 5 + 15 * i, 14 + 15 * i) for i, payload in enumerate(codes)]
    path = scenario(rig.check_name, fps, 5 + 15 * len(codes) + 10, frames)
    return run_to_end(rig, ["--camera", f"sim:{path}", "--serial", rig.uart.device, *flags])


@check("serial-plain-framing")
def serial_plain(rig):
    mark = rig.uart.mark()
    codes = ["HIL-SERIAL-1", "HIL-SERIAL-2"]
    daemon = serial_run(rig, codes, [])
    require(daemon.payloads() == codes, f"stdout reported {daemon.payloads()}, expected {codes}")
    want = b"HIL-SERIAL-1\r\nHIL-SERIAL-2\r\n"
    got = rig.uart.wait_for(mark, lambda b: len(b) >= len(want), 5, f"{len(want)} bytes on the UART")
    require(got == want, f"the UART carried {got!r}, expected exactly {want!r}")
    return f"2 codes → {want!r} byte-exact"


def stx_etx(rig, checksum, check_digits):
    mark = rig.uart.mark()
    codes = ["HIL-SERIAL-1", "HIL-SERIAL-2"]
    serial_run(rig, codes, ["--serial-framing", "stx-etx", "--serial-checksum", checksum])
    want = b"".join(STX + c.encode() + ETX + check_digits(c.encode() + ETX) for c in codes)
    got = rig.uart.wait_for(mark, lambda b: len(b) >= len(want), 5, f"{len(want)} bytes on the UART")
    require(got == want, f"the UART carried {got!r}, expected exactly {want!r}")
    return f"2 codes → {want!r} byte-exact"


@check("serial-stx-etx-lrc")
def serial_stx_etx_lrc(rig):
    return stx_etx(rig, "lrc", lrc)


@check("serial-stx-etx-crc16")
def serial_stx_etx_crc16(rig):
    return stx_etx(rig, "crc16", crc16_ccitt_false)


# Payloads in scenario syntax (C escapes): framing bytes, line ends, an escape sequence, invalid UTF-8;
# then text that only looks like framing (printable, so it is sent as it is), then a plain code.
HOSTILE = [r"A\r\nB", r"\x02FAKE\x03", r"X\x0337\x02Y", r"\xff\xfe\xfd", r"\x1b[31mRED"]
LOOKALIKE = r"\\x02FAKE\\x03\\r\\n"
SAFE = "HIL-SAFE"


def unescape(payload):
    r"""The bytes a scenario payload stands for (the escapes used above: \\, \r, \n, \xHH)."""
    out, i = bytearray(), 0
    while i < len(payload):
        c = payload[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = payload[i + 1]
        if n == "x":
            out.append(int(payload[i + 2:i + 4], 16))
            i += 4
        else:
            out += {"\\": b"\\", "r": b"\r", "n": b"\n"}[n]
            i += 2
    return bytes(out)


def event_bytes(event):
    """A JSON event's payload bytes: `data` when it is text, else `data_base64`."""
    return event["data"].encode() if "data" in event else base64.b64decode(event["data_base64"])


def frames_stx_etx_lrc(data):
    """Splits a byte stream into STX body ETX LRC frames; fails on anything between or inside them."""
    out, i = [], 0
    while i < len(data):
        require(data[i:i + 1] == STX, f"byte {i} is {data[i:i + 1]!r}, not STX, in {data!r}")
        end = data.find(ETX, i + 1)
        require(end > 0, f"a frame without ETX at byte {i} in {data!r}")
        body = data[i + 1:end]
        require(not any(b < 0x20 or b == 0x7F for b in body), f"a control byte inside the frame body {body!r}")
        require(data[end + 1:end + 3] == lrc(body + ETX), f"bad LRC after {body!r} in {data!r}")
        out.append(body)
        i = end + 3
    return out


@check("serial-hostile-payloads-escaped")
def serial_hostile_escaped(rig):
    mark = rig.uart.mark()
    codes = HOSTILE + [LOOKALIKE, SAFE]
    daemon = serial_run(rig, codes, ["--serial-framing", "stx-etx", "--serial-checksum", "lrc",
                                        "--serial-unsafe", "escape"])
    got_events = [event_bytes(e) for e in daemon.events()]  # every stdout line must parse as JSON
    want_events = [unescape(c) for c in codes]
    require(got_events == want_events, f"stdout events {got_events}, expected {want_events}")
    last = SAFE.encode() + ETX + lrc(SAFE.encode() + ETX)
    got = rig.uart.wait_for(mark, lambda b: b.endswith(last), 5, "the last frame on the UART")
    bodies = frames_stx_etx_lrc(got)
    require(len(bodies) == len(codes), f"{len(codes)} codes gave {len(bodies)} frames: {bodies}")
    return (f"{len(codes)} codes (CR/LF, STX/ETX, ESC, invalid UTF-8 inside) → {len(codes)} JSON lines with the exact "
            f"bytes and {len(codes)} well-formed STX/ETX+LRC frames, e.g. {bodies[1]!r}")


@check("serial-hostile-payloads-rejected")
def serial_hostile_rejected(rig):
    mark = rig.uart.mark()
    serial_run(rig, HOSTILE + [LOOKALIKE, SAFE], [])  # defaults: plain, CR LF, unsafe rejected
    want = unescape(LOOKALIKE) + b"\r\n" + SAFE.encode() + b"\r\n"
    got = rig.uart.wait_for(mark, lambda b: b.endswith(SAFE.encode() + b"\r\n"), 5, "the safe code's frame")
    require(got == want, f"expected only the printable codes' frames {want!r}, the UART carried {got!r}")
    return f"{len(HOSTILE)} hostile codes not sent (default policy reject); the printable ones sent: {got!r}"


@check("serial-ttl-expired-not-sent")
def serial_ttl(rig):
    link = "/tmp/hil-serial"
    if os.path.lexists(link):
        os.unlink(link)
    mark = rig.uart.mark()
    # OLD is read while the port is missing; NEW comes back every 3 s, after the port appears.
    codes = [("HIL-TTL-OLD", 5, 14)] + [("HIL-TTL-NEW", f, f + 9) for f in range(60, 180, 30)]
    daemon = Daemon(rig, ["--camera", f"sim:{scenario(rig.check_name, 10, 190, codes)}", "--serial", link,
                          "--serial-ttl-ms", "1000"])
    daemon.wait_for_payload("HIL-TTL-OLD", 30)
    time.sleep(2.0)  # the test's condition, not a synchronisation: OLD is held back past its 1000 ms TTL
    os.symlink(rig.uart.device, link)
    daemon.wait_for_payload("HIL-TTL-NEW", 40)
    got = rig.uart.wait_for(mark, lambda b: b"HIL-TTL-NEW\r\n" in b, 10, "a NEW frame on the UART")
    daemon.terminate(timeout=10)
    got = rig.uart.received(mark)
    require(b"OLD" not in got, f"the expired code was sent late: {got!r}")
    return f"OLD (held back 2 s, TTL 1000 ms) never sent; NEW sent once the port appeared: {got[:40]!r}"


# ---------------------------------------------------------------------------------------------------
# Camera on vivid

def code_frame(rig, payload, pixel_format):
    """A 640x480 frame with a QR code of `payload` in the middle, made by `scangate make-code`."""
    path = f"/tmp/code-{abs(hash(payload))}.pgm"
    run(rig.scangate, "make-code", payload, "--scale", "5", "--out", path)
    return in_format(canvas(Vivid.width, Vivid.height, read_pgm(path)), pixel_format)


def blank_frame(pixel_format):
    return in_format(canvas(Vivid.width, Vivid.height), pixel_format)


def in_format(luma, pixel_format):
    return {"GREY": lambda l: l, "YUYV": to_yuyv, "RGB3": to_rgb24}[pixel_format](luma)


@check("camera-list-cameras-shows-vivid")
def camera_list(rig):
    Vivid.configure("GREY")
    out = run(rig.scangate, "list-cameras")
    require("/dev/video0" in out and "vivid" in out, f"list-cameras does not show /dev/video0 (vivid): {out[:300]!r}")
    return "/dev/video0 listed as vivid"


def stream_codes(rig, pixel_format, frames, flags):
    """Streams a warm-up code into vivid until scangate (`flags` added) reports it, so the whole path is
    live; then each of `frames` for 90 frames (1.5 s) with 60 blank frames (1 s) before and after; then
    stops scangate (exit 0 required) and returns it."""
    warmup, blank = code_frame(rig, "HIL-WARMUP", pixel_format), blank_frame(pixel_format)
    live, done = threading.Event(), threading.Event()

    def schedule():
        while not live.is_set():
            yield warmup
        for _ in range(60):
            yield blank
        for frame in frames:
            for _ in range(90):
                yield frame
            for _ in range(60):
                yield blank
        done.set()
        while True:
            yield blank

    stream = OutputStream(rig, schedule())
    stream.wait_streaming()
    daemon = Daemon(rig, ["--camera", Vivid.capture, "--pixel-format", pixel_format, "--width", "640",
                          "--height", "480", *flags])
    daemon.wait_for_payload("HIL-WARMUP", 60)
    live.set()
    wait_until(lambda: done.is_set(), 60 + 10 * len(frames), "the frame schedule to be streamed")
    daemon.wait_for_events(1 + len(frames), 20)
    status = daemon.terminate()
    stream.stop()
    require(status == 0, f"scangate exited {status} on SIGTERM")
    return daemon


def camera_codes_in_order(rig, pixel_format):
    """Warm-up code until scangate reports it (the whole path is live), then codes A, B, C for 90 frames
    (1.5 s) each with 60 blank frames (1 s) between; each must be reported exactly once, in order."""
    Vivid.configure(pixel_format)
    codes = [f"HIL-{pixel_format}-{c}" for c in "ABC"]
    daemon = stream_codes(rig, pixel_format, [code_frame(rig, c, pixel_format) for c in codes], [])
    got = daemon.payloads()
    require(got == ["HIL-WARMUP"] + codes, f"stdout reported {got}, expected {['HIL-WARMUP'] + codes}")
    frames_seen = [e.get("frame") for e in daemon.events()]
    return f"{pixel_format} 640x480 via vivid: {codes} each once, in order (frames {frames_seen})"


@check("camera-grey-codes-once-in-order")
def camera_grey(rig):
    return camera_codes_in_order(rig, "GREY")


@check("camera-yuyv-codes-once-in-order")
def camera_yuyv(rig):
    return camera_codes_in_order(rig, "YUYV")


@check("camera-rgb3-codes-once-in-order")
def camera_rgb3(rig):
    """24-bit RGB (what libcamera's V4L2 layer and some cameras offer): a navy-on-yellow code."""
    return camera_codes_in_order(rig, "RGB3")


# A driver licence's PDF417 (AAMVA annex D layout: header, one designator, the DL subfile).
AAMVA_ELEMENTS = ["DAQD1234567", "DCSSAMPLE", "DBA08312030", "DAJCA", "DCGUSA"]


def aamva_payload():
    body = ("DL" + "\n".join(AAMVA_ELEMENTS) + "\r").encode()
    header = b"@\n\x1e\rANSI 636014100001"
    return header + b"DL%04d%04d" % (len(header) + 10, len(body)) + body


def symbol_frame(rig, name, payload, symbology, scale, invert=False):
    """A 640x480 GREY frame with `payload` drawn by `scangate make-code --symbology` in the middle;
    `invert`: light modules on a dark screen, as a phone in dark mode shows a code."""
    data = f"/tmp/{name}.bin"
    with open(data, "wb") as f:
        f.write(payload)
    path = f"/tmp/{name}.pgm"
    run(rig.scangate, "make-code", "--data-file", data, "--symbology", symbology, "--scale", str(scale), "--out", path)
    w, h, pixels = read_pgm(path)
    if invert:
        return canvas(Vivid.width, Vivid.height, (w, h, bytes(255 - p for p in pixels)), background=0)
    return canvas(Vivid.width, Vivid.height, (w, h, pixels))


@check("camera-inverted-qr-datamatrix-aztec-pdf417")
def camera_new_formats(rig):
    """What phones and tickets show, streamed into vivid (GREY 640x480) and read by the default decoder
    with `--symbologies all`: a dark-mode QR (light on dark), a DataMatrix, an Aztec and a driver
    licence's PDF417, 90 frames each with 60 blank frames between: each reported once, in order, with
    zxing's format name and its payload byte-exact; the licence with its AAMVA number and expiry."""
    Vivid.configure("GREY")
    codes = [("inverted-qr", b"HIL-DARK-MODE", "QRCode", 5, True),
             ("datamatrix", b"HIL-DM-0042", "DataMatrix", 6, False),
             ("aztec", b"HIL-AZTEC-17C", "Aztec", 6, False),
             ("pdf417", aamva_payload(), "PDF417", 2, False)]
    frames = [symbol_frame(rig, name, payload, symbology, scale, invert) for name, payload, symbology, scale, invert in codes]
    daemon = stream_codes(rig, "GREY", frames, ["--symbologies", "all"])
    events = daemon.events()[1:]
    got = [(e.get("format"), (e.get("data") or "").encode()) for e in events]
    want = [(symbology, payload) for _, payload, symbology, _, _ in codes]
    require(got == want, f"stdout reported {got}, expected {want}")
    licence = events[-1].get("aamva") or {}
    require(licence.get("number") == "D1234567" and licence.get("expiry") == "2030-08-31"
            and licence.get("jurisdiction") == "CA", f"the licence's aamva fields are {licence}")
    return (f"vivid GREY 640x480: {[g[0] for g in got]} each once, in order, byte-exact; the PDF417 licence: "
            f"number {licence['number']}, expiry {licence['expiry']} (frames {[e.get('frame') for e in events]})")


# ---------------------------------------------------------------------------------------------------
# Aiming: the daemon's snapshot and camera controls over its status socket, on vivid.

def textured_code_frame(rig, payload):
    """640x480 GREY: a QR code of `payload` (make-code, quiet zone white) in the middle of a light
    texture (every level 120..247, never two neighbours alike), so a byte compare means something."""
    path = f"/tmp/code-{abs(hash(payload))}.pgm"
    run(rig.scangate, "make-code", payload, "--scale", "5", "--out", path)
    w, h, pixels = read_pgm(path)
    width, height = Vivid.width, Vivid.height
    frame = bytearray(120 + (x * 7 + y * 13) % 128 for y in range(height) for x in range(width))
    x0, y0 = (width - w) // 2, (height - h) // 2
    for y in range(h):
        frame[(y0 + y) * width + x0:(y0 + y) * width + x0 + w] = pixels[y * w:(y + 1) * w]
    return bytes(frame)


def aiming_daemon(rig, frame, extra=()):
    """vivid GREY 640x480 looping `frame`; `scangate run` on it with its status socket at
    /tmp/CHECK.sock, once it reports the code in view. Returns (stream, daemon, socket path)."""
    Vivid.configure("GREY")
    stream = OutputStream(rig, iter(lambda: frame, None))
    stream.wait_streaming()
    sock = f"/tmp/{rig.check_name}.sock"
    daemon = Daemon(rig, ["--camera", Vivid.capture, "--pixel-format", "GREY", "--width", "640", "--height", "480",
                          "--status-socket", sock, *extra])
    return stream, daemon, sock


@check("camera-snapshot-luma-byte-for-byte")
def camera_snapshot_luma(rig):
    """`scangate status --snapshot F.png` from a daemon reading vivid (GREY 640x480) while a fixed frame
    with a QR code is looped into it: outside the drawn overlay every pixel is the frame's luma, byte for
    byte (grey, R = G = B = luma), and the overlay's red outline passes by each corner of the code."""
    frame = textured_code_frame(rig, "HIL-SNAPSHOT")
    stream, daemon, sock = aiming_daemon(rig, frame)
    daemon.wait_for_payload("HIL-SNAPSHOT", 60)
    png = f"/tmp/{rig.check_name}.png"
    started = time.monotonic()
    run(rig.scangate, "status", "--snapshot", png, "--status-socket", sock)
    asked = time.monotonic() - started
    started = time.monotonic()
    width, height, rows = read_png_rgb(png, rows=Vivid.height)
    decoded = time.monotonic() - started
    status = daemon.terminate()
    stream.stop()
    require(status == 0, f"scangate exited {status} on SIGTERM")
    require((width, height) == (640, 480 + 40), f"the snapshot is {width}x{height}, want 640x520 (frame + panel)")
    grey = overlay = 0
    red = []
    mismatches = []
    for y in range(Vivid.height):
        row = rows[y]
        for x in range(width):
            r, g, b = row[3 * x], row[3 * x + 1], row[3 * x + 2]
            if r == g == b:
                grey += 1
                if r != frame[y * width + x] and len(mismatches) < 5:
                    mismatches.append((x, y, r, frame[y * width + x]))
            else:
                overlay += 1
                if (r, g, b) == (255, 0, 0):
                    red.append((x, y))
    require(not mismatches, f"pixels differ from the frame sent (x, y, got, sent): {mismatches}")
    require(0 < overlay < width * height // 50, f"{overlay} overlay pixels (want some, under 2% of the frame)")
    # The code's symbol (without its quiet zone) spans the dark modules' bounding box.
    dark = [(i % width, i // width) for i, v in enumerate(frame) if v < 100]
    xs, ys = [p[0] for p in dark], [p[1] for p in dark]
    corners = [(min(xs), min(ys)), (max(xs) + 1, min(ys)), (max(xs) + 1, max(ys) + 1), (min(xs), max(ys) + 1)]
    for cx, cy in corners:
        near = min((abs(x - cx) + abs(y - cy) for x, y in red), default=None)
        require(near is not None and near <= 6, f"no red overlay pixel within 6 px of the code's corner {(cx, cy)} "
                f"(nearest {near}); corners {corners}")
    return (f"GREY 640x480 via vivid: {grey} frame pixels identical to the frame sent, {overlay} overlay pixels "
            f"({len(red)} red, on all 4 corners of the code at {corners[0]}..{corners[2]}); snapshot {asked:.2f} s, "
            f"PNG read {decoded:.2f} s")


@check("camera-controls-try-and-save")
def camera_controls_try_and_save(rig):
    """`scangate status --controls` lists vivid's brightness and contrast from the running daemon;
    `--control brightness=200` sets it on the daemon's open camera (v4l2-ctl reads 200 back); a value out
    of range exits 2 naming the range; `--save` writes camera-control into [camera] of the config, keeping
    the rest, and check-config accepts the file."""
    conf = f"/tmp/{rig.check_name}.conf"
    sock = f"/tmp/{rig.check_name}.sock"
    with open(conf, "w") as f:
        f.write(f"# HIL kiosk\n[camera]\ncamera = {Vivid.capture}\npixel-format = GREY\nwidth = 640\nheight = 480\n"
                f"camera-control = brightness=100   ; the installer's first guess\n\n"
                f"[service]\nstatus-socket = {sock}\n")
    Vivid.configure("GREY")
    # vivid keeps the value after the check: back to its default for the checks after this one.
    rig.on_cleanup(lambda: subprocess.run(["v4l2-ctl", "-d", Vivid.capture, "-c", "brightness=128"], capture_output=True))
    frame = code_frame(rig, "HIL-CONTROLS", "GREY")
    stream = OutputStream(rig, iter(lambda: frame, None))
    stream.wait_streaming()
    daemon = Daemon(rig, ["--config", conf])
    daemon.wait_for_payload("HIL-CONTROLS", 60)

    def v4l2_brightness():
        return run("v4l2-ctl", "-d", Vivid.capture, "-C", "brightness").strip()

    at_open = v4l2_brightness()
    listed = run(rig.scangate, "status", "--controls", "--config", conf)
    require("brightness (int): min 0 max 255" in listed and "contrast (int):" in listed,
            f"status --controls does not list vivid's brightness and contrast:\n{listed}")
    started = time.monotonic()
    tried = run(rig.scangate, "status", "--control", "brightness=200", "--config", conf).strip()
    took = time.monotonic() - started
    after_try = v4l2_brightness()
    bad = subprocess.run([rig.scangate, "status", "--control", "brightness=300", "--config", conf],
                         capture_output=True, text=True, timeout=20)
    saved = run(rig.scangate, "status", "--control", "brightness=201", "--save", "--config", conf)
    after_save = v4l2_brightness()
    require(daemon.alive(), f"scangate exited while its controls were tried: {daemon.last_stderr()}")
    status = daemon.terminate()
    stream.stop()
    require(status == 0, f"scangate exited {status} on SIGTERM")
    require(at_open == "brightness: 100", f"v4l2-ctl read {at_open!r} after the daemon opened, want the configured 100")
    require(tried.startswith("brightness = 200"), f"status --control printed {tried!r}")
    require(after_try == "brightness: 200", f"v4l2-ctl read {after_try!r} after --control brightness=200")
    err = bad.stderr.strip().splitlines()
    require(bad.returncode == 2 and len(err) == 1 and "brightness" in err[0] and "0..255" in err[0],
            f"brightness=300: exit {bad.returncode}, stderr {bad.stderr!r} (want 2 and one line with the range)")
    require(after_save == "brightness: 201", f"v4l2-ctl read {after_save!r} after --save brightness=201")
    with open(conf) as f:
        text = f.read()
    want = (f"# HIL kiosk\n[camera]\ncamera = {Vivid.capture}\npixel-format = GREY\nwidth = 640\nheight = 480\n"
            f"camera-control = brightness=201\n\n[service]\nstatus-socket = {sock}\n")
    require(text == want, f"--save wrote:\n{text}\nwant:\n{want}\n(stdout {saved!r})")
    run(rig.scangate, "check-config", conf)
    return (f"listed brightness/contrast; v4l2-ctl: {at_open} at open, {after_try} after the try ({took:.2f} s), "
            f"{after_save} after --save; 300 refused with exit 2 ({err[0][-60:]!r}); the config line replaced, "
            f"check-config accepts it")


@check("camera-reload-keeps-streaming")
def camera_reload_keeps_streaming(rig):
    """`systemctl reload` on a real camera: SIGHUP to `scangate run --config FILE` reading vivid, with the
    file unchanged. The daemon keeps running, the stream is not reopened (one STREAMON, per its log), and
    a code shown after the reload is reported once."""
    Vivid.configure("GREY")
    conf = f"/tmp/{rig.check_name}.conf"
    with open(conf, "w") as f:
        f.write(f"[camera]\ncamera = {Vivid.capture}\npixel-format = GREY\nwidth = 640\nheight = 480\n")
    before, after, blank = (code_frame(rig, "HIL-RELOAD-BEFORE", "GREY"), code_frame(rig, "HIL-RELOAD-AFTER", "GREY"),
                            blank_frame("GREY"))
    phase = {"frame": before}

    def schedule():
        while True:
            yield phase["frame"]

    stream = OutputStream(rig, schedule())
    stream.wait_streaming()
    daemon = Daemon(rig, ["--config", conf])
    daemon.wait_for_payload("HIL-RELOAD-BEFORE", 60)
    phase["frame"] = blank
    daemon.process.send_signal(signal.SIGHUP)
    daemon.wait_for_stderr("camera settings unchanged: the stream stays open", 15)
    phase["frame"] = after
    daemon.wait_for_payload("HIL-RELOAD-AFTER", 30)
    shown = stream.written
    wait_until(lambda: stream.written >= shown + 90, 30, "the code after the reload to stay in view for 90 frames")
    require(daemon.alive(), f"scangate exited after the reload: {daemon.last_stderr()}")
    streaming = [l for l in daemon.stderr if " streaming GREY 640x480" in l]
    status = daemon.terminate()
    stream.stop()
    require(status == 0, f"scangate exited {status} on SIGTERM")
    require(len(streaming) == 1, f"the camera was opened {len(streaming)} times: {streaming}")
    got = daemon.payloads()
    require(got == ["HIL-RELOAD-BEFORE", "HIL-RELOAD-AFTER"], f"stdout reported {got}")
    return ("SIGHUP with the config unchanged: still running, the stream opened once, "
            f"the code after the reload reported once ({got})")


@check("camera-lost-and-back")
def camera_lost_and_back(rig):
    """The camera is reached through a link, as /dev/v4l/by-id/... would be; vivid's device is unbound
    under the streaming daemon (as an unplugged USB camera is), the module unloaded and loaded again."""
    link = "/tmp/hil-camera"
    if os.path.lexists(link):
        os.unlink(link)
    rig.on_cleanup(Vivid.ensure_loaded)
    Vivid.configure("GREY")
    os.symlink(Vivid.capture, link)
    before, after = code_frame(rig, "HIL-BEFORE", "GREY"), code_frame(rig, "HIL-AFTER", "GREY")

    def repeat(frame):
        while True:
            yield frame

    stream = OutputStream(rig, repeat(before), name="before")
    stream.wait_streaming()
    trace = GpioTrace(GpioSim(), rig)
    daemon = Daemon(rig, ["--camera", link, "--pixel-format", "GREY", "--gpio-chip", GPIO_LABEL,
                          "--status-led", "GPIO23", "--camera-lost-blink-ms", "125"])
    daemon.wait_for_payload("HIL-BEFORE", 60)
    stream.stop()
    os.unlink(link)
    Vivid.unbind()
    daemon.wait_for_stderr("camera lost", 15)
    lost = time.monotonic()
    Vivid.unload(timeout=15)
    require(daemon.alive(), f"scangate exited after the camera went away: {daemon.last_stderr()}")
    # The status LED blinks fast while the camera is lost (the trace's clock is CLOCK_MONOTONIC too).
    def fast_blinks():
        tol, _ = trace.tolerance()
        return [p for p in pulses(trace.levels(STATUS), 1) if p[0] >= lost - 0.5 and within(p[1], 0.125, tol)]
    wait_until(lambda: len(fast_blinks()) >= 3, 10, "the status LED (GPIO23) to blink fast, 125 ms on")
    Vivid.load()
    Vivid.configure("GREY")
    stream = OutputStream(rig, repeat(after), name="after")
    stream.wait_streaming()
    back = time.monotonic()
    os.symlink(Vivid.capture, link)
    daemon.wait_for_payload("HIL-AFTER", 30)
    took = time.monotonic() - back
    status = daemon.terminate()
    stream.stop()
    require(took <= 5.0, f"scangate read again {took:.1f} s after the camera came back (limit 5 s)")
    require(status == 0, f"scangate exited {status} on SIGTERM")
    return (f"logged 'camera lost', status LED blinked fast ({len(fast_blinks())} blinks), kept running, "
            f"read again {took:.1f} s after vivid came back")


# ---------------------------------------------------------------------------------------------------
# A libcamera camera (what a Raspberry Pi camera module is) through `libcamerify`

# libcamera's vimc pipeline grants 636x480 when asked for 640x480 (its debayer trims the width), and
# ScanGate refuses a size other than the one configured, so the check asks for what it grants.
LIBCAMERA_SIZE = ["--width", "636", "--height", "480"]


@check("camera-libcamera-through-libcamerify")
def camera_libcamera(rig):
    """vimc driven by libcamera and served as a V4L2 device by libcamera's v4l2-compat.so: list-cameras,
    doctor and run see it, negotiate a format libcamera offers (24-bit RGB), stream and stop."""
    Libcamera.start_udev(rig)
    cameras = run("cam", "-l", timeout=60)
    require("vimc" in cameras, f"libcamera lists no vimc camera: {cameras.strip()}")
    node = Libcamera.capture_node()
    listing = run("libcamerify", rig.scangate, "list-cameras", timeout=60)
    block = next((b for b in listing.split("\n\n") if b.startswith(f"{node}:")), "")
    require("driver libcamera" in block and "RGB3" in block,
            f"list-cameras under libcamerify does not show {node} served by libcamera in RGB3:\n{listing}")
    report = subprocess.run(["libcamerify", rig.scangate, "doctor", "--camera", node, *LIBCAMERA_SIZE,
                             "--capture-seconds", "3"], capture_output=True, text=True, timeout=120)
    require(report.returncode == 0, f"doctor exited {report.returncode}:\n{report.stdout}{report.stderr[-500:]}")
    require("streaming RGB3 636x480" in report.stdout, f"doctor did not stream RGB3 636x480:\n{report.stdout}")
    captured = next((l for l in report.stdout.splitlines() if l.startswith("camera capture")), "")
    frames = int(captured.split("PASS")[1].split()[0]) if "PASS" in captured else 0
    require(frames >= 10, f"doctor captured {frames} frames in 3 s: {captured}")
    # run: stops by itself after 20 frames (an event to wait on), then SIGTERM-free exit 0.
    daemon = Daemon(rig, ["--camera", node, *LIBCAMERA_SIZE, "--max-frames", "20"], name="libcamera",
                    wrapper=["libcamerify"])
    status = daemon.wait_exit(120)
    require(status == 0, f"scangate run under libcamerify exited {status}: {daemon.last_stderr()}")
    require(any("through libcamera's v4l2-compat" in l for l in daemon.stderr),
            f"run did not stream through libcamera's v4l2-compat: {daemon.last_stderr(6)}")
    stopped = next((l for l in daemon.stderr if "stopped:" in l), "")
    require("20 frames captured" in stopped, f"want 20 frames captured, got: {stopped or daemon.last_stderr()}")
    return f"{node} via libcamera: doctor {frames} frames of RGB3 636x480 in 3 s; run: {stopped.split('stopped: ')[1]}"


# ---------------------------------------------------------------------------------------------------
# scangate doctor against every real driver at once

@check("doctor-every-real-device")
def doctor_every_real_device(rig):
    """`scangate doctor` as an installer runs it: vivid showing a code, gpio-sim lines blinked, a test beep
    on the ALSA loopback and a test frame on the UART; then once more with a camera that is not there."""
    Vivid.configure("GREY")
    frame = code_frame(rig, "HIL-DOCTOR", "GREY")

    def repeat():
        while True:
            yield frame

    stream = OutputStream(rig, repeat(), name="doctor")
    stream.wait_streaming()
    sim = GpioSim()
    trace = GpioTrace(sim)
    mark = rig.uart.mark()
    recorder = Recorder(rig, "/tmp/doctor-beep.wav", 30)
    out = run(rig.scangate, "doctor", "--camera", Vivid.capture, "--pixel-format", "GREY",
              "--gpio-chip", GPIO_LABEL, "--led-green", "GPIO17", "--buzzer", "GPIO22", "--blink",
              "--beep", "1000:150", "--beep-device", "plughw:Loopback,0,0", "--test-beep",
              "--serial", rig.uart.device, "--test-frame", timeout=90)
    heard = recorder.finish()
    stream.stop()
    require("FAIL" not in out, f"doctor reported a failure:\n{out}")
    require(len(heard) == 1 and abs(heard[0][2] - 1000) <= 20, f"--test-beep: heard {heard}, want one 1000 Hz tone")
    require("HIL-DOCTOR" in out, f"doctor did not decode the code in view:\n{out}")
    require("control brightness" in out and "control contrast" in out,
            f"doctor does not list vivid's brightness and contrast controls:\n{out}")
    got = rig.uart.wait_for(mark, lambda b: b.endswith(b"\r\n"), 5, "the test frame on the UART")
    require(got == b"SCANGATE-TEST\r\n", f"the UART carried {got!r}, expected b'SCANGATE-TEST\\r\\n'")
    green = pulses(trace.levels(GREEN), 1)
    buzz = pulses(trace.levels(BUZZER), 1)
    require(len(green) == 1 and len(buzz) == 1, f"--blink: green pulses {green}, buzzer pulses {buzz} (want one each)")
    last = final_levels(trace, (GREEN, BUZZER))
    require(all(v == 0 for v in last.values()), f"lines left at {last} after doctor (want 0)")
    # The camera missing: exit 1 with a fix.
    missing = subprocess.run([rig.scangate, "doctor", "--camera", "/dev/video99"], capture_output=True, text=True,
                             timeout=60)
    require(missing.returncode == 1, f"doctor with a missing camera exited {missing.returncode}, want 1")
    require("fix:" in missing.stdout, f"no fix given for the missing camera:\n{missing.stdout}")
    return (f"all PASS on vivid/gpio-sim/snd-aloop/ttyS1; HIL-DOCTOR decoded; green blink {ms(green[0][1])}; "
            f"test beep {heard[0][2]:.0f} Hz {ms(heard[0][1])}; "
            f"UART got {got!r}; missing camera → exit 1 with a fix")
