#!/usr/bin/python3
"""The HTML pages in a real browser: Debian's chromium, headless, driven by
chromedriver through Debian's python3-selenium (so /usr/bin/python3, not a
virtual environment's). For each page: no console errors, nothing fetched from
the network, every step of the trace in the DOM with the numbers of the same
command's --format json, a click (and Enter) on a cell shows the explanation
`attn-trace explain --cell` prints, the arrow keys, head tabs and the tile or
token slider move through the steps, an exercise's answer hidden until asked,
every chart's text inside its picture and clear of the others, and a screenshot
of each page written for people to look at.

Usage: ATTN_TRACE=build/attn-trace SOURCE_DIR=. /usr/bin/python3 tests/browser/pages.py [SCREENSHOT_DIR]
Exits 77 (CTest's "skipped") when chromium, chromedriver or selenium is missing.
"""
import base64
import json
import os
import shutil
import sys
import tempfile
import time

from chromium import Checks, attn_trace, console_messages, start_browser  # first: it exits 77 (skipped) where selenium is missing
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

BINARY = os.environ["ATTN_TRACE"]
SOURCE = os.environ["SOURCE_DIR"]
SHOTS = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.getcwd())
WORK = tempfile.mkdtemp(prefix="pages-")
check = Checks()


def example(name):
    return os.path.join(SOURCE, "examples", name)


def tool(*args):
    return attn_trace(BINARY, *args)


def open_page(driver, name, args, dark=False):
    """Writes the page of `attn-trace ARGS --format html`, opens it, and checks
    what every page must: self-contained, no console errors."""
    html = tool(*args, "--format", "html")
    path = os.path.join(WORK, name + ".html")
    with open(path, "w") as f:
        f.write(html)
    check("http:" not in html and "https:" not in html and " src=" not in html, f"{name}: the page refers to something outside it")
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark" if dark else "light"}]})
    driver.get("file://" + path)
    errors = console_messages(driver)
    check(not errors, f"{name}: console messages {errors}")
    return html


def screenshot(driver, name):
    driver.save_screenshot(os.path.join(SHOTS, name + ".png"))


def same_number(shown, expected):
    """Bit for bit: the title holds the shortest text that reads back to the double,
    the JSON the same double; "-inf", "inf" and "nan" are strings in both."""
    return shown == expected


def parse(title):
    """A cell's title as the JSON writes the number: the page writes −∞ and ∞
    (U+2212), the JSON "-inf" and "inf"."""
    return {"−∞": "-inf", "∞": "inf", "nan": "nan"}.get(title) or float(title)


def check_steps(driver, name, args):
    """Every step of --format json is a section with its name, place and every number."""
    trace = json.loads(tool(*args, "--format", "json"))
    sections = driver.execute_script(
        "return Array.from(document.querySelectorAll('section.step')).map(s => ({name: s.dataset.name, head: s.dataset.head || s.dataset.kvHead,"
        " gaps: s.querySelectorAll('td.gap').length,"
        " cells: Array.from(s.querySelectorAll('td[data-i]')).map(td => [Number(td.dataset.i), Number(td.dataset.j), td.title, td.textContent])}))")
    check(len(sections) == len(trace["steps"]), f"{name}: {len(sections)} sections for {len(trace['steps'])} steps")
    for section, step in zip(sections, trace["steps"]):
        label = f"{name}: step {step['name']} head {step.get('head')}"
        check(section["name"] == step["name"], f"{label}: the section is {section['name']}")
        check(section["head"] == (str(step["head"]) if "head" in step else None), f"{label}: the section's head is {section['head']}")
        data = step["data"]
        # A summarised matrix (its "…" cells) shows a corner of its numbers; the others show all.
        check(section["gaps"] > 0 or len(section["cells"]) == sum(len(row) for row in data), f"{label}: {len(section['cells'])} cells")
        for i, j, title, text in section["cells"]:
            expected = data[i][j]
            if not same_number(parse(title), expected):
                check(False, f"{label}[{i},{j}]: the page says {title}, the JSON {expected}")
                break
            if expected == "-inf":
                check(text == "−∞", f"{label}[{i},{j}]: −∞ is shown as {text!r}")
            if expected == 0:
                check(text == "0", f"{label}[{i},{j}]: an exact 0 is shown as {text!r}")
    return trace


