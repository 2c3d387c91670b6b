#!/usr/bin/env python3
"""Opens a Chrome trace-event JSON (the profiler's DIR/trace.json) in Chromium's own trace viewer,
DevTools' Performance panel, and saves a screenshot of it: how docs/profiler.md's picture of a trace
was made, with no network (Perfetto's UI is a web page these machines cannot load).

    tools/trace_screenshot.py DIR/trace.json out.png [--size 1600x1000] [--wait 6]

Needs `chromium` and python3-websocket (`tools/setup.sh --bench`). Chromium runs headless with a
remote-debugging port; its bundled DevTools front end is served from that port, the trace is
handed to the Performance panel's "Load profile" (loadFromFile), every process and thread track
is expanded, and the page is captured.
"""
import argparse
import base64
import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

try:
    import websocket
except ImportError:
    sys.exit("trace_screenshot: needs python3-websocket (tools/setup.sh --bench); run it with "
             "Debian's /usr/bin/python3")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Page:
    def __init__(self, ws_url):
        self.ws = websocket.create_connection(ws_url, suppress_origin=True)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, awaitPromise=True,
                           returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("exception", {}).get(
                "description", result["exceptionDetails"]))
        return result["result"].get("value")

    def key(self, key, code):
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=code,
                      windowsVirtualKeyCode=27 if key == "Escape" else 0)
        time.sleep(0.5)

    def click(self, x, y):
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left",
                      clickCount=1)
        time.sleep(0.5)  # let the page react before the next input


LOAD = """
(async () => {
  const UI = await import('./ui/legacy/legacy.js');
  await UI.ViewManager.ViewManager.instance().showView('timeline');
  const Timeline = await import('./panels/timeline/timeline.js');
  const panel = Timeline.TimelinePanel.TimelinePanel.instance();
  await panel.loadFromFile(new File([TRACE], 'trace.json', {type: 'application/json'}));
  return 'loaded';
})()
"""

EXPAND = """
(() => {
  const view = TIMELINE.TimelinePanel.TimelinePanel.instance().flameChart;
  const chart = view && view.mainFlameChart;
  const data = chart && chart.timelineData && chart.timelineData();
  if (!data) return 'no flame chart';
  for (const group of data.groups) group.expanded = true;
  if (chart.updateLevelPositions) chart.updateLevelPositions();
  chart.update();
  return data.groups.map(g => g.name).join(', ');
})()
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace")
    parser.add_argument("out")
    parser.add_argument("--size", default="1600x1000", help="window WIDTHxHEIGHT")
    parser.add_argument("--wait", type=float, default=6, help="seconds for the panel to draw")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    try:
        with open(args.trace) as f:
            trace = f.read()
        json.loads(trace)  # a clear error here rather than an empty panel
    except (OSError, ValueError) as e:
        sys.exit(f"trace_screenshot: {args.trace}: {e}")

    port = free_port()
    profile = tempfile.mkdtemp(prefix="trace_screenshot_")
    chrome = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
         f"--remote-debugging-port={port}", f"--window-size={width},{height}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        tabs = None
        for _ in range(100):
            try:
                tabs = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json"))
                break
            except OSError:
                time.sleep(0.2)
        if tabs is None:
            sys.exit("trace_screenshot: chromium's debugging port did not open")
        page = Page(next(t for t in tabs if t["type"] == "page")["webSocketDebuggerUrl"])
        page.call("Page.enable")
        page.call("Page.navigate", url=f"http://127.0.0.1:{port}/devtools/trace_app.html")
        time.sleep(3)
        print("trace_screenshot:", page.evaluate(LOAD.replace("TRACE", json.dumps(trace))))
        time.sleep(args.wait / 2)
        groups = page.evaluate(
            "import('./panels/timeline/timeline.js').then(TIMELINE => " + EXPAND + ")")
        print("trace_screenshot: tracks:", groups)
        # The front end has no browser window to attach to and says so in a dialog: Escape
        # closes it (a second would open the console drawer). The first click on the top-left
        # button dismisses the shortcuts popover, the second folds the sidebar away.
        page.key("Escape", "Escape")
        page.click(16, 39)
        page.click(16, 39)
        time.sleep(args.wait / 2)
        shot = page.call("Page.captureScreenshot", format="png")
        with open(args.out, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        print("trace_screenshot: wrote", args.out)
    finally:
        chrome.kill()
        chrome.wait()


if __name__ == "__main__":
    main()
