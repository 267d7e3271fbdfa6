"""What the browser tests share: Debian's chromium, headless, driven by chromedriver
through Debian's python3-selenium (so /usr/bin/python3, not a virtual environment's).
Importing it exits 77 (CTest's "skipped") when selenium is missing; start_browser does
when chromium or chromedriver is."""
import shutil
import subprocess
import sys

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
except ImportError:
    print("SKIP: python3-selenium is not installed (bash tools/setup.sh installs it)")
    sys.exit(77)


def start_browser(profile, *arguments):
    """A headless chromium with its profile in the folder `profile`, its console kept
    for console_messages; `arguments` are chromium's command-line arguments beyond the usual."""
    for program in ("chromium", "chromedriver"):
        if shutil.which(program) is None:
            print(f"SKIP: {program} is not installed (bash tools/setup.sh installs chromium and chromium-driver)")
            sys.exit(77)
    options = Options()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900",
                     f"--user-data-dir={profile}", *arguments):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


def console_messages(driver):
    """The errors and warnings the console has logged since the last call."""
    return [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")]


class Checks:
    """A browser test's findings: a failed check is printed and kept, and the test goes on;
    finish() exits 1 after all of them, or prints what passed."""

    def __init__(self):
        self.failures = []

    def __call__(self, condition, what):
        if not condition:
            self.failures.append(what)
            print("FAIL:", what)

    def finish(self, passed):
        if self.failures:
            print(f"{len(self.failures)} failure(s)")
            sys.exit(1)
        print(passed)


def attn_trace(binary, *args):
    """What `binary ARGS` prints; a RuntimeError with its message where it exits non-zero."""
    result = subprocess.run([binary, *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"attn-trace {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout
