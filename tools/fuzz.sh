#!/usr/bin/env bash
# Fuzzing with libFuzzer under ASan + UBSan (clang). docs/RELIABILITY.md says what
# each target covers and what has been found.
#
#   bash tools/fuzz.sh TARGET SECONDS   fuzz one target (load_problem, run_pipeline, golden_trace, explain, npy, safetensors)
#                                       or `all` of them, SECONDS each
#   bash tools/fuzz.sh ci SECONDS       what CI runs: build, replay every saved finding
#                                       through the libFuzzer build, then fuzz each target
#
# The build is build-fuzz/ (clang, no CUDA, no tests). Each target keeps its corpus in
# build-fuzz/corpus/TARGET, grown from examples/, tests/golden/, fuzz/seeds/ and
# tests/fuzz-regressions/TARGET. A finding is written to build-fuzz/findings/TARGET/;
# once it is fixed, copy it into tests/fuzz-regressions/TARGET/, where every test run
# replays it (ctest's fuzz_replay_TARGET).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(load_problem run_pipeline golden_trace explain npy safetensors)

usage() { sed -n '4,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -eq 2 ] || usage
mode=$1 seconds=$2
[[ "$seconds" =~ ^[0-9]+$ ]] || usage

# clang and libFuzzer's runtime are in tools/setup.sh's one list of packages.
bash tools/setup.sh --check >/dev/null || bash tools/setup.sh --install
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTN_TRACE_FUZZ=ON \
  -DATTN_TRACE_TESTS=OFF -DATTN_TRACE_CUDA=OFF -DATTN_TRACE_WERROR="${ATTN_TRACE_WERROR:-OFF}" >/dev/null
cmake --build build-fuzz --target "${targets[@]/%/_fuzzer}"

# libFuzzer's options: 10 s is a hang, 2 GiB a leak of memory; inputs of up to 16 KiB.
fuzz_options=(-dict=fuzz/attn_trace.dict -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1)

run_target() {
  local target=$1 corpus=build-fuzz/corpus/$1 findings=build-fuzz/findings/$1
  mkdir -p "$corpus" "$findings" "tests/fuzz-regressions/$target"
  echo "== fuzzing $target for ${seconds} s"
  local seeds=(examples tests/golden tests/arrays "tests/fuzz-regressions/$target")
  [ -d "fuzz/seeds/$target" ] && seeds+=("fuzz/seeds/$target")
  if ! "build-fuzz/fuzz/${target}_fuzzer" "${fuzz_options[@]}" -max_total_time="$seconds" -artifact_prefix="$findings/" \
       "$corpus" "${seeds[@]}" 2> "build-fuzz/$target.log"; then
    tail -40 "build-fuzz/$target.log" >&2
    echo "fuzz: $target found a defect: the input is in $findings/; reproduce with build-fuzz/fuzz/${target}_fuzzer FILE" >&2
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)" "build-fuzz/$target.log" | tr '\n' ' '
  echo
}

replay() {
  for target in "${targets[@]}"; do
    echo "== replaying tests/fuzz-regressions/$target"
    "build-fuzz/fuzz/${target}_fuzzer" "${fuzz_options[@]}" -runs=0 "tests/fuzz-regressions/$target" 2>&1 | tail -1
  done
}

case "$mode" in
  ci) replay; for target in "${targets[@]}"; do run_target "$target"; done ;;
  all) for target in "${targets[@]}"; do run_target "$target"; done ;;
  *) [[ " ${targets[*]} " == *" $mode "* ]] || usage; run_target "$mode" ;;
esac
