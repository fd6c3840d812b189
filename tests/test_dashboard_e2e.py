"""`python -m search dashboard`: optuna-dashboard on the shared search's study, opened in a real headless Chromium
(from the system's packages; .ci/run installs it where it is missing)."""

import re
import shutil
import signal
import subprocess

import pytest

from tests.e2e_helpers import result_rows, start_search, wait_for_line

pytestmark = pytest.mark.e2e

BROWSER = next(
    (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None
)
# Without the background-networking flags Chromium dials Google's hosts, which this closed network refuses.
HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
    "--disable-background-networking",
    "--disable-component-update",
    "--virtual-time-budget=15000",
]


@pytest.mark.skipif(BROWSER is None, reason="no Chromium on this machine (apt-get install chromium; .ci/run does)")
def test_the_dashboard_lists_the_studys_trials_in_a_real_browser(search, tmp_path):
    log = tmp_path / "dashboard.log"
    server = start_search(log, str(search["experiment"]), "port=0", command="dashboard")  # Ctrl-C reaches it
    try:
        url = wait_for_line(log, r"at (http://127\.0\.0\.1:\d+/)", server).group(1)  # printed once it listens
        page = subprocess.run(
            [
                BROWSER,
                *HEADLESS,
                f"--user-data-dir={tmp_path / 'profile'}",
                "--dump-dom",
                f"{url}dashboard/studies/0/trials",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    # each of the search's trials, and each continuation of a trial ASHA's promotion variant resumed (a trial of its own
    # in the study: Optuna never reopens an ended trial)
    runs = [
        {row["resumed_from"] for row in result_rows(search["experiment"], t["trial_id"])}
        for t in search["summary"]["trials"]
    ]
    trials = sum(map(len, runs))  # a trial's runs: the first, and each continuation from a checkpoint
    assert f"{trials} Trials" in page.stdout, page.stdout[-2000:]
    shown = set(re.findall(r"Trial (\d+)", page.stdout))
    assert shown == {str(number) for number in range(trials)}, shown
    assert "Pruned" in page.stdout and "Complete" in page.stdout  # the shared search has both
