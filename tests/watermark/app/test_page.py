"""Fast tests of the HTML page (hand-built DetectionResults, no models)."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from watermark.app.page import render
from watermark.detect.result import DetectionResult


class _Spans(HTMLParser):
    """Token spans ``span.t`` of the text areas: (classes, title, text), in order.

    The classes include the inner colour span's class (``g`` or ``r``) when there is one.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.spans: list[tuple[set[str], str, str]] = []
        self._current: list | None = None
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        attrs = dict(attrs)
        classes = set((attrs.get("class") or "").split())
        if tag != "span":
            return
        if self._current is not None:
            self._current[0] |= classes
            self._depth += 1
        elif "t" in classes and "title" in attrs:
            self._current, self._depth = [classes, attrs["title"], ""], 1

    def handle_data(self, data: str) -> None:
        if self._current is not None:
            self._current[2] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self._current is not None:
            self._depth -= 1
            if self._depth == 0:
                self.spans.append(tuple(self._current))
                self._current = None


def _spans(page: str) -> list[tuple[set[str], str, str]]:
    parser = _Spans()
    parser.feed(page)
    return parser.spans


def _result() -> DetectionResult:
    """Five tokens: 1 tested green, 2 tested red, 3 not scored, 4 scored-only green, 5 '<b>'."""
    tokens = ["Hello", " world", "\n\n  ", " Hello", " <b>&amp;"]
    return DetectionResult(
        score=2.0,
        green_fraction=0.75,
        num_scored=4,
        num_tokens=5,
        awr=0.8,
        num_tested=3,
        num_green_tested=2,
        expected_green=0.7512,
        z_score=1.5,
        p_value=0.04,
        is_watermarked=True,
        token_ids=[1, 2, 3, 1, 4],
        tokens=tokens,
        scored=[True, True, False, True, True],
        green=[True, False, False, True, True],
        green_bits=[1, 0, 0, 1, 1],
        tested=[True, True, False, False, True],
        entropy=[3.21, 2.5, 0.1, 2.0, None],
        gamma=[0.25, 0.25, None, 0.25, 0.2],
        vocab_green=[0.25, 0.25, None, 0.25, 0.2],
    )


def test_token_spans_rebuild_the_text() -> None:
    result = _result()
    page = render([result])
    spans = _spans(page)
    assert len(spans) == len(result.tokens)  # every token, unscored ones included
    assert "".join(text for _, _, text in spans) == "".join(result.tokens)
    area = re.search(r"<div class='text'>(.*?)</div>", page, re.S).group(1)
    assert html.unescape(re.sub(r"<[^>]+>", "", area)) == "".join(result.tokens)
    assert "<b>" not in area and "&lt;b&gt;&amp;amp;" in area
    assert "white-space: pre-wrap" in page


def test_tested_and_scored_only_classes() -> None:
    spans = _spans(render([_result()]))
    classes = [c for c, _, _ in spans]
    assert {"g", "tested"} <= classes[0]
    assert {"r", "tested"} <= classes[1]
    assert "unscored" in classes[2] and not classes[2] & {"g", "r", "tested", "scored-only"}
    assert {"g", "scored-only"} <= classes[3] and "tested" not in classes[3]
    assert "tested" in classes[4] and "scored-only" not in classes[4]


def test_colour_spans_count_scored_tokens() -> None:
    page = render([_result()], opening_steps=50)  # the legend uses single quotes
    assert page.count('class="g"') == 3 and page.count('class="r"') == 1


def test_hover_title_has_step_entropy_gamma() -> None:
    spans = _spans(render([_result()]))
    assert "step 1" in spans[0][1] and "H=3.21" in spans[0][1] and "gamma=0.250" in spans[0][1]
    assert "H=-" in spans[4][1]


def test_opening_steps_marked_only_up_to_m() -> None:
    spans = _spans(render([_result()], opening_steps=2))
    assert ["opening" in c for c, _, _ in spans] == [True, True, False, False, False]
    assert not any("opening" in c for c, _, _ in _spans(render([_result()])))
    assert not any("opening" in c for c, _, _ in _spans(render([_result()], opening_steps=0)))


def test_legend_explains_every_mark() -> None:
    page = render([_result()], opening_steps=50)
    legend = re.search(r"<ul class='legend'>(.*?)</ul>", page, re.S).group(1)
    for words in ("scored, green", "scored, red", "tested", "only scored", "not scored", "Hover"):
        assert words in legend
    assert "steps 1..50 use the secret opening sentence&#x27;s green list" in legend
    assert "skip the entropy gate" in legend
    assert "opening sentence" not in render([_result()])


def test_summary_has_test_counts() -> None:
    page = render([_result()])
    summary = re.search(r"<table class='summary'>(.*?)</table>", page, re.S).group(1)
    for header in ("tested", "green tested", "expected green", "p-value", "AWR"):
        assert header in summary
    cells = re.findall(r"<td>(.*?)</td>", summary)
    assert "3" in cells and "2" in cells and "0.75" in cells and "4 / 5" in cells


def test_prompt_shown_and_escaped() -> None:
    prompt = "Write <script>alert(1)</script> & more"
    page = render([_result(), _result()], prompts=[prompt, ""])
    assert page.count("<div class='prompt'>") == 1
    assert "<script>" not in page
    assert html.escape(prompt) in page
    assert page.index("<div class='prompt'>") < page.index("<div class='text'>")
    assert ">prompt<" in page
    # the prompt is not part of the token spans
    assert "".join(t for _, _, t in _spans(page)) == "".join(_result().tokens) * 2


def test_titles_escaped_and_defaults() -> None:
    page = render([_result(), _result()], titles=["<i>a</i>", ""])
    assert "<h2>&lt;i&gt;a&lt;/i&gt;</h2>" in page and "<h2>Text 2</h2>" in page
    assert "<h2>Text 1</h2>" in render([_result()])


def test_unscorable_result_renders() -> None:
    empty = DetectionResult(reason="no <letters>", token_ids=[])
    page = render([empty], titles=["empty"], prompts=[None], opening_steps=50)
    assert "no &lt;letters&gt;" in page and "<letters>" not in page
    assert _spans(page) == []
    assert page.endswith("</html>\n")
    # short per-token lists (scored etc. missing) still render every token as unscored
    partial = DetectionResult(reason="no scored tokens", tokens=["a", " b"], num_tokens=2)
    spans = _spans(render([partial]))
    assert [t for _, _, t in spans] == ["a", " b"]
    assert all("unscored" in c for c, _, _ in spans)
