"""HTML page highlighting scored, tested and green tokens (like the paper's appendix example).

Every token is its own ``<span class="t ...">`` with a thin outline, so token boundaries show
and the span texts concatenate to the original text. Scored tokens (the set W) hold an inner
``<span class="g">`` (green) or ``<span class="r">`` (red) by their first green list. Tokens
that entered the z-test get a solid underline, tokens only scored (repeats left out by
``unique_tokens`` / ``fresh_only``) a dashed one. With ``opening_steps`` M, tokens at steps
1..M (green list from the secret opening sentence, no entropy gate) get an overline. Hovering
a token shows its step, MM entropy and gamma. With the windowed test, the tokens of the best
window (the span that decided the verdict of a partly watermarked text) get a purple outline.
With the sentence layer, the first token of each tested sentence carries a marker with the
sentence's hits (its keyed outputs on their target sign), and the summary adds the sentence
test and the combined p-value. An optional prompt is shown above each text, and a summary
table (with the z-test counts) below it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TypeVar

from watermark.detect.result import DetectionResult

T = TypeVar("T")

STYLE = """
body { font-family: Georgia, serif; max-width: 52em; margin: 2em auto; line-height: 1.9; }
.prompt { border-left: 4px solid #999; background: #f3f3f3; color: #444; padding: 0.4em 1em;
  margin-bottom: 0.3em; font-style: italic; }
