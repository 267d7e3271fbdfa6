#!/usr/bin/python3
"""docs/images/model_view.png: examples/model_view/model_view.html in headless chromium,
layer 1 head 2 opened from the grid and its weights[5,1] explained. Needs Debian's
chromium, chromium-driver and python3-selenium (bash tools/setup.sh installs them).

Usage: /usr/bin/python3 tools/model_view_screenshot.py
"""
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "browser"))
from chromium import start_browser  # noqa: E402 (exits 77 where selenium is missing)
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

driver = start_browser(tempfile.mkdtemp(prefix="model-view-shot-"), "--window-size=1400,1000")
try:
    driver.get("file://" + os.path.join(ROOT, "examples", "model_view", "model_view.html"))
    cell = driver.find_element(By.CSS_SELECTOR, "#grid canvas[data-layer='1'][data-head='2']")
    cell.click()
    driver.find_element(By.CSS_SELECTOR, "#trace section[data-name=weights] td[data-i='5'][data-j='1']").click()
    driver.execute_script("window.scrollTo(0, 0)")
    ActionChains(driver).move_to_element_with_offset(cell, -20, 10).perform()  # the hover line: a query, a key, a weight
    out = os.path.join(ROOT, "docs", "images", "model_view.png")
    driver.save_screenshot(out)
    print("wrote", out)
finally:
    driver.quit()
