#!/usr/bin/env bash
# The GPU check of issue 11: on a machine with a GPU, in one run of under 10 minutes,
#   1. native: `geneb embed` on wgpu vs on the CPU (ratio, agreement, kernel launches per pass),
#   2. PyTorch: geneb's wgpu vs PyTorch (CUDA when torch sees one), where torch is installed,
#   3. Dawn: the page's one-thread wasm core on Dawn (Chrome's WebGPU engine, npm `webgpu`)
#      beside native wgpu, where node, node_modules/webgpu and www/pkg are there,
#   4. browser: WebGPU vs the wasm CPU backend in headless Chromium, where there is one,
# for the four bench models (NT-v2-50m, DNABERT-2-117M, HyenaDNA-tiny, Caduceus-PH-1k) at 200
# and 1,000 nt;
#   5. kernel by kernel (bench/dawn_profile.mjs): GPU µs per kernel on Dawn and native wgpu joined
#      by kernel, the adapter as each engine sees it, time per call at 1, 2 and 12 layers
#      (NT-v2-50m's and DNABERT-2-117M's shapes), Dawn's robustness, validation and
#      workgroup-zeroing toggles each off; where node, node_modules/webgpu and www/pkg are there;
#   6. Enformer (issue 37): one sequence at enformer-official-rough's shape (252M parameters,
#      every input 196,608 bp) on wgpu and on the CPU, with GPU bytes, peak RSS and kernel
#      profile (bench/enformer_wgpu.py; its 1 GB checkpoint written there by random_models.py).
# Such a machine has no package registry and gets the working tree plus named
# build outputs (64 MiB): the release binary is carried, the checkpoints are written there from
# a seed by bench/random_models.py (python3 + numpy). Each part that cannot run says why and the
# others still run; the exit status is 1 when a part that ran failed.
#
#   bash bench/gpu-check.sh [--geneb PATH] [--quick] [--models a,b] [--lengths 200,1000]
#                           [--parts 1,2,3,4,5,6] [--carried DIR]
#
# --geneb: the release binary, or it compressed (.gz or .xz; default $CARGO_TARGET_DIR or
#          target, release/geneb);
# --quick: 4 sequences per length instead of 16 (a dry run on a machine without a GPU), and
#          part 5 with fewer calls and the toggles on NT-v2 only;
# --parts: which parts to run (default all);
# --carried: a folder with pkg.tgz (www/pkg, the one-thread wasm core) and webgpu.tgz (npm
#          webgpu's index.js, package.json and dist/linux-x64), unpacked where they are missing:
#          packed, they keep the carry under 64 MiB (bench/README.md, "Kernel by kernel").
# Output folder: $GPU_CHECK_OUT (default target/gpu-check).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GENEB="${CARGO_TARGET_DIR:-$ROOT/target}/release/geneb"
COUNT=16
MODELS=nt-v2-50m,dnabert2-117m,hyenadna-tiny,caduceus-ph-1k
LENGTHS=200,1000
PARTS=1,2,3,4,5,6
CARRIED=
QUICK=
while [ $# -gt 0 ]; do
  case "$1" in
    --geneb) GENEB="$2"; shift 2 ;;
    --quick) COUNT=4; QUICK=--quick; shift ;;
    --models) MODELS="$2"; shift 2 ;;
    --lengths) LENGTHS="$2"; shift 2 ;;
    --parts) PARTS="$2"; shift 2 ;;
    --carried) CARRIED="$2"; shift 2 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
GENEB="$(realpath -m "$GENEB")"
OUT="$(realpath -m "${GPU_CHECK_OUT:-$ROOT/target/gpu-check}")"
mkdir -p "$OUT"
# Vulkan loaders warn without it.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
cd "$ROOT"

# The stripped release binary is ~60 MiB, the working tree ~13: carried gzipped (~16 MiB) they fit
# the 64 MiB a lent machine gets (`strip -o geneb target/release/geneb && gzip geneb`).
if [ "${GENEB%.gz}" != "$GENEB" ] && [ -f "$GENEB" ]; then
  gunzip -c "$GENEB" > "$OUT/geneb" && chmod +x "$OUT/geneb" && GENEB="$OUT/geneb"
elif [ "${GENEB%.xz}" != "$GENEB" ] && [ -f "$GENEB" ]; then
  xz -dc "$GENEB" > "$OUT/geneb" && chmod +x "$OUT/geneb" && GENEB="$OUT/geneb"
fi
if ! [ -x "$GENEB" ]; then
  echo "gpu-check: no geneb binary at $GENEB (build it with cargo build --release --bin geneb and carry it, or pass --geneb)" >&2
  exit 2
fi
if ! python3 -c 'import numpy' 2>/dev/null; then
  echo "gpu-check: needs python3 with numpy (for the checkpoints and the timing harness)" >&2
  exit 2
