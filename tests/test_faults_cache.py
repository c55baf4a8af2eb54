"""The shared cache (CACHE_URL on a real Redis) stopped in the middle of reports, through gunicorn.

A second redis-server of the test's own, on a free loopback port, is the server's cache: the API key
throttle, replica stickiness, the check's in-flight slots and the webhook subscriptions read it on
every request. Stopped, the API keeps answering (each use fails open, with a warning in the log),
every answered report is stored, and /readyz says the cache is degraded without taking the node out;
started again, the throttle counts again.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import time

import httpx
import pytest
from server_process import ServerProcess, free_port

pytestmark = [
    pytest.mark.faults,
    pytest.mark.skipif(shutil.which("redis-server") is None, reason="needs redis-server"),
]

RATE = 40  # per minute and key: high enough for the reports, low enough to reach after the restart


class RedisServer:
    """A throwaway redis-server: no persistence, so a restart starts empty, as a lost cache does."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--daemonize", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                import redis

                if redis.Redis(port=self.port, socket_connect_timeout=0.2).ping():
                    return
            except Exception:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def redis_cache():
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def stored_reports(server: ServerProcess) -> int:
    with sqlite3.connect(server.db) as db:
        return db.execute("SELECT COUNT(*) FROM governance_groundingreport").fetchone()[0]


def test_reports_are_answered_and_stored_while_the_cache_is_down_and_the_throttle_returns_with_it(
    tmp_path, redis_cache
):
    env = {"CACHE_URL": f"redis://127.0.0.1:{redis_cache.port}/0", "API_RATE_LIMIT": f"{RATE}/min"}
    with ServerProcess(tmp_path, extra_env=env) as server:
        reporter = {"Authorization": f"Bearer {server.api_key('agent')}"}
        with httpx.Client(base_url=server.url, headers=reporter, timeout=30) as http:
            run = http.post("/api/v1/runs/", json={"agent_name": "support-bot"})
            assert run.status_code == 201, run.text
            grounding = f"/api/v1/runs/{run.json()['id']}/grounding/"
            body = {"grounding_scores": [0.9], "citations": ["doc-1"], "unsupported_claims": []}
            statuses = [http.post(grounding, json=body).status_code for _ in range(5)]
            assert http.get("/readyz").json()["checks"]["cache"]["status"] == "ok"

            redis_cache.stop()  # in the middle of the reports
            statuses += [http.post(grounding, json=body).status_code for _ in range(15)]
            ready = http.get("/readyz")
            assert ready.status_code == 200  # the node still answers: degraded, not unready
            assert ready.json()["checks"]["cache"]["status"] == "degraded"
            assert ready.json()["checks"]["cache"]["error"] == "ConnectionError"
            check = http.post("/api/v1/grounding/check/", json={"text": "It has 420 beds.", "sources": ["420 beds."]})
            assert check.status_code == 200, check.text

            redis_cache.start()  # empty: the counts start again
            statuses += [http.post(grounding, json=body).status_code for _ in range(5)]

        assert statuses == [200] * 25
        assert stored_reports(server) == 25
        log = server.db.with_suffix(".log").read_text()
        assert "cache unavailable (ConnectionError) for the API key throttle: failing open" in log
        assert "redis://" not in log  # the URL (which may hold a password) is never logged

        # The throttle counts again once the cache is back: a fresh key is refused past its rate.
        pinger = {"Authorization": f"Bearer {server.api_key('agent')}"}
        with httpx.Client(base_url=server.url, headers=pinger, timeout=30) as http:
            answers = [http.get("/api/v1/ping/") for _ in range(RATE + 2)]
        assert [a.status_code for a in answers[:RATE]] == [200] * RATE
        assert answers[RATE].status_code == 429
        assert int(answers[RATE].headers["Retry-After"]) > 0
