#!/usr/bin/env bash
# One command for the GPU machine: builds with CUDA, runs every CUDA test and the
# GPU benchmark, and writes the log under $OUT (or ./gpu-check). Usage:
#   bash tools/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
mkdir -p "$out"
log="$out/gpu_check.log"
{
  echo "== $(date -u)"; nvidia-smi || true
  bash tools/setup.sh >/dev/null 2>&1 || echo "setup.sh failed (packages?)"
  # sm_90 only: the H200 this is written for (CI compiles sm_80 and sm_90).
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTN_TRACE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 && cmake --build build-cuda
  echo "== CUDA tests (the products, the f32 fused kernel, the tensor-core kernel against its CPU emulation)"
  ctest --test-dir build-cuda --output-on-failure -R "cuda" -V
  echo "== every test"
  ctest --test-dir build-cuda --output-on-failure -j8
  echo "== --backend cuda on the examples"
  ./build-cuda/attn-trace check examples/*.json tests/golden/*.json --backend cuda
  echo "== benchmark"
  ./build-cuda/attn-trace bench --n 1024,4096,16384 --dk 64 --impl naive,fast,cuda --format text || true
  ./build-cuda/attn-trace bench --n 1024,4096,16384 --dk 64 --causal --impl fast,cuda --format text || true
} 2>&1 | tee "$log"
