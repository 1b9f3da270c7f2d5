"""The load `make perf` makes (tests/perf/p95.lua through foundation.wrk), against a real HTTP server that notes when
each request of each connection arrives: every client's first request at once (or, through the front, after a pause
as the others), then one about every pause, the clients' pauses drawn apart (not in pairs, as when wrk's two threads
drew the same random numbers)."""

import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import require_tool
from tests.perf.foundation import wrk

CLIENTS, PAUSE_MS, SECONDS = 8, 1000, 5
ANSWER_S = 0.02  # as a page takes: longer than wrk takes to connect its clients, so its first requests are theirs


@pytest.fixture
def arrivals():
    """(URL, {client port: [arrival times]}) of a keep-alive HTTP/1.1 server on loopback."""
    seen = defaultdict(list)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):  # noqa: N802 - http.server's name
            with lock:
                seen[self.client_address[1]].append(time.monotonic())
            time.sleep(ANSWER_S)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        request_queue_size = 64  # socketserver's 5 would leave clients' connections waiting for a SYN retry

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", seen
    finally:
        server.shutdown()
        server.server_close()


def test_first_requests_at_once_then_a_pause_each_drawn_apart(arrivals):
    require_tool("wrk")
    url, seen = arrivals
    _, _, errors = wrk(url, "a=b", clients=CLIENTS, pause_ms=PAUSE_MS, seconds=SECONDS)
    assert errors == 0
    assert len(seen) == CLIENTS
    start = min(times[0] for times in seen.values())
    # each client's first request goes as it connects: none sits idle on a new connection for its pause
    assert max(times[0] for times in seen.values()) - start < 0.3
    assert all(times[1] - times[0] >= 0.45 for times in seen.values())  # and only the first
    gaps = {port: [b - a for a, b in zip(times, times[1:], strict=False)] for port, times in seen.items()}
    every = [gap for g in gaps.values() for gap in g]
    assert len(every) >= CLIENTS * 2
    assert 0.45 <= min(every) and max(every) <= 1.6  # 0.5x-1.5x the pause, plus the answer's time
    # no two clients in step: with the threads seeded alike, a client of one thread waited what one of the other did
    in_step = [
        (a, b)
        for a in gaps
        for b in gaps
        if a < b and len(gaps[a]) >= 2 and len(gaps[b]) >= 2
        if all(abs(x - y) < 0.004 for x, y in zip(gaps[a][:2], gaps[b][:2], strict=True))
    ]
    assert in_step == []


def test_through_the_front_each_first_request_waits_a_pause_as_the_others(arrivals):
    """together=False (make perf pages, through the front): no burst of every client's first request at the start;
    each comes a pause (0.5x-1.5x) after wrk starts, spread as the crowd's later requests are."""
    require_tool("wrk")
    url, seen = arrivals
    started = time.monotonic()
    _, _, errors = wrk(url, "a=b", clients=CLIENTS, pause_ms=PAUSE_MS, seconds=SECONDS, together=False)
    assert errors == 0
    assert len(seen) == CLIENTS
    firsts = sorted(times[0] - started for times in seen.values())
    assert 0.45 <= firsts[0] and firsts[-1] <= 1.6, firsts
    assert firsts[-1] - firsts[0] > 0.3, firsts  # spread, not together