fi
# The page's wasm core and Dawn's Node binding, carried packed.
if [ -n "$CARRIED" ]; then
  if [ -f "$CARRIED/pkg.tgz" ] && ! ls www/pkg/*.wasm >/dev/null 2>&1; then
    mkdir -p www && tar -C www -xzf "$CARRIED/pkg.tgz"
  fi
  if [ -f "$CARRIED/webgpu.tgz" ] && ! [ -e node_modules/webgpu ]; then
    mkdir -p node_modules && tar -C node_modules -xzf "$CARRIED/webgpu.tgz"
  fi
fi
part() { [[ ",$PARTS," == *",$1,"* ]]; }
# Why Dawn cannot run here, or nothing.
dawn_missing() {
  if ! command -v node >/dev/null; then echo "no node"
  elif ! node -e 'import("webgpu").catch(() => process.exit(1))' 2>/dev/null; then
    echo "no node_modules/webgpu: carry it (--carried) or run npm ci where a registry is"
  elif ! ls www/pkg/*.wasm >/dev/null 2>&1; then
    echo "no wasm build in www/pkg: carry it (--carried) from GENEB_WASM_THREADS=0 scripts/build-wasm.sh"
  fi
}
status=0
# on_dawn LABEL COMMAND...: runs a Dawn part, or says why it cannot run here.
on_dawn() {
  local label="$1" missing
  shift
  missing=$(dawn_missing)
  if [ -n "$missing" ]; then
    echo "$label: skipped ($missing)"
  else
    "$@" || status=1
  fi
}
echo "gpu-check $(date -u +%FT%TZ) on $(uname -n): $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "geneb: $GENEB ($("$GENEB" --version))"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/GPU: /'
fi

if part 1; then
  echo
  echo "== 1. native: geneb wgpu vs geneb CPU, random checkpoints of the bench shapes (seed 0), $COUNT sequences per length"
  python3 bench/gpu_check.py --geneb "$GENEB" --out "$OUT" --models "$MODELS" --lengths "$LENGTHS" --count "$COUNT" || status=1
fi

if part 2; then
  echo
  echo "== 2. PyTorch vs geneb wgpu (bench/model_bench.py)"
  if python3 -c 'import torch, transformers, safetensors, tokenizers' 2>/dev/null; then
    device=$(python3 -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
    echo "PyTorch $(python3 -c 'import torch; print(torch.__version__)') on $device"
    for model in ${MODELS//,/ }; do
      # A model whose reference is missing here (HyenaDNA-tiny's real weights, a Caduceus
      # checkout) is named by model_bench.py and skipped; the others still run.
      python3 bench/model_bench.py --quick --geneb "$GENEB" --backends wgpu --torch-device "$device" \
        --models "$model" --lengths "$LENGTHS" --timeout 300 || echo "PyTorch: $model skipped or failed (above)"
    done
  else
    echo "PyTorch: skipped (python3 here cannot import torch, transformers, safetensors and tokenizers)"
  fi
fi

if part 3; then
  echo
  echo "== 3. the page's core on Dawn, Chrome's WebGPU engine, beside native wgpu (bench/dawn_bench.mjs; needs part 1's runs)"
  on_dawn Dawn node bench/dawn_bench.mjs --models-dir "$OUT" --models "$MODELS" --lengths "$LENGTHS" --timeout 300
fi

if part 4; then
  echo
  echo "== 4. browser: WebGPU vs the wasm CPU backend (bench/browser_bench.mjs)"
  chromium="${GENEB_CHROMIUM:-/usr/bin/chromium}"
  if ! command -v node >/dev/null; then
    echo "browser: skipped (no node)"
  elif ! [ -x "$chromium" ]; then
    echo "browser: skipped (no Chromium at $chromium; set GENEB_CHROMIUM)"
  elif ! node -e 'require.resolve("playwright-core")' 2>/dev/null; then
    echo "browser: skipped (no node_modules/playwright-core: carry node_modules or run npm ci where a registry is)"
  elif ! ls www/pkg/*.wasm >/dev/null 2>&1; then
    echo "browser: skipped (no wasm build in www/pkg: carry it from scripts/build-wasm.sh)"
  else
    node bench/browser_bench.mjs --quick --models "$MODELS" --lengths "$LENGTHS" --models-dir "$OUT" \
      --reference geneb_cpu.npy --timeout 300 || status=1
  fi
fi

if part 5; then
  echo
  echo "== 5. kernel by kernel: GPU time per kernel on Dawn and native wgpu, the adapter each sees, time per call at 1, 2 and 12 layers, Dawn's toggles (bench/dawn_profile.mjs)"
  on_dawn profile node bench/dawn_profile.mjs --geneb "$GENEB" --out "$OUT" $QUICK --timeout 300
fi

if part 6; then
  echo
  echo "== 6. Enformer at full size: one sequence on wgpu and on the CPU (bench/enformer_wgpu.py; the checkpoint is written first, ~1 GB)"
  python3 bench/enformer_wgpu.py --geneb "$GENEB" --dir "$OUT/enformer-run" --profile --timeout 150 \
    > "$OUT/enformer.json" || status=1
  python3 - "$OUT/enformer.json" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
for b in ("wgpu", "cpu", "wgpu_profile"):
    run = r.get(b, {})
    if "failed" in run:
        print(f"{b}: FAILED {run['failed']}")
    elif run:
        after = run.get("after_loading", {})
        print(f"{b}: {run['wall_s']} s wall ({after.get('wall_s')} s after loading), {run['cpu_s']} CPU-s, "
              f"peak RSS {run['peak_rss_bytes'] / 2**30:.2f} GiB, GPU bytes after the pass {run.get('gpu_bytes_after_pass')}")
print(f"max |wgpu - cpu| {r.get('max_abs_delta_wgpu_cpu')}; load average {r['load_average_end']}")
PY
fi
exit $status
