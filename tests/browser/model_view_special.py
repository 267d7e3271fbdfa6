#!/usr/bin/python3
"""The model view page's special-tokens control in headless chromium (python/tests/
test_model.py writes the page, its first token special, opened with them hidden): each
cell drawn without the special token's row and column, the hover naming only others; the
box ticked, every row and column again; no console errors.

Usage: /usr/bin/python3 tests/browser/model_view_special.py PAGE TOKENS
Exits 77 (CTest's "skipped") when chromium, chromedriver or selenium is missing.
"""
import os
import sys
import tempfile

from chromium import Checks, console_messages, start_browser  # first: it exits 77 (skipped) where selenium is missing
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By

PAGE, TOKENS = os.path.abspath(sys.argv[1]), int(sys.argv[2])
check = Checks()
driver = start_browser(tempfile.mkdtemp(prefix="model-view-special-"))
try:
    driver.get("file://" + PAGE)
    box = driver.find_element(By.ID, "special")
    cell = driver.find_element(By.CSS_SELECTOR, "#grid canvas[data-layer='1'][data-head='0']")
    size = lambda: (int(cell.get_attribute("width")), int(cell.get_attribute("height")))  # noqa: E731
    hidden = size()
    check(not box.is_selected(), "the page opens with the special tokens hidden")
    # The top left corner is query 1 → key 1 now, not the special token 0.
    ActionChains(driver).move_to_element_with_offset(cell, -hidden[0] // 2 + 1, -hidden[1] // 2 + 1).perform()
    hover = driver.find_element(By.ID, "hover").text
    box.click()
    shown = size()
    check(shown[0] * (TOKENS - 1) == hidden[0] * TOKENS and shown[1] * (TOKENS - 1) == hidden[1] * TOKENS,
          f"hidden: one row and column fewer ({hidden} against {shown})")
    ActionChains(driver).move_to_element_with_offset(cell, -shown[0] // 2 + 1, -shown[1] // 2 + 1).perform()
    again = driver.find_element(By.ID, "hover").text
    check(hover != again and ": query " in hover and ": query " in again, f"the corner's tokens: {hover!r} hidden, {again!r} shown")
    messages = console_messages(driver)
    check(not messages, f"console messages: {messages}")
finally:
    driver.quit()
check.finish("model view: the special tokens hide and show")
