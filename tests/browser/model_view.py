#!/usr/bin/python3
"""The model view page (docs/COMMANDS.md#the-model-view-page) in headless chromium: one
cell per layer and head, each drawn from that head's weights on the 0…1 scale (light and
dark), its tokens on hover, a click (and Enter) opening the head's trace whose every
number is the run's, a cell's explanation naming its operands with their values and the
command that writes a dot product's arithmetic, the "lines" control, no console errors.

Usage: ATTN_TRACE=build/attn-trace SOURCE_DIR=. /usr/bin/python3 tests/browser/model_view.py [SCREENSHOT_DIR]
Exits 77 (CTest's "skipped") when chromium, chromedriver or selenium is missing.
"""
import json
import os
import shutil
import sys
import tempfile

from chromium import Checks, attn_trace, console_messages, start_browser  # first: it exits 77 (skipped) where selenium is missing
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

BINARY = os.environ["ATTN_TRACE"]
MODELS = os.path.join(os.environ["SOURCE_DIR"], "tests", "models", "gpt2_directory")
SHOTS = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.getcwd())
WORK = tempfile.mkdtemp(prefix="model-view-")
FILES = [os.path.join(MODELS, "problem_layer0.json"), os.path.join(MODELS, "problem.json")]
check = Checks()


def tool(*args):
    return attn_trace(BINARY, *args)


def number(title):
    return {"−∞": float("-inf"), "∞": float("inf")}.get(title) or float(title)


def pixel(driver, layer, head, x, y):
    return driver.execute_script(
        "const c = document.querySelector(`#grid canvas[data-layer='${arguments[0]}'][data-head='${arguments[1]}']`);"
        # Read from a copy: reading the page's own canvas again and again makes chromium warn.
        "const copy = document.createElement('canvas'); copy.width = c.width; copy.height = c.height;"
        "const ctx = copy.getContext('2d', {willReadFrequently: true}); ctx.drawImage(c, 0, 0);"
        "return Array.from(ctx.getImageData(arguments[2], arguments[3], 1, 1).data.slice(0, 3));", layer, head, x, y)


def canvas(driver, layer, head):
    return driver.find_element(By.CSS_SELECTOR, f"#grid canvas[data-layer='{layer}'][data-head='{head}']")


