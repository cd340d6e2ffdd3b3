#!/usr/bin/env python3
"""libosdp's ControlPanel (PyPI libosdp 3.2.9, from .build/venv) as a test peer for ScanGate's OSDP reader.

It opens a pseudo-terminal pair, keeps the device side open in raw mode (so the pair survives the reader
closing and reopening it), prints the device's path, and drives libosdp's CP on the controller side.
The test talks to it in JSON lines:

  stdin  {"cmd": "start", "address": 0, "scbk": "<32 hex>" | null, "enforce_secure": true}
         {"cmd": "led", ...libosdp LED fields...}   {"cmd": "buzzer", ...}   {"cmd": "text", "data": "..."}
         {"cmd": "comset", "address": n, "baud_rate": n}
         {"cmd": "status", "type": "local" | "input" | "output"}   osdp_LSTAT / ISTAT / OSTAT
         {"cmd": "mfg", "vendor_code": n, "data": "<hex>"}   osdp_MFG   {"cmd": "pd_id"}   the PDID the CP holds
         {"cmd": "file", "id": n, "path": "..."}   send the file at path with osdp_FILETRANSFER, file type id
                               (libosdp's register_file_ops + Command.FileTransfer)
         {"cmd": "file-cancel", "id": n}   cancel the transfer in progress: libosdp sends osdp_ABORT
         {"cmd": "output", "output_no": 0, "control_code": n, "timer_count": n}   osdp_OUT (timer: 100 ms units)
         {"cmd": "keyset", "key": "<32 hex>"}   a new SCBK (secure channel only; libosdp switches to it on ACK)
         {"cmd": "attack", "address": 0, "key": "<32 hex>"}   with no CP running: a hostile device on the same
                               line tries SCBK-D and KEYSET (osdp_attacker_cp.py, not libosdp)
         {"cmd": "stop"}       stop the CP's refresh thread: no more polls
         {"cmd": "teardown"}   stop and drop the CP (a new "start" builds a fresh one)
         {"cmd": "quit"}
  stdout "@@ " + JSON: {"event": "ready", "device": "/dev/pts/N"}, {"event": "online", "sc": bool},
         {"event": "offline"}, {"event": "card", "reader": n, "format": n, "bits": n, "data": "<hex>"},
         {"event": "submitted", "cmd": "...", "ok": bool}, {"event": "completed", "command": n, "status": n},
         {"event": "status", "type": "local" | "input" | "output", "report": "<hex>"} (asked for or unsolicited),
         {"event": "mfgrep", "vendor_code": n, "data": "<hex>"}, {"event": "pd_id", "vendor_code": n, ...},
         {"event": "stopped"}, {"event": "torn-down"}, {"event": "error", "message": "..."},
         {"event": "file-progress", "id": n, "size": n, "offset": n} (each change seen while it runs),
         {"event": "file-done", "id": n, "size": n, "sent": n, "closed": bool}: the last byte went out (offset ==
         size) or libosdp no longer reports the transfer; "sent" is the last offset seen (3.2.9 does not expose the
         PD's final FTSTAT status; it counts a negative one as a failed reply and stops polling for a while),
         "closed" whether libosdp closed the file (it does when the transfer ends, well or not),
         {"event": "attack", "steps": [{"sent": "...", "reply": "NAK", "nak": 6}, ...], "took_over": bool}

Everything it does is driven by those commands and by libosdp's own callbacks; the only timing is the
watcher's 50 ms look at the CP's online and secure-channel state. Lines without the "@@ " prefix (libosdp's
own log output) are not part of the protocol.

For the HIL rig (Tests/HIL/run) the same peer runs on the host end of QEMU's serial backend instead of a
pseudo-terminal, and talks through files in the run directory (the guest sees them over 9p):
  osdp_control_panel.py --socket RUN/osdp.sock --commands RUN/osdp-cp.in --events RUN/osdp-cp.out
It connects to QEMU's socket chardev (retrying until QEMU has made it), follows the commands file as
lines are appended, and appends the same "@@ " JSON lines to the events file.
"""
import argparse
import socket
import json
import os
import select
import sys
import threading
import time
import tty

