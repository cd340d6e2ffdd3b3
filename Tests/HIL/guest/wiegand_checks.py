"""Wiegand on gpio-sim: `scangate run --wiegand-...` drives D0/D1 (GPIO12/GPIO13 of the sim bank); the
kernel's gpio_value tracepoint stamps every level, and the independent decoder in wiegand.py turns the
trace into frames, checks their bits, parity and number, the pulse widths (20-100 us), the intervals
(200 us-20 ms) and the frame gap, and prints the timing histogram. The panel's LED and beeper inputs
(GPIO16/GPIO26) are driven through gpio-sim's pull and read back on the LED and buzzer lines.

The options are `scangate run`'s `[wiegand]` section (Sources/Settings/WiegandOptions.swift).
"""
import subprocess
import time

import wiegand
from rig import GPIO_LABEL, Daemon, GpioSim, GpioTrace, check, require, wait_until
from scangate_checks import final_levels, require_released, run_to_end, scenario

D0, D1, LED_IN, BEEPER_IN = 12, 13, 16, 26
GREEN, BUZZER = 17, 22
WIEGAND = ["--gpio-chip", GPIO_LABEL, "--wiegand-d0", "GPIO12", "--wiegand-d1", "GPIO13",
           "--wiegand-pulse-us", "50", "--wiegand-interval-us", "2000"]


def codes_scenario(name, codes, fps=10, hold=10, blank=5):
    """Each code held `hold` frames with `blank` frames between (1 s and 0.5 s at 10 fps)."""
    frames = [(c, blank + (hold + blank) * i, blank + (hold + blank) * i + hold - 1) for i, c in enumerate(codes)]
    return scenario(name, fps, blank + (hold + blank) * len(codes) + 10, frames)


def hogs(rig, count=2):
    """CPU hogs in the guest (one per vCPU), killed when the check ends."""
    return [rig.spawn(["sh", "-c", "while :; do :; done"]) for _ in range(count)]


def wiegand_run(rig, codes, flags, fps=10, hold=10, blank=5, load=False):
    """Shows `codes`, runs scangate until the scenario ends; returns (daemon, trace, analysis). `load`
    starts the CPU hogs (they spin until the check ends)."""
    sim = GpioSim()
    trace = GpioTrace(sim)
    if load:
        hogs(rig)
    daemon = run_to_end(rig, ["--camera", f"sim:{codes_scenario(rig.check_name, codes, fps, hold, blank)}",
                              *WIEGAND, *flags], timeout=120)
    require(daemon.payloads() == codes, f"stdout reported {daemon.payloads()}, expected {codes}")
    require(final_levels(trace, (D0, D1)) == {D0: 1, D1: 1}, f"D0/D1 left at {final_levels(trace, (D0, D1))} (want idle high)")
    require_released(sim, (D0, D1))
    return daemon, trace, wiegand.analyse(trace.events(), D0, D1)


def correctness(analysis, expected, gap_ms=100):
    """The failures that are not pulse/interval timing (bits, parity, number, overlap, gap)."""
    return [f for f in wiegand.check(analysis, expected, gap_ms) if "outside" not in f]


FORMATS = [
    ("26", 90, [324, 65535]),
    ("34", 1000, [324, 65535]),
    ("35", 2643, [163271, 1]),
    ("37", 1, [516907, 0]),
    ("37-h10302", None, [1041195, 34359738367]),
    ("raw:40", None, [1, 1099511627775]),
]


def format_check(name, facility, cards):
    def body(rig):
        flags = ["--wiegand-format", name] + (["--wiegand-facility", str(facility)] if facility is not None else [])
        _, trace, analysis = wiegand_run(rig, [str(c) for c in cards], flags)
        expected = [(name, facility or 0, c) for c in cards]
        failures = correctness(analysis, expected)
        require(not failures, "; ".join(failures) + f" | {wiegand.timing_summary(analysis)}")
        first = {o: trace.levels(o)[0][1] for o in (D0, D1)}
        require(first == {D0: 1, D1: 1}, f"D0/D1 were first driven to {first}, not idle high")
        bits = [f["bits"] for f in analysis["frames"]]
        return f"{name}: {bits} decode to {expected} with valid parity; idle high before and after; " \
               f"{wiegand.timing_summary(analysis)}"
    return body


