#!/usr/bin/env bash
# Build the wasm core into www/pkg (one thread) and www/pkg-threads (threads), both with
# wasm-bindgen --target web. Installs what is missing: the wasm32 target, the pinned nightly
# below (with rust-src, for build-std) and wasm-bindgen-cli at exactly the wasm-bindgen version
# Cargo.lock pins (the CLI refuses a module built by another version).
#
# Why two builds: WebAssembly threads need shared memory, which browsers give only to a
# cross-origin isolated page. The worker (www/worker.js) loads pkg-threads there and pkg
# everywhere else. GENEB_WASM_THREADS=0 skips the threaded build (the page then runs on one thread).
set -euo pipefail
cd "$(dirname "$0")/.."

# The threaded build needs nightly: std itself must be rebuilt with atomics (-Z build-std).
# Pinned, so a nightly regression never reaches CI unannounced; bump it deliberately.
NIGHTLY=nightly-2026-05-20

rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
  || rustup target add wasm32-unknown-unknown

want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$have" != "$want" ]; then
  echo "geneb: installing wasm-bindgen-cli $want (a few minutes, once)" >&2
  cargo install wasm-bindgen-cli --version "$want"
fi

profile=${GENEB_WASM_PROFILE:-release}
target=${CARGO_TARGET_DIR:-target}

# $1: output folder; $2: the cargo target dir's wasm32 output folder.
bindgen() {
  # The name section (4 MB of function names) only helps a debugger; panics still print their message.
  wasm-bindgen --target web --no-typescript --remove-name-section --out-dir "$1" "$2/geneb.wasm"
  echo "geneb: wasm built into $1 ($(du -h "$1/geneb_bg.wasm" | cut -f1))" >&2
}

cargo rustc --lib --crate-type cdylib --target wasm32-unknown-unknown --profile "$profile" \
  --no-default-features --features wgpu
bindgen www/pkg "$target/wasm32-unknown-unknown/$profile"

if [ "${GENEB_WASM_THREADS:-1}" = 0 ]; then
  rm -rf www/pkg-threads
  exit 0
fi
rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1 \
  && [ -d "$(rustup run "$NIGHTLY" rustc --print sysroot)/lib/rustlib/src/rust/library" ] \
  || rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src \
       --target wasm32-unknown-unknown
# CPU only (no `wgpu` feature: see Cargo.toml); the worker runs WebGPU calls on the one-thread
# build. Its own target dir: another compiler and other flags would otherwise rebuild the stable one.
# atomics + bulk-memory: shared memory; mutable-globals: per-thread stack pointers; simd128 as
# .cargo/config.toml gives the one-thread build (RUSTFLAGS replaces that file's flags). The
# `relaxed-simd` feature: the linear layers' fused multiply-add (src/encoder/layers/packed_matmul.rs,
# enabled for that loop alone: burn-flex's macerator does not build with +relaxed-simd), which
# every browser with wasm threads but Safari has; www/relaxed-simd.js sends the others to the
# one-thread build. rustc
# caps a shared memory at 1 GiB unless told: DNABERT-2-117M alone takes 0.9 GiB in the tab,
# so allow wasm32's whole 4 GiB, as the one-thread build has.
# The link of the final module must share its memory and export the thread-local storage
# symbols wasm-bindgen's thread support initialises per Web Worker; rustc no longer adds these
# by itself for +atomics (without them the module defines an unshared memory).
RUSTFLAGS='-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128 -C link-arg=--max-memory=4294967296' \
  CARGO_TARGET_DIR="$target/threads" \
  rustup run "$NIGHTLY" cargo rustc --lib --crate-type cdylib --target wasm32-unknown-unknown \
  --profile "$profile" --no-default-features --features threads,relaxed-simd -Z build-std=panic_abort,std \
  -- -C link-arg=--shared-memory -C link-arg=--import-memory \
  -C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size \
  -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base
bindgen www/pkg-threads "$target/threads/wasm32-unknown-unknown/$profile"
grep -q 'shared: *true' www/pkg-threads/geneb.js \
  || { echo "geneb: www/pkg-threads has no shared memory: the threaded build is broken" >&2; exit 1; }
# The service worker keeps these for offline use; wasm-bindgen names the helper's folder by hash.
(cd www/pkg-threads && find . -type f ! -name files.json | sed 's|^\./||' | sort \
  | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.stringify({files:s.split("\n").filter(Boolean)})))' \
  > files.json)
