"""The GPU quick check's table: its figures against the lines of the GPU issue, from the
``results.jsonl`` that ``benchmarks/gpu_suite.sh OUT quick`` writes (prints Markdown).

    python -m benchmarks.gpu_table OUT/results.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def read(path: Path) -> list[dict]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def latest(rows: list[dict], **match: object) -> dict | None:
    """The last row whose fields equal ``match``."""
    found = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return found[-1] if found else None


def generation_row(rows: list[dict], bench: str, dtype: str, batch: int) -> dict | None:
    answer = latest(rows, bench=bench)
    for row in (answer or {}).get("rows", []):
        if row["dtype"] == dtype and row["batch"] == batch:
            return row
    return None


def lines(rows: list[dict]) -> list[tuple[str, str, str, bool | None]]:
    """(figure, measured, line, met) per line of the issue."""
    out = []
    detect = latest(rows, bench="detect")
    best = None
    for row in (detect or {}).get("rows", []):
        if row["detect_batch"] == 256 and (
            best is None or row["texts_per_s"] > best["texts_per_s"]
        ):
            best = row
    out.append(
        (
            "detection, 200-token texts/s, batch 256, float32",
            f"{best['texts_per_s']} (workers {best['workers']})" if best else "not run",
            ">= 100",
            None if best is None else best["texts_per_s"] >= 100,
        )
    )
    for bench, dtype, line, label in (
        ("generate", "float32", 0.8, "token level / plain, batch 64, float32"),
        ("generate", "bfloat16", 0.8, "token level / plain, batch 64, bfloat16"),
        ("robust", "float32", 0.25, "robust config / plain, batch 64, float32"),
    ):
        row = generation_row(rows, bench, dtype, 64)
        shown = "not run"
        if row:
            shown = (
                f"{row['fused_tokens_per_s']} / {row['plain_tokens_per_s']} tokens/s = "
                f"{row['fused_ratio']}x"
            )
        out.append(
            (label, shown, f">= {line}x", None if row is None else row["fused_ratio"] >= line)
        )
    ref = latest(rows, cuda_reference="check")
    shown = "not run"
    if ref:
        shown = (
            f"decisions {ref['same_decisions']}/{ref['texts']}, green counts "
            f"{ref['same_green_counts']}/{ref['texts']}, largest p difference "
            f"{ref['max_p_difference']:.1e}"
        )
    met = None if ref is None else ref["same_decisions"] == ref["texts"]
    out.append(("CUDA against the CPU reference, 40 human + 40 watermarked", shown, "same", met))
    tests = latest(rows, step="quick-tiny")
    shown = "not run" if tests is None else f"rc {tests['rc']} in {tests['seconds']} s"
    met = None if tests is None else tests["rc"] == 0
    out.append(("CUDA tests (fast == reference, batch mates)", shown, "pass", met))
    out.append(
        ("plain generate per dtype, batch 64 (why bfloat16 is slower)", dtypes(rows), "read", None)
    )
    return out


def dtypes(rows: list[dict]) -> str:
    """Plain generate's ms per step, GPU busy share and top kernel per dtype (``dtypes``)."""
    answer = latest(rows, bench="dtypes")
    if not answer:
        return "not run"
    return "; ".join(
        f"{r['dtype']}: {r['plain_ms_per_step']} ms/step, GPU busy {r['gpu_busy_share']:.0%}, "
        f"top kernel {r['top_kernels_ms_per_step'][0][0][:48]} "
        f"({r['top_kernels_ms_per_step'][0][1]} ms/step)"
        for r in answer["rows"]
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("results", type=Path)
    args = parser.parse_args(argv)
    rows = read(args.results)
    device = next((r["device"] for r in rows if "device" in r), "unknown device")
    print(f"GPU quick check on {device}\n")
    print("| figure | measured | line | met |\n|---|---|---|---|")
    for figure, shown, line, met in lines(rows):
        print(f"| {figure} | {shown} | {line} | {'-' if met is None else 'yes' if met else 'no'} |")


if __name__ == "__main__":
    main()