def cell(driver, step_name, i, j, head=None):
    where = f"section.step[data-name='{step_name}']" + (f"[data-head='{head}']" if head is not None else "")
    return driver.find_element(By.CSS_SELECTOR, f"{where} td[data-i='{i}'][data-j='{j}']")


def panel_text(driver):
    return driver.find_element(By.ID, "explain-text").get_attribute("textContent")


def current_step(driver):
    return driver.execute_script("const s = document.querySelector('section.step.current'); return s ? s.id : null")


def shown_sections(driver):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll('section.step')).filter(s => s.offsetParent !== null).map(s => s.id)")


def on_page(text):
    """explain's terminal text as a page shows it: ASCII -inf written as −∞, as the cells are."""
    return text.replace("-inf", "−∞")


def test_run(driver):
    args = ["run", example("damaged_on_arrival.json"), "--mask", "causal"]
    html = open_page(driver, "run", args)
    check_steps(driver, "run", args)
    # A click shows what explain prints for that cell.
    cell(driver, "weights", 2, 1).click()
    expected = tool("explain", example("damaged_on_arrival.json"), "--mask", "causal", "--cell", "weights[2,1]")
    check(panel_text(driver).strip() == on_page(expected).strip(), "run: the click on weights[2,1] does not show explain's text")
    check("weights[2,1]" in driver.find_element(By.ID, "explain-title").text, "run: the panel's title does not name the cell")
    screenshot(driver, "run")
    # Without a mouse: Enter on a focused cell, and ← → through the steps.
    target = cell(driver, "scores", 0, 1)
    target.send_keys(Keys.ENTER)
    expected = tool("explain", example("damaged_on_arrival.json"), "--mask", "causal", "--cell", "scores[0,1]")
    check(panel_text(driver).strip() == on_page(expected).strip(), "run: Enter on scores[0,1] does not show its explanation")
    body = driver.find_element(By.TAG_NAME, "body")
    before = current_step(driver)
    body.send_keys(Keys.ARROW_RIGHT)
    after = current_step(driver)
    check(before != after and int(after[1:]) == int(before[1:]) + 1, f"run: → moved from {before} to {after}")
    body.send_keys(Keys.ARROW_LEFT)
    check(current_step(driver) == before, "run: ← did not come back")
    # The mask's cells: −∞ scores and exact-0 weights hatched.
    blocked = driver.find_elements(By.CSS_SELECTOR, "section.step[data-name='weights'] td.b")
    check(len(blocked) == 3 and all(td.get_attribute("title") == "0" for td in blocked), f"run: {len(blocked)} hatched weights, expected 3 zeros")
    return len(html.encode())


def test_readme_page(driver):
    args = ["run", example("damaged_on_arrival.json"), "--mask", "causal", "--steps", "scores,scaled,masked,weights,out"]
    html = open_page(driver, "readme", args)
    cell(driver, "weights", 1, 0).click()
    screenshot(driver, "readme")
    return len(html.encode())


def test_heads(driver):
    args = ["run", example("gqa_8q_2kv.json")]
    open_page(driver, "gqa", args)
    check_steps(driver, "gqa", args)
    driver.find_element(By.CSS_SELECTOR, ".tabs button[data-head='5']").click()
    heads = driver.execute_script(
        "return Array.from(document.querySelectorAll('section.step')).filter(s => s.offsetParent !== null).map(s => s.dataset.head || '')")
    check(heads and all(h in ("5", "") for h in heads), f"gqa: the head 5 tab shows heads {sorted(set(heads))}")
    cell(driver, "weights", 1, 3, head=5).click()
    expected = tool("explain", example("gqa_8q_2kv.json"), "--cell", "weights[1,3]", "--head", "5")
    check(panel_text(driver).strip() == on_page(expected).strip(), "gqa: weights[1,3] of head 5 does not show explain --head 5")
    screenshot(driver, "gqa")


