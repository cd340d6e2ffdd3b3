"""A full disk under `scangate run`: the one-time store and the MQTT spool on a real ext4 file system
(mkfs.ext4 on an image in /tmp, mounted through the loop driver) filled until the kernel says ENOSPC.

- `disk-full-run`: a one-time pass is refused as `replay store failed` and the door relay (gpio-sim)
  never pulses; a plain code is still read; both events are dropped for lack of space and counted in
  `scangate status --json`, the metrics textfile and the retained `<prefix>/state` document on the
  guest's own mosquitto; once the fill file is removed, the next pass is accepted (one pulse) and its
  event reaches the broker, all without a restart.
- `disk-full-doctor`: `scangate doctor` with the same config fails the disk rows naming the mount.
"""
import json
import os
import socket
import subprocess
import time

from credential_checks import RELAY, RELAY_FLAGS, passes
from rig import CheckFailed, Daemon, GpioSim, GpioTrace, check, pulses, require, run, wait_until
from scangate_checks import scenario


def available_blocks(path):
    """statvfs's f_bavail: what a user who is not root may still allocate (doctor's measure). Root's 5%
    is filled too by the writes below; ext4's own reserve for delayed allocation (s_resv_clusters, in
    f_bfree) can be taken by nobody's writes."""
    return os.statvfs(path).f_bavail


def full_filesystem(rig, size_mb=16):
    """An ext4 image with Debian's default options, mounted at /tmp/<check>-mnt, with `state` and
    `mqtt-spool` made, then filled as root until write(2) fails with ENOSPC and statvfs shows no block
    available. Returns (mount point, loop device, fill file path)."""
    run("modprobe", "loop")
    run("modprobe", "ext4")
    image = f"/tmp/{rig.check_name}.img"
    mount = f"/tmp/{rig.check_name}-mnt"
    with open(image, "wb") as f:
        f.truncate(size_mb << 20)
    run("mkfs.ext4", "-q", "-F", image)
    os.makedirs(mount, exist_ok=True)
    run("mount", "-o", "loop", image, mount)
    rig.on_cleanup(lambda: subprocess.run(["umount", "-l", mount], capture_output=True))
    loop = next((line.split()[0] for line in open("/proc/self/mounts") if line.split()[1] == mount), "?")
    for d in ("state", "mqtt-spool"):
        os.makedirs(f"{mount}/{d}", mode=0o700)
    fill = f"{mount}/fill"
    chunk = b"\0" * 65536
    rounds = 0
    # ext4 hands back blocks it had reserved for delayed allocation once they are written: fill, sync,
    # and fill again until a sync leaves nothing free.
    while True:
        rounds += 1
        with open(fill, "ab", buffering=0) as f:
            size = len(chunk)
            while size >= 512:
                try:
                    f.write(chunk[:size])
                except OSError as e:
                    require(e.errno == 28, f"filling {mount}: {e} (want ENOSPC)")
                    size //= 2
            os.fsync(f.fileno())
        run("sync")
        if available_blocks(mount) == 0 or rounds >= 8:
            break
    require(available_blocks(mount) == 0, f"{mount} still shows {available_blocks(mount)} blocks available after {rounds} rounds of filling")
    try:
        with open(f"{mount}/probe", "ab", buffering=0) as f:
            f.write(b"x" * 4096)
            os.fsync(f.fileno())
        raise CheckFailed(f"{mount} took 4 KiB more after filling")
    except OSError as e:
        require(e.errno == 28, f"the probe write on {mount} failed with {e} (want ENOSPC)")
    return mount, loop, fill


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mosquitto(rig, port):
    """The host's mosquitto inside the guest, on 127.0.0.1:port; returns once it accepts connections."""
    run("ip", "link", "set", "lo", "up")
    conf = f"/tmp/{rig.check_name}-mosquitto.conf"
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n")
    log = open(rig.log_path("mosquitto"), "w")
    rig.spawn(["/usr/sbin/mosquitto", "-c", conf], stdout=log, stderr=subprocess.STDOUT)

    def accepts():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False
    wait_until(accepts, 20, f"mosquitto to listen on 127.0.0.1:{port}", interval=0.1)


