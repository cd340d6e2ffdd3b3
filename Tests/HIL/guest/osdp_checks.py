"""OSDP on a real 8250 UART in the VM, with libosdp's control panel on the host end of QEMU's serial backend.

The rig (Tests/HIL/run): a PCI 16550 (QEMU `pci-serial`, Linux's 8250_pci driver, its own interrupt, so it
does not share IRQ 4 with the console as a legacy ttyS2 would) whose chardev is the unix socket
RUN/osdp.sock. On the host, Tests/ScanGateTests/Peers/osdp_control_panel.py (libosdp 3.2.9 from the
repository's .build/venv) holds the other end; a check appends JSON commands to RUN/osdp-cp.in and reads
the panel's events from RUN/osdp-cp.out (the run directory is the /hil share).

Checks:
- osdp-rig: libosdp's own PD (Tests/HIL/guest/osdp_pd.py) on that UART comes online with the host's
  panel, plain and with EnforceSecure, and its card read crosses. This proves the wiring by itself.
- The ScanGate checks (`scangate run --osdp /dev/ttySN ...`: online with EnforceSecure, a code shown to
  vivid arrives as one CardRead, LED/BUZ reach gpio-sim and the ALSA loopback, and the same plain) come
  with the daemon wiring; see the OSDP report for their exact steps.
"""
import json
import os
import subprocess

from rig import check, require, wait_until, CheckFailed

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_PYTHON = os.path.join(REPO, ".build", "venv", "bin", "python")
QEMU_PCI_SERIAL = ("0x1b36", "0x0002")  # Red Hat, QEMU PCI 16550A


def osdp_uart():
    """/dev/ttySN of the PCI 16550 the rig gives OSDP."""
    base = "/sys/class/tty"
    for name in sorted(os.listdir(base)):
        device = os.path.join(base, name, "device")
        try:
            with open(os.path.join(device, "vendor")) as v, open(os.path.join(device, "device")) as d:
                if (v.read().strip(), d.read().strip()) == QEMU_PCI_SERIAL:
                    return "/dev/" + name
        except OSError:
            continue
    raise CheckFailed("no QEMU pci-serial UART in /sys/class/tty (the rig's -device pci-serial is missing?)")


class Panel:
    """libosdp's CP on the host, through the run directory."""

    def __init__(self, rig):
        self.commands = os.path.join(rig.run_dir, "osdp-cp.in")
        self.events_path = os.path.join(rig.run_dir, "osdp-cp.out")

    def events(self):
        try:
            with open(self.events_path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line[3:]) for line in lines if line.startswith("@@ ")]

    def mark(self):
        return len(self.events())

    def send(self, **command):
        with open(self.commands, "a") as f:
            f.write(json.dumps(command) + "\n")

    def wait(self, mark, name, timeout, predicate=lambda e: True):
        def found():
            return next((e for e in self.events()[mark:] if e.get("event") == name and predicate(e)), None)
        return wait_until(found, timeout, f"the host's control panel to report {name}")


def run_pd(rig, device, scbk=None, card="HIL-OSDP"):
    argv = [VENV_PYTHON, os.path.join(os.path.dirname(os.path.abspath(__file__)), "osdp_pd.py"), "--device", device,
            "--card", card]
    if scbk:
        argv += ["--scbk", scbk]
    log = open(rig.log_path("pd.stderr"), "a")
    return rig.spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)


@check("osdp-rig")
def osdp_rig(rig):
    require(os.access(VENV_PYTHON, os.X_OK), f"no {VENV_PYTHON}: run scripts/python-env on the host")
    device = osdp_uart()
    panel = Panel(rig)
    panel.wait(0, "ready", 60)
    results = []
    for scbk in (None, "0F1E2D3C4B5A69788796A5B4C3D2E1F0"):
        mark = panel.mark()
        card = "HIL-OSDP-SC" if scbk else "HIL-OSDP"
        pd = run_pd(rig, device, scbk, card)
        panel.send(cmd="start", address=0, scbk=scbk, enforce_secure=bool(scbk))
        online = panel.wait(mark, "online", 60, lambda e: e.get("sc") == bool(scbk))
        got = panel.wait(mark, "card", 60)
        require(got["data"] == card.encode().hex().upper(), f"card data {got['data']}, expected {card}")
        require(got["bits"] == len(card) * 8 and got["format"] == 0, f"card {got}")
        # The reader goes first, then the panel: the next panel must not hear this reader's last reply.
        pd.stdin.close()
        pd.kill()
        pd.wait(timeout=10)
        panel.send(cmd="teardown")
        panel.wait(mark, "torn-down", 30)
        results.append(("secure" if online["sc"] else "plain"))
    return f"libosdp CP on the host <-> QEMU socket <-> {device} (8250_pci) <-> libosdp PD: online {' and '.join(results)}, card read crossed"
