#!/usr/bin/python3
"""A notebook's traces as a notebook shows them, in a real browser (headless chromium,
tests/browser/chromium.py): each trace's page in a sandboxed frame of its own, one after
another (docs/PYTHON.md#traces). python/tests/test_notebook.py writes the page from the
executed examples/attention.ipynb. For each frame: it fits the output's width, its trace's
steps are drawn, a click on a number of its weights shows that number's explanation in its
own panel and in no other frame's, it cannot reach the notebook's page; and no console
errors, nothing fetched.

Usage: /usr/bin/python3 tests/browser/notebook_frames.py PAGE.html
Exits 77 (skipped) when chromium, chromedriver or selenium is missing.
"""
import os
import re
import shutil
import sys
import tempfile

from chromium import Checks, console_messages, start_browser  # first: it exits 77 (skipped) where selenium is missing
from selenium.webdriver.common.by import By

PAGE = os.path.abspath(sys.argv[1])
check = Checks()


# Run inside a frame: where it stands and what it holds. A frame of the notebook's origin
# could read the notebook's page (and another trace's frame through it).
FRAME = """let reachesNotebook = true;
try { parent.document.title } catch (e) { reachesNotebook = false }
return {origin: origin, reachesNotebook: reachesNotebook,
        steps: Array.from(document.querySelectorAll('section.step')).filter(s => s.getClientRects().length && s.querySelector('td[data-i]'))
                 .map(s => s.dataset.name),
        fetched: performance.getEntriesByType('resource').map(r => r.name)}"""
FETCHED = "return performance.getEntriesByType('resource').map(r => r.name)"

# The weights cell of the last row with the largest weight: a number the mask kept.
LARGEST_WEIGHT = """const cells = Array.from(document.querySelectorAll("section.step[data-name='weights'] td[data-i]"));
const last = Math.max(...cells.map(td => Number(td.dataset.i)));
return cells.filter(td => Number(td.dataset.i) === last).reduce((a, b) => Number(b.title) > Number(a.title) ? b : a)"""


def panel(driver, frame):
    """The title and text of the explanation panel of the frame `frame`."""
    driver.switch_to.default_content()
    driver.switch_to.frame(frame)
    shown = [driver.find_element(By.ID, "explain-title").get_attribute("textContent"),
             driver.find_element(By.ID, "explain-text").get_attribute("textContent")]
    driver.switch_to.default_content()
    return shown


def click_a_weight(driver, frame, name):
    """Clicks the largest weight of the frame's last row; returns the cell as the page names it
    (weights[i,j]) and the number as the cell shows it."""
    driver.switch_to.default_content()
    driver.switch_to.frame(frame)
    target = driver.execute_script(LARGEST_WEIGHT)
    place = f"weights[{target.get_attribute('data-i')},{target.get_attribute('data-j')}]"
    shown = target.text
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", target)
    target.click()
    driver.switch_to.default_content()
    print(f"{name}: clicked {place} = {shown}")
    return place, shown


def holds_number(text, shown):
    """Whether the explanation writes the cell's number: both round to 4 decimals, the
    explanation without trailing zeros (0.5 for a cell's 0.5000)."""
    return any(f"{float(number):.4f}" == shown for number in re.findall(r"\d+(?:\.\d+)?", text))


def main():
    with open(PAGE, encoding="utf-8") as f:
        html = f.read()
    check("http:" not in html and "https:" not in html and " src=" not in html, "the notebook's page refers to something outside it")
    profile = tempfile.mkdtemp(prefix="notebook-frames-")
    # Chromium runs a sandboxed frame in a process of its own, whose console chromedriver
    # does not read; in the page's process its errors reach the log, and the sandbox (an
    # opaque origin) holds as before.
    driver = start_browser(profile, "--disable-features=IsolateSandboxedIframes")
    try:
        driver.get("file://" + PAGE)
        frames = driver.find_elements(By.CSS_SELECTOR, "iframe.attn-trace")
        check(len(frames) >= 2, f"{len(frames)} trace frames in the page, expected at least two")
        fetched = driver.execute_script(FETCHED)
        check(not fetched, f"the notebook's page fetched {fetched}")
        drawn = {}
        for number, frame in enumerate(frames, 1):
            name = f"frame {number}"
            width, room = driver.execute_script("return [arguments[0].getBoundingClientRect().width, arguments[0].parentElement.clientWidth]", frame)
            check(width <= room, f"{name}: the frame is {width} px wide in an output {room} px wide, which then scrolls sideways")
            driver.switch_to.frame(frame)
            inside = driver.execute_script(FRAME)
            driver.switch_to.default_content()
            check(inside["origin"] == "null" and not inside["reachesNotebook"],
                  f"{name}: not sandboxed (origin {inside['origin']!r}, reaches the notebook's page: {inside['reachesNotebook']})")
            check(not inside["fetched"], f"{name}: fetched {inside['fetched']}")
            if "weights" in inside["steps"]:
                drawn[name] = frame
            else:
                check(False, f"{name}: the tables drawn are {inside['steps']}, without weights")
        # Each click shows its own number in its own frame, and leaves every other frame's panel as it was.
        for name, frame in drawn.items():
            others = {other: panel(driver, drawn[other]) for other in drawn if other != name}
            place, shown = click_a_weight(driver, frame, name)
            title, text = panel(driver, frame)
            check(place in title, f"{name}: the panel's title {title!r} does not name {place}")
            check(holds_number(text, shown), f"{name}: the explanation of {place} does not hold its number {shown}: {text[-300:]!r}")
            for other, before in others.items():
                check(panel(driver, drawn[other]) == before, f"{name}: the click on {place} changed {other}'s panel")
        errors = console_messages(driver)
        check(not errors, f"console messages {errors}")
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    check.finish(f"notebook frames: {len(frames)} traces, each drawn, explained on a click and kept to itself")


main()
