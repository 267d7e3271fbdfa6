#!/usr/bin/env bash
# examples/model_view/: a whole model at a glance, made from the tiny GPT-2 of
# tests/models/gpt2_directory (2 layers × 4 heads, random weights, no download) on the
# words its golden uses: tools/export_layer.py --layers all writes one problem per layer
# (every head's weights, as transformers computed them, as expect), the words replace the
# ids as tokens, and `attn-trace view --format html` draws the page.
# Needs torch and transformers (PYTHON, default python3), like tools/export_layer.py.
# Usage: bash tools/make_model_view_example.sh [ATTN_TRACE]
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(realpath "${1:-build/attn-trace}")
PYTHON=${PYTHON:-python3}
export OMP_NUM_THREADS=1  # float32 sums in one order, as the goldens were made
OUT=examples/model_view
rm -rf "$OUT" && mkdir -p "$OUT"
words=$(python3 -c 'import json; print(" ".join(json.load(open("tests/models/gpt2_directory/problem.json"))["tokens"]))')
ids=$(cd tools && "$PYTHON" -c 'import sys; from make_config_goldens import WORDS; print(",".join(str(WORDS.index(w)) for w in sys.argv[1:]))' $words)
"$PYTHON" tools/export_layer.py tests/models/gpt2_directory --ids "$ids" --layers all --out "$OUT" | grep -v '^note' || true
for problem in "$OUT"/layer*/problem.json; do
  python3 - "$problem" $words <<'PY'
import json, sys
path, words = sys.argv[1], sys.argv[2:]
problem = json.load(open(path))
problem["tokens"] = words
problem["title"] = problem["title"].replace("gpt2_directory", "a tiny GPT-2")
open(path, "w").write(json.dumps(problem, indent=1) + "\n")
PY
done
"$T" check "$OUT"/layer*/problem.json
"$T" view "$OUT"/layer*/problem.json --format html > "$OUT/model_view.html"
echo "wrote $OUT: $(ls "$OUT" | tr '\n' ' ')"
