#!/usr/bin/env bash
# Queues a geneb run on Slurm: an array of N shards (geneb-array.sbatch), then the merge
# (geneb-merge.sbatch) once all of them succeeded. Prints "ARRAY_JOB_ID MERGE_JOB_ID".
#   submit.sh --shards 8 [--only 2,5] [--partition gpu] [--gpus 1] [--mem 16G] [--cpus 4]
#             [--time 12:00:00] RESULTS_DIR MERGED_DIR -- GENEB_EVAL_ARGUMENTS...
# --only resubmits some shard indices of a run (after a failure); finished pairs are kept.
# Logs go to RESULTS_DIR/logs/. Everything after `--` goes to `geneb eval`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
shards='' only='' options=()
usage() { sed -n '2,7p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
        --shards) shards=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --partition) options+=("--partition=$2"); shift 2 ;;
        --gpus) options+=("--gres=gpu:$2"); shift 2 ;;
        --mem) options+=("--mem=$2"); shift 2 ;;
        --cpus) options+=("--cpus-per-task=$2"); shift 2 ;;
        --time) options+=("--time=$2"); shift 2 ;;
        --) usage ;;
        -*) echo "submit.sh: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -ge 3 ] && [ "$3" = -- ] && [ -n "$shards" ] || usage
results=$1 merged=$2
shift 3
mkdir -p "$results/logs"
array=$(sbatch --parsable "${options[@]}" --array="${only:-0-$((shards - 1))}" \
    --export="ALL,GENEB_SHARDS=$shards" --output="$results/logs/shard-%a-job-%A.out" \
    "$here/geneb-array.sbatch" "$results" "$@")
array=${array%%;*}
# A cancelled or failed shard makes afterok unsatisfiable: drop the merge then instead of
# leaving it pending forever; resubmitting with --only queues a new one.
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    --output="$results/logs/merge-job-%j.out" "$here/geneb-merge.sbatch" "$results" "$merged")
echo "$array ${merge%%;*}"
