"""The read-only wrapper of `python -m search dashboard`, route by route: every path optuna-dashboard serves, with
every method, reaches the dashboard only to read (pure logic: a recording app stands for the dashboard; no server).
The dashboard in a real browser: test_dashboard_e2e.py."""

import functools
import http.server
import re
import signal
import socket
import threading
import urllib.request

import optuna
import optuna_dashboard
import pytest

from search.viewers import READS, dashboard_address, read_only
from tests.e2e_helpers import kill_pids, start_search, wait_for_line
from trainables.foundation.errors import UsageError

WRITES = ("POST", "PUT", "PATCH", "DELETE")
METHODS = (*sorted(READS), *WRITES, "PROPFIND", "CONNECT", "TRACE", "post", "")


def dashboard_routes() -> list[tuple[str, str]]:
    """(method, a concrete path) of every route optuna-dashboard's own app declares."""
    app = optuna_dashboard.wsgi(optuna.storages.InMemoryStorage())
    routes = []
    for route in app.routes:
        path = re.sub(r"<[^>]*>", "1", route.rule)  # <study_id:int>, <filename:path>, <:re:...>: a value of it
        routes.append((route.method, path))
    return routes


def call(app, method: str, path: str) -> tuple[str, bytes]:
    answer = {}
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": "", "wsgi.input": None}
    if not method:
        del environ["REQUEST_METHOD"]
    body = b"".join(app(environ, lambda status, headers: answer.setdefault("status", status)))
    return answer["status"], body


class Recording:
    """Stands for the dashboard: records what reached it."""

    def __init__(self):
        self.reached = []

    def __call__(self, environ, start_response):
        self.reached.append((environ.get("REQUEST_METHOD", "GET"), environ["PATH_INFO"]))
        start_response("200 OK", [])
        return [b"dashboard"]


def test_the_dashboard_declares_writes_the_wrapper_must_refuse():
    methods = {method for method, _ in dashboard_routes()}
    assert {"GET", "POST", "PUT", "DELETE"} <= methods  # if it stops declaring writes, this test must be revisited


@pytest.mark.parametrize("method", METHODS)
def test_every_path_is_read_and_never_written_through_the_wrapper(method):
    paths = sorted({path for _, path in dashboard_routes()} | {"/", "/api/unknown", "/api/studies/1/../../x"})
    dashboard = Recording()
    guarded = read_only(dashboard)
    for path in paths:
        status, body = call(guarded, method, path)
        if (method or "GET").upper() in READS:
            assert status == "200 OK" and body == b"dashboard", (method, path)
        else:
            assert status.startswith("403") and b"read-only" in body, (method, path)
    allowed = (method or "GET").upper() in READS
    assert dashboard.reached == ([((method or "GET"), path) for path in paths] if allowed else []), method


def test_each_write_route_of_the_dashboard_is_refused_and_each_read_route_served():
    dashboard = Recording()
    guarded = read_only(dashboard)
    for method, path in dashboard_routes():
        status, _ = call(guarded, method, path)
        assert status == ("200 OK" if method in READS else "403 Forbidden"), (method, path)
    assert {method for method, _ in dashboard.reached} == {"GET"}


def test_a_port_is_free_again_as_soon_as_the_viewer_on_it_stopped(tmp_path):
    """A viewer that served a request and stopped leaves its port in TIME-WAIT for a minute; the next viewer binds
    it at once (SO_REUSEADDR, as the servers themselves do), while a port something listens on stays refused."""
    (tmp_path / "study.log").touch()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with pytest.raises(UsageError, match=f"port={port}: already in use"):
        dashboard_address(tmp_path, port)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
        answer.read()  # HTTP/1.0: the server closes the connection first, and keeps it in TIME-WAIT
    server.shutdown()
    server.server_close()
    assert dashboard_address(tmp_path, port) == (tmp_path / "study.log", port)
    again = http.server.HTTPServer(("127.0.0.1", port), handler)
    again.server_close()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_stops_the_dashboard_while_it_is_sending_a_page(tmp_path, stop):
    """Ctrl-C (or SIGTERM) lands while the dashboard sends its 6 MB script to a browser that reads slowly (here: not
    at all, so the send cannot finish): the dashboard stops at once, exit 0. Served in the main thread, wsgiref's
    handler caught the KeyboardInterrupt (a bare `except:`) and served on; seen when Ctrl-C followed a request
    closely."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    optuna.create_study(study_name="search", storage=JournalStorage(JournalFileBackend(str(tmp_path / "study.log"))))
    (tmp_path / "search.json").write_text("{}")
    log = tmp_path / "dashboard.log"
    server = start_search(log, str(tmp_path), "port=0", command="dashboard")
    browser = socket.socket()
    try:
        url = wait_for_line(log, r"at http://127\.0\.0\.1:(\d+)/", server, timeout=120)  # printed once it listens
        browser.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # far less than the script: the send blocks
        browser.settimeout(60)
        browser.connect(("127.0.0.1", int(url.group(1))))
        browser.sendall(b"GET /static/bundle.js HTTP/1.0\r\nAccept-Encoding: identity\r\n\r\n")
        assert browser.recv(64).startswith(b"HTTP/1.0 200"), log.read_text()  # the page is being sent
        server.send_signal(stop)
        assert server.wait(timeout=30) == 0, log.read_text()
    finally:
        browser.close()
        if server.poll() is None:
            kill_pids([server.pid])
