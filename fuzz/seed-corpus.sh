#!/usr/bin/env bash
# Builds fuzz/corpus/<target>/ from the repository's own fixtures: real files of every kind,
# each as the target's entry point reads it (tests/support/parsers.rs: a first byte picking the
# layout or model, files cut at 0x1e). GENEB names the geneb binary that makes a result file.
set -euo pipefail
cd "$(dirname "$0")/.."
GENEB=${GENEB:-${CARGO_TARGET_DIR:-target}/debug/geneb}
corpus=fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{task_files,safetensors,pytorch,tokenizer,results,npz,model_config,parquet,saved_probe,shard}
good=tests/fixtures/inputs/good

# Writes the layout byte $2 and then the files $3... (joined by 0x1e) as corpus/$1/<name>.
seed() {
  local target=$1 layout=$2 name=$3
  shift 3
  {
    [ -n "$layout" ] && printf "\\x$(printf %02x "$layout")"
    local first=1
    for file in "$@"; do
      [ $first = 1 ] || printf '\x1e'
      first=0
      cat "$file"
    done
  } > "$corpus/$target/$name"
}

seed task_files 0 table "$good/promoters_table.csv"
seed task_files 1 tsv "$good/splice_sites.tsv"
seed task_files 2 fasta "$good/fasta_split_in_headers.fa"
seed task_files 3 gzip "$good/gzipped_table.csv.gz"
seed task_files 4 pair "$good/pair_task/train.csv" "$good/pair_task/test.csv"
seed task_files 5 fasta_pair "$good/fasta_pair/train.fa" "$good/fasta_pair/test.fa"
classes=$(find "$good/fasta_classes" -name '*.fa' | sort | head -4)
# shellcheck disable=SC2086
seed task_files 6 fasta_classes $classes
bed=$(find tests/fixtures/import/bed -name '*.bed' | head -1)
genome=$(find tests/fixtures/import/bed -name '*.fa*' | head -1)
seed task_files 8 bed "$bed" "$genome"
seed task_files 9 manifest "$good/tasks.json" "$good/promoters_table.csv" "$good/fasta_split_in_headers.fa"
seed task_files 11 gzipped_inside "$good/promoters_table.csv"
seed task_files 12 sequences "$good/fasta_split_in_headers.fa"
seed task_files 13 labels "$good/labels.txt"

# A small safetensors file (two tensors, F32 and F16), and the BERT fixture's header alone.
python3 - "$corpus/safetensors/small" <<'PY'
import json, struct, sys
header = json.dumps({"__metadata__": {"format": "pt"},
                     "w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                     "h": {"dtype": "F16", "shape": [2], "data_offsets": [16, 20]}}).encode()
data = struct.pack("<4f", 1.0, -2.5, 3.0, 0.25) + struct.pack("<2e", 0.5, -8.0)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(header)) + header + data)
PY
head -c 4096 tests/fixtures/models/bert/model.safetensors > "$corpus/safetensors/bert_head"
seed pytorch "" small_state tests/fixtures/pytorch/small_state.bin

for dir in tests/fixtures/tokenizers/*/; do
  files=()
  for name in config.json tokenizer.json vocab.txt tokenizer_config.json special_tokens_map.json; do
    if [ -f "$dir$name" ]; then files+=("$dir$name"); else files+=(/dev/null); fi
  done
  seed tokenizer "" "$(basename "$dir")" "${files[@]}"
done
# The large ones again, cut to a few dozen tokens: the tokenizer target runs with -max_len=4096.
python3 fuzz/small_tokenizer_seeds.py tests/fixtures/tokenizers "$corpus/tokenizer"

scratch=$(mktemp -d)
"$GENEB" eval --model kmer:2 --task "$good/promoters_table.csv" --out "$scratch/a.json" --quiet
"$GENEB" eval --model kmer:3 --task "$good/splice_sites.tsv" --out "$scratch/b.json" --quiet
seed results "" one "$scratch/a.json"
seed results "" two "$scratch/a.json" "$scratch/b.json"
printf '{"submissions": [%s, %s]}' "$(cat "$scratch/a.json")" "$(cat "$scratch/b.json")" > "$corpus/results/bundle"
rm -rf "$scratch"

seed npz "" probe_small tests/fixtures/cli/probe_small.npz
# The same target reads its input as one .npy too: X_train of a real .npz.
python3 -c 'import sys, zipfile; open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read("X_train.npy"))' \
  tests/fixtures/own_embeddings/binary.npz "$corpus/npz/x_train_npy"

for table in $(find tests/fixtures/parquet tests/e2e/fixtures/hostile -name '*.parquet' | sort); do
  seed parquet "" "$(basename "$(dirname "$table")")_$(basename "$table")" "$table"
done

# A saved probe and a sharded run of two tasks (its plan, then each pair's result, as
# tests/support/parsers.rs `shard` lays them out: models × tasks in the plan's order).
scratch=$(mktemp -d)
"$GENEB" eval --model kmer:2 --task "$good/promoters_table.csv" --regimes full --quiet \
  --save-probe "$scratch/probe.json" > /dev/null
seed saved_probe "" kmer2 "$scratch/probe.json"
"$GENEB" eval --model kmer:2 --task "$good/promoters_table.csv" --task "$good/splice_sites.tsv" \
  --regimes full --quiet --out-dir "$scratch/run"
pairs=()
for task in $(python3 -c 'import json,sys; print(" ".join(t["id"] for t in json.load(open(sys.argv[1]))["tasks"]))' "$scratch/run/plan.json"); do
  pairs+=("$scratch/run/kmer%3A2/$task.json")
done
seed shard "" two_tasks "$scratch/run/plan.json" "${pairs[@]}"
rm -rf "$scratch"

n=0
for model in bert dnabert2 nt_v2 hyena/tiny caduceus/ph; do
  seed model_config $n "$(basename "$model")" "tests/fixtures/models/$model/config.json"
  n=$((n + 1))
done
find "$corpus" -type f | wc -l