for _name, _facility, _cards in FORMATS:
    check(f"wiegand-format-{_name}")(format_check(_name, _facility, _cards))


@check("wiegand-active-high")
def wiegand_active_high(rig):
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = run_to_end(rig, ["--camera", f"sim:{codes_scenario(rig.check_name, ['324'])}", *WIEGAND,
                              "--wiegand-facility", "90", "--wiegand-active-high"])
    require(daemon.payloads() == ["324"], f"stdout reported {daemon.payloads()}")
    analysis = wiegand.analyse(trace.events(), D0, D1, active=1)
    failures = correctness(analysis, [("26", 90, 324)])
    require(not failures, "; ".join(failures))
    first = {o: trace.levels(o)[0][1] for o in (D0, D1)}
    require(first == {D0: 0, D1: 0} and final_levels(trace, (D0, D1)) == {D0: 0, D1: 0},
            f"an inverting board's lines must idle low: first {first}, last {final_levels(trace, (D0, D1))}")
    return f"idle low, pulses high: {analysis['frames'][0]['bits']}; {wiegand.timing_summary(analysis)}"


@check("wiegand-frame-gap")
def wiegand_frame_gap(rig):
    """Two codes read 0.3 s apart with --wiegand-frame-gap-ms 1000: the second frame waits."""
    _, _, analysis = wiegand_run(rig, ["324", "325"], ["--wiegand-facility", "90", "--wiegand-frame-gap-ms", "1000"],
                                 hold=2, blank=1)
    failures = correctness(analysis, [("26", 90, 324), ("26", 90, 325)], gap_ms=1000)
    require(not failures, "; ".join(failures))
    return f"frames {analysis['gaps_ms'][0]:.1f} ms apart (at least 1000 ms configured, reads 300 ms apart)"


# QEMU without KVM (TCG) takes the guest's vCPUs off the host CPU at any moment, also inside a 50 us
# pulse or between reading the clock and setting the line; door.md measured 76 of 78 pulses in window
# for a plain C loop on this rig. The windows are SIA's and are never widened: what the emulated rig
# asks for is a share of pulses and intervals inside them (a sender that slept through its pulses
# would have almost none inside), a median inside them, and that every frame is either right to the
# bit or one the daemon itself logged as cut by a stall. A Raspberry Pi with the real-time grant is
# expected to keep every pulse in. Under load (both vCPUs spinning, so the host has the most emulator
# threads to schedule) more pulses are stretched: clean-clone runs measured 93.5-99.6% there, against
# 97.7-99.6% quiet, hence the lower share under load.
EMULATION_SHARE = 0.95
EMULATION_SHARE_UNDER_LOAD = 0.90


def timing_attempt(rig, load, start_hogs):
    """One run of 10 frames. Raises on anything but the share of pulses and intervals in their windows
    (bits, parity, number, overlaps, stalls, medians, frame gaps); returns (summary, share shortfalls)."""
    cards = [1000 + 7919 * i % 65535 for i in range(10)]
    fps, hold, blank = (60, 30, 20) if load else (10, 10, 5)
    daemon, _, analysis = wiegand_run(rig, [str(c) for c in cards], ["--wiegand-facility", "90"], fps=fps, hold=hold,
                                      blank=blank, load=start_hogs)
    summary = wiegand.timing_summary(analysis)
    frames = analysis["frames"]
    require(not analysis["overlaps"], f"D0 and D1 were active together {analysis['overlaps']} times | {summary}")
    require(not analysis["unterminated"], f"a pulse never ended | {summary}")
    require(len(frames) == len(cards), f"{len(frames)} frames on the wire for {len(cards)} codes | {summary}")
    stalls = [l for l in daemon.stderr if "held off the CPU" in l]
    cut = 0
    for i, (f, card) in enumerate(zip(frames, cards)):
        if len(f["bits"]) != 26:
            cut += 1
            continue
        ok, facility, number = wiegand.fmt("26").decode(f["bits"])
        require(ok and (facility, number) == (90, card), f"frame {i + 1}: {f['bits']} is not 90/{card} with parity")
    require(cut <= len(stalls), f"{cut} short frame(s) on the wire, but the daemon logged {len(stalls)} stall(s) | {summary}")
    require(cut * 2 <= len(cards), f"{cut} of {len(cards)} frames cut by stalls | {summary}")
    widths = [w for f in frames for w in f["widths_us"]]
    intervals = [v for f in frames for v in f["intervals_us"]]
    shortfalls = []
    wanted = EMULATION_SHARE_UNDER_LOAD if load else EMULATION_SHARE
    for name, values, window in (("pulses", widths, wiegand.PULSE_US), ("intervals", intervals, wiegand.INTERVAL_US)):
        n, pct = wiegand.share(values, window)
        if pct < wanted * 100:
            shortfalls.append(f"only {pct:.1f}% of {name} in {window[0]}-{window[1]} us")
        mid = wiegand.median(values)
        require(window[0] <= round(mid) <= window[1], f"{name} p50 {mid:.0f} us is outside {window} | {summary}")
    short = [round(g, 1) for g in analysis["gaps_ms"] if g < 100]
    require(not short, f"frame gaps below 100 ms: {short} | {summary}")
    return summary + f"; {len(cards) - cut} frames right to the bit, {cut} cut by a stall the daemon logged", shortfalls


