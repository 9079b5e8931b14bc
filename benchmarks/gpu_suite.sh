#!/usr/bin/env bash
# Every GPU check of the project in one run, for a machine with one CUDA GPU and the packaged
# models installed: the CUDA tests (tiny models and the real SmolLM2-135M + MiniLM, fast ==
# reference), generation and detection speed side by side with plain `generate`, bfloat16 against
# float32, a profile of the watermarked step, `detect-corpus` on the GPU, and the mapper trained on
# the GPU and compared with the shipped one.
#
#   bash benchmarks/gpu_suite.sh OUT_DIR [STEPS]
#   bash benchmarks/gpu_suite.sh OUT_DIR quick   # the quick check: under 8 minutes after staging
#
# The quick check (SUITE_SECONDS default 480) runs the CUDA tests of detection (the batch-mates
# test and batched == per-text included), CUDA against the CPU reference committed in
# benchmarks/cuda-reference.jsonl.gz (python -m benchmarks.cuda_reference make, on a CPU),
# token-level generation against plain at batch 64 in float32 and bfloat16, the robust config
# against plain at batch 64 (32 new tokens), detection of 256 texts at batch 256 (workers 0 and
# 8), plain generate profiled per dtype (why bfloat16 is slower), and prints one table
# (python -m benchmarks.gpu_table) to stdout and OUT_DIR/table.md.
#
# STEPS is a comma-separated subset of: tiny,real,agree,generate,detect,shared,sentences,confirm,
# profile,dtypes,train,corpus (default: all, in that order). Each step has its own time limit and
# the suite goes on when one fails;
# OUT_DIR/results.jsonl gets one JSON object per finished benchmark and OUT_DIR/suite.log the rest.
# SUITE_SECONDS (default 3600) bounds the whole run: a step gets at most the time left, and one with
# under 20 s left is skipped. GEN_BATCHES sets generate's batch sizes (default 1,16,64). `shared`
# times detect-corpus with 1, 4 and 8 processes on the GPU (--processes-per-gpu) over the texts
# that `detect` writes, so it runs after `detect`. `sentences` generates the sentence layer's
# texts for issue 54 (SENTENCE_METHODS, default ours-robust; the batches the committed seed lacks)
# and saves them, with the seed's, into OUT/seed-sentence-rewrites, even when the time limit
# stopped it after some batches: copy its files over data/eval-cache/sentence-rewrites/ here.
# `confirm` does the same for the 128 confirmation prompts of issue 54's quality line
# (configs/evaluation/confirm-sentence.yaml) into OUT/seed-confirm-sentence.
# On an H200 (2026-11-26) the steps took: tiny 53 s, real 64 s (GGUF conversion included), generate
# 175 s (with batch 256), train 67 s + 28 s. On 2026-11-27: tiny 68 s, real 57 s, generate 126 s
# (batches 1,16,64), detect 92 s; agree 64 texts under 95 s; profile with 8 detection workers did
# not finish within 180 s, so it profiles detection in process now. The models travel with
# benchmarks/gpu_stage.sh.
set -u
OUT=${1:?usage: gpu_suite.sh OUT_DIR [STEPS]}
STEPS=${2:-tiny,real,agree,generate,detect,shared,sentences,confirm,profile,dtypes,train,corpus}
QUICK_STEPS=quick-tiny,reference,quick-generate,robust,quick-detect,dtypes
if [[ $STEPS == quick ]]; then STEPS=$QUICK_STEPS; SUITE_SECONDS=${SUITE_SECONDS:-480}; fi
PY=${PYTHON:-python3}
mkdir -p "$OUT"
# tokenizers keep their thread pool: detection tokenizes every step's window for the embedder,
# which one host core cannot keep up with (10 ms per 200-token text on a 2-core CPU)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export PY OUT LOG="$OUT/suite.log" RESULTS="$OUT/results.jsonl" WORK=${WORK:-/tmp/gpu_suite}
mkdir -p "$WORK"