from osdp import Channel, Command, CommandFileTxFlags, ControlPanel, Event, LibFlag, LogLevel, PDInfo, StatusReportType

print_lock = threading.Lock()
event_stream = sys.stdout


def emit(**event):
    with print_lock:
        event_stream.write("@@ " + json.dumps(event) + "\n")
        event_stream.flush()


class PtyChannel(Channel):
    """The controller side of the pseudo-terminal, non-blocking."""

    def __init__(self, fd):
        super().__init__()
        self.fd = fd

    def read(self, max_bytes):
        try:
            return os.read(self.fd, max_bytes)
        except (BlockingIOError, OSError):
            return b""

    def write(self, buf):
        view = memoryview(bytes(buf))
        sent = 0
        deadline = time.monotonic() + 1.0
        while sent < len(view) and time.monotonic() < deadline:
            try:
                sent += os.write(self.fd, view[sent:])
            except BlockingIOError:
                select.select([], [self.fd], [], 0.05)
            except OSError:
                break
        return sent

    def flush(self):
        # libosdp calls this before each command: whatever is still unread is stale (a reply the CP gave
        # up on, or the last answer of a reader from before a restart) and must not pass for the answer.
        while self.read(4096):
            pass


class SocketChannel(Channel):
    """A connected stream socket (QEMU's socket chardev for the guest's UART), non-blocking."""

    def __init__(self, sock):
        super().__init__()
        self.sock = sock
        sock.setblocking(False)

    def read(self, max_bytes):
        try:
            return self.sock.recv(max_bytes)
        except (BlockingIOError, OSError):
            return b""

    def write(self, buf):
        try:
            self.sock.sendall(bytes(buf))
            return len(buf)
        except OSError:
            return -1

    def flush(self):
        while self.read(4096):  # stale input, as for the pseudo-terminal
            pass


