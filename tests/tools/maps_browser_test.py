#!/usr/bin/env python3
"""`headwise maps` in a real browser: the page is generated for stories260K (or the
tiny synthetic model when ../shared is absent), then loaded in headless Chromium.

Checks, each against the page as Chromium renders it:
  * the file is self-contained (nothing fetched: no URLs, src=, <link>, url());
  * the page's self-check (#selfcheck=1: it draws, presses ArrowRight/Left/Down/Up,
    clicks a head button and compares canvas pixels, then writes JSON into
    <pre id="selfcheck">) passed, read back with --dump-dom, and no script error or
    console.error was recorded (nor any console line on Chromium's log);
  * hovering a cell (#hover=i,j) shows the query, key and the weight the data holds;
  * screenshots of two heads (#layer=0&head=0 vs #layer=1&head=3) have drawn pixels in
    the heatmap's canvas and differ there (decoded with the small PNG reader below).

Exit 77 (CTest SKIP_RETURN_CODE) when Chromium is not installed.
usage: maps_browser_test.py --headwise BUILD/headwise [--shared DIR] [--chromium PATH]
                            [--save-screenshot PNG]
"""
import argparse
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
WINDOW = "1600,1500"


def read_png(path):
    """(width, height, rows of RGB bytes) of an 8-bit RGB/RGBA non-interlaced PNG."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(path + ": not a PNG")
    i, idat = 8, b""
    while i < len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        body = data[i + 8:i + 8 + n]
        if struct.unpack(">I", data[i + 8 + n:i + 12 + n])[0] != zlib.crc32(kind + body):
            raise ValueError(path + ": bad CRC in " + kind.decode())
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError(path + ": only 8-bit RGB/RGBA, not interlaced")
        elif kind == b"IDAT":
            idat += body
        i += 12 + n
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev, rows, k = zlib.decompress(idat), w * bpp, bytearray(w * bpp), [], 0
    for _ in range(h):
        f, line = raw[k], bytearray(raw[k + 1:k + 1 + stride])
        k += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line[x] for x in range(stride) if x % bpp < 3))
        prev = line
    return w, h, rows


class Browser:
    def __init__(self, exe, tmp):
        self.exe, self.tmp, self.runs = exe, tmp, 0

    def run(self, url, *mode):
        self.runs += 1
        profile = os.path.join(self.tmp, "profile%d" % self.runs)  # fresh every time
        cmd = [self.exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--user-data-dir=" + profile, "--hide-scrollbars",
               "--window-size=" + WINDOW, "--virtual-time-budget=5000",
               "--enable-logging=stderr", "--v=0", *mode, url]
        r = subprocess.run(cmd, capture_output=True, timeout=120)
        err = r.stderr.decode("utf-8", "replace")
        console = [l for l in err.splitlines() if "CONSOLE" in l or "Uncaught" in l]
        if console:
            fail("console output while loading " + url + ":\n" + "\n".join(console))
        if r.returncode != 0:
            fail("chromium exited %d for %s:\n%s" % (r.returncode, url, err[-2000:]))
        return r.stdout.decode("utf-8", "replace")

    def dom(self, url):
        return self.run(url, "--dump-dom")

    def screenshot(self, url, path):
        self.run(url, "--screenshot=" + path)
        return read_png(path)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def element_text(dom, ident):
    m = re.search(r'<(\w+) id="%s"[^>]*>(.*?)</\1>' % ident, dom, re.S)
    return None if m is None else html.unescape(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headwise", required=True)
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(__file__), "../../../shared"))
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--save-screenshot", help="also write the page's screenshot here (docs)")
    args = ap.parse_args()
    if not (os.path.isfile(args.chromium) and os.access(args.chromium, os.X_OK)):
        print("SKIP: %s is not installed (apt-get install chromium)" % args.chromium)
        return SKIP

    tmp = tempfile.mkdtemp(prefix="maps_browser_")
    try:
        page = os.path.join(tmp, "maps.html")
        text = os.path.join(tmp, "text.txt")
        with open(text, "w") as f:
            f.write("Once upon a time, there was a little girl named Lily. She loved to play "
                    "outside in the park. One day, she saw a big dog.\n")
        ckpt = os.path.join(args.shared, "models/stories260K/stories260K.bin")
        project = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
        default_shared = os.path.join(project, "..", "shared")
        if not os.path.isfile(ckpt):
            print("note: %s is absent; using --synthetic tiny" % ckpt)
            model = ["--synthetic", "tiny"]
        elif os.path.isdir(default_shared) and os.path.samefile(args.shared, default_shared):
            model = []  # the default model, as a user running from the project root gets it
        else:
            model = [ckpt, "--tokenizer", os.path.join(args.shared, "models/stories260K/tok512.bin")]
        r = subprocess.run([os.path.abspath(args.headwise), "maps", *model, "-o", page, "--text", text,
                            "--threads", "2"], capture_output=True, timeout=600, cwd=project)
        check(r.returncode == 0, "headwise maps failed: " + r.stderr.decode(errors="replace"))
        source = open(page, encoding="utf-8").read()
        for bad in ("http:", "https:", "src=", "<link", "url(", "@import"):
            check(bad not in source.lower(), "the page refers outside itself: " + bad)
        data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>',
                                    source, re.S).group(1))
        T, L, H = len(data["tokens"]), data["layers"], data["heads"]
        check(L >= 2 and H >= 4, "the test needs 2 layers and 4 heads, got %d, %d" % (L, H))
        url = "file://" + page

        browser = Browser(args.chromium, tmp)
        rect = None
        for start in ("#layer=0&head=0", "#layer=%d&head=%d" % (L - 1, H - 1)):
            out = element_text(browser.dom(url + start + "&selfcheck=1"), "selfcheck")
            check(out, "no self-check result in the DOM for " + start + " (did the script run?)")
            sc = json.loads(out)
            check(sc["errors"] == [], "script errors: %s" % sc["errors"])
            check(sc["start"]["map"]["nonWhite"] > 0, "nothing drawn on the heatmap")
            check(sc["right"]["head"] == (sc["start"]["head"] + 1) % H, "ArrowRight did not move to the next head")
            check(sc["right"]["map"]["hash"] != sc["start"]["map"]["hash"], "ArrowRight did not change the picture")
            check(sc["down"]["layer"] == (sc["start"]["layer"] + 1) % L, "ArrowDown did not move to the next layer")
            check(sc["overviewDrawn"] == L * H, "overview cells drawn: %d of %d" % (sc["overviewDrawn"], L * H))
            check(sc["ablationDrawn"], "ablation charts not drawn")
            check(sc["ok"], "page self-check failed: " + out)
            rect = rect or sc["mapRect"]

        # The tooltip of cell (3, 1) of layer 0 head 0 shows the weight the data holds.
        dom = browser.dom(url + "#layer=0&head=0&hover=3,1")
        tip = element_text(dom, "tip")
        check(tip is not None and 'id="tip" hidden' not in dom, "no visible tooltip")
        want = "weight %.4f" % data["maps"][0][0][3 * T + 1]
        check(want in tip and "query 3 " in tip and "key   1 " in tip, "tooltip %r lacks %r" % (tip, want))

        a = browser.screenshot(url + "#layer=0&head=0", os.path.join(tmp, "a.png"))
        b = browser.screenshot(url + "#layer=1&head=3", os.path.join(tmp, "b.png"))
        x0, y0 = int(rect["x"]), int(rect["y"])
        x1, y1 = min(a[0], x0 + int(rect["w"])), min(a[1], y0 + int(rect["h"]))
        check(x1 - x0 > 50 and y1 - y0 > 50, "heatmap canvas not on screen: %s" % rect)
        area = (x1 - x0) * (y1 - y0)
        white = b"\xff\xff\xff"
        drawn_a = drawn_b = differ = 0
        for y in range(y0, y1):
            ra, rb = a[2][y], b[2][y]
            for x in range(x0, x1):
                pa, pb = ra[3 * x:3 * x + 3], rb[3 * x:3 * x + 3]
                drawn_a += pa != white
                drawn_b += pb != white
                differ += pa != pb
        print("canvas %dx%d at (%d,%d): drawn %d / %d pixels, %d differ between heads"
              % (x1 - x0, y1 - y0, x0, y0, drawn_a, drawn_b, differ))
        # The lower triangle (half the cells) is coloured; the two heads differ somewhere.
        check(drawn_a > area // 4 and drawn_b > area // 4, "too few drawn pixels in the heatmap")
        check(differ > area // 200, "switching head barely changed the picture (%d pixels)" % differ)

        if args.save_screenshot:
            browser.screenshot(url + "#layer=1&head=3&hover=%d,%d" % (min(20, T - 1), min(19, T - 2)),
                               args.save_screenshot)
            print("wrote " + args.save_screenshot)
        print("OK (%d Chromium runs, T=%d, %d layers x %d heads)" % (browser.runs, T, L, H))
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
