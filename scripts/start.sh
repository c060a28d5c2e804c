#!/usr/bin/env bash
# `npm start`: build the wasm cores (installing what is missing), build the static site dist/
# from them (scripts/build-dist.mjs), and serve it on 127.0.0.1 as a host would: precompressed,
# with the COOP/COEP headers that let the page run the threaded core.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh
node scripts/build-dist.mjs
exec node scripts/serve.mjs --dist "$@"
