#!/usr/bin/env bash
# Build the wasm core into www/pkg (wasm-bindgen --target web). Installs what is missing: the
# wasm32 target and wasm-bindgen-cli at exactly the wasm-bindgen version Cargo.lock pins (the
# CLI refuses a module built by another version).
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown \
  || rustup target add wasm32-unknown-unknown

want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{ print $2 }' || true)
if [ "$have" != "$want" ]; then
  echo "geneb: installing wasm-bindgen-cli $want (a few minutes, once)" >&2
  cargo install wasm-bindgen-cli --version "$want"
fi

profile=${GENEB_WASM_PROFILE:-release}
cargo rustc --lib --crate-type cdylib --target wasm32-unknown-unknown --profile "$profile" \
  --no-default-features --features burn
# The name section (4 MB of function names) only helps a debugger; panics still print their message.
wasm-bindgen --target web --no-typescript --remove-name-section --out-dir www/pkg \
  "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/$profile/geneb.wasm"
echo "geneb: wasm built into www/pkg ($(du -h www/pkg/geneb_bg.wasm | cut -f1))" >&2