def slider_moves(driver, name, explain_args, step_name):
    stage = driver.find_element(By.ID, "stage")
    labels = json.loads(stage.get_attribute("data-labels"))
    check(len(labels) > 1, f"{name}: the slider has {len(labels)} positions")
    first = shown_sections(driver)
    stage.send_keys(Keys.ARROW_RIGHT)
    label = driver.find_element(By.ID, "stage-label").text
    check(label == labels[1], f"{name}: the slider's label is {label!r} after one step, expected {labels[1]!r}")
    second = shown_sections(driver)
    check(first != second, f"{name}: the slider did not change the steps shown")
    staged = driver.execute_script(
        "return Array.from(document.querySelectorAll('section.step[data-stage]')).filter(s => s.offsetParent !== null).map(s => s.dataset.stage)")
    check(staged and set(staged) == {"1"}, f"{name}: after one step the staged sections shown are {sorted(set(staged))}")
    # A staged cell explains itself as explain --t / --tile does.
    target = driver.find_element(By.CSS_SELECTOR, f"section.step[data-stage='1'][data-name='{step_name}'] td[data-i='0'][data-j='0']")
    target.click()
    expected = tool(*explain_args, "--cell", f"{step_name}[0,0]")
    check(panel_text(driver).strip() == on_page(expected).strip(), f"{name}: {step_name}[0,0] at the second position does not show explain's text")
    # → past the last step of a position goes on to the next position's first step.
    stage.send_keys(Keys.HOME)
    driver.execute_script("document.activeElement.blur()")
    body = driver.find_element(By.TAG_NAME, "body")
    for _ in range(20):
        body.send_keys(Keys.ARROW_RIGHT)
        if driver.find_element(By.ID, "stage").get_attribute("value") != "0":
            break
    at = driver.execute_script("const s = document.querySelector('section.step.current'); return s ? s.dataset.stage : null")
    check(at == "1", f"{name}: → past the first position's last step is at stage {at}, expected the second position's first step")
    check(len(driver.find_elements(By.CSS_SELECTOR, "section.step.current")) == 1, f"{name}: more than one step is highlighted")


def test_tiled(driver):
    args = ["tiled", example("damaged_on_arrival.json"), "--block-q", "2", "--block-k", "2"]
    open_page(driver, "tiled", args)
    check_steps(driver, "tiled", args)
    tiles = json.loads(driver.find_element(By.ID, "stage").get_attribute("data-labels"))
    second = tiles[1].split(":")[0].removeprefix("tile [").removesuffix("]").replace(" ", "")
    slider_moves(driver, "tiled", ["explain", example("damaged_on_arrival.json"), "--tile", second, "--block-q", "2", "--block-k", "2"], "m")
    screenshot(driver, "tiled")
    open_page(driver, "tiled-dark", args, dark=True)
    background = driver.execute_script("return getComputedStyle(document.body).backgroundColor")
    check(background == "rgb(13, 17, 23)", f"tiled: the dark page's background is {background}")
    screenshot(driver, "tiled-dark")


