"""The evaluation report: Markdown tables and PNG plots from a results dict.

Plots (matplotlib, headless): one ROC figure per attack with a curve per method, and a box plot
of oracle perplexity per method next to human text, like the paper's figures. The curves'
section is :mod:`evaluation.curve_report`'s.
"""

from __future__ import annotations

from pathlib import Path

from evaluation.attack_map import report_map
from evaluation.config_files import sections_of
from evaluation.curve_report import curve_section
from evaluation.frontier import fmt, frontier_plots, frontier_table, rule_label
from evaluation.metrics import QUALITY_COLUMNS, TAIL_KEYS, median, roc_curve

LABELS = {
    "unwatermarked": "Unwatermarked",
    "ours": "Ours (adaptive)",
    "kgw0": "KGW-0",
    "kgw1": "KGW-1",
    "kgw2": "KGW-2",
    "synthid": "SynthID-Text",
    "human": "Human",
    "ours_opening": "Ours, first M tokens (no strengthening)",
}


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def main_table(results: dict) -> list[str]:
    """Detection and quality without attack, one row per method and human text."""
    rows = []
    for name, res in list(results["methods"].items()) + [("human", None)]:
        q = results["human_quality"] if res is None else res["quality"]
        det = (res or {}).get("attacks", {}).get("none", {})
        rows.append(
            [
                LABELS.get(name, name),
                fmt(det.get("roc_auc")),
                fmt(det.get("best_f1")),
                fmt(det.get("tpr@1%fpr")),
                fmt(det.get("tpr@10%fpr")),
                fmt((res or {}).get("fpr@p<0.01")),
                fmt(median(q["ppl"]), 2),
                *(fmt(q[f"rep{n}"]) for n in (1, 2, 3, 4)),
                *(fmt(q.get(k)) for k in TAIL_KEYS),
                fmt(q.get("longest_max"), 0),
                fmt(det.get("awr")),
                fmt((res or {}).get("seconds_per_text"), 2),
                fmt((res or {}).get("seconds_per_detection"), 2),
            ]
        )
    header = [
        "method",
        "ROC-AUC",
        "best F1",
        "TPR@1%FPR",
        "TPR@10%FPR",
        "human FPR@p<0.01",
        *QUALITY_COLUMNS,
        "AWR",
        "s / text",
        "s / detection",
    ]
    return _table(header, rows)


def attack_tables(results: dict) -> list[str]:
    """One table per detection metric: methods x attacks."""
    attacks = []
    for res in results["methods"].values():
        attacks += [a for a in res.get("attacks", {}) if a not in attacks]
    lines = []
    for metric in ("roc_auc", "tpr@1%fpr", "tpr@10%fpr", "best_f1", "words_kept"):
        rows = []
        for name, res in results["methods"].items():
            if "attacks" in res:
                cells = [fmt(res["attacks"].get(a, {}).get(metric)) for a in attacks]
                rows.append([LABELS.get(name, name), *cells])
        note = "share of the original's distinct words still in the attacked text"
        if metric != "words_kept":
            note = "positives: attacked texts; negatives: human texts"
        lines += [f"**{metric}** ({note})", ""]
        lines += _table(["method", *attacks], rows) + [""]
    return lines


def security_table(results: dict) -> list[str]:
    """The spoofing decryption rates."""
    spoof = results.get("spoofing")
    if not spoof:
        return []
    rows = []
    for name in ("kgw0", "kgw1", "kgw2", "ours", "ours_opening"):
        if name in spoof:
            s = spoof[name]
            rows.append(
                [
                    LABELS[name],
                    repr(s["context"]),
                    fmt(s["decryption_rate"]),
                    fmt(s["control_rate"]),
                    str(s["H"]),
                    str(s["observations"]),
                ]
            )
    header = [
        "method",
        "context",
        "decryption rate",
        "control (unwatermarked)",
        "\\|H\\|",
        "observations",
    ]
    return _table(header, rows)


def stealing_table(results: dict) -> list[str]:
    """Spoof success of the watermark-stealing attacker, per method and context width."""
    steal = results.get("stealing")
    if not steal:
        return []
    rows = []
    for name in ("kgw0", "kgw1", "kgw2", "ours"):
        if name in steal:
            cells = [fmt(steal[name][k]) for k in ("width0", "width1", "best", "control")]
            rows.append([LABELS[name], *cells])
    header = [
        "method",
        "flagged, context-free estimate",
        "flagged, previous-token estimate",
        "attacker's best",
        "control: own text flagged",
    ]
    intro = (
        f"Watermark stealing: {steal['steal_texts']} watermarked and as many own texts of "
        f"{steal['tokens']} tokens to learn from, {steal['spoof_texts']} spoofed texts per "
        f"cell, boost {steal['boost']}; share flagged at p < 0.01."
    )
    return [intro, "", *_table(header, rows)]


def green_table(results: dict) -> list[str]:
    """Green-token percentages (the paper's security table)."""
    rows = []
    for name in ("kgw0", "kgw1", "kgw2", "ours"):
        res = results["methods"].get(name)
        if res is None:
            continue
        green = res["attacks"]["none"]["green_fraction"]
        all_share = res.get("green_share_all_tokens") if name == "ours" else green
        scored = green if name == "ours" else None
        rows.append([LABELS[name], fmt(all_share), fmt(scored)])
    return _table(["method", "\\|G\\| / \\|U+W\\|", "\\|G^\\| / \\|W\\|"], rows)


