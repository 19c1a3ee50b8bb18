"""The HTML reports in a real browser: the flag is there and in its color, the example window is shown.

A headless Chromium (or Chrome) opens each page: `--dump-dom` gives the DOM the browser
built, `--screenshot` the picture a person sees, whose pixels are counted in the flag's
color. Without a browser on the machine these tests skip and say so; the same checks
on the HTML itself run everywhere (tests/test_report_flag.py, test_report_window.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from deltalake import write_deltalake

import chatgate as pb
from chatgate.job.runner import run
from chatgate.runreport import load_report, render_page
from chatgate.runreport.look import FLAG_COLOR
from job_helpers import job_config
from test_report_window import EMPTY, FAULT, conversation

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
BROWSER = next((found for name in BROWSERS if (found := shutil.which(name))), None)

pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason="no headless browser: install Chromium (Debian: apt-get install chromium) to check the HTML reports in one",
)


def _browser(page: Path, tmp_path: Path, *flags: str) -> str:
    assert BROWSER is not None
    done = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", *flags, page.as_uri()],
        capture_output=True, text=True, timeout=180, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(page: Path, tmp_path: Path) -> str:
    return _browser(page, tmp_path, "--dump-dom")


def screenshot(page: Path, tmp_path: Path, height: int) -> Path:
    shot = tmp_path / (page.stem + ".png")
    _browser(page, tmp_path, f"--screenshot={shot}", f"--window-size=1300,{height}")
    assert shot.exists()
    return shot


def pixels_near(shot: Path, color: str, tolerance: int = 24) -> int:
    from PIL import Image

    want = tuple(int(color[k : k + 2], 16) for k in (1, 3, 5))
    image = Image.open(shot).convert("RGB")
    return sum(
        count
        for count, rgb in image.getcolors(maxcolors=1 << 24) or []
        if all(abs(a - b) <= tolerance for a, b in zip(rgb, want))
    )


class _Flags(HTMLParser):
    """Texts of the elements of class chatgate-flag, and of every <td>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.flags: list[str] = []
        self.cells: list[str] = []
        self._stack: list[tuple[str, bool]] = []

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "meta", "col", "img"):
            return
        flag = "chatgate-flag" in (dict(attrs).get("class") or "").split()
        self._stack.append((tag, flag))
        if flag:
            self.flags.append("")
        if tag == "td":
            self.cells.append("")

    def handle_endtag(self, tag):
        while self._stack and self._stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if any(flag for _, flag in self._stack):
            self.flags[-1] += data
        if any(tag == "td" for tag, _ in self._stack):
            self.cells[-1] += data


def parsed(dom: str) -> _Flags:
    parser = _Flags()
    parser.feed(dom)
    return parser


@pytest.fixture(scope="module")
def run_page(tmp_path_factory) -> Path:
    """The run report of a job without thresholds where 3 long conversations of 4 fail at message 40."""
    root = tmp_path_factory.mktemp("browser")
    source = str(root / "chats")
    values = [json.dumps(conversation(seed=k)) for k in range(3)] + [
        json.dumps([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])
    ]
    write_deltalake(source, pa.table({"id": [1, 2, 3, 4], "messages": values}))
    run(job_config(root, source, "duckdb", {}, run_id="long-1"))
    page = root / "run_report.html"
    page.write_text(render_page(load_report(str(root / "summary"), str(root / "quarantine"))), encoding="utf-8")
    return page


def test_run_report_in_a_browser_shows_the_flag_and_the_window(run_page, tmp_path):
    dom = parsed(dump_dom(run_page, tmp_path))
    assert any("most rows fail (75%)" in text for text in dom.flags)
    windows = [c for c in dom.cells if "… messages 1–38, " in c]
    assert len(windows) == 3 and all(c.startswith('[{"role": "system"') and EMPTY in c for c in windows)
    shot = screenshot(run_page, tmp_path, 2200)
    assert pixels_near(shot, FLAG_COLOR) > 300  # the strip, the EVAL mark, the badge and the words


def _fragment_page(path: Path, html: str) -> Path:
    path.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{html}</body></html>', encoding="utf-8")
    return path


def test_tabular_and_step_reports_in_a_browser(tmp_path):
    values = [json.dumps(conversation(seed=k)) for k in range(3)] + ["[]"]
    v = pb.Validate(pl.DataFrame({"messages": values}), tbl_name="long_chats").col_vals_chat_format("messages")
    v.interrogate()
    tabular = _fragment_page(tmp_path / "tabular.html", v.get_tabular_report().as_raw_html())
    dom = parsed(dump_dom(tabular, tmp_path))
    assert any("most rows fail (100%)" in text for text in dom.flags) and "⚑" in dom.cells
    assert pixels_near(screenshot(tabular, tmp_path, 500), FLAG_COLOR) > 300
    step = _fragment_page(tmp_path / "step.html", v.get_step_report(1).as_raw_html())
    dom = parsed(dump_dom(step, tmp_path))
    windows = [c for c in dom.cells if "… messages 1–38, " in c]
    assert len(windows) == 3 and all(EMPTY in c for c in windows)
    assert str(FAULT) in dom.cells
