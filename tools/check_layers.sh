#!/usr/bin/env bash
# The layers of the library, checked from its #include lines (docs/ARCHITECTURE.md
# draws them). Each file belongs to one layer; a file may include only its own
# layer or a lower one, a header under src/X/ only from src/X/ (json/ excepted:
# the internal JSON reader of the problem loader and the golden-trace reader, whose
# headers are not public), and no library
# string may name a command-line flag (the library marks settings, ⟦block_q⟧, and
# the CLI words them). Usage: bash tools/check_layers.sh   (exit 1 on a violation)
set -euo pipefail
shopt -s extglob
cd "$(dirname "$0")/.."

# Lowest first. A folder of src/, or a public header by its name. The backends stand on
# core alone, on json's floor: they know matrices and masks, never a problem.
layer_of() {
  case "$1" in
    src/core/* | include/core/*) echo "1 core" ;;
    src/json/*) echo "2 json" ;;
    src/arrays/* | include/arrays/*) echo "3 arrays" ;;
    src/problem/* | include/problem/*) echo "4 problem" ;;
    src/backend/* | include/backend/*) echo "2 backend" ;;
    src/pipeline/* | include/pipeline/*) echo "6 pipeline" ;;
    src/render/* | include/render/*) echo "7 render" ;;
    src/check/* | include/check/*) echo "8 check" ;;
    src/bench/* | include/bench/*) echo "8 bench" ;;
    src/teach/* | include/teach/*) echo "9 teach" ;;
    src/commands/* | include/commands/*) echo "10 commands" ;;
    src/cli/*) echo "11 cli" ;;
    src/python/*) echo "11 python" ;;
    *) echo "0 unknown" ;;
  esac
}

# The file an include names: a public header, one under src/, or one beside the includer.
resolve() {
  local from=$1 name=$2
  for candidate in include/*/"$name" "src/$name" "$(dirname "$from")/$name"; do
    [ -f "$candidate" ] && { realpath --relative-to=. "$candidate"; return; }
  done
}

problems=0
files=$(git ls-files --cached --others --exclude-standard 'src/*' 'include/*' | grep -E '\.(cpp|hpp|cu)$')
for file in $files; do
  read -r level name <<< "$(layer_of "$file")"
  if [ "$level" = 0 ]; then echo "$file: in no layer (add it to tools/check_layers.sh)"; problems=$((problems + 1)); continue; fi
  while IFS= read -r included; do
    target=$(resolve "$file" "$included")
    [ -n "$target" ] || continue
    read -r target_level target_name <<< "$(layer_of "$target")"
    if [ "$target_level" -gt "$level" ] || { [ "$target_level" = "$level" ] && [ "$target_name" != "$name" ]; }; then
      echo "$file ($name) includes $target ($target_name): an include that runs up or across"
      problems=$((problems + 1))
    fi
    case "$target" in
      src/json/*) ;;
      src/*) owner=$(echo "$target" | cut -d/ -f1-2)
             case "$file" in "$owner"/*) ;; *) echo "$file includes $target, private to $owner/"; problems=$((problems + 1)) ;; esac ;;
    esac
  done < <(sed -n 's/^#include "\(.*\)".*/\1/p' "$file")
done

# Flags in library strings (comments are skipped; the CLI's own files may name flags).
flags=$(git ls-files --cached --others --exclude-standard 'src/*' | grep -v '^src/cli/' | grep -E '\.(cpp|hpp|cu)$' |
        xargs grep -nE '"[^"]*(^|[ (`])--[a-z][a-z-]*' | grep -vE '^[^:]+:[0-9]+:\s*//' || true)
if [ -n "$flags" ]; then
  echo "library strings that name a command-line flag (mark the setting instead, ⟦name⟧):"
  echo "$flags"
  problems=$((problems + $(echo "$flags" | wc -l)))
fi

if [ "$problems" -gt 0 ]; then echo "check_layers: $problems problem(s)"; exit 1; fi
echo "check_layers: $(echo "$files" | wc -w) files, every include runs down or within its layer, no library string names a flag"
