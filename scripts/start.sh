#!/usr/bin/env bash
# `npm start`: build the wasm core (installing what is missing) and serve the page on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh
exec node scripts/serve.mjs "$@"
