"""SIGTERM always ends the process, within stop-timeout-ms, with every output inactive, even when a
thread is stuck; and inputs that would have blocked a read for ever are refused at once. Each check
measures the time from SIGTERM (or from the start) to the exit, against the bound it was given."""
import os
import select
import termios
import time

from rig import GPIO_LABEL, Daemon, GpioSim, GpioTrace, check, require
from scangate_checks import GPIO_BY_NAME, GREEN, final_levels, one_code, require_released

STOP_MS = 1000
# The kernel's process teardown after the daemon's own exit (reaping, 9p), on the emulated rig.
EXIT_SLACK_S = 0.5


def stop_and_time(daemon, bound_s):
    """SIGTERM, then the exit status and how long the exit took (seconds)."""
    t0 = time.monotonic()
    status = daemon.terminate(timeout=bound_s + 10)
    return status, time.monotonic() - t0


def lit_until_stopped(rig, extra, wrapper=(), name="daemon"):
    """scangate with the LEDs, a good read that keeps green lit for a minute, and `extra` flags; waits
    until green is lit (the trace says so) and returns (daemon, sim, trace)."""
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = Daemon(rig, ["--camera", f"sim:{one_code(rig.check_name, 'HIL-STOP')}", "--loop", *GPIO_BY_NAME,
                          "--good-led-ms", "60000", "--stop-timeout-ms", str(STOP_MS), *extra],
                    name=name, wrapper=wrapper)
    daemon.wait_for_payload("HIL-STOP", 60)
    deadline = time.monotonic() + 10
    while final_levels(trace, (GREEN,))[GREEN] != 1:
        require(time.monotonic() < deadline, "the green LED (GPIO17) was not lit after the read")
        time.sleep(0.02)
    return daemon, sim, trace


@check("stop-deadline-stuck-decode-leds-inactive")
def stop_stuck_decode(rig):
    """The decode queue stuck for ever in a call (the SCANGATE_FAULT=hang-decode test fault): the
    normal shutdown cannot finish, so after stop-timeout-ms the signal thread drives the LEDs inactive
    and ends the process with status 0."""
    daemon, sim, trace = lit_until_stopped(rig, [], wrapper=["env", "SCANGATE_FAULT=hang-decode"])
    status, took = stop_and_time(daemon, STOP_MS / 1000)
    require(status == 0, f"exit status {status}: {daemon.last_stderr()}")
    require(took <= STOP_MS / 1000 + EXIT_SLACK_S, f"exited {took * 1000:.0f} ms after SIGTERM "
            f"(stop-timeout-ms {STOP_MS} + {EXIT_SLACK_S * 1000:.0f} ms)")
    require(any("shutdown did not finish within" in l for l in daemon.stderr),
            f"the deadline was not what ended it: {daemon.last_stderr()}")
    levels = final_levels(trace, (GREEN,))
    require(levels[GREEN] == 0, f"green LED left at {levels[GREEN]} (want 0, inactive)")
    require_released(sim, (GREEN,))
    return f"stuck decode: exit 0 {took * 1000:.0f} ms after SIGTERM (bound {STOP_MS} ms), green driven inactive"