class Subscriber:
    """mosquitto_sub on `topic`, every message as `topic payload` lines, kept in order."""

    def __init__(self, rig, port, topic):
        self.lines = []
        self.process = rig.spawn(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-t", topic, "-v"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        import threading
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line.decode(errors="replace").rstrip("\n"))

    def messages(self, topic):
        out = []
        for line in list(self.lines):
            t, _, payload = line.partition(" ")
            if t == topic:
                out.append(json.loads(payload))
        return out


def config(rig, mount, jwks, port):
    path = f"/tmp/{rig.check_name}.conf"
    with open(path, "w") as f:
        f.write(f"""[credential]
credential-format = cwt
credential-keys = {jwks}
credential-audience = front-door
credential-one-time = yes
credential-replay-store = {mount}/state/credential-replay
credential-require-synced-clock = no

[mqtt]
mqtt-host = 127.0.0.1
mqtt-port = {port}
mqtt-client-id = hil-kiosk
mqtt-topic-prefix = hil/kiosk
mqtt-spool = {mount}/mqtt-spool
mqtt-state-interval-s = 5

[service]
status-socket = /tmp/{rig.check_name}.sock
metrics-textfile = /tmp/{rig.check_name}.prom
metrics-interval-s = 1
""")
    return path


def metric(path, name):
    try:
        for line in open(path):
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
    except OSError:
        return None
    return None


