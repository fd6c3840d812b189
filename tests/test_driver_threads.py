"""The driver's own threads beside its main thread import nothing: two threads importing one package with internal
cycles (torch) found it partially initialized, and a search crashed at its end. CPython's `import` audit event, raised
in the thread that loads a module, is recorded in a fresh interpreter (nothing imported yet), so an import from a
second thread is caught whatever the timing."""

import json
import os
import subprocess
import sys

from tests.conftest import REPO

WATCHED = r"""
import json, sys, threading

off_main = []


def watch(event, args):
    if event == "import" and threading.current_thread() is not threading.main_thread():
        off_main.append(f"{threading.current_thread().name}: {args[0]}")


sys.addaudithook(watch)
from search.running.writer.lock import WriterLock
from trainables.foundation.storage import Experiment

before = set(threading.enumerate())
lock = WriterLock(Experiment.at(sys.argv[1]), "python -m search run").acquire()
renewal = threading.Thread(target=lock._renew_once, name="lease-renewal")  # what the renewal thread runs
renewal.start()
renewal.join()
for thread in set(threading.enumerate()) - before - {lock.renewing}:
    thread.join(300)  # whatever they import is recorded once they end
lock.release()
print(json.dumps(off_main))
"""


def test_the_drivers_lease_renewal_imports_nothing_beside_the_main_thread(tmp_path):
    (tmp_path / "bucket" / "exp").mkdir(parents=True)
    done = subprocess.run(
        [sys.executable, "-c", WATCHED, f"file://{tmp_path}/bucket/exp"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    off_main = json.loads(done.stdout.splitlines()[-1])
    assert off_main == [], f"imported beside the main thread: {off_main[:20]}"
