"""The report in a real browser: headless Chromium (the Debian package,
driven by Playwright's Python API; never `playwright install`).

Without Chromium (or Playwright) the tests skip locally; in CI (CI=true,
where `make install` apt-installs chromium) they fail instead.
FINCON_CHROMIUM names another Chromium binary.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fincon.agents.records import format_day
from fincon.testing import decisions_of as days_of

CHROMIUM = os.environ.get("FINCON_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.browser


def _unavailable(why: str):
    if os.environ.get("CI"):
        pytest.fail(f"{why} in CI: `make install` (install-report-extras) should have installed it")
    pytest.skip(why)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install -e '.[dev]')")
    if not Path(CHROMIUM).is_file():
        _unavailable(f"no Chromium at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, report_run):
    """The report opened from disk with every network request refused and
    counted, and the console's errors collected."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    pg.problems = []  # console errors, uncaught exceptions, network requests
    pg.on("console", lambda m: pg.problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    pg.on("pageerror", lambda exc: pg.problems.append(f"page error: {exc}"))

    def refuse(route):
        url = route.request.url
        if url.startswith("file://"):
            route.continue_()
        else:
            pg.problems.append(f"network request: {url}")
            route.abort()

    pg.route("**/*", refuse)
    pg.goto((report_run / "report.html").as_uri(), wait_until="load")
    pg.wait_for_function("() => document.querySelector('#equity-chart .main-svg') !== null")
    try:
        yield pg
    finally:
        ctx.close()


def test_report_renders_without_errors(page, report_run, tmp_path):  # noqa: F811
    days = days_of(report_run)
    alerts = sum(1 for d in days if d["record"]["risk"]["alert"])
    # the equity chart: team, its alert markers, and the benchmark, in equity and drawdown
    names = page.evaluate("() => document.getElementById('equity-chart').data.map(t => t.name)")
    assert names == [
        "fincon",
        "fincon",
        f"fincon: CVaR alert ({alerts})",
        "buy-and-hold (benchmark)",
        "buy-and-hold (benchmark)",
    ]
    assert page.locator("#equity-chart .scatterlayer .trace").count() == 5
    assert page.locator("#metrics table").is_visible()
    assert page.locator("button.day").count() == len(days)
    assert not page.locator("article.day-detail").first.is_visible()  # nothing open before a click
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000
    assert page.problems == []


def test_clicking_a_day_shows_its_decision(page, report_run):  # noqa: F811
    days = days_of(report_run)
    day = next(d for d in days[1:] if d["record"]["risk"]["alert"])  # not the first day; one with an alert
    text = format_day(day, "close")
    rationale = day["record"]["manager"]["rationale"]
    detail = page.locator(f'article.day-detail[data-day="{day["date"]}"]')
    assert not detail.is_visible()
    page.click(f'button.day[data-day="{day["date"]}"]')
    assert detail.is_visible()
    shown = detail.locator("pre").inner_text()
    assert shown == text  # what `fincon explain RUN --date D` prints
    assert " ".join(rationale.split())[:60] in " ".join(shown.split())
    assert detail.get_by_text("CVaR alert:").first.is_visible()
    assert page.locator(f'button.day[data-day="{day["date"]}"]').get_attribute("aria-pressed") == "true"
    # another day replaces it
    other = days[0]
    page.click(f'button.day[data-day="{other["date"]}"]')
    assert not detail.is_visible()
    assert page.locator(f'article.day-detail[data-day="{other["date"]}"] pre').inner_text() == format_day(
        other, "close"
    )
    assert page.problems == []


def test_clicking_the_team_curve_opens_that_day(page, report_run):  # noqa: F811
    """A point of the team's equity curve opens the same day in the timeline
    (the mouse goes where Plotly drew the point)."""
    page.locator("#equity-chart").scroll_into_view_if_needed()
    point = page.evaluate("""() => {
      const gd = document.getElementById('equity-chart');
      const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, box = gd.getBoundingClientRect();
      const i = 3, c = gd.calcdata[0][i];
      return {day: gd._fullData[0].x[i], x: box.left + xa._offset + xa.c2p(c.x), y: box.top + ya._offset + ya.c2p(c.y)};
    }""")
    detail = page.locator(f'article.day-detail[data-day="{point["day"]}"]')
    assert not detail.is_visible()
    page.mouse.move(point["x"], point["y"])
    page.mouse.click(point["x"], point["y"])
    detail.wait_for(state="visible", timeout=5000)
    day = next(d for d in days_of(report_run) if d["date"] == point["day"])
    assert detail.locator("pre").inner_text() == format_day(day, "close")
    assert page.problems == []