def ablation_tables(results: dict) -> list[str]:
    """One table per ablated field of our watermark config."""
    ablations = results.get("ablations", {})
    attack = ablations.get("attack")
    lines = []
    if attack:
        lines += [f"Attacked columns: {attack['kind']}@{attack['strength']} vs human text.", ""]
    for key, rows in ablations.items():
        if key == "attack":
            continue
        body = []
        for r in rows:
            cells = [fmt(r.get("attack_roc_auc")), fmt(r.get("attack_best_f1"))] if attack else []
            value = r["value"]
            if isinstance(value, dict):
                value = ", ".join(f"{k}={v}" for k, v in value.items())
            body.append(
                [
                    str(value),
                    fmt(r["roc_auc"]),
                    fmt(r["best_f1"]),
                    *cells,
                    fmt(r["awr"]),
                    fmt(r["human_awr"]),
                    fmt(r["ppl_median"], 2),
                    fmt(r["rep4"]),
                    fmt(r["seconds_per_text"], 2),
                ]
            )
        extra = ["ROC-AUC (attacked)", "best F1 (attacked)"] if attack else []
        header = [
            key,
            "ROC-AUC",
            "best F1",
            *extra,
            "AWR",
            "AWR (human)",
            "PPL (median)",
            "rep-4",
            "s / text",
        ]
        lines += [f"**{key}**", ""] + _table(header, body) + [""]
    return lines


def plots(results: dict, out_dir: Path, oracle: str) -> list[str]:
    """Write the PNGs; return their file names."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    attacks = {a for r in results["methods"].values() for a in r.get("attacks", {})}
    for attack in sorted(attacks):
        fig, ax = plt.subplots(figsize=(4.5, 4.2))
        for name, res in results["methods"].items():
            if attack in res.get("attacks", {}):
                fpr, tpr = roc_curve(res["attacks"][attack]["z"], res["human_z"])
                auc = res["attacks"][attack]["roc_auc"]
                ax.plot(fpr, tpr, label=f"{LABELS.get(name, name)} ({auc:.3f})")
        ax.plot([0, 1], [0, 1], ":", color="grey")
        ax.set(xlabel="false positive rate", ylabel="true positive rate", title=f"ROC: {attack}")
        ax.legend(fontsize=8, loc="lower right")
        fig.tight_layout()
        names.append(f"roc_{attack.replace('@', '_')}.png")
        fig.savefig(out_dir / names[-1], dpi=110)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    series = [(LABELS.get(n, n), r["quality"]["ppl"]) for n, r in results["methods"].items()]
    series.append(("Human", results["human_quality"]["ppl"]))
    data = [[x for x in ppl if x == x] for _, ppl in series]
    ax.boxplot(data, showfliers=False)
    ax.set_xticks(range(1, len(series) + 1), [s for s, _ in series], rotation=20)
    ax.set(ylabel=f"perplexity ({oracle})", title="Oracle perplexity")
    fig.tight_layout()
    names.append("ppl_box.png")
    fig.savefig(out_dir / names[-1], dpi=110)
    plt.close(fig)
    return names


def _section(title: str, body: list[str]) -> list[str]:
    """A titled section, or nothing when ``body`` is empty."""
    return [title, "", *body, ""] if body else []


def write_report(results: dict, out_dir: Path, command: str) -> Path:
    """Write ``report.md`` and the PNGs into ``out_dir``; return the report path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg, wm = sections_of(results["config"]), results["watermark_config"]
    models, texts, methods = cfg.get("models", {}), cfg.get("texts", {}), cfg.get("methods", {})
    images = plots(results, out_dir, models["oracle"])
    curve_images, curve_lines = curve_section(results, out_dir)
    images = curve_images + images
    if results.get("curves"):
        drawn = report_map(results, out_dir, cfg.get("curves", {}).get("map_with", []))
        images += [drawn] if drawn else []
    frontier = results.get("frontier")
    frontier_lines = []
    if frontier:
        images = frontier_plots(frontier, out_dir) + images
        title = f"## Quality / power frontier ({frontier['prompts']} prompts)"
        frontier_lines = _section(title, frontier_table(frontier))
    ran, ours = bool(results["methods"]), "ours" in results["methods"]  # curves-only runs: neither
    security, stealing = security_table(results), stealing_table(results)
    security += [""] + stealing if security and stealing else stealing
    ablations = ablation_tables(results) if results.get("ablations") else []
    lines = [
        f"# Evaluation: {cfg['name']}",
        "",
        f"Reproduce: `{command}`",
        "",
        f"{results['units']} held-out documents ({', '.join(results['sources'])}); generator "
        f"`{models['generator']}`, up to {texts['new_tokens']} new tokens (EOS blocked before "
        f"{texts['min_new_tokens']}), top-k {wm['top_k']} / top-p {wm['top_p']}; ours: "
        f"{rule_label(wm)}, alpha {wm['alpha']}, M {wm['opening_steps']}, "
        f"MM `{wm['measurement_model']}`, embedder `{wm['embedder']}`; KGW: gamma "
        f"{methods['kgw_gamma']}, delta {methods['kgw_delta']}. Perplexity oracle "
        f"`{models['oracle']}`. Wall time of this invocation "
        f"{results['seconds']['total'] / 60:.1f} min (stages read from the cache count ~0 s; "
        "per-stage seconds in results.json).",
        "",
        *_section("## Detection and text quality (no attack)", main_table(results) if ran else []),
        *frontier_lines,
        *_section("## Robustness", (attack_tables(results) if ran else []) + curve_lines),
        *_section("## Green-token percentages", green_table(results) if ours else []),
        *_section("## Security (spoofing)", security),
        *_section("## Ablations (ours)", ablations),
        "## Plots",
        "",
        *[f"![{name}]({name})" for name in images],
        "",
    ]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