def timing_check(rig, load):
    """Everything but the share must hold in each run. The emulated CPU's stalls come in bursts (a
    host-side hiccup can take several pulses of one run), so a run short of the share is followed by
    one more under the same load, and that one must meet it; both are reported. A sender that sleeps
    through its pulses misses the share every time."""
    summary, shortfalls = timing_attempt(rig, load, start_hogs=load)
    if not shortfalls:
        return summary
    again, again_shortfalls = timing_attempt(rig, load, start_hogs=False)
    require(not again_shortfalls, f"{', '.join(shortfalls)} in one run, and in the next: {', '.join(again_shortfalls)} "
                                  f"| first: {summary} | second: {again}")
    return f"{again} (the run before it: {', '.join(shortfalls)} | {summary})"


@check("wiegand-timing-quiet")
def wiegand_timing_quiet(rig):
    """10 frames, right to the bit; pulses 20-100 us and intervals 200 us-20 ms (the emulated rig's
    share, above), frames at least 100 ms apart."""
    return timing_check(rig, load=False)


@check("wiegand-timing-under-load")
def wiegand_timing_under_load(rig):
    """The same with both guest CPUs spinning and the decoder at full speed (60 fps, a code in most frames)."""
    return timing_check(rig, load=True)


@check("wiegand-hostile-numbers")
def wiegand_hostile_numbers(rig):
    """Numbers a decimal map cannot carry are refused for Wiegand (reported on stdout with the reason),
    and nothing of them reaches the wire; the good code after them is sent."""
    hostile = {"18446744073709551616": "larger than the largest 64-bit number",
               "0000000000000000000000000324": "at most 20 digits",
               "12A4": "not a decimal number",
               "70000": "out of range for wiegand-format 26"}
    codes = list(hostile) + ["324"]
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = run_to_end(rig, ["--camera", f"sim:{codes_scenario(rig.check_name, codes)}", *WIEGAND,
                              "--wiegand-facility", "90"], timeout=120)
    events = daemon.events()
    require([e.get("data") for e in events] == codes, f"stdout reported {[e.get('data') for e in events]}")
    for e in events[:-1]:
        reason = (e.get("refused") or {}).get("wiegand", "")
        require(hostile[e["data"]] in reason, f"{e['data']!r}: refused.wiegand is {reason!r}, want {hostile[e['data']]!r}")
    analysis = wiegand.analyse(trace.events(), D0, D1)
    failures = correctness(analysis, [("26", 90, 324)])
    require(not failures, "; ".join(failures))
    return f"{len(hostile)} refused with their reasons, nothing on D0/D1 for them; 324 sent: {analysis['frames'][0]['bits']}"


