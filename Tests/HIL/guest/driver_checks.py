"""Phase 1: the drivers themselves, with the system tools only (v4l2-ctl, gpioinfo/gpioset, aplay/arecord,
the UART). If one of these fails, the scangate checks that use the same driver cannot be trusted."""
import os
import random
import subprocess
import termios
import tty

from rig import (CheckFailed, GPIO_LABEL, GpioSim, OutputStream, Recorder, Vivid, capture_frames, check,
                 require, run, to_yuyv, wait_until, write_tone_wav)


def vivid_loopback(rig, pixel_format):
    Vivid.configure(pixel_format)
    rnd = random.Random(4)
    luma = bytes(rnd.randrange(16, 240) for _ in range(Vivid.width * Vivid.height))
    frame = luma if pixel_format == "GREY" else to_yuyv(luma)

    def forever():
        while True:
            yield frame

    stream = OutputStream(rig, forever())
    try:
        stream.wait_streaming()
        data = capture_frames(10, "/tmp/vivid-capture.raw")
    finally:
        stream.stop()
    require(len(data) == 10 * len(frame), f"captured {len(data)} bytes, expected 10 frames of {len(frame)}")
    last = data[-len(frame):]
    differing = sum(1 for a, b in zip(last, frame) if a != b)
    require(differing == 0, f"the last captured frame differs from the written one in {differing} bytes")
    return f"a random 640x480 {pixel_format} frame written to {Vivid.output} came back on {Vivid.capture} unchanged"


@check("vivid-loopback-grey")
def vivid_loopback_grey(rig):
    return vivid_loopback(rig, "GREY")


@check("vivid-loopback-yuyv")
def vivid_loopback_yuyv(rig):
    return vivid_loopback(rig, "YUYV")


@check("gpio-sim-lines-by-name")
def gpio_lines_by_name(rig):
    sim = GpioSim()
    lines = sim.lines()
    for offset in (17, 22, 23, 27):
        require(lines.get(offset, (None,))[0] == f"GPIO{offset}",
                f"gpioinfo {GPIO_LABEL} does not show GPIO{offset} at offset {offset}: {lines.get(offset)}")
        found = run("gpiofind", f"GPIO{offset}").split()
        require(found == [sim.chip, str(offset)], f"gpiofind GPIO{offset} gave {found}")
    return f"{sim.chip} labelled {GPIO_LABEL} (sysfs {sim.sysfs}) names GPIO17/22/23/27"


@check("gpio-sim-set-reads-back")
def gpio_set_reads_back(rig):
    sim = GpioSim()
    holder = rig.spawn(["gpioset", "--mode=signal", GPIO_LABEL, "17=1", "27=0"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: sim.consumer(17) == "gpioset" or holder.poll() is not None, 10, "gpioset to hold GPIO17")
        if holder.poll() is not None:
            raise CheckFailed(f"gpioset exited: {holder.stderr.read().decode().strip()}")
        require(sim.value(17) == 1, "GPIO17 set to 1 by gpioset reads back 0 from sysfs")
        require(sim.value(27) == 0, "GPIO27 set to 0 by gpioset reads back 1 from sysfs")
    finally:
        holder.terminate()
        holder.wait(timeout=5)
    require(sim.consumer(17) is None, "GPIO17 still in use after gpioset exited")
    return "gpioset 17=1 27=0 read back 1/0 from sim_gpioN/value"


@check("alsa-loopback-tone")
def alsa_loopback_tone(rig):
    write_tone_wav("/tmp/tone.wav", 1000, 0.5)
    recorder = Recorder(rig, "/tmp/loopback.wav", 3)
    run("aplay", "-q", "-D", "hw:Loopback,0,0", "/tmp/tone.wav", timeout=20)
    found = recorder.wait(timeout=20)
    require(len(found) == 1, f"expected one tone on hw:Loopback,1,0, found {len(found)}: {found}")
    duration, hz, peak = found[0].duration, found[0].hz, found[0].peak
    require(abs(hz - 1000) <= 20, f"tone came back at {hz:.0f} Hz, not 1000 Hz")
    require(abs(duration - 0.5) <= 0.05, f"tone came back lasting {duration * 1000:.0f} ms, not 500 ms")
    return f"1000 Hz / 500 ms played on hw:Loopback,0,0 captured as {hz:.0f} Hz / {duration * 1000:.0f} ms, peak {peak:.2f}"


@check("uart-to-host-file")
def uart_to_host_file(rig):
    payload = bytes(range(256)) * 4
    mark = rig.uart.mark()
    fd = os.open(rig.uart.device, os.O_WRONLY | os.O_NOCTTY)
    try:
        tty.setraw(fd)
        os.write(fd, payload)
        termios.tcdrain(fd)
    finally:
        os.close(fd)
    got = rig.uart.wait_for(mark, lambda b: len(b) >= len(payload), 10, f"{len(payload)} bytes in the host file")
    if got != payload:
        first = next((i for i, (a, b) in enumerate(zip(got, payload)) if a != b), min(len(got), len(payload)))
        raise CheckFailed(f"host file differs from what was written at byte {first} ({len(got)} bytes received)")
    return f"{len(payload)} bytes (every value, NUL/CR/LF/STX/ETX included) arrived byte-exact"
