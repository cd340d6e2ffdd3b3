/// The one page: the stream at its natural size at the top left (a frame pixel is a page pixel), beside
/// it (or below, on a narrow window) the figures (mean luma, histogram, sharpness, fps), the codes in view and the last reads, and the
/// camera's controls when the daemon offers them. Inline CSS and JS only; no external script or font.
/// A token given in the page's address (`?token=`) is passed on to the page's own requests.
enum PreviewPage {
    static func html(fps: Int) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>ScanGate preview</title>
        <style>
        body{margin:0;background:#111;color:#ddd;font:14px sans-serif;display:flex;flex-wrap:wrap;align-items:flex-start}
        #view{display:block;flex:none;margin:0;padding:0;border:0;image-rendering:pixelated}
        #side{flex:1 1 320px;padding:0 16px}h3{margin:12px 0 4px}ul{margin:0;padding-left:20px}
        table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;vertical-align:top}
        #hist{display:flex;align-items:flex-end;height:48px;gap:1px}#hist div{width:10px;background:#4c4}
        code{color:#fc6}.err{color:#f88}button{font:inherit}
        </style></head><body>
        <img id="view" alt="the camera's newest frame with the codes found outlined in red">
        <div id="side">
        <p id="state">connecting…</p>
        <table><tr><th>frame</th><td id="frame">-</td></tr><tr><th>fps</th><td id="fps">-</td></tr>
        <tr><th>mean luma</th><td id="mean">-</td></tr><tr><th>sharpness</th><td id="sharp">-</td></tr>
        <tr><th>histogram</th><td><div id="hist"></div></td></tr></table>
        <h3>Codes in view</h3><ul id="codes"></ul>
        <h3>Last reads</h3><ul id="reads"></ul>
        <h3>Camera controls</h3><div id="controls">-</div>
        <p>Stream capped at \(fps) frames a second.</p>
        </div>
        <script>
        "use strict";
        const token = new URLSearchParams(location.search).get("token");
        const q = (p, more) => p + "?" + new URLSearchParams(Object.assign(token ? {token} : {}, more || {}));
        const $ = id => document.getElementById(id);
        const text = (el, t) => { el.textContent = t; };
        const img = $("view");
        function startStream() { img.src = q("stream.mjpg", {t: Date.now()}); }
        img.onerror = () => { text($("state"), "stream unavailable; retrying"); setTimeout(startStream, 2000); };
        startStream();
        const reads = [];
        async function poll() {
          try {
            const r = await fetch(q("status.json"));
            const s = await r.json();
            if (s.error) throw new Error(s.error);
            text($("state"), "scangate " + s.version + ": " + s.status);
            const v = s.view;
            if (v) {
              text($("frame"), v.frame + " (" + v.width + "x" + v.height + ")");
              text($("fps"), v.fps === null ? "-" : v.fps.toFixed(1));
              text($("mean"), v.mean_luma.toFixed(1));
              text($("sharp"), v.sharpness.toFixed(0));
              const h = $("hist"); h.replaceChildren();
              const top = Math.max(1, ...v.histogram);
              for (const n of v.histogram) { const d = document.createElement("div"); d.style.height = Math.ceil(n / top * 48) + "px"; h.appendChild(d); }
              const list = $("codes"); list.replaceChildren();
              for (const c of v.codes) {
                const li = document.createElement("li");
                li.textContent = c.symbology + " at " + c.corners.map(p => p.join(",")).join(" ") + ": " + (c.payload === null ? "(not reported while in view)" : c.payload);
                list.appendChild(li);
                if (c.payload !== null && (reads.length === 0 || reads[0].payload !== c.payload)) {
                  reads.unshift({payload: c.payload, symbology: c.symbology, at: new Date().toLocaleTimeString()});
                  reads.length = Math.min(reads.length, 10);
                }
              }
            }
            const rl = $("reads"); rl.replaceChildren();
            for (const r of reads) { const li = document.createElement("li"); li.textContent = r.at + " " + r.symbology + ": " + r.payload; rl.appendChild(li); }
            if (reads.length === 0) { const li = document.createElement("li"); li.textContent = s.reads.reported + " reported since start"; rl.appendChild(li); }
          } catch (e) { text($("state"), "the daemon does not answer: " + e.message); }
          setTimeout(poll, 1000);
        }
        poll();
        async function controls() {
          const box = $("controls");
          try {
            const r = await fetch(q("controls.json"));
            const c = await r.json();
            if (!c.controls) { box.className = "err"; text(box, "not offered: " + (c.error || "no answer")); return; }
            box.replaceChildren();
            for (const k of c.controls) {
              const row = document.createElement("div");
              const input = document.createElement("input");
              input.type = "number"; input.value = k.value; if (k.min !== undefined) input.min = k.min; if (k.max !== undefined) input.max = k.max; if (k.step) input.step = k.step;
              const label = document.createElement("span"); label.textContent = k.name + " (" + k.min + " to " + k.max + ", default " + k.default + ") ";
              const line = document.createElement("code");
              const button = document.createElement("button"); button.textContent = "try";
              button.onclick = async () => {
                const a = await (await fetch(q("control"), {method: "POST", body: new URLSearchParams({key: k.key, value: input.value})})).json();
                if (a.error) { line.className = "err"; text(line, a.error); }
                else { line.className = ""; text(line, "camera-control = " + a.control.key + "=" + a.control.value); }
              };
              row.append(label, input, " ", button, " ", line);
              box.appendChild(row);
            }
          } catch (e) { box.className = "err"; text(box, "not offered: " + e.message); }
        }
        controls();
        </script></body></html>
        """
    }
}
