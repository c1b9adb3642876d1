"""``engine report``: one HTML file, rendered by headless Chromium, with every part a person needs."""
import re
import shutil
import subprocess

import pytest

from platform_util import cli

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def chromium():
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    assert exe, "headless Chromium is needed (apt-get install -y chromium; .ci/run installs it)"
    return exe


def render(html_file, tmp_path):
    """The DOM after Chromium has loaded and laid out the page, and a screenshot of it."""
    shot = tmp_path / "shot.png"
    base = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*base, "--dump-dom", html_file.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    subprocess.run([*base, f"--screenshot={shot}", "--window-size=1000,1400", html_file.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 10_000  # a blank page compresses to far less
    return dom.stdout


def report(wh, res, tmp_path):
    out = tmp_path / "report.html"
    code, stdout, err = cli("report", res["run_id"], "--warehouse", wh, "--out", out)
    assert code == 0, err
    assert stdout.strip() == str(out)
    return out


def section(dom, sid):
    m = re.search(rf'<section id="{sid}">(.*?)</section>', dom, re.S)
    assert m, f"no section {sid}"
    return m.group(1)


def test_report_of_a_complete_run(counter_ok, tmp_path):
    wh, res = counter_ok
    dom = render(report(wh, res, tmp_path), tmp_path)
    assert "<code>Max</code></td><td class=\"\">5</td>" in section(dom, "constants")
    out = section(dom, "outcome")
    assert 'data-result="ok"' in out and "No error has been found." in out
    assert '<span id="distinct">20</span>' in out and '<span id="depth">6</span>' in out
    bars = re.findall(r'<rect class="bar"[^>]*data-depth="(\d+)" data-new="(\d+)"', section(dom, "levels-plot"))
    assert [(int(d), int(n)) for d, n in bars] == [(1, 1), (2, 2), (3, 4), (4, 7), (5, 5), (6, 1)]
    actions = section(dom, "actions")
    # action, successors generated (TLC's "found"), distinct states it found first (TLC's "distinct")
    assert '<code>Init</code></td><td class="num">1</td><td class="num">1</td>' in actions
    assert '<code>Step</code></td><td class="num">19</td><td class="num">19</td>' in actions
    assert "holds in every reachable state" in section(dom, "invariants")
    assert "None: no invariant was violated" in section(dom, "trace")


def test_report_of_a_violation_highlights_changed_values(counter_violation, tmp_path):
    wh, res = counter_violation
    dom = render(report(wh, res, tmp_path), tmp_path)
    assert "Invariant Bounded is violated." in section(dom, "outcome")
    # Successors generated per action, duplicates included: it differs from the distinct count here.
    gen = res["actions_generated"]
    assert set(gen) == {"Init", "Step"} and sum(gen.values()) == res["states_generated"]
    assert f'<code>Step</code></td><td class="num">{gen["Step"]:,}</td>' in section(dom, "actions")
    assert f"violated at depth {res['depth']}" in section(dom, "invariants")
    rows = re.findall(r"<tr>(.*?)</tr>", section(dom, "trace"))
    assert len(rows) == len(res["trace"]) + 1  # the header row
    steps = rows[1:]
    assert [re.search(r"<code>(\w+)</code>", r).group(1) for r in steps] == [t["action"] for t in res["trace"]]
    assert 'class="changed"' not in steps[0]
    xs = [t["state"]["x"] for t in res["trace"]]
    for row, x in zip(steps[1:], xs[1:]):
        assert f'<td class="changed">{x}</td>' in row  # x changes at every step


def test_report_of_an_unknown_run_is_bad_input(tmp_path):
    code, out, err = cli("report", "nope", "--warehouse", tmp_path)
    assert code == 2 and out == "" and "error: no run 'nope' under" in err
