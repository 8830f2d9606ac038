#!/usr/bin/env python3
"""Checks the HTML reports and cluster pictures (issue 13).

Usage: check_report.py TOPOPLAN EXAMPLES_DIR            the reports themselves
       check_report.py TOPOPLAN EXAMPLES_DIR --render   screenshots with headless Chromium

Without --render: the central example's two reports (good and bad mapping) are byte-identical
across runs and to the ones under examples/reports/; the HTML is well formed (every element
closed, in order) and the SVG pictures parse as XML; each draws 128 GPU cells; the good mapping's
TP links stay inside servers and the bad one's all leave them, its cells marked red by check's
failing tier rule; a 1,024-server plan draws one data-parallel replica and stays small.
With --render (exit 77, skipped, when Chromium is not installed): both reports load in headless
Chromium and the screenshots are not blank.
"""

import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}
ARGS = ["--cluster", "dgx-h100", "--nodes", "16", "--model", "llama3-70b", "--tp", "8", "--pp",
        "4", "--dp", "4"]
ORDERS = {"good": "tp-dp-pp", "bad": "dp-pp-tp"}


class Checker(html.parser.HTMLParser):
    """Fails on an element closed out of order or left open (HTML with inline SVG)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.doctype = [], [], False

    def handle_decl(self, decl):
        self.doctype = self.doctype or decl.lower() == "doctype html"

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append((tag, self.getpos()))

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.errors.append(f"line {self.getpos()[0]}: </{tag}> closes "
                               f"{self.stack[-1] if self.stack else 'nothing'}")
            return
        self.stack.pop()


def well_formed(text, what):
    c = Checker()
    c.feed(text)
    c.close()
    problems = c.errors + [f"<{t}> opened at line {p[0]} is never closed" for t, p in c.stack]
    if not c.doctype:
        problems.append("no <!DOCTYPE html>")
    for tag in ("html", "head", "body", "title"):
        if text.count(f"<{tag}") - text.count(f"<{tag}:") < 1:
            problems.append(f"no <{tag}>")
    return [f"{what}: {p}" for p in problems]


def run(binary, *args):
    return subprocess.run([binary, *args], capture_output=True, text=True, check=False).stdout


def tp_links(text):
    """The tier classes of the links inside the TP group of an HTML report or SVG."""
    start = text.index('<g class="dim dim-tp"')
    body = text[start:text.index("</g>", start)]
    return [seg.split('"')[0] for seg in body.split('class="link tier-')[1:]]


def check_reports(binary, examples):
    problems = []
    reports = {}
    for name, order in ORDERS.items():
        a = run(binary, "check", *ARGS, "--order", order, "--format", "html")
        b = run(binary, "check", *ARGS, "--order", order, "--format", "html")
        svg = run(binary, "check", *ARGS, "--order", order, "--format", "svg")
        reports[name] = a
        if a != b:
            problems.append(f"{name}: two runs differ")
        with open(os.path.join(examples, f"central-{name}.html"), encoding="utf-8") as f:
            if f.read() != a:
                problems.append(f"{name}: examples/reports/central-{name}.html is not current "
                                "(run examples/report.sh)")
        problems += well_formed(a, name)
        try:
            root = ET.fromstring(svg)
            cells = [g for g in root.iter("{http://www.w3.org/2000/svg}g")
                     if g.get("class", "").startswith("gpu")]
            if len(cells) != 128:
                problems.append(f"{name}.svg: {len(cells)} GPU cells, expected 128")
        except ET.ParseError as e:
            problems.append(f"{name}.svg: not XML: {e}")
        cells = a.count('<g class="gpu')
        if cells != 128:
            problems.append(f"{name}: {cells} GPU cells, expected 128")
    good, bad = tp_links(reports["good"]), tp_links(reports["bad"])
    if not good or set(good) != {"0"}:
        problems.append(f"good: TP links should all stay inside servers, got tiers {set(good)}")
    if not bad or "0" in bad:
        problems.append(f"bad: TP links should all leave their servers, got tiers {set(bad)}")
    if reports["good"].count('<g class="gpu bad"') != 0:
        problems.append("good: cells marked as failing")
    if reports["bad"].count('<g class="gpu bad"') != 128:
        problems.append("bad: every TP group crosses servers, so all 128 cells should be red")
    big = run(binary, "evaluate", "--model", "llama3.1-405b", "--nodes", "1024", "--seq-len",
              "8192", "--global-batch", "2048", "--tp", "8", "--pp", "16", "--format", "html")
    problems += well_formed(big, "8,192 GPUs")
    cells = big.count('<g class="gpu')
    if len(big) > 2 * 1024 * 1024 or cells != 128:
        problems.append(f"8,192 GPUs: {len(big)} bytes, {cells} cells; "
                        "expected one replica (16 servers, 128 cells) under 2 MiB")
    if "16 of 1024 servers drawn" not in big:
        problems.append("8,192 GPUs: no note on the servers left out")
    problems += check_top_plans(binary)
    return problems


def check_top_plans(binary):
    """plan --format html lists each plan's split, order, ZeRO stage and recomputation as the
    text table does (the default plan lists a split plan among its top 9, a recomputed module in
    its first)."""
    text = run(binary, "plan", "--top", "9")
    html = run(binary, "plan", "--top", "9", "--format", "html")
    lines = text.splitlines()
    head = next((i for i, l in enumerate(lines) if l.startswith("rank")), None)
    if head is None:
        return ["plan: no text table"]
    cols = lines[head].split()
    want = []
    rc = cols.index("recompute")
    for line in lines[head + 1:head + 10]:
        words = line.split()
        if words[rc + 1].isdigit():  # "block 2", "offload 18": one cell of two words
            words[rc:rc + 2] = [" ".join(words[rc:rc + 2])]
        f = dict(zip(cols, words))
        want.append([f.get("split", "-"), f["order"], f["zero"], f["recompute"]])
    table = html[html.find("<h2>Top plans</h2>"):]
    table = table[:table.find("</table>")]
    header = re.findall(r"<th[^>]*>([^<]*)</th>", table)
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", r) for r in re.findall(r"<tr><td>.*?</tr>", table)]
    if "split" not in header or not any(w[0] != "-" for w in want):
        return [f"plan html: expected a split column and a split plan, header {header}"]
    got = [[r[header.index(k)] for k in ("split", "order", "ZeRO", "recompute")] for r in rows]
    if got != want:
        return [f"plan html top plans {got} differ from the text table's {want}"]
    return []


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG, unfiltered."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            if depth != 8 or colour not in (2, 6):
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {colour})")
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b, c = prev[x], prev[x - bpp] if x >= bpp else 0
            if kind == 1:
                line[x] = (line[x] + a) & 255
            elif kind == 2:
                line[x] = (line[x] + b) & 255
            elif kind == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def check_render(binary, examples):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("chromium is not installed: skipped (apt-get install chromium)")
        return None
    problems = []
    with tempfile.TemporaryDirectory() as d:
        for name, order in ORDERS.items():
            page, shot = os.path.join(d, f"{name}.html"), os.path.join(d, f"{name}.png")
            run(binary, "check", *ARGS, "--order", order, "--format", "html", "-o", page)
            with open(page, encoding="utf-8") as f:
                cells = f.read().count('<g class="gpu')
            if cells != 128:
                problems.append(f"{name}: the page has {cells} GPU cells, expected 128")
            subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", "--window-size=1280,2000",
                            f"--screenshot={shot}", f"file://{page}"],
                           capture_output=True, timeout=120, check=False)
            if not os.path.exists(shot):
                problems.append(f"{name}: Chromium wrote no screenshot")
                continue
            w, h, bpp, rows = png_pixels(shot)
            sample = [r[x:x + 3] for r in rows[::8] for x in range(0, w * bpp, 8 * bpp)]
            ink = sum(1 for p in sample if p != b"\xff\xff\xff") / len(sample)
            colours = len(set(sample))
            print(f"{name}: {w}x{h} screenshot, {100 * ink:.0f}% of it drawn, {colours} colours")
            if ink < 0.1 or colours < 20:
                problems.append(f"{name}: the screenshot looks blank ({100 * ink:.1f}% drawn, "
                                f"{colours} colours)")
    return problems


def main():
    binary, examples = os.path.abspath(sys.argv[1]), sys.argv[2]
    problems = check_render(binary, examples) if "--render" in sys.argv \
        else check_reports(binary, examples)
    if problems is None:
        return 77
    for p in problems:
        print("FAIL", p)
    if not problems:
        print("ok: reports well formed, identical across runs, current, and drawn as expected"
              if "--render" not in sys.argv else "ok: both reports render")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
