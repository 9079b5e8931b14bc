"""The GPU quick check's table reads the suite's results and judges each line."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.gpu_table import lines, main


def generation(bench: str, ratios: dict) -> dict:
    rows = [
        {
            "dtype": d,
            "batch": b,
            "plain_tokens_per_s": 100.0,
            "fused_tokens_per_s": 100.0 * r,
            "fused_ratio": r,
        }
        for (d, b), r in ratios.items()
    ]
    return {"bench": bench, "device": "NVIDIA H200", "rows": rows}


def test_lines_judge_each_figure(tmp_path: Path, capsys) -> None:
    rows = [
        {"step": "quick-tiny", "rc": 0, "seconds": 61.2},
        {
            "cuda_reference": "check",
            "texts": 80,
            "same_decisions": 80,
            "same_green_counts": 79,
            "max_p_difference": 2e-4,
        },
        generation(
            "generate", {("float32", 64): 0.83, ("bfloat16", 64): 0.71, ("float32", 16): 0.99}
        ),
        generation("robust", {("float32", 64): 0.3}),
        {
            "bench": "detect",
            "rows": [
                {"detect_batch": 256, "workers": 0, "texts_per_s": 80.0},
                {"detect_batch": 256, "workers": 8, "texts_per_s": 130.5},
                {"detect_batch": 64, "workers": 8, "texts_per_s": 300.0},
            ],
        },
        {
            "bench": "dtypes",
            "rows": [
                {
                    "dtype": "float32",
                    "plain_ms_per_step": 25.8,
                    "gpu_busy_share": 0.41,
                    "top_kernels_ms_per_step": [["ampere_sgemm_128x64_tn", 6.1]],
                },
                {
                    "dtype": "bfloat16",
                    "plain_ms_per_step": 108.0,
                    "gpu_busy_share": 0.09,
                    "top_kernels_ms_per_step": [["aten::copy_", 3.2]],
                },
            ],
        },
    ]
    found = {figure: (shown, met) for figure, shown, _, met in lines(rows)}
    shown, met = found["plain generate per dtype, batch 64 (why bfloat16 is slower)"]
    assert met is None and "float32: 25.8 ms/step, GPU busy 41%" in shown
    assert "bfloat16: 108.0 ms/step, GPU busy 9%, top kernel aten::copy_ (3.2 ms/step)" in shown
    assert found["detection, 200-token texts/s, batch 256, float32"] == ("130.5 (workers 8)", True)
    assert found["token level / plain, batch 64, float32"][1] is True
    assert found["token level / plain, batch 64, bfloat16"][1] is False
    assert found["robust config / plain, batch 64, float32"][1] is True
    assert found["CUDA against the CPU reference, 40 human + 40 watermarked"][1] is True
    assert found["CUDA tests (fast == reference, batch mates)"] == ("rc 0 in 61.2 s", True)
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows[:1]) + "\nnot json\n")
    main([str(path)])
    out = capsys.readouterr().out
    assert "| detection, 200-token texts/s, batch 256, float32 | not run | >= 100 | - |" in out