class Peer:
    def __init__(self, channel=None):
        if channel is None:
            self.controller, self.device = os.openpty()
            tty.setraw(self.device)
            os.set_blocking(self.controller, False)
            channel = PtyChannel(self.controller)
        else:
            self.controller = self.device = None
        self.channel = channel
        self.cp = None
        self.base_dir = os.getcwd()   # where a relative "file" path is found (the commands file's directory)
        self.address = 0
        self.watch_stop = None
        self.watcher = None

    def on_event(self, pd, event):
        if "data" in event and "length" in event:
            emit(event="card", reader=event.get("reader_no"), format=event.get("format"),
                 bits=event.get("length"), data=bytes(event["data"]).hex().upper())
        elif event.get("event") == Event.Status:
            kind = {StatusReportType.Local: "local", StatusReportType.Input: "input",
                    StatusReportType.Output: "output"}.get(event.get("type"), str(event.get("type")))
            emit(event="status", type=kind, report=bytes(event.get("report", b"")).hex().upper())
        elif event.get("event") == Event.ManufacturerReply:
            emit(event="mfgrep", vendor_code=event.get("vendor_code"), data=bytes(event.get("data", b"")).hex().upper())
        else:
            emit(event="other", detail=str(event))
        return 0

    def on_completion(self, address, command, status):
        emit(event="completed", command=command.get("command") if isinstance(command, dict) else None, status=status)

    def watch(self, cp, stop):
        online = None
        secure = None
        while not stop.is_set():
            try:
                now_online = cp.is_online(self.address)
                now_secure = cp.is_sc_active(self.address)
            except Exception as error:  # the CP is being torn down
                emit(event="error", message="watcher: %s" % error)
                return
            if now_online != online or (now_online and now_secure != secure):
                if now_online:
                    emit(event="online", sc=bool(now_secure))
                elif online is not None:
                    emit(event="offline")
                online, secure = now_online, now_secure
            stop.wait(0.05)

    def start(self, cmd):
        if self.cp is not None:
            return emit(event="error", message="start: a CP is running; teardown first")
        self.address = int(cmd.get("address", 0))
        scbk = bytes.fromhex(cmd["scbk"]) if cmd.get("scbk") else None
        flags = [LibFlag.EnforceSecure] if cmd.get("enforce_secure") else []
        info = PDInfo(self.address, self.channel, scbk=scbk, flags=flags)
        self.cp = ControlPanel([info], log_level=LogLevel.Error, event_handler=self.on_event,
                               command_completion_handler=self.on_completion)
        self.cp.start()
        self.watch_stop = threading.Event()
        self.watcher = threading.Thread(target=self.watch, args=(self.cp, self.watch_stop), daemon=True)
        self.watcher.start()
        emit(event="started", address=self.address, secure=scbk is not None, enforce=bool(flags))

    def stop_watcher(self):
        if self.watcher:
            self.watch_stop.set()
            self.watcher.join(2)
            self.watcher = None

    def stop(self):
        self.stop_watcher()
        if self.cp is not None and self.cp.thread is not None:
            self.cp.stop()
        emit(event="stopped")

    def teardown(self):
        self.stop_watcher()
        if self.cp is not None:
            if self.cp.thread is not None:
                self.cp.stop()
            self.cp.ctx = None
            self.cp = None
        emit(event="torn-down")

    def send_file(self, cmd):
        """Sends the file at cmd["path"] as file type cmd["id"]; a watcher thread reports the progress as
        libosdp's get_file_tx_status sees it, and file-done when the transfer is over."""
        if self.cp is None:
            return emit(event="submitted", cmd="file", ok=False)
        file_id = int(cmd["id"])
        path = cmd["path"]
        if not os.path.isabs(path):   # the HIL guest names a file in the run directory it shares
            path = os.path.join(self.base_dir, path)
        with open(path, "rb") as f:
            content = f.read()
        closed = threading.Event()

        def fop_open(fid, size):
            return len(content) if fid == file_id else -1

        def fop_read(size, offset):
            return content[offset:offset + size]

        def fop_write(data, offset):
            return -1  # the CP only sends

        def fop_close(fid):
            closed.set()

        fops = {"open": fop_open, "read": fop_read, "write": fop_write, "close": fop_close}
        if not self.cp.register_file_ops(self.address, fops):
            return emit(event="submitted", cmd="file", ok=False)
        ok = self.cp.submit_command(self.address, {"command": Command.FileTransfer, "id": file_id, "flags": 0})
        emit(event="submitted", cmd="file", ok=bool(ok))
        if not ok:
            return

        def watch_file():
            last = None
            seen = False
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                status = self.cp.get_file_tx_status(self.address) if self.cp is not None else None
                if status is not None:
                    seen = True
                    if status != last:
                        emit(event="file-progress", id=file_id, size=status.get("size"), offset=status.get("offset"))
                        last = status
                    # libosdp 3.2.x keeps reporting a finished transfer (its DONE state) with offset == size.
                    if status.get("offset") == status.get("size"):
                        break
                elif seen or closed.is_set():
                    break
                time.sleep(0.02)
            emit(event="file-done", id=file_id, size=len(content), sent=(last or {}).get("offset"),
                 closed=closed.is_set())

        threading.Thread(target=watch_file, daemon=True).start()

    def submit(self, name, command):
        if self.cp is None:
            return emit(event="submitted", cmd=name, ok=False)
        ok = self.cp.submit_command(self.address, command)
        emit(event="submitted", cmd=name, ok=bool(ok))


def follow(path):
    """The lines appended to `path`, as they come (the file is created if missing)."""
    open(path, "a").close()
    with open(path) as f:
        pending = ""
        while True:
            chunk = f.readline()
            if not chunk:
                time.sleep(0.02)
                continue
            pending += chunk
            if pending.endswith("\n"):
                yield pending
                pending = ""


