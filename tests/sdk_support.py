"""A small stdlib HTTP server that plays a misbehaving Groundrule for the SDK tests."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SERVER_ERROR = (500, {"detail": "Internal server error"})


class FakeGroundrule:
    """Answers each path from a script: {"runs/": [reply, ...]}, a reply being (status, body[, headers[, delay]]).
    The last reply of a script repeats; a path without a script answers 500."""

    def __init__(self, script: dict):
        self.script = {path: list(replies) for path, replies in script.items()}
        self.requests: list[tuple[str, dict, dict]] = []  # (path under /api/v1/, headers, json body)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                path = self.path.removeprefix("/api/v1/")
                fake.requests.append((path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = fake.reply(path)
                status, payload, headers, delay = (*reply, {}, 0)[:4] if len(reply) == 2 else (*reply, 0)[:4]
                time.sleep(delay)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and left

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def reply(self, path: str) -> tuple:
        for prefix, replies in self.script.items():
            if path == prefix or (prefix.startswith("*") and path.endswith(prefix[1:])):
                return replies.pop(0) if len(replies) > 1 else replies[0]
        return SERVER_ERROR

    def count(self, suffix: str) -> int:
        return sum(1 for path, _, _ in self.requests if path.endswith(suffix))

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def __exit__(self, *exc_info):
        self.server.shutdown()
        self.server.server_close()