DEADLINE=$((SECONDS + ${SUITE_SECONDS:-3600}))
step() {  # step NAME SECONDS COMMAND...: run COMMAND under a time limit, logging its wall time
    local name=$1 limit=$2 start rc left=$((DEADLINE - SECONDS))
    shift 2
    [[ ",$STEPS," == *",$name,"* ]] || return 0
    ((left < limit)) && limit=$left
    if ((limit < 20)); then echo "== $name skipped: ${left}s left" | tee -a "$LOG"; return 0; fi
    echo "== $name (limit ${limit}s): $*" | tee -a "$LOG"
    start=$EPOCHREALTIME
    timeout "$limit" bash -c '"$@"' _ "$@" >>"$LOG" 2>&1  # "$@" may be a function below
    rc=$?
    awk -v n="$name" -v rc="$rc" -v a="$start" -v b="$EPOCHREALTIME" \
        'BEGIN { printf "{\"step\": \"%s\", \"rc\": %d, \"seconds\": %.1f}\n", n, rc, b - a }' |
        tee -a "$RESULTS" "$LOG"
}

bench() {  # bench SUBCOMMAND ARGS...: bench_gpu.py, its JSON answer appended to results.jsonl
    bench_as "$1" "$@"
}
bench_as() {  # bench_as LABEL SUBCOMMAND ARGS...: the same, the answer labelled LABEL
    local label=$1
    shift
    $PY -m benchmarks.bench_gpu "$@" --out "$OUT" >"$OUT/.answer" && \
        $PY -c "import json,sys; print(json.dumps({'bench': sys.argv[1], **json.load(open(sys.argv[2]))}))" \
            "$label" "$OUT/.answer" >>"$RESULTS"
}
dtypes() {  # plain generate profiled per dtype at batch 64, one JSON line
    $PY -m benchmarks.bench_dtypes --batch 64 --new-tokens 32 >>"$RESULTS"
}
reference() {  # CUDA against the committed CPU reference, one JSON line
    $PY -m benchmarks.cuda_reference check --device cuda >>"$RESULTS"
}
compare() {  # compare DIR...: mapper.compare's metrics of each mapper, one JSON line each
    for dir in "$@"; do
        $PY -m mapper.compare "$dir" | $PY -c "import json,sys; print(json.dumps(\
{'mapper_compare': sys.argv[1], **json.load(sys.stdin)}))" "$dir" >>"$RESULTS" || return 1
    done
}
shared() {  # shared K N: detect-corpus over the first N detect texts with K processes on the GPU
    local k=$1 n=$2 start
    head -n "$n" "$WORK/texts.jsonl" >"$WORK/shared-in.jsonl"
    rm -rf "$WORK/shared-out.jsonl" "$WORK/shared-out.jsonl.parts"
    start=$EPOCHREALTIME
    $PY -m watermark detect-corpus --input "$WORK/shared-in.jsonl" --output "$WORK/shared-out.jsonl" \
        --accelerator gpu --devices 1 --shard-size 64 --processes-per-gpu "$k" || return 1
    awk -v k="$k" -v n="$n" -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf \
        "{\"corpus_processes_per_gpu\": %d, \"texts\": %d, \"seconds\": %.1f, \"texts_per_s\": %.1f}\n", \
        k, n, b - a, n / (b - a) }' >>"$RESULTS"
    cp "$WORK/shared-out.jsonl" "$WORK/shared-$k.jsonl"
}
shared_all() {  # the startup of the K processes (model loading) is inside each figure
    shared 1 512 && shared 4 2000 && shared 8 2000 || return 1
    $PY -c "import json, sys
one, eight = ([json.loads(x) for x in open(f)][:512] for f in sys.argv[1:])
print(json.dumps({'shared_same_verdicts': sum(a['is_watermarked'] == b['is_watermarked'] for a, b in zip(one, eight)),
    'of': len(one), 'max_p_diff': max(abs(a['p_value'] - b['p_value']) for a, b in zip(one, eight))}))" \
        "$WORK/shared-1.jsonl" "$WORK/shared-8.jsonl" >>"$RESULTS"
}
export -f bench bench_as dtypes reference compare shared shared_all

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >>"$LOG" 2>&1
$PY -c "import torch, transformers, sentence_transformers as st; print('torch', torch.__version__, \
'transformers', transformers.__version__, 'sentence-transformers', st.__version__)" >>"$LOG" 2>&1

