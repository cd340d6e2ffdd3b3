#!/usr/bin/env python3
"""libosdp's PeripheralDevice (PyPI libosdp, the repository's .build/venv) on a serial device in the VM:
the stand-in PD that proves the OSDP rig (guest UART <-> QEMU socket <-> libosdp's CP on the host) until
`scangate run --osdp` is wired. Once the panel has it online it submits one card read.

  osdp_pd.py --device /dev/ttySN [--scbk HEX] [--card TEXT]
Prints "@@ " JSON lines: {"event": "online", "sc": bool}, {"event": "card-submitted"}.
"""
import argparse
import json
import os
import sys
import termios
import time
import tty

from osdp import Capability, Channel, Event, LogLevel, PDCapabilities, PDInfo, PeripheralDevice


class TtyChannel(Channel):
    def __init__(self, fd):
        super().__init__()
        self.fd = fd

    def read(self, max_bytes):
        try:
            return os.read(self.fd, max_bytes)
        except (BlockingIOError, OSError):
            return b""

    def write(self, buf):
        return os.write(self.fd, bytes(buf))

    def flush(self):
        pass


def emit(**event):
    sys.stdout.write("@@ " + json.dumps(event) + "\n")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", required=True)
    parser.add_argument("--scbk")
    parser.add_argument("--card", default="HIL-OSDP")
    args = parser.parse_args()
    fd = os.open(args.device, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    tty.setraw(fd)
    attributes = termios.tcgetattr(fd)
    attributes[4] = attributes[5] = termios.B9600
    attributes[2] |= termios.CLOCAL | termios.CREAD
    termios.tcsetattr(fd, termios.TCSANOW, attributes)
    scbk = bytes.fromhex(args.scbk) if args.scbk else None
    info = PDInfo(0, TtyChannel(fd), scbk=scbk)
    caps = PDCapabilities([(Capability.CardDataFormat, 1, 0)])
    pd = PeripheralDevice(info, caps, log_level=LogLevel.Error)
    pd.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (pd.is_online() and (scbk is None or pd.is_sc_active())):
        time.sleep(0.05)
    emit(event="online", sc=bool(pd.is_sc_active()))
    card = args.card.encode()
    pd.submit_event({"event": Event.CardRead, "reader_no": 0, "format": 0, "direction": 0, "length": len(card) * 8, "data": card})
    emit(event="card-submitted")
    for _ in sys.stdin:  # runs until the check closes stdin or kills it
        pass
    pd.teardown()


if __name__ == "__main__":
    main()
