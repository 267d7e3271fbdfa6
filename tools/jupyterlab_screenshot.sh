#!/usr/bin/env bash
# The README's picture of a trace inside JupyterLab (docs/images/jupyterlab_trace.png),
# taken as a reader would see it: examples/attention.ipynb executed (nbclient) and
# trusted, so that it opens with its outputs drawn, in JupyterLab 4 served on a free
# localhost port with a token, opened in headless chromium (tests/browser/chromium.py),
# a number of the trace clicked so that its explanation shows. Not run by CI.
# Usage: bash tools/jupyterlab_screenshot.sh [VENV]
#   VENV: the virtual environment to use, made from Debian's python3 where missing (by
#   default a temporary one); the package is installed there with `pip install .` (about
#   5 minutes) unless it imports already. Needs the Debian packages of tools/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
venv=${1:-$work/venv}
server=
stop() {
  [ -z "$server" ] || { kill "$server" 2>/dev/null && wait "$server" 2>/dev/null || true; }
  rm -rf "$work"
}
trap stop EXIT

[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "jupyterlab>=4,<5" nbclient nbformat ipykernel
"$venv/bin/python" -c "import attn_trace" 2>/dev/null || "$venv/bin/pip" install -q --disable-pip-version-check .

# Jupyter's settings, signatures and runtime files in $work: the reader's own (a dark
# theme, news pop-ups) stay out of the picture, and nothing of this run stays behind.
export JUPYTER_CONFIG_DIR=$work/config JUPYTER_DATA_DIR=$work/data JUPYTER_RUNTIME_DIR=$work/runtime
mkdir -p "$work/notebooks" "$work/settings/@jupyterlab/apputils-extension"
echo '{"fetchNews": "false", "checkForUpdates": false, "doNotDisturbMode": true}' \
  > "$work/settings/@jupyterlab/apputils-extension/notification.jupyterlab-settings"
cp examples/attention.ipynb examples/damaged_on_arrival.json "$work/notebooks/"
"$venv/bin/python" - "$work/notebooks/attention.ipynb" <<'EOF'
import sys
import nbformat
from nbclient import NotebookClient
path = sys.argv[1]
notebook = nbformat.read(path, as_version=4)
NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": path.rsplit("/", 1)[0]}}).execute()
nbformat.write(notebook, path)
EOF
# JupyterLab draws an untrusted notebook's HTML sanitised, without the trace's frame.
"$venv/bin/jupyter" trust "$work/notebooks/attention.ipynb" >/dev/null

port=$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$("$venv/bin/python" -c 'import secrets; print(secrets.token_hex(16))')
# --allow-root: a container's or CI's root user may take the picture too.
"$venv/bin/jupyter" lab --no-browser --ip=127.0.0.1 --port="$port" --IdentityProvider.token="$token" \
  --ServerApp.root_dir="$work/notebooks" --LabApp.user_settings_dir="$work/settings" \
  --LabApp.workspaces_dir="$work/workspaces" --LabApp.expose_app_in_browser=True --allow-root > "$work/server.log" 2>&1 &
server=$!
for second in $(seq 60); do
  "$venv/bin/python" -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1])" \
    "http://127.0.0.1:$port/api/status?token=$token" 2>/dev/null && break
  if ! kill -0 "$server" 2>/dev/null || [ "$second" = 60 ]; then
    cat "$work/server.log" >&2; echo "jupyter lab did not answer on port $port" >&2; exit 1
  fi
  sleep 1
done

/usr/bin/python3 - "http://127.0.0.1:$port/lab/tree/attention.ipynb?token=$token" docs/images/jupyterlab_trace.png "$work" <<'EOF'
import os
import sys

sys.path.insert(0, "tests/browser")
from chromium import console_messages, start_browser  # first: it says so and exits where selenium is missing
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

url, picture, work = sys.argv[1:]
driver = start_browser(f"{work}/profile", "--window-size=1400,1100")
try:
    driver.get(url)
    wait = WebDriverWait(driver, 60)
    # The kernel started (the status bar says Idle, not Connecting), and the file browser
    # folded away so that the trace's page has room for its three columns.
    wait.until(lambda d: "Idle" in d.find_element(By.ID, "jp-main-statusbar").text)
    driver.execute_async_script("jupyterapp.commands.execute('application:toggle-left-area').then(arguments[0])")
    frame = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".jp-OutputArea iframe.attn-trace"))
    driver.switch_to.frame(frame)
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, "section.step[data-name='weights'] td[data-i='2'][data-j='1']")).click()
    wait.until(lambda d: "weights[2,1]" in d.find_element(By.ID, "explain-title").text)
    # The click scrolled the page part-way into a row of tables: from the mask's row on, the weights still show.
    driver.execute_script("document.querySelector(\"section.step[data-name='mask']\").scrollIntoView({block: 'start'})")
    driver.switch_to.default_content()
    # It scrolled the notebook too: back to the top of the code cell that made the trace.
    driver.execute_script("arguments[0].closest('.jp-Cell').scrollIntoView({block: 'start'})", frame)
    driver.save_screenshot(picture)
    print(f"{picture}: {os.path.getsize(picture)} bytes; console errors and warnings: {console_messages(driver) or 'none'}")
finally:
    driver.quit()
EOF