@check("wiegand-idle-after-sigterm")
def wiegand_idle_after_sigterm(rig):
    """SIGTERM while a 64-bit frame is on the wire (5 ms intervals: a third of a second) with a stop bound
    of 200 ms, too short to finish it: the frame ends at a bit boundary, both lines idle, released, and
    nothing more is sent."""
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = Daemon(rig, ["--camera", f"sim:{codes_scenario(rig.check_name, ['18446744073709551615'], hold=10, blank=5)}",
                          *WIEGAND[:6], "--wiegand-format", "raw:64", "--wiegand-interval-us", "5000",
                          "--stop-timeout-ms", "200"])
    wait_until(lambda: len(wiegand.line_pulses(trace.events(), D1, 0)) >= 3, 30, "three pulses on D1")
    status = daemon.terminate(timeout=5)
    require(status == 0, f"scangate exited {status} on SIGTERM: {daemon.last_stderr()}")
    analysis = wiegand.analyse(trace.events(), D0, D1)
    require(analysis["unterminated"] == 0, "a pulse was left active at exit")
    require(final_levels(trace, (D0, D1)) == {D0: 1, D1: 1}, f"D0/D1 left at {final_levels(trace, (D0, D1))}")
    require_released(sim, (D0, D1))
    bits = [f["bits"] for f in analysis["frames"]]
    require(len(bits) == 1 and 3 <= len(bits[0]) < 64, f"frames on the wire: {bits} (want one cut frame)")
    return f"cut after {len(bits[0])} of 64 bits at a bit boundary, D0/D1 idle high, released"


@check("wiegand-line-busy")
def wiegand_line_busy(rig):
    sim = GpioSim()
    holder = rig.spawn(["gpioset", "--mode=signal", GPIO_LABEL, "12=1"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    wait_until(lambda: sim.consumer(D0) == "gpioset", 10, "gpioset to hold GPIO12")
    daemon = run_to_end(rig, ["--camera", f"sim:{codes_scenario(rig.check_name, ['324'])}", *WIEGAND,
                              "--wiegand-facility", "90"])
    require(daemon.payloads() == ["324"], f"scanning did not go on: stdout {daemon.payloads()}")
    said = [l for l in daemon.stderr if "GPIO12" in l and "busy" in l and "gpioset" in l]
    require(said, f"no stderr line names GPIO12 as busy and who holds it: {daemon.last_stderr(5)}")
    reason = (daemon.events()[0].get("refused") or {}).get("wiegand", "")
    require("not available" in reason, f"refused.wiegand is {reason!r}")
    require(holder.poll() is None and sim.consumer(D0) == "gpioset", "gpioset lost GPIO12")
    return f"logged: {said[0].strip()[:160]}; the code was reported, refused for Wiegand"


def panel_input(rig, input_offset, output_offset, what):
    """The panel pulls an input low: the reader's output line follows while it is held."""
    sim = GpioSim()
    for o in (LED_IN, BEEPER_IN):
        sim.set_pull(o, "pull-up")   # idle: not pulled by the panel
    daemon = Daemon(rig, ["--camera", f"sim:{scenario(rig.check_name, 10, 300, [])}", *WIEGAND,
                          "--wiegand-led-input", "GPIO16", "--wiegand-beeper-input", "GPIO26",
                          "--feedback", "controller", "--led-green", "GPIO17", "--buzzer", "GPIO22"])
    daemon.wait_for_stderr("panel beeper input", 20)
    require(sim.value(output_offset) == 0, f"line {output_offset} is active before the panel asked")
    pulled = time.monotonic()
    sim.set_pull(input_offset, "pull-down")
    wait_until(lambda: sim.value(output_offset) == 1, 5, f"the {what} line (GPIO{output_offset}) to go active")
    took = time.monotonic() - pulled
    time.sleep(1.0)   # the condition under test: held for a second, it stays on
    require(sim.value(output_offset) == 1, f"the {what} went off while the panel held GPIO{input_offset} low")
    sim.set_pull(input_offset, "pull-up")
    wait_until(lambda: sim.value(output_offset) == 0, 5, f"the {what} line to go inactive on release")
    status = daemon.terminate(timeout=10)
    require(status == 0, f"scangate exited {status}")
    require_released(sim, (D0, D1, LED_IN, BEEPER_IN))
    return f"GPIO{input_offset} pulled low → {what} (GPIO{output_offset}) on after {took * 1000:.0f} ms, held 1 s, off on release"


@check("wiegand-panel-led-input")
def wiegand_panel_led(rig):
    return panel_input(rig, LED_IN, GREEN, "green LED")


@check("wiegand-panel-beeper-input")
def wiegand_panel_beeper(rig):
    return panel_input(rig, BEEPER_IN, BUZZER, "buzzer")
