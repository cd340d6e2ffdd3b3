#!/usr/bin/env python3
"""Drives Debian's headless chromium over the DevTools protocol on a pipe (--remote-debugging-pipe: fd 3 in,
fd 4 out, NUL-separated JSON), with the standard library only.

  chromium_page.py PROFILE URL READY_JS OUT.png [WIDTH HEIGHT] [--eval JS]
      opens URL in a browser whose profile is PROFILE (kept between runs: IndexedDB, localStorage), waits
      until the expression READY_JS is true (at most 30 s), then prints {"eval": <value of --eval JS>} and
      writes a screenshot of the page to OUT.png. Exits 1 when the page never gets ready (printing what
      the page shows), 2 on bad arguments.
"""
import base64, json, os, subprocess, sys, time

CHROMIUM = "/usr/bin/chromium"


def place(commands, replies):
    """In the child: the command pipe's read end on fd 3 and the reply pipe's write end on fd 4 (by way of
    fresh numbers, so that neither dup2 overwrites the other)."""
    a, b = os.dup(commands), os.dup(replies)
    os.dup2(a, 3)
    os.dup2(b, 4)


class Browser:
    def __init__(self, profile, width, height):
        self.to_read, to_browser = os.pipe()
        from_browser, self.to_write = os.pipe()
        # The browser reads commands on fd 3 and writes replies on fd 4.
        self.process = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--user-data-dir=" + profile, f"--window-size={width},{height}", "about:blank"],
            close_fds=False, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=lambda: place(from_browser, to_browser))
        os.close(to_browser)
        os.close(from_browser)
        self.next_id = 0
        self.buffer = b""

    def send(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_write, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\0" not in self.buffer:
                chunk = os.read(self.to_read, 1 << 20)
                if not chunk:
                    raise RuntimeError("chromium closed the pipe")
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\0", 1)
            reply = json.loads(line)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise RuntimeError(f"{method}: no reply in {timeout} s")

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main(argv):
    options = {}
    if "--eval" in argv:
        i = argv.index("--eval")
        options["eval"] = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) not in (4, 6):
        print(__doc__, file=sys.stderr)
        return 2
    profile, url, ready, out = argv[:4]
    width, height = (int(argv[4]), int(argv[5])) if len(argv) == 6 else (800, 900)
    browser = Browser(profile, width, height)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        browser.send("Page.enable", session=session)
        browser.send("Page.navigate", {"url": url}, session=session)
        deadline = time.time() + 30
        while True:
            value = browser.send("Runtime.evaluate", {"expression": f"Boolean({ready})", "returnByValue": True},
                                 session=session)["result"].get("value")
            if value is True:
                break
            if time.time() > deadline:
                shown = browser.send("Runtime.evaluate", {"expression": "document.body ? document.body.innerText : ''",
                                                          "returnByValue": True}, session=session)["result"].get("value")
                print(json.dumps({"error": "the page did not get ready", "page": shown}))
                return 1
            time.sleep(0.1)
        result = {}
        if "eval" in options:
            result["eval"] = browser.send("Runtime.evaluate", {"expression": options["eval"], "returnByValue": True, "awaitPromise": True},
                                          session=session)["result"].get("value")
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"]
        with open(out, "wb") as f:
            f.write(base64.b64decode(shot))
        print(json.dumps(result))
        return 0
    finally:
        browser.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
