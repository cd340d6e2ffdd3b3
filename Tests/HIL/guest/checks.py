#!/usr/bin/env python3
"""Entry point of the HIL checks inside the VM (Tests/HIL/run starts it through /hil/command).

Loads the drivers (setup-drivers), then runs the driver checks and the scangate checks, one line each
on the console and in RUN_DIR/results. Usage:
  checks.py --scangate BINARY --ko-dir DIR --run-dir DIR [CHECK_NAME_PREFIX...]
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rig  # noqa: E402
import driver_checks  # noqa: E402,F401  (registers its checks)
import scangate_checks  # noqa: E402,F401
import wiegand_checks  # noqa: E402,F401
import stop_checks  # noqa: E402,F401
import osdp_checks  # noqa: E402,F401
import credential_checks  # noqa: E402,F401
import disk_checks  # noqa: E402,F401


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--scangate", required=True)
    parser.add_argument("--ko-dir", required=True)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("only", nargs="*", help="run only the checks whose names start with these")
    args = parser.parse_args()

    print(f"INFO guest: checks start at {rig.uptime():.1f} s after boot", flush=True)
    results = os.path.join(args.run_dir, "results")
    setup = subprocess.run([os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup-drivers"), args.ko_dir],
                           capture_output=True, text=True)
    with open(results, "a") as f:
        if setup.returncode != 0:
            line = f"FAIL drivers-load: setup-drivers exited {setup.returncode}: {setup.stderr.strip()[-400:]}"
            print(line, flush=True)
            f.write(line + "\n")
            return 1
        line = f"PASS drivers-load: vivid, vimc, snd-aloop, {setup.stdout.strip()} (ready at {rig.uptime():.1f} s after boot)"
        print(line, flush=True)
        f.write(line + "\n")

    the_rig = rig.Rig(args.scangate, args.ko_dir, args.run_dir)
    rig.run_checks(the_rig, args.only, results)
    print(f"INFO guest: checks done at {rig.uptime():.1f} s after boot", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
