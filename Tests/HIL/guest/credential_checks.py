"""The door relay and signed passes on the emulated rig: `scangate run --door-relay GPIO25` on gpio-sim,
read back with the kernel's gpio_value trace (every level driven, stamped, including the level a line
is requested at and the last one before it is released); and credential-require-synced-clock against
the guest's own kernel clock, which boots unsynchronised (maxerror 16 s, STA_UNSYNC: no NTP in the VM)
and is then marked synchronised through adjtimex(2) exactly as an NTP daemon does it.

The options are `scangate run`'s `[door-relay]` and `[credential]` sections
(Sources/Settings/DoorRelayOptions.swift, CredentialOptions.swift).
"""
import ctypes
import json
import os
import time

from rig import GPIO_LABEL, Daemon, GpioSim, GpioTrace, check, pulses, require, run, wait_until
from scangate_checks import final_levels, ms, one_code, require_released, run_to_end, scenario, within

RELAY = 25
RELAY_FLAGS = ["--gpio-chip", GPIO_LABEL, "--door-relay", f"GPIO{RELAY}"]


def relay_run(rig, flags, relay_ms, camera=None):
    """One good read (or `camera`), run to the end of the scenario; returns (daemon, trace levels of the relay)."""
    sim = GpioSim()
    trace = GpioTrace(sim, rig)
    daemon = run_to_end(rig, ["--camera", camera or f"sim:{one_code(rig.check_name, 'HIL-RELAY')}", *RELAY_FLAGS,
                              "--door-relay-ms", str(relay_ms), *flags], timeout=90)
    return daemon, trace.levels(RELAY), sim, trace.tolerance()


@check("door-relay-pulse-idle-at-start-and-exit")
def relay_pulse(rig):
    daemon, levels, sim, (tol, said) = relay_run(rig, [], 1500)
    require(daemon.payloads() == ["HIL-RELAY"], f"expected one read, got {daemon.payloads()}")
    require(levels and levels[0][1] == 0, f"the relay line was first driven to {levels[:1]} (want 0: idle at start)")
    active = pulses(levels, 1)
    require(len(active) == 1, f"expected one pulse on GPIO{RELAY}, the trace shows {active}")
    require(within(active[0][1], 1.5, tol), f"the relay was energised {ms(active[0][1])}, configured 1500 ms ({said})")
    require(levels[-1][1] == 0, f"GPIO{RELAY} was left at {levels[-1][1]}")
    require_released(sim, (RELAY,))
    return f"requested at 0, one pulse of {ms(active[0][1])} (configured 1500 ms, {said}), 0 at exit, released"


@check("door-relay-active-low")
def relay_active_low(rig):
    daemon, levels, sim, (tol, said) = relay_run(rig, ["--door-relay-active-low"], 1000)
    require(daemon.payloads() == ["HIL-RELAY"], f"expected one read, got {daemon.payloads()}")
    # The trace shows physical levels: active-low idles high and pulls low.
    require(levels and levels[0][1] == 1, f"the active-low relay line was first driven to {levels[:1]} (want 1)")
    active = pulses(levels, 0)
    require(len(active) == 1 and within(active[0][1], 1.0, tol),
            f"expected GPIO{RELAY} low for 1000 ms once, the trace shows {active} ({said})")
    require(levels[-1][1] == 1, f"GPIO{RELAY} was left at {levels[-1][1]} (want 1, inactive)")
    require_released(sim, (RELAY,))
    return f"idle high, low for {ms(active[0][1])} (configured 1000 ms, {said}), left high, released"


@check("door-relay-inactive-after-sigterm-mid-pulse")
def relay_sigterm(rig):
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = Daemon(rig, ["--camera", f"sim:{scenario(rig.check_name, 10, 300, [('HIL-RELAY', 5, 14)])}", *RELAY_FLAGS,
                          "--door-relay-ms", "20000", "--stop-timeout-ms", "1000"])
    daemon.wait_for_payload("HIL-RELAY", 60)
    wait_until(lambda: sim.value(RELAY) == 1, 10, f"GPIO{RELAY} to read high in sysfs (relay energised)")
    started = time.monotonic()
    status = daemon.terminate(timeout=5)
    took = time.monotonic() - started
    require(status == 0, f"scangate exited with status {status} on SIGTERM: {daemon.last_stderr()}")
    levels = trace.levels(RELAY)
    require(levels[-1][1] == 0, f"the last level driven on GPIO{RELAY} was {levels[-1][1]} (want 0)")
    require(len(pulses(levels, 1)) == 1, f"expected one pulse, the trace shows {pulses(levels, 1)}")
    require_released(sim, (RELAY,))
    return f"SIGTERM mid-pulse (door-relay-ms 20000): exit 0 after {ms(took)}, GPIO{RELAY} driven 0 then released"


