#!/usr/bin/python3
"""The model view page of a BERT-base-shaped model (12 layers × 12 heads, d_model 768,
random weights: `attn-trace random`, one seed a layer) on 20 tokens, in float32: its size,
and how long headless chromium takes to open it (navigation start to the load event, the
median of 5 loads) and to open one head's trace on a click: the figures of
docs/PERFORMANCE.md#the-model-view-page (needs Debian's chromium, chromium-driver and
python3-selenium, which bash tools/setup.sh installs).

Usage: /usr/bin/python3 tools/measure_model_page.py [build/attn-trace]
"""
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser"))
from chromium import start_browser  # noqa: E402 (exits 77 where selenium is missing)
from selenium.webdriver.common.by import By  # noqa: E402

BINARY = sys.argv[1] if len(sys.argv) > 1 else "build/attn-trace"


def cpu():
    for line in open("/proc/cpuinfo", encoding="utf-8"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main():
    work = tempfile.mkdtemp(prefix="model-page-")
    files = []
    for layer in range(12):
        files.append(os.path.join(work, f"layer{layer:02d}.json"))
        subprocess.run([BINARY, "random", "--n", "20", "--d-model", "768", "--heads", "12", "--dk", "64", "--seed", str(layer * 10),
                        "-o", files[-1]], check=True)
    started = time.perf_counter()
    page = subprocess.run([BINARY, "view", *files, "--dtype", "f32", "--format", "html"], check=True, capture_output=True).stdout
    written = time.perf_counter() - started
    path = os.path.join(work, "model.html")
    with open(path, "wb") as f:
        f.write(page)
    driver = start_browser(os.path.join(work, "profile"))
    try:
        loads = []
        for _ in range(5):
            driver.get("file://" + path)
            loads.append(driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd"))
        cells = len(driver.find_elements(By.CSS_SELECTOR, "#grid canvas[data-layer][data-head]"))
        clicks = []
        for layer, head in ((0, 0), (5, 7), (11, 11)):
            cell = driver.find_element(By.CSS_SELECTOR, f"#grid canvas[data-layer='{layer}'][data-head='{head}']")
            clicks.append(driver.execute_script("const t = performance.now(); arguments[0].click(); return performance.now() - t;", cell))
    finally:
        driver.quit()
    print(f"CPU: {cpu()}, {os.cpu_count()} cores")
    print(f"page: {len(page):,} bytes ({len(page) / 1e6:.2f} MB), {cells} cells; attn-trace view wrote it in {written:.2f} s")
    print(f"open (navigation to load), 5 loads: {', '.join(f'{t:.0f}' for t in loads)} ms; median {statistics.median(loads):.0f} ms")
    print(f"a click to a head's trace drawn: {', '.join(f'{t:.0f}' for t in clicks)} ms")


main()