@check("disk-full-run")
def disk_full_run(rig):
    mount, loop, fill = full_filesystem(rig)
    jwks, (first, second) = passes(rig, [("4711", ["--aud", "front-door", "--one-time"]),
                                         ("4712", ["--aud", "front-door", "--one-time"])])
    port = free_port()
    mosquitto(rig, port)
    sub = Subscriber(rig, port, "hil/kiosk/#")
    conf = config(rig, mount, jwks, port)
    sim = GpioSim()
    trace = GpioTrace(sim)
    # 10 fps: the pass at 0.5 s, a plain code at 3 s, the second pass at 45 s (after the counts are
    # checked and the fill file removed); the run ends at 52 s.
    camera = f"sim:{scenario(rig.check_name, 10, 520, [(first, 5, 14), ('HIL-PLAIN', 30, 39), (second, 450, 459)])}"
    daemon = Daemon(rig, ["--config", conf, "--camera", camera, *RELAY_FLAGS, "--door-relay-ms", "500"])
    daemon.wait_for_events(2, 60)
    events = daemon.events()
    require(events[0].get("rejected") == "replay store failed", f"the one-time pass: {json.dumps(events[0])[:300]}")
    # Not a pass: read and reported (refused as malformed, its data shown as a fingerprint like every
    # payload under credential-format).
    require(events[1].get("rejected") == "malformed" and str(events[1].get("data", "")).startswith("HIL-PLAI... 9 bytes"),
            f"the plain code was not read after the refusal: {json.dumps(events[1])[:300]}")
    refusal = [l for l in daemon.stderr if "credential refused: replay store failed" in l]
    require(refusal and "No space left on device (ENOSPC)" in refusal[0] and mount in refusal[0],
            f"the refusal's log line does not name ENOSPC and {mount}: {refusal[:1] or daemon.last_stderr()}")
    require(not pulses(trace.levels(RELAY), 1), f"the relay pulsed for a pass the store could not record: {trace.levels(RELAY)}")

    # The two events were dropped for lack of space, and counted where a fleet looks.
    def status():
        done = subprocess.run([rig.scangate, "status", "--json", "--config", conf], capture_output=True, text=True, timeout=10)
        return json.loads(done.stdout)["mqtt"] if done.returncode == 0 else {}
    wait_until(lambda: status().get("dropped_no_space") == 2, 20, "status --json to count 2 events dropped for lack of space",
               interval=0.3)
    mqtt = status()
    require(mqtt["spool_events"] == 0 and mqtt["dropped"] == 2, f"status --json mqtt: {mqtt}")
    prom = f"/tmp/{rig.check_name}.prom"
    wait_until(lambda: metric(prom, "scangate_mqtt_spool_dropped_no_space_total") == 2, 20,
               "the metrics file to count 2 events dropped for lack of space", interval=0.3)
    wait_until(lambda: any(s["mqtt"]["spool_dropped_no_space"] == 2 for s in sub.messages("hil/kiosk/state")), 30,
               "a state document with spool_dropped_no_space 2", interval=0.3)
    logged = [l for l in daemon.stderr if "cannot write the spool" in l]
    require(logged and "No space left on device (ENOSPC)" in logged[0] and f"mounted at {mount} (ext4 {loop}) is full" in logged[0],
            f"the spool's log line does not name the full file system: {logged[:1] or daemon.last_stderr()}")
    require(not sub.messages("hil/kiosk/event"), f"events reached the broker from a spool that could not write them: {sub.messages('hil/kiosk/event')}")

    # Room again, no restart: the next pass is accepted and its event is spooled and published.
    os.unlink(fill)
    run("sync")
    daemon.wait_for_events(3, 60)
    third = daemon.events()[2]
    require(third.get("rejected") is None and third.get("credential", {}).get("number") == "4712",
            f"with room again, the second pass: {json.dumps(third)[:300]}")
    wait_until(lambda: len(sub.messages("hil/kiosk/event")) == 1, 20, "the accepted pass's event on the broker", interval=0.2)
    published = sub.messages("hil/kiosk/event")[0]
    require(published.get("credential", {}).get("number") == "4712", f"the broker got {json.dumps(published)[:300]}")
    wait_until(lambda: pulses(trace.levels(RELAY), 1), 10, "the relay pulse for the accepted pass")
    status_code = daemon.terminate(timeout=10)
    require(status_code == 0, f"exit status {status_code}: {daemon.last_stderr()}")
    active = pulses(trace.levels(RELAY), 1)
    require(len(active) == 1, f"expected one relay pulse (the pass accepted with room), the trace shows {active}")
    return (f"ext4 {loop} full: pass refused 'replay store failed' (ENOSPC in the log), no pulse; plain code read; "
            f"2 events dropped for lack of space in status --json, metrics and <prefix>/state; fill removed: "
            f"the next pass accepted, one pulse, its event on the broker, no restart")


@check("disk-full-doctor")
def disk_full_doctor(rig):
    mount, loop, _ = full_filesystem(rig)
    jwks, _ = passes(rig, [])
    conf = config(rig, mount, jwks, free_port())
    done = subprocess.run([rig.scangate, "doctor", "--config", conf, "--camera", "sim:HIL-DOCTOR", "--capture-seconds", "1"],
                          capture_output=True, text=True, timeout=90)
    rows = [l for l in done.stdout.splitlines() if l.startswith("disk ")]
    want = {f"disk {mount}/state": "credential-replay-store", f"disk {mount}/mqtt-spool": "mqtt-spool"}
    for name, use in want.items():
        row = next((l for l in rows if l.split()[:2] == name.split()), None)
        require(row is not None, f"no row '{name}' in doctor's table: {done.stdout[-600:]}")
        require(" FAIL " in row and f"no space left on {mount} (ext4 {loop})" in row and use in row,
                f"doctor's row does not fail naming {mount} (ext4 {loop}): {row}")
    require(done.returncode == 4, f"doctor exited {done.returncode} (want 4, a device check failed): {done.stderr[-300:]}")
    other = [l for l in rows if " FAIL " in l and not any(l.startswith(n + " ") for n in want)]
    require(not other, f"other disk rows failed: {other}")
    return f"exit 4; {len(want)} disk rows FAIL 'no space left on {mount} (ext4 {loop})', naming credential-replay-store and mqtt-spool"