@check("door-relay-inactive-at-stop-deadline")
def relay_stop_deadline(rig):
    """The decode queue stuck for ever (SCANGATE_FAULT=hang-decode) while the relay is energised: the
    normal shutdown cannot finish, so at stop-timeout-ms the signal thread's forceInactive drives the
    relay line inactive before the process ends."""
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = Daemon(rig, ["--camera", f"sim:{scenario(rig.check_name, 10, 300, [('HIL-RELAY', 5, 14)])}", *RELAY_FLAGS,
                          "--door-relay-ms", "60000", "--stop-timeout-ms", "1000"], wrapper=["env", "SCANGATE_FAULT=hang-decode"])
    daemon.wait_for_payload("HIL-RELAY", 60)
    wait_until(lambda: sim.value(RELAY) == 1, 10, f"GPIO{RELAY} to read high in sysfs (relay energised)")
    started = time.monotonic()
    status = daemon.terminate(timeout=10)
    took = time.monotonic() - started
    require(status == 0, f"exit status {status}: {daemon.last_stderr()}")
    require(took <= 1.5, f"exited {ms(took)} after SIGTERM (stop-timeout-ms 1000 + 500 ms)")
    require(any("shutdown did not finish within" in l for l in daemon.stderr),
            f"the deadline was not what ended it: {daemon.last_stderr()}")
    levels = trace.levels(RELAY)
    require(levels[-1][1] == 0, f"the relay was left at {levels[-1][1]} (want 0, inactive)")
    require_released(sim, (RELAY,))
    return f"stuck decode, SIGTERM mid-pulse: exit 0 after {ms(took)} (stop-timeout-ms 1000), relay driven 0 by forceInactive, released"


# ---------------------------------------------------------------------------------------------------
# Signed passes: keys and passes made in the guest with `scangate credential`.

def passes(rig, specs):
    """keygen into /tmp, then one pass per (number, extra issue flags); returns (jwks, [pass text])."""
    keys = f"/tmp/{rig.check_name}-keys"
    if os.path.isdir(keys):
        for name in os.listdir(keys):
            os.unlink(os.path.join(keys, name))
    run(rig.scangate, "credential", "keygen", "--out", keys, "--kid", "hil")
    out = []
    for number, extra in specs:
        out.append(run(rig.scangate, "credential", "issue", "--key", f"{keys}/hil.key", "--number", number, "--ttl", "1h",
                       "--format", "cwt", "--kid", "hil", "--text", *extra).strip())
    return f"{keys}/credential-keys.jwks", out


@check("door-relay-only-for-accepted-passes")
def relay_only_accepted(rig):
    jwks, (other_door, good) = passes(rig, [("1001", ["--aud", "back-door"]), ("4711", ["--aud", "front-door"])])
    camera = f"sim:{scenario(rig.check_name, 10, 50, [(other_door, 5, 14), (good, 25, 34)])}"
    daemon, levels, sim, (tol, said) = relay_run(rig, ["--credential-format", "cwt", "--credential-keys", jwks, "--credential-audience",
                                          "front-door", "--credential-require-synced-clock=no"], 1000, camera=camera)
    verdicts = [e.get("rejected", "accepted") for e in daemon.events()]
    require(verdicts == ["wrong-audience", "accepted"], f"verdicts {verdicts}")
    active = pulses(levels, 1)
    require(len(active) == 1, f"expected one pulse (for the accepted pass only), the trace shows {active}")
    require(within(active[0][1], 1.0, tol), f"the relay was energised {ms(active[0][1])}, configured 1000 ms ({said})")
    require(levels[-1][1] == 0, "the relay line was left active")
    require_released(sim, (RELAY,))
    return f"a pass for another door: refused, no pulse; a valid pass: one pulse of {ms(active[0][1])} (configured 1000 ms, {said})"