def test_decode(driver):
    args = ["decode", example("damaged_on_arrival.json")]
    open_page(driver, "decode", args)
    check_steps(driver, "decode", args)
    slider_moves(driver, "decode", ["explain", example("damaged_on_arrival.json"), "--t", "1"], "weights")
    screenshot(driver, "decode")
    # GQA: a cache belongs to its KV head, shown under each query head that reads it.
    gqa = ["decode", example("gqa_8q_2kv.json")]
    open_page(driver, "decode-gqa", gqa)
    check_steps(driver, "decode-gqa", gqa)
    driver.find_element(By.CSS_SELECTOR, ".tabs button[data-head='5']").click()
    caches = driver.execute_script(
        "return Array.from(document.querySelectorAll('section.step[data-kv-head]')).filter(s => s.offsetParent !== null).map(s => s.dataset.kvHead)")
    check(caches and set(caches) == {"1"}, f"decode-gqa: head 5 (of KV head 1) shows the caches of KV heads {sorted(set(caches))}")
    headings = driver.execute_script("return Array.from(document.querySelectorAll('section.step[data-name=k_cache] h2 .place')).map(p => p.textContent)")
    check(headings and all(h.startswith("KV head ") for h in headings), f"decode-gqa: k_cache's headings are {sorted(set(headings))[:3]}, not KV head g")
    driver.find_element(By.CSS_SELECTOR, "section.step[data-stage='0'][data-name='k_cache'][data-kv-head='1'] td[data-i='0'][data-j='0']").click()
    expected = tool("explain", example("gqa_8q_2kv.json"), "--t", "0", "--head", "4", "--cell", "k_cache[0,0]")
    check(panel_text(driver).strip() == on_page(expected).strip(), "decode-gqa: KV head 1's k_cache[0,0] does not show explain's text for a query head of KV head 1")


# A cell's background as sRGB bytes: the computed colour (an oklab() from
# color-mix) painted on a canvas and read back.
RGB = """const c = document.createElement('canvas'); c.width = c.height = 1; const x = c.getContext('2d');
x.fillStyle = getComputedStyle(arguments[0]).backgroundColor; x.fillRect(0, 0, 1, 1); return Array.from(x.getImageData(0, 0, 1, 1).data).slice(0, 3);"""


def test_colours(driver):
    """Signed steps diverge around 0 (blue below, white at 0 — near-black in the dark
    scheme — red above); non-negative ones keep the sequential scale
    (docs/COMMANDS.md#output-formats)."""
    path = os.path.join(WORK, "signed.json")
    with open(path, "w") as f:  # scores: [[1, -1, 0], [0, 0, 1]]
        json.dump({"Q": [[1, 0], [0, 1]], "K": [[1, 0], [-1, 0], [0, 1]], "V": [[1], [2], [3]], "scale": "none"}, f)
    open_page(driver, "signed", ["run", path, "--steps", "scores,weights"])
    positive, negative, zero = (driver.execute_script(RGB, cell(driver, "scores", 0, j)) for j in range(3))
    check(positive[0] > positive[2] + 60, f"signed: scores[0,0] = 1 is not red: rgb{positive}")
    check(negative[2] > negative[0] + 60, f"signed: scores[0,1] = −1 is not blue: rgb{negative}")
    check(min(zero) >= 240, f"signed: scores[0,2] = 0 is not near-white: rgb{zero}")
    check(positive == driver.execute_script(RGB, cell(driver, "scores", 1, 2)), "signed: the two scores of 1 differ in colour")
    legend = driver.find_element(By.CSS_SELECTOR, "section.step[data-name='scores'] p.legend").text
    check("blue below 0, white at 0, red above 0" in legend and "±1" in legend and "near-black" not in legend, f"signed: the scores' legend says {legend!r}")
    # weights (non-negative): the sequential scale, its largest value dark blue, no legend line.
    largest = max(range(3), key=lambda j: float(cell(driver, "weights", 0, j).get_attribute("title")))
    rgb = driver.execute_script(RGB, cell(driver, "weights", 0, largest))
    check(rgb[2] > rgb[0] + 60 and sum(rgb) < 500, f"signed: the largest weight is not dark blue: rgb{rgb}")
    check(not driver.find_elements(By.CSS_SELECTOR, "section.step[data-name='weights'] td.neg, section.step[data-name='weights'] td.pos"),
          "signed: the weights take the diverging scale")
    screenshot(driver, "signed")
    # In the dark scheme 0 is drawn near-black, and the legend says so; printed, the page is light again.
    open_page(driver, "signed-dark", ["run", path, "--steps", "scores,weights"], dark=True)
    zero = driver.execute_script(RGB, cell(driver, "scores", 0, 2))
    check(max(zero) <= 60, f"signed-dark: scores[0,2] = 0 is not near-black: rgb{zero}")
    legend = driver.find_element(By.CSS_SELECTOR, "section.step[data-name='scores'] p.legend").text
    check("blue below 0, near-black at 0, red above 0" in legend and "white" not in legend, f"signed-dark: the scores' legend says {legend!r}")
    screenshot(driver, "signed-dark")
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print", "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    legend = driver.find_element(By.CSS_SELECTOR, "section.step[data-name='scores'] p.legend").text
    check("white at 0" in legend and "near-black" not in legend, f"signed-dark: printed, the scores' legend says {legend!r}")
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    # No "-inf" anywhere in a masked page: −∞ in the cells and their titles.
    html = open_page(driver, "minus-infinity", ["run", example("damaged_on_arrival.json"), "--mask", "causal"])
    shown = driver.execute_script("return document.documentElement.outerHTML")
    check("-inf" not in html and "-inf" not in shown, "minus-infinity: the page writes -inf")
    titles = driver.execute_script("return Array.from(document.querySelectorAll('section.step[data-name=masked] td.b')).map(td => [td.title, td.textContent])")
    check(len(titles) == 3 and all(t == ["−∞", "−∞"] for t in titles), f"minus-infinity: masked's blocked cells are {titles}")


