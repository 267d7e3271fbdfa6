#!/usr/bin/env bash
# An example of tools/export_layer.py on every model-directory family: export layer 1 of each
# tiny model in tests/models/ (no tokenizer there, so the token ids are given: the golden's
# own, read back from its problem.json), check the export with attn-trace, and compare its
# hidden.npy with the golden's (the same bytes: the same model, ids and thread count); then a
# batch of two prompts over every layer of three of them.
# Needs torch and transformers, like the script; not part of the test suite.
# Usage: bash tools/export_layer_example.sh [ATTN_TRACE] [OUT]
#   ATTN_TRACE  the binary (default build/attn-trace); OUT  where to export (default a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
T=$(realpath "${1:-build/attn-trace}")
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
PYTHON=${PYTHON:-python3}
export OMP_NUM_THREADS=1  # float32 sums in one order, as tools/make_config_goldens.py ran them

failed=0
for f in llama_linear mistral_window qwen2_window qwen3_qknorm olmo2_qknorm gemma2 gemma3_text gemma3_multimodal \
         phi3 gpt_neox bloom deepseek_v3 gpt2_directory bert_directory; do
  ids=$(cd tools && "$PYTHON" -c 'import json, sys
from make_config_goldens import WORDS
print(",".join(str(WORDS.index(t)) for t in json.load(open(sys.argv[1]))["tokens"]))' "../tests/models/$f/problem.json")
  "$PYTHON" tools/export_layer.py "tests/models/$f" --ids "$ids" --layer 1 --out "$OUT/$f" > "$OUT/$f.log" 2>&1 \
    || { echo "$f: export failed:"; tail -3 "$OUT/$f.log"; failed=1; continue; }
  result=$("$T" check "$OUT/$f/problem.json" 2>&1 | tail -1) || failed=1
  same=$(cmp -s "$OUT/$f/hidden.npy" "tests/models/$f/hidden.npy" && echo "the golden's X" || echo "X differs from the golden's")
  printf '%-18s --ids %-22s %s (%s)\n' "$f" "$ids" "$result" "$same"
done
# A batch of prompts (padded, one run), every layer: one problem per prompt and layer, each
# checked against the prompt's own rows of what the model computed.
for f in gpt2_directory bert_directory gemma2; do
  "$PYTHON" tools/export_layer.py "tests/models/$f" --ids 5,9,3,7,2,8,4 --ids 6,1,3 --layers all --out "$OUT/batch_$f" > "$OUT/batch_$f.log" 2>&1 \
    || { echo "$f batch: export failed:"; tail -3 "$OUT/batch_$f.log"; failed=1; continue; }
  result=$("$T" check "$OUT/batch_$f"/prompt*/layer*/problem.json 2>&1 | tail -1) || failed=1
  printf '%-18s 2 prompts, --layers all: %s\n' "$f" "$result"
done
echo "exports in $OUT"
exit $failed
