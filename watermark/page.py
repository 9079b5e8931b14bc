"""HTML page highlighting scored and green tokens (like the paper's appendix example).

Scored tokens (the set W) are highlighted: green background if the token is green under its
v_hat, yellow if it is scored but red; tokens outside W are plain. Hovering a token shows its
step, MM entropy and flags.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from watermark.detector import DetectionResult

STYLE = """
body { font-family: Georgia, serif; max-width: 52em; margin: 2em auto; line-height: 1.6; }
.text { white-space: pre-wrap; border: 1px solid #ccc; padding: 1em; margin-bottom: 0.5em; }
.g { background: #9be39b; } .r { background: #fff176; }
table { border-collapse: collapse; font-family: sans-serif; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
.legend span { padding: 0 0.4em; margin-right: 1em; }
"""


def _summary(result: DetectionResult) -> str:
    cells = [
        ("score", f"{result.score:.3f}"),
        ("green fraction", f"{result.green_fraction:.3f}"),
        ("scored / tokens", f"{result.num_scored} / {result.num_tokens}"),
        ("AWR", f"{result.awr:.3f}"),
        ("z", f"{result.z_score:.2f}"),
        ("p-value", f"{result.p_value:.3g}"),
        ("watermarked", "yes" if result.is_watermarked else "no"),
    ]
    if result.reason:
        cells.append(("reason", html.escape(result.reason)))
    head = "".join(f"<th>{k}</th>" for k, _ in cells)
    row = "".join(f"<td>{v}</td>" for _, v in cells)
    return f"<table><tr>{head}</tr><tr>{row}</tr></table>"


def _tokens(result: DetectionResult) -> str:
    parts = []
    for i, piece in enumerate(result.tokens):
        text = html.escape(piece)
        if not result.scored[i]:
            parts.append(text)
            continue
        cls = "g" if result.green[i] else "r"
        h = result.entropy[i]
        entropy = "-" if h is None else f"{h:.2f}"
        title = f"step {i + 1}, H={entropy}, {'green' if cls == 'g' else 'red'}"
        parts.append(f'<span class="{cls}" title="{title}">{text}</span>')
    return "".join(parts)


def render(results: Sequence[DetectionResult], titles: Sequence[str] | None = None) -> str:
    """A standalone HTML page for detection results (computed with per-token flags)."""
    sections = []
    for n, result in enumerate(results):
        title = html.escape(titles[n]) if titles else f"Text {n + 1}"
        sections.append(
            f"<h2>{title}</h2><div class='text'>{_tokens(result)}</div>{_summary(result)}"
        )
    legend = (
        "<p class='legend'><span class='g'>scored, green</span><span class='r'>scored, red</span>"
        "<span>not scored</span></p>"
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Watermark detection</title>"
        f"<style>{STYLE}</style></head><body><h1>Watermark detection</h1>{legend}"
        + "".join(sections)
        + "</body></html>\n"
    )