def main():
    os.makedirs(SHOTS, exist_ok=True)
    page = tool("view", *FILES, "--format", "html")
    view = json.loads(tool("view", *FILES, "--format", "json"))
    path = os.path.join(WORK, "model.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    check("http:" not in page and "https:" not in page and " src=" not in page, "the page refers to something outside it")
    driver = start_browser(f"{WORK}/profile")
    try:
        driver.get("file://" + path)
        check(not console_messages(driver), "console messages on opening")
        cells = driver.find_elements(By.CSS_SELECTOR, "#grid canvas[data-layer][data-head]")
        check([(c.get_attribute("data-layer"), c.get_attribute("data-head")) for c in cells] == [(str(l), str(h)) for l in (0, 1) for h in range(4)],
              "one cell per layer and head, in order")

        # Drawn from the weights: GPT-2 is causal, so query 0 gives key 0 the weight 1 (the
        # darkest, --hi) and key 1 the weight 0 (the lightest, --lo).
        size = driver.execute_script("return Number(getComputedStyle(arguments[0]).width.replace('px',''))", cells[0])
        step = int(cells[0].get_attribute("width")) // view["n"]
        check(pixel(driver, 1, 2, 0, 0) == [8, 81, 156], f"weight 1 drawn as --hi: {pixel(driver, 1, 2, 0, 0)}")
        check(pixel(driver, 1, 2, step, 0) == [247, 251, 255], f"weight 0 drawn as --lo: {pixel(driver, 1, 2, step, 0)}")

        # Hover: the tokens and the weight of the pointed query and key.
        tokens = view["queries"]
        target = canvas(driver, 1, 2)
        offset = lambda k: (k + 0.5) * size / view["n"] - size / 2  # noqa: E731 (from the centre, as selenium moves)
        ActionChains(driver).move_to_element_with_offset(target, int(offset(0)), int(offset(3))).perform()
        hover = driver.find_element(By.ID, "hover").text
        weight = view["layers"][1]["heads"][2]["weights"][3][0]
        check(hover == f"layer 1, head 2: query {tokens[3]} → key {tokens[0]}: {weight:.4f}", f"hover line: {hover!r}")

        # A click opens layer 1, head 2's trace: every number the run's, bit for bit.
        target.click()
        check(driver.find_element(By.ID, "trace").is_displayed(), "the trace opens on a click")
        check(target.get_attribute("aria-pressed") == "true", "the open cell is marked")
        run = json.loads(tool("run", FILES[1], "--format", "json"))
        expected = {s["name"]: s["values"] if "values" in s else s["data"] for s in run["steps"] if s.get("head") == 2}
        sections = driver.find_elements(By.CSS_SELECTOR, "#trace section.step")
        names = [s.get_attribute("data-name") for s in sections]
        check(names == ["scores", "scaled", "mask", "masked", "row_max", "exp", "row_sum", "weights", "out"], f"the head's steps: {names}")
        for section in sections:
            name = section.get_attribute("data-name")
            cols = int(section.get_attribute("data-cols"))
            titles = driver.execute_script("return Array.from(arguments[0].querySelectorAll('td')).map(td => td.title)", section)
            flat = [x for row in expected[name] for x in row]
            same = len(titles) == len(flat) and all(number(t) == (float(x) if not isinstance(x, str) else number({"-inf": "−∞", "inf": "∞"}[x]))
                                                    for t, x in zip(titles, flat))
            check(same and cols == len(expected[name][0]), f"{name}: the page's numbers are the run's")

        # A weight's explanation: its formula and its operands, with their values.
        cell = driver.find_element(By.CSS_SELECTOR, "#trace section[data-name=weights] td[data-i='2'][data-j='1']")
        cell.click()
        text = driver.find_element(By.ID, "model-explain").text
        check(text.startswith("A = E / ℓ = softmax(Z)"), f"the weight's formula: {text!r}")
        exp = expected["exp"][2][1]
        shown = [line.split(" = ")[1] for line in text.splitlines() if line.startswith("exp[2,1] = ")]
        check(shown and float(shown[0]) == exp, f"the weight's operand exp[2,1] = {exp!r}: {text!r}")
        check("row_sum[2,0] = " in text, "the weight's operand row_sum")
        check(driver.find_element(By.ID, "model-explain-title").text.startswith("weights[2,1] = "), "the panel's title")

        # A score's dot product: the page names the command, and the command explains it.
        driver.find_element(By.CSS_SELECTOR, "#trace section[data-name=scores] td[data-i='3'][data-j='1']").click()
        text = driver.find_element(By.ID, "model-explain").text
        command = text.strip().splitlines()[-1].strip()
        check(command == f"attn-trace explain {FILES[1]} --cell scores[3,1] --head 2", f"the dot product's command: {command!r}")
        explained = tool(*command.split()[1:])
        check(f"{expected['scores'][3][1]:.4f}" in explained, "the command explains the same score")

        # Enter on a focused cell opens its trace too.
        canvas(driver, 0, 1).send_keys(Keys.ENTER)
        check(driver.find_element(By.CSS_SELECTOR, "#trace h2.head").text.startswith("layer 0, head 1"), "Enter opens a cell's trace")

        # "lines": every cell redrawn as lines between tokens, and back.
        lines = driver.find_element(By.ID, "lines")
        lines.click()
        widths = {c.get_attribute("width") for c in driver.find_elements(By.CSS_SELECTOR, "#grid canvas")}
        check(lines.get_attribute("aria-pressed") == "true" and widths == {"72"}, f"lines: every cell redrawn ({widths})")
        # Query 0 reads key 0 alone (weight 1): its line is horizontal at row 0, drawn in --hi.
        row = int(driver.execute_script("return arguments[0].height", canvas(driver, 1, 2))) // view["n"]
        check(pixel(driver, 1, 2, 36, row // 2) == [8, 81, 156], f"lines: query 0's line to key 0 ({pixel(driver, 1, 2, 36, row // 2)})")
        driver.save_screenshot(os.path.join(SHOTS, "model_view_lines.png"))
        lines.click()
        check(lines.get_attribute("aria-pressed") == "false" and pixel(driver, 1, 2, 0, 0) == [8, 81, 156], "lines off: the heatmaps again")

        # Dark: weight 0 is the dark scheme's --lo.
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        driver.get("file://" + path)
        check(pixel(driver, 1, 2, step, 0) == [21, 27, 35], f"dark: weight 0 drawn as its --lo ({pixel(driver, 1, 2, step, 0)})")
        canvas(driver, 1, 2).click()
        driver.save_screenshot(os.path.join(SHOTS, "model_view_dark.png"))
        messages = console_messages(driver)
        check(not messages, f"console messages after the clicks: {messages}")
    finally:
        driver.quit()
        shutil.rmtree(WORK, ignore_errors=True)
    check.finish("model view: all browser checks passed")


main()
