"""The container's health probe: `python -m config.probe [/healthz|/readyz]` exits 0 on a 200.

It asks the local gunicorn (port 8000, the image's bind) with a Host header the server accepts: the
first name in ALLOWED_HOSTS, since a probe for 127.0.0.1 is refused (400) once ALLOWED_HOSTS names
only the public host. /healthz and /readyz are exempt from the HTTPS redirect, so plain HTTP does.
"""

import os
import sys
import urllib.request


def probe_host() -> str:
    for name in os.environ.get("ALLOWED_HOSTS", "").split(","):
        name = name.strip().lstrip(".")
        if name and name != "*":
            return name
    return "localhost"


def main(path: str = "/healthz") -> int:
    request = urllib.request.Request(f"http://127.0.0.1:8000{path}", headers={"Host": probe_host()})
    try:
        with urllib.request.urlopen(request, timeout=3) as response:
            return 0 if response.status == 200 else 1
    except OSError as exc:
        print(f"{path}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