step quick-tiny 150 env WM_TEST_DEVICE=cuda $PY -m pytest -q -p no:cacheprovider \
    tests/watermark/test_detector.py tests/watermark/core/test_fixed_shapes.py \
    tests/watermark/test_processor.py
step reference 90 reference
step quick-generate 150 bench_as generate generate --batches 64 --dtypes float32,bfloat16 \
    --new-tokens 128 --modes plain,fused
step robust 120 bench_as robust generate --config robust --batches 64 \
    --dtypes float32 --new-tokens 32 --modes plain,fused
step quick-detect 100 bench detect --texts 256 --detect-batches 256 --embed-batches 256 --workers 0,8
step dtypes 90 dtypes
step tiny 150 env WM_TEST_DEVICE=cuda $PY -m pytest -q -p no:cacheprovider \
    tests/watermark/core/test_devices.py tests/watermark/test_generation.py \
    tests/watermark/test_detector.py tests/watermark/test_processor.py \
    tests/watermark/test_sentence_layer.py
step real 240 env WM_TEST_DEVICE=cuda $PY -m pytest -q -p no:cacheprovider \
    tests/watermark/test_real.py
step agree 100 bench agree --texts 64 --new-tokens 128
step generate 200 bench generate --batches "${GEN_BATCHES:-1,16,64}" --dtypes float32,bfloat16 --new-tokens 128 \
    --modes plain,fused
step detect 150 bench detect --texts 256 --detect-batches 64,256 --embed-batches 256 \
    --workers 0,8 --texts-out "$WORK/texts.jsonl" --corpus-texts 2000
step shared 240 shared_all
step sentences 300 $PY -m evaluation --config configs/evaluation/sentence-rewrites.yaml \
    --generate-only --no-progress --set models.device=cuda --out "$WORK/eval-sentences" \
    --set "curves.methods=[${SENTENCE_METHODS:-ours-robust}]"
step sentences 30 $PY -m evaluation --config configs/evaluation/sentence-rewrites.yaml \
    --out "$WORK/eval-sentences" --save-cache-seed "$OUT/seed-sentence-rewrites"
step confirm 240 $PY -m evaluation --config configs/evaluation/confirm-sentence.yaml \
    --generate-only --no-progress --set models.device=cuda --out "$WORK/eval-confirm"
step confirm 30 $PY -m evaluation --config configs/evaluation/confirm-sentence.yaml \
    --out "$WORK/eval-confirm" --save-cache-seed "$OUT/seed-confirm-sentence"
step profile 150 bench profile --batch 64 --new-tokens 32 --dtypes float32 --texts 64 \
    --profile-workers 0
step train 240 env TOKENIZERS_PARALLELISM=false $PY -m mapper.train fit \
    --config configs/mapper/default.yaml --threads 16 --trainer.accelerator gpu \
    --trainer.precision bf16-mixed --trainer.deterministic false --export_dir "$WORK/mapper-gpu"
step train 90 compare watermark/checkpoints/mapper-minilm "$WORK/mapper-gpu"
step corpus 120 $PY -m watermark detect-corpus --input "$WORK/texts.jsonl" \
    --output "$WORK/scores.jsonl" --accelerator gpu --devices 1 --shard-size 256 --workers 8
rm -f "$OUT/.answer"
if [[ $STEPS == "$QUICK_STEPS" ]]; then
    $PY -m benchmarks.gpu_table "$RESULTS" | tee "$OUT/table.md"
fi