@check("stop-blocked-serial-write-leds-inactive")
def stop_blocked_serial_write(rig):
    """SIGTERM while a frame cannot leave the serial line (a pseudo-terminal whose output is stopped,
    as an XOFF or a controller holding CTS low would; the write timeout and TTL are a minute): the
    write is abandoned at the stop bound, the port closed, the LEDs inactive, exit 0 in time."""
    controller, device = os.openpty()
    rig.on_cleanup(lambda: (os.close(controller), os.close(device)))
    termios.tcflow(device, termios.TCOOFF)
    tty = os.ttyname(device)
    sim = GpioSim()
    trace = GpioTrace(sim)
    daemon = Daemon(rig, ["--camera", f"sim:{one_code(rig.check_name, 'HIL-STOP-SERIAL')}", "--loop", *GPIO_BY_NAME,
                          "--good-led-ms", "60000", "--serial", tty, "--serial-write-timeout-ms", "60000",
                          "--serial-ttl-ms", "60000", "--stop-timeout-ms", str(STOP_MS)])
    daemon.wait_for_payload("HIL-STOP-SERIAL", 60)
    deadline = time.monotonic() + 10
    while final_levels(trace, (GREEN,))[GREEN] != 1:
        require(time.monotonic() < deadline, "the green LED (GPIO17) was not lit after the read")
        time.sleep(0.02)
    status, took = stop_and_time(daemon, STOP_MS / 1000)
    require(status == 0, f"exit status {status}: {daemon.last_stderr()}")
    require(took <= STOP_MS / 1000 + EXIT_SLACK_S, f"exited {took * 1000:.0f} ms after SIGTERM (bound {STOP_MS} ms)")
    require(any("abandoned" in l and "shutdown drain time" in l for l in daemon.stderr),
            f"the blocked frame was not abandoned at shutdown: {daemon.last_stderr(5)}")
    # Restart the line and send a sentinel behind whatever is still queued in the tty: everything read
    # up to the sentinel is what the daemon left on the line (the tty keeps the order).
    termios.tcflow(device, termios.TCOON)
    sentinel = b"\x00HIL-SENTINEL\x00"
    os.write(device, sentinel)
    late = b""
    drain_by = time.monotonic() + 10
    while sentinel not in late:
        left = drain_by - time.monotonic()
        require(left > 0, f"the sentinel written after the line was restarted never arrived; read {late!r}")
        ready, _, _ = select.select([controller], [], [], left)
        if ready:
            late += os.read(controller, 4096)
    late = late[:late.index(sentinel)]
    require(b"HIL-STOP-SERIAL" not in late, f"the abandoned frame left the line later: {late!r}")
    levels = final_levels(trace, (GREEN,))
    require(levels[GREEN] == 0, f"green LED left at {levels[GREEN]} (want 0, inactive)")
    require_released(sim, (GREEN,))
    return f"SIGTERM with the frame stuck on a stopped line: exit 0 after {took * 1000:.0f} ms (bound {STOP_MS} ms), frame never sent (nothing before a sentinel written after the line restarted), green inactive"


def refused_at_once(rig, camera, what):
    t0 = time.monotonic()
    daemon = Daemon(rig, ["--camera", camera, "--stop-timeout-ms", str(STOP_MS)])
    status = daemon.wait_exit(10)
    took = time.monotonic() - t0
    lines = [l for l in daemon.stderr if l.strip()]
    require(status == 2, f"exit status {status} (want 2): {daemon.last_stderr()}")
    require(len(lines) == 1 and what in lines[0], f"stderr {lines} (want one line saying {what!r})")
    require(took <= STOP_MS / 1000 + EXIT_SLACK_S, f"took {took * 1000:.0f} ms")
    return took, lines[0]


@check("stop-fifo-replay-refused-at-once")
def stop_fifo_replay(rig):
    """`--camera replay:FIFO`, a named pipe with no writer: refused at once, never blocked in open(2)."""
    fifo = f"/tmp/{rig.check_name}.fifo"
    if os.path.lexists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    took, line = refused_at_once(rig, f"replay:{fifo}", "not a regular file")
    return f"exit 2 after {took * 1000:.0f} ms: {line}"


@check("stop-endless-replay-file-refused-at-once")
def stop_endless_replay(rig):
    """A replay folder whose frame is a link to /dev/zero (a file without end): refused at once."""
    folder = f"/tmp/{rig.check_name}"
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, "0001.pgm")
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink("/dev/zero", link)
    took, line = refused_at_once(rig, f"replay:{folder}", "0001.pgm")
    return f"exit 2 after {took * 1000:.0f} ms: {line}"