# Each section whose table reaches past its card (which would scroll sideways): name, table and card widths.
OVERFLOWING = """return Array.from(document.querySelectorAll('section.step')).filter(s => s.scrollWidth > s.clientWidth)
  .map(s => [s.dataset.name, s.querySelector('table').scrollWidth, s.clientWidth, s.classList.contains('wide')])"""


def test_card_widths(driver):
    """An (8, 8) step, with index or token labels, fits its card at 1280 px and wider:
    a table too wide for a card beside another takes the whole width
    (docs/COMMANDS.md#output-formats)."""
    plain = os.path.join(WORK, "eight.json")
    tool("random", "--n", "8", "--dk", "8", "-o", plain)
    with open(plain) as f:
        problem = json.load(f)
    problem["tokens"] = ["damaged", "on", "arrival", "the", "parcel", "was", "returned", "promptly"]
    labelled = os.path.join(WORK, "eight-tokens.json")
    with open(labelled, "w") as f:
        json.dump(problem, f)
    for name, path in (("eight", plain), ("eight-tokens", labelled)):
        for width in (1280, 1400, 1920):
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False})
            open_page(driver, f"{name}-{width}", ["run", path])
            shown = driver.execute_script("return window.innerWidth")
            check(shown == width, f"{name}: the window is {shown} px wide, not {width}")
            for step, table, card, wide in driver.execute_script(OVERFLOWING):
                check(False, f"{name} at {width} px: {step}'s table is {table} px wide in a{' whole-width' if wide else ''} card of {card} px")
        screenshot(driver, f"{name}-1920")
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_grad(driver):
    args = ["grad", example("damaged_on_arrival.json"), "--mask", "causal"]
    open_page(driver, "grad", args)
    check_steps(driver, "grad", args)
    cell(driver, "grad_q", 1, 0).click()
    expected = tool("explain", example("damaged_on_arrival.json"), "--mask", "causal", "--cell", "grad_q[1,0]")
    check(panel_text(driver).strip() == on_page(expected).strip(), "grad: grad_q[1,0] does not show explain's text")
    # The causal mask's cells of grad_masked (above the diagonal) are 0 by construction and
    # hatched; grad_masked[0,0] is an exact 0 too (a = 1 there: 1 · (g − g)) and is not.
    hatched = driver.execute_script(
        "return Array.from(document.querySelectorAll('section.step[data-name=grad_masked] td.b'))"
        ".map(td => [Number(td.dataset.i), Number(td.dataset.j), td.title, getComputedStyle(td).backgroundImage])")
    check(sorted((i, j) for i, j, _, _ in hatched) == [(0, 1), (0, 2), (1, 2)], f"grad: grad_masked's hatched cells are {hatched}")
    check(all(t == "0" and "repeating-linear-gradient" in image for _, _, t, image in hatched), f"grad: grad_masked's hatched cells are {hatched}")
    check(cell(driver, "grad_masked", 0, 0).get_attribute("title") == "0" and "b" not in cell(driver, "grad_masked", 0, 0).get_attribute("class").split(),
          "grad: grad_masked[0,0], an exact 0 the mask did not make, is hatched")
    legend = driver.find_element(By.CSS_SELECTOR, "section.step[data-name='grad_masked']").text
    check("hatched: the mask blocked the weight, so this gradient is exactly 0 by construction" in legend, "grad: grad_masked has no legend for its hatching")
    screenshot(driver, "grad")