class Timex(ctypes.Structure):
    """struct timex (x86_64): the fields adjtimex reads and sets here, then room for the rest."""
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
                ("rest", ctypes.c_byte * 160)]


ADJ_MAXERROR, ADJ_ESTERROR, ADJ_STATUS, STA_UNSYNC = 0x0004, 0x0008, 0x0010, 0x0040
NTP_PHASE_LIMIT_US = 16_000_000


def adjtimex(modes=0, **fields):
    libc = ctypes.CDLL(None, use_errno=True)
    t = Timex()
    t.modes = modes
    for name, value in fields.items():
        setattr(t, name, value)
    state = libc.adjtimex(ctypes.byref(t))
    require(state >= 0, f"adjtimex failed: errno {ctypes.get_errno()}")
    return t


@check("credential-clock-unsynchronised-then-synchronised")
def credential_clock(rig):
    before = adjtimex()
    require(before.maxerror >= NTP_PHASE_LIMIT_US and before.status & STA_UNSYNC,
            f"the guest's clock is already synchronised (maxerror {before.maxerror} us, status {before.status:#x})")
    require(not os.path.exists("/run/systemd/timesync/synchronized"), "the guest has systemd-timesyncd's flag file")
    rig.on_cleanup(lambda: adjtimex(ADJ_MAXERROR | ADJ_ESTERROR | ADJ_STATUS, maxerror=NTP_PHASE_LIMIT_US,
                                    esterror=NTP_PHASE_LIMIT_US, status=adjtimex().status | STA_UNSYNC))
    jwks, (first, second, third) = passes(rig, [("101", []), ("102", []), ("103", [])])
    sim = GpioSim()
    trace = GpioTrace(sim)
    camera = f"sim:{scenario(rig.check_name, 10, 160, [(first, 5, 14), (second, 40, 49), (third, 120, 129)])}"
    daemon = Daemon(rig, ["--camera", camera, "--credential-format", "cwt", "--credential-keys", jwks,
                          *RELAY_FLAGS, "--door-relay-ms", "500"])
    daemon.wait_for_events(2, 60)
    verdicts = [e.get("rejected", "accepted") for e in daemon.events()]
    require(verdicts == ["clock not synchronised"] * 2, f"verdicts before the clock is set: {verdicts}")
    warnings = [l for l in daemon.stderr if "every pass is refused as 'clock not synchronised'" in l]
    require(len(warnings) == 1, f"the refusal was logged {len(warnings)} times (want once): {warnings}")
    require(not pulses(trace.levels(RELAY), 1), "the relay pulsed for a pass refused by the clock check")
    # What chronyd or systemd-timesyncd does at a clock update: a small maximum error, STA_UNSYNC cleared.
    now = adjtimex()
    adjtimex(ADJ_MAXERROR | ADJ_ESTERROR | ADJ_STATUS, maxerror=50_000, esterror=10_000, status=now.status & ~STA_UNSYNC)
    synced_at = time.monotonic()
    daemon.wait_for_events(3, 60)
    third_event = daemon.events()[2]
    require(third_event.get("rejected") is None and third_event.get("credential", {}).get("number") == "103",
            f"after the clock was set: {json.dumps(third_event)[:300]}")
    notices = [l for l in daemon.stderr if "credentials: clock synchronised" in l]
    require(len(notices) == 1, f"the change was logged {len(notices)} times (want once): {daemon.last_stderr(5)}")
    require(daemon.wait_exit(60) == 0, f"exit status: {daemon.last_stderr()}")
    warnings = [l for l in daemon.stderr if "every pass is refused as 'clock not synchronised'" in l]
    require(len(warnings) == 1, f"the refusal was logged again: {warnings}")
    active = pulses(trace.levels(RELAY), 1)
    require(len(active) == 1, f"expected one relay pulse (the accepted pass), the trace shows {active}")
    return (f"guest kernel maxerror {before.maxerror / 1e6:.1f} s: 2 passes refused 'clock not synchronised' (logged once), "
            f"no pulse; adjtimex set maxerror 0.05 s: the next pass accepted {time.monotonic() - synced_at:.1f} s later, "
            f"'clock synchronised' logged once, one relay pulse")
