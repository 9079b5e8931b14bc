"""The detection page in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by selenium) pastes texts, presses Detect and reads the verdicts.

Skipped, with the reason in pytest's summary, where the browser or its driver is missing
(``.ci/run`` installs them). The real-model test writes its screenshot to ``$WM_SCREENSHOT``
when set (``docs/service.png``, shown in docs/service.md), else to a temporary folder.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

try:
    import fastapi  # noqa: F401 (the service needs it)
    import uvicorn  # noqa: F401 (serving the page needs it)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as missing:  # the serve extra or selenium is not installed
    pytest.skip(f"needs fastapi, uvicorn and selenium: {missing}", allow_module_level=True)

from tests.helpers import sentences, serving
from watermark.app.service import Limits, create_app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (CHROMIUM and DRIVER),
        reason="no headless browser: apt-get install chromium chromium-driver (.ci/run does)",
    ),
]
HUMAN = (
    "The old mill at the edge of the village was sold last spring to a couple from the coast. "
    "They have spent the summer clearing the yard, mending the roof and arguing with the council "
    "about parking. Neighbours say the water wheel turned again for the first time in forty "
    "years during the August fair, though only for an afternoon, and mostly for the children."
)


@contextmanager
def chromium():
    options = Options()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1000,1300",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def detect_in_page(driver, base: str, text: str) -> dict:
    """Loads the page, pastes ``text``, presses Detect and reads the verdict from the DOM."""
    driver.get(base + "/")
    box = driver.find_element(By.ID, "text")
    box.clear()
    # a paste: the whole text lands at once (typing it key by key would take minutes)
    driver.execute_script("arguments[0].value = arguments[1];", box, text)
    driver.find_element(By.ID, "detect").click()
    verdict = driver.find_element(By.ID, "verdict")
    WebDriverWait(driver, 120).until(lambda d: verdict.text not in ("", "Detecting..."))
    read = {k: driver.find_element(By.ID, k).text for k in ("p", "z", "tested", "green")}
    return {
        "verdict": verdict.text,
        "class": verdict.get_attribute("class"),
        "tokens": len(driver.find_elements(By.CSS_SELECTOR, "#tokens .t")),
        "window_tokens": len(driver.find_elements(By.CSS_SELECTOR, "#tokens .t.win")),
        **read,
    }


def check_page_matches(page: dict, result) -> None:
    assert page["verdict"] == ("Watermarked" if result.is_watermarked else "Not watermarked")
    assert page["tokens"] == result.num_tokens
    assert int(page["tested"]) == result.num_tested
    assert int(page["green"]) == result.num_green_tested
    assert float(page["z"]) == pytest.approx(result.z_score, rel=1e-2, abs=1e-3)
    p = result.verdict_p_value
    assert float(page["p"]) == pytest.approx(p, rel=1e-2)
    if result.window:
        assert page["window_tokens"] == result.window[1] - result.window[0] + 1


def test_page_in_chromium_tiny(tiny, tmp_path: Path) -> None:
    wm = tiny.make(window_sizes=[4, 8], fresh_only=True, rule="additive", bias=2.0)
    texts = [wm.generate(["the storm hit"], max_new_tokens=30, seed=0)[0].text]
    texts += sentences(1, seed=4, length=30)
    with serving(create_app(wm, Limits(max_batch=4))) as base, chromium() as driver:
        for text, result in zip(texts, wm.detect(texts)):
            check_page_matches(detect_in_page(driver, base, text), result)
        driver.save_screenshot(str(tmp_path / "tiny.png"))
        error = detect_in_page(driver, base, "x" * 30_000)  # over the default max_chars
        assert error["class"] == "error" and "over the limit" in error["verdict"]
    assert (tmp_path / "tiny.png").stat().st_size > 1000


def test_page_in_chromium_real_models(tmp_path: Path) -> None:
    from watermark.api import Watermark
    from watermark.config.watermark_config import WatermarkConfig
    from watermark.models.loaders import load_lm

    model, tokenizer = load_lm("smollm2-135m")
    wm = Watermark.load(WatermarkConfig.default(), tokenizer=tokenizer, generator=model)
    prompt = "The city council met on Tuesday to discuss the new harbour bridge."
    marked = wm.generate([prompt], max_new_tokens=60, seed=0)[0].text  # p 3e-5: far below 0.01
    shot = Path(os.environ.get("WM_SCREENSHOT") or tmp_path / "service.png")
    with serving(create_app(wm)) as base, chromium() as driver:
        human = detect_in_page(driver, base, HUMAN)
        assert human["verdict"] == "Not watermarked", human
        page = detect_in_page(driver, base, marked)
        assert page["verdict"] == "Watermarked", page
        check_page_matches(page, wm.detect([marked])[0])
        driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