def test_permute(driver):
    args = ["permute", example("damaged_on_arrival.json"), "--perm", "2,0,1"]
    open_page(driver, "permute", args)
    check_steps(driver, "permute", args)
    driver.find_element(By.CSS_SELECTOR, "section.step td[data-i]").click()
    check("two problems" in panel_text(driver), "permute: a click does not say why permute's cells are not explained")


def test_summary(driver):
    path = os.path.join(WORK, "big.json")
    tool("random", "--n", "40", "--dk", "8", "--seed", "1", "-o", path)
    open_page(driver, "big", ["run", path])
    gaps = driver.find_elements(By.CSS_SELECTOR, "td.gap")
    check(len(gaps) > 0, "big: a (40, 40) matrix is not summarised")
    driver.find_element(By.CSS_SELECTOR, "section.step[data-name='weights'] td[data-i]").click()
    check("attn-trace explain" in panel_text(driver), "big: the panel does not say how to explain a cell of a big page")
    full = tool("run", path, "--format", "html", "--full")
    check("td class=\"gap\"" not in full, "big: --full still summarises")


def test_explain(driver):
    open_page(driver, "explain", ["explain", example("damaged_on_arrival.json"), "--cell", "weights[2,1]"])
    text = driver.find_element(By.TAG_NAME, "main").text
    plain = tool("explain", example("damaged_on_arrival.json"), "--cell", "weights[2,1]")
    check(text.splitlines()[0] == plain.splitlines()[0], f"explain: the page's heading is {text.splitlines()[0]!r}, the text's {plain.splitlines()[0]!r}")
    check(plain.strip().splitlines()[-2].strip() in text, "explain: the page lacks the explanation's last line of arithmetic")
    check(driver.find_elements(By.CSS_SELECTOR, "pre.math"), "explain: the page has no mathematics")
    screenshot(driver, "explain")


def test_exercise(driver):
    open_page(driver, "exercise", ["exercise", "--topic", "tiled", "--seed", "0"])
    answer = driver.find_element(By.CSS_SELECTOR, "details.answer h3")
    check(not answer.is_displayed(), "exercise: the answer to task 1 is shown before it is asked for")
    screenshot(driver, "exercise")
    driver.find_element(By.CSS_SELECTOR, "details.answer summary").click()
    check(answer.is_displayed(), "exercise: a click on Show does not show the answer")
    driver.execute_script("arguments[0].scrollIntoView()", answer)
    check(driver.find_elements(By.CSS_SELECTOR, "details.answer section.step td"), "exercise: the answer has no tables")
    screenshot(driver, "exercise-answer")