def connect(path, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main():
    global event_stream
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", help="QEMU's socket chardev (instead of a pseudo-terminal)")
    parser.add_argument("--commands", help="a file to follow for commands (instead of stdin)")
    parser.add_argument("--events", help="a file to append events to (instead of stdout)")
    args = parser.parse_args()
    if args.events:
        event_stream = open(args.events, "a")
    if args.socket:
        peer = Peer(SocketChannel(connect(args.socket)))
        emit(event="ready", device=args.socket)
    else:
        peer = Peer()
        emit(event="ready", device=os.ttyname(peer.device))
    if args.commands:
        peer.base_dir = os.path.dirname(os.path.abspath(args.commands))
    for line in (follow(args.commands) if args.commands else sys.stdin):
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
            name = cmd.get("cmd")
            if name == "start":
                peer.start(cmd)
            elif name == "led":
                peer.submit("led", {
                    "command": Command.LED, "reader": cmd.get("reader", 0), "led_number": cmd.get("led_number", 0),
                    "control_code": cmd["control_code"], "on_count": cmd["on_count"], "off_count": cmd["off_count"],
                    "on_color": cmd["on_color"], "off_color": cmd["off_color"],
                    "timer_count": cmd.get("timer_count", 0), "temporary": bool(cmd.get("temporary")),
                })
            elif name == "buzzer":
                peer.submit("buzzer", {
                    "command": Command.Buzzer, "reader": cmd.get("reader", 0), "control_code": cmd["control_code"],
                    "on_count": cmd["on_count"], "off_count": cmd["off_count"], "rep_count": cmd["rep_count"],
                })
            elif name == "text":
                peer.submit("text", {
                    "command": Command.Text, "reader": 0, "control_code": 1, "temp_time": 0,
                    "offset_row": 0, "offset_col": 0, "data": cmd["data"],
                })
            elif name == "output":
                # osdp_OUT: output_no, control_code (0-6), timer_count in 100 ms units. libosdp's Python
                # binding keeps only the timer's low byte (at most 25.5 s).
                peer.submit("output", {
                    "command": Command.Output, "output_no": cmd.get("output_no", 0),
                    "control_code": cmd["control_code"], "timer_count": cmd.get("timer_count", 0),
                })
            elif name == "keyset":
                peer.submit("keyset", {"command": Command.Keyset, "type": 1, "data": bytes.fromhex(cmd["key"])})
            elif name == "comset":
                peer.submit("comset", {"command": Command.Comset, "address": cmd["address"], "baud_rate": cmd["baud_rate"]})
            elif name == "status":
                kind = {"local": StatusReportType.Local, "input": StatusReportType.Input,
                        "output": StatusReportType.Output}[cmd["type"]]
                peer.submit("status", {"command": Command.Status, "type": kind})
            elif name == "mfg":
                peer.submit("mfg", {"command": Command.Manufacturer, "vendor_code": int(cmd["vendor_code"]),
                                    "data": bytes.fromhex(cmd.get("data", ""))})
            elif name == "pd_id":
                if peer.cp is None:
                    emit(event="error", message="pd_id: no CP running")
                else:
                    emit(event="pd_id", **vars(peer.cp.get_pd_id(peer.address)))
            elif name == "file":
                peer.send_file(cmd)
            elif name == "file-cancel":
                peer.submit("file-cancel", {"command": Command.FileTransfer, "id": int(cmd["id"]),
                                            "flags": CommandFileTxFlags.Cancel})
            elif name == "attack":
                if peer.cp is not None or peer.controller is None:
                    emit(event="error", message="attack: needs the pseudo-terminal and no CP running (teardown first)")
                else:
                    from osdp_attacker_cp import attack
                    emit(event="attack", **attack(peer.controller, int(cmd.get("address", 0)), bytes.fromhex(cmd["key"])))
            elif name == "stop":
                peer.stop()
            elif name == "teardown":
                peer.teardown()
            elif name == "quit":
                break
            else:
                emit(event="error", message="unknown command %r" % name)
        except Exception as error:
            emit(event="error", message="%s: %s" % (type(error).__name__, error))
    peer.teardown()
    if peer.controller is not None:
        os.close(peer.controller)
        os.close(peer.device)


if __name__ == "__main__":
    main()
