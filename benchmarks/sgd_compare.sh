#!/usr/bin/env bash
# Fit on train, compare on test (issue 12): zero-shot, random, stratified, highest-RS and
# perturbed-guideline demos and a searched demo set, all fitted on one train split of USS SGD
# (half the dialogues, split by dialogue with --seed 0) and judged on the same test dialogues by a
# real local judge (Qwen2.5-Coder 0.5B, score read as the expected value of its answer
# distribution). Steps:
#   1. compare the five entries (writes OUT/train.jsonl, the training split, and the journals);
#   2. mitigate search on that train split (small budget) -> OUT/searched.json;
#   3. compare again with the searched spec as a sixth entry: the five resume from their
#      journals, the searched spec is used as given (not refitted).
# Run under the shared lock:  flock /work/bench.lock benchmarks/sgd_compare.sh
# Env: MODEL (gguf path), OUT (run folder, default runs/sgd-compare), LIMIT (test dialogues, 30),
#      SEARCH_LIMIT (train dialogues the search uses, 40), BUDGET (search LM requests, 60),
#      FROM_STEP (2 or 3 skips the steps before it, e.g. after step 1 ran; default 1).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
MODEL=${MODEL:-$HOME/.cache/mitigate/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf}
OUT=${OUT:-runs/sgd-compare}
LIMIT=${LIMIT:-30}
SEARCH_LIMIT=${SEARCH_LIMIT:-40}
BUDGET=${BUDGET:-60}
FROM_STEP=${FROM_STEP:-1}
export MITIGATE_DATA_DIR=${MITIGATE_DATA_DIR:-$ROOT/../shared/data}
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
mitigate() { python -m mitigate "$@"; }

common=(-b uss-sgd -c satisfaction --backend "local:$MODEL" --scoring expected --train 0.5 --seed 0
        --limit "$LIMIT" --concurrency 1 --no-progress --out "$OUT")
entries=(-p baseline -p "random-demos(k=2)" -p "demos(selector=stratified, k=2)"
         -p "highest-rs-demos(k=2, pool_size=24, likelihood=\"local:$MODEL\")" -p "perturbed-demos(m=2, n=2)")

if [ "$FROM_STEP" -le 1 ]; then
  echo "== 1. five entries, fitted on the train split $(date -u +%T)"
  mitigate compare "${common[@]}" "${entries[@]}"
fi
if [ "$FROM_STEP" -le 2 ]; then
  echo "== 2. search on $OUT/train.jsonl $(date -u +%T)"
  # the built-in USS prompt compare used, as a file (a jsonl benchmark has no built-in prompt)
  python -c "import sys; from mitigate.prompt.builtin import prompt_text; sys.stdout.write(prompt_text('uss-satisfaction'))" \
    > "$OUT/prompt.txt"
  mitigate search -b "jsonl:$OUT/train.jsonl" -c satisfaction --prompt "$OUT/prompt.txt" --backend "local:$MODEL" \
    --limit "$SEARCH_LIMIT" --budget "$BUDGET" --k 2 --concurrency 1 --seed 0 --no-progress --out "$OUT/searched.json"
fi
echo "== 3. all six entries $(date -u +%T)"
mitigate compare "${common[@]}" "${entries[@]}" -p "@$OUT/searched.json"
# a summary without benchmark text (the fitted specs in results.json hold whole dialogues)
python benchmarks/sgd_compare_summary.py "$OUT" benchmarks/results/sgd_compare.json "$OUT/searched.json"
echo "== done $(date -u +%T)"