# Every <text> of a chart inside the picture, and no two upright labels on top of each
# other (rotated labels' boxes overlap their neighbours' by design).
TEXT_FAULTS = """
const svg = document.querySelector('svg'), frame = svg.getBoundingClientRect(), faults = [], upright = [];
for (const t of svg.querySelectorAll('text')) {
  const r = t.getBoundingClientRect(), box = [r.left - frame.left, r.top - frame.top, r.right - frame.left, r.bottom - frame.top];
  if (box[0] < -0.5 || box[1] < -0.5 || box[2] > frame.width + 0.5 || box[3] > frame.height + 0.5)
    faults.push('"' + t.textContent + '" reaches past the edge: ' + box.map(v => v.toFixed(0)).join(','));
  if (!(t.getAttribute('transform') || '').includes('rotate')) upright.push([box, t.textContent]);
}
for (let i = 0; i < upright.length; i++)
  for (let j = i + 1; j < upright.length; j++) {
    const [a, p] = upright[i], [b, q] = upright[j];
    if (a[0] < b[2] - 1 && b[0] < a[2] - 1 && a[1] < b[3] - 1 && b[1] < a[3] - 1) faults.push('"' + p + '" overlaps "' + q + '"');
  }
return faults;
"""


def test_charts(driver):
    """Each kind of SVG the tool draws, with its longest usual title and subtitle."""
    charts = {
        "heatmap": ["run", example("gqa_8q_2kv.json")],
        "precision": ["precision", example("half_overflow.json")],
        "variance": ["variance"],
        "bench": ["bench", "--n", "32,64", "--dk", "8", "--heads", "4", "--kv-heads", "2", "--causal", "--dtype", "f64", "--impl", "naive,fast",
                  "--repeats", "1", "--warmup", "0", "--roofline", os.path.join(WORK, "roofline.svg")],
        "bench_decode": ["bench", "--decode", "--cache", "64,128", "--dk", "8", "--heads", "4", "--kv-heads", "2", "--repeats", "1", "--warmup", "0"],
    }
    for name, args in charts.items():
        path = os.path.join(WORK, name + ".svg")
        tool(*args, "--svg", path)
        for drawn in [path] + [a for a in args if a.endswith("roofline.svg")]:
            driver.get("file://" + drawn)
            for fault in driver.execute_script(TEXT_FAULTS):
                check(False, f"{os.path.basename(drawn)}: {fault}")
            screenshot(driver, "chart_" + os.path.basename(drawn)[:-4])


def test_print(driver):
    open_page(driver, "print", ["tiled", example("damaged_on_arrival.json")])
    pdf = base64.b64decode(driver.execute_cdp_cmd("Page.printToPDF", {"printBackground": True})["data"])
    check(pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page\n") + pdf.count(b"/Type /Page ") + pdf.count(b"/Type/Page") >= 1, "print: the page does not print")
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print", "features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    hidden = driver.execute_script("return Array.from(document.querySelectorAll('section.step')).filter(s => s.offsetParent === null).length")
    check(hidden == 0, f"print: {hidden} steps are left out of the printed page")
    shown = driver.execute_script("return [document.querySelector('nav').offsetParent, getComputedStyle(document.body).backgroundColor]")
    check(shown[0] is None and shown[1] == "rgb(255, 255, 255)", f"print: the navigator is printed or the paper is not white ({shown[1]}) in dark mode")
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})


def main():
    os.makedirs(SHOTS, exist_ok=True)
    started = time.time()
    driver = start_browser(f"{WORK}/profile")
    try:
        run_size = test_run(driver)
        readme_size = test_readme_page(driver)
        for test in (test_heads, test_colours, test_card_widths, test_tiled, test_decode, test_grad, test_permute, test_summary, test_explain, test_exercise, test_print, test_charts):
            test(driver)
    finally:
        driver.quit()
        shutil.rmtree(WORK, ignore_errors=True)
    print(f"pages: README example {readme_size} bytes, run with every step {run_size} bytes; screenshots in {SHOTS}; "
          f"{time.time() - started:.1f} s")
    check.finish("all browser checks passed")


main()