.prompt .label { font: bold 0.75em sans-serif; text-transform: uppercase; color: #777; }
.text, .prompt .body { white-space: pre-wrap; }
.text { border: 1px solid #ccc; padding: 1em; margin-bottom: 0.5em; }
.t { border: 1px solid #e2e2e2; border-radius: 2px; }
.t:nth-child(even) { border-color: #c9d3e0; }
.g { background: #9be39b; } .r { background: #ffb3a7; }
.t.tested { border-bottom: 2px solid #222; } .t.scored-only { border-bottom: 2px dashed #888; }
.t.opening { border-top: 2px solid #1565c0; }
.t.win { box-shadow: 0 0 0 2px #8e44ad; }
.t.sent::before { content: "\00a7" attr(data-hits); font: bold 0.65em sans-serif; color: #b35c00;
  vertical-align: super; margin-right: 0.15em; }
table { border-collapse: collapse; font-family: sans-serif; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: right; }
.legend { font-family: sans-serif; font-size: 0.9em; } .legend li { margin: 0.2em 0; }
"""


def _at(values: Sequence[T], i: int, default: T) -> T:
    """``values[i]``, or ``default`` where the per-token list is shorter (hand-built results)."""
    return values[i] if i < len(values) else default


def _number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary_html(result: DetectionResult) -> str:
    """One text's summary table (the z-test counts, the p-value and the verdict)."""
    cells = [
        ("score", f"{result.score:.3f}"),
        ("green fraction", f"{result.green_fraction:.3f}"),
        ("scored / tokens", f"{result.num_scored} / {result.num_tokens}"),
        ("AWR", f"{result.awr:.3f}"),
        ("tested", str(result.num_tested)),
        ("green tested (G)", str(result.num_green_tested)),
        ("expected green (E[G])", f"{result.expected_green:.2f}"),
        ("z", f"{result.z_score:.2f}"),
        ("p-value", f"{result.p_value:.3g}"),
        ("watermarked", "yes" if result.is_watermarked else "no"),
    ]
    if result.sentence_p_value is not None:
        cells += [
            ("sentences tested", str(result.num_sentences)),
            ("sentence hits / expected", f"{result.sentence_hits} / {result.sentence_expected:g}"),
            ("sentence p-value", f"{result.sentence_p_value:.3g}"),
            ("combined p-value", f"{result.combined_p_value:.3g}"),
        ]
    if result.reason:
        cells.append(("reason", result.reason))
    head = "".join(f"<th>{html.escape(k)}</th>" for k, _ in cells)
    row = "".join(f"<td>{html.escape(v)}</td>" for _, v in cells)
    return f"<table class='summary'><tr>{head}</tr><tr>{row}</tr></table>"


def sentence_starts(result: DetectionResult) -> dict[int, int]:
    """``{token index: hits}`` of the token each tested sentence starts in."""
    starts, at, out = sorted(result.sentences), 0, {}
    for i, piece in enumerate(result.tokens):
        while starts and starts[0][0] < at + len(piece):
            out.setdefault(i, starts.pop(0)[2])
        at += len(piece)
    return out


def _token(
    result: DetectionResult, i: int, opening_steps: int | None, hits: int | None = None
) -> str:
    """One token's span: classes for its marks, a hover title, the escaped text."""
    step = i + 1
    classes, notes = ["t"], [f"step {step}"]
    if hits is not None:
        classes.append("sent")
        notes.append(f"a tested sentence starts here: {hits} hits")
    if opening_steps is not None and step <= opening_steps:
        classes.append("opening")
        notes.append("opening step")
    if result.window and result.window[0] <= step <= result.window[1]:
        classes.append("win")
        notes.append("in the best window")
    notes.append(f"H={_number(_at(result.entropy, i, None))}")
    if _at(result.scored, i, False):
        green = _at(result.green, i, False)
        tested = _at(result.tested, i, False)
        classes.append("tested" if tested else "scored-only")
        colour = "g" if green else "r"
        notes += [
            f"gamma={_number(_at(result.gamma, i, None), 3)}",
            "green" if green else "red",
            f"green bits={_at(result.green_bits, i, int(green))}",
            "tested" if tested else "scored, not tested",
        ]
    else:
        classes.append("unscored")
        notes.append("not scored")
        colour = None
    title = html.escape(", ".join(notes))
    text = html.escape(result.tokens[i])
    if colour:
        text = f'<span class="{colour}">{text}</span>'
    data = "" if hits is None else f' data-hits="{hits}"'
    return f'<span class="{" ".join(classes)}" title="{title}"{data}>{text}</span>'


def _sample(marks: str, colour: str | None) -> str:
    inner = f"<span class='{colour}'>token</span>" if colour else "token"
    return f"<span class='t {marks}'>{inner}</span>"


def legend(opening_steps: int | None, windowed: bool = False, sentences: bool = False) -> str:
    """The legend list of the marks (``windowed``: with the best window's outline;
    ``sentences``: with the sentence layer's markers)."""
    items = [
        ("tested", "g", "scored, green: in the green list of its step"),
        ("tested", "r", "scored, red: not in the green list"),
        ("tested", "g", "solid underline: tested (entered the z-test)"),
        ("scored-only", "g", "dashed underline: only scored, a repeat left out of the test"),
        ("unscored", None, "no background: not scored (MM entropy below alpha)"),
    ]
    if opening_steps is not None:
        note = "use the secret opening sentence's green list and skip the entropy gate"
        items.append(("opening tested", "g", f"overline: steps 1..{opening_steps} {note}"))
    if windowed:
        items.append(("win tested", "g", "purple outline: the best window of the windowed test"))
    if sentences:
        items.append(("sent", None, "\u00a7k: a tested sentence starts, k keyed outputs on target"))
    rows = "".join(f"<li>{_sample(m, c)} {html.escape(text)}</li>" for m, c, text in items)
    hover = "<li>Hover a token to see its step, MM entropy H and gamma (null green chance).</li>"
    return f"<ul class='legend'>{rows}{hover}</ul>"


def _prompt(prompt: str | None) -> str:
    if not prompt:
        return ""
    return (
        "<div class='prompt'><div class='label'>prompt</div>"
        f"<div class='body'>{html.escape(prompt)}</div></div>"
    )


def text_html(result: DetectionResult, opening_steps: int | None = None) -> str:
    """One text's highlighted tokens, as a ``<div class='text'>`` (or a 'no tokens' note)."""
    starts = sentence_starts(result)
    tokens = "".join(
        _token(result, i, opening_steps, starts.get(i)) for i in range(len(result.tokens))
    )
    return f"<div class='text'>{tokens}</div>" if tokens else "<p><em>no tokens</em></p>"


def render(
    results: Sequence[DetectionResult],
    titles: Sequence[str] | None = None,
    prompts: Sequence[str | None] | None = None,
    opening_steps: int | None = None,
) -> str:
    """A standalone HTML page for detection results (computed with per-token flags).

    ``prompts[n]``, when a non-empty string, is shown above text n; ``opening_steps`` (the
    config's M) marks the tokens at steps 1..M.
    """
    sections = []
    for n, result in enumerate(results):
        title = titles[n] if titles and n < len(titles) and titles[n] else f"Text {n + 1}"
        prompt = prompts[n] if prompts and n < len(prompts) else None
        body = text_html(result, opening_steps)
        sections.append(
            f"<h2>{html.escape(title)}</h2>{_prompt(prompt)}{body}{summary_html(result)}"
        )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Watermark detection</title>"
        f"<style>{STYLE}</style></head><body><h1>Watermark detection</h1>"
        + legend(
            opening_steps,
            windowed=any(r.window for r in results),
            sentences=any(r.sentence_p_value is not None for r in results),
        )
        + "".join(sections)
        + "</body></html>\n"
    )
