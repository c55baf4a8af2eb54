"""A short name for the browser behind a User-Agent header ("Chrome 131 on Linux"), for the list of
signed-in sessions (docs/sign-in.md). Enough to tell a person's own devices apart, not a full parser:
anything unrecognised is named by the header's first word, or not at all.
"""

import re

# Order matters: Edge and Opera also say "Chrome", Chrome also says "Safari", every one says "Mozilla".
_BROWSERS = [
    ("Edge", re.compile(r"\bEdg(?:e|A|iOS)?/(\d+)")),
    ("Opera", re.compile(r"\bOPR/(\d+)")),
    ("Samsung Internet", re.compile(r"\bSamsungBrowser/(\d+)")),
    ("Firefox", re.compile(r"\b(?:Firefox|FxiOS)/(\d+)")),
    ("Chrome", re.compile(r"\b(?:Chrome|CriOS|HeadlessChrome)/(\d+)")),
    ("Chromium", re.compile(r"\bChromium/(\d+)")),
    ("Safari", re.compile(r"\bVersion/(\d+)(?:\.\d+)*(?: Mobile/\S+)? Safari/")),
]
_SYSTEMS = [
    ("iPadOS", re.compile(r"\biPad\b")),
    ("iOS", re.compile(r"\biPhone\b|\biPod\b")),
    ("Android", re.compile(r"\bAndroid\b")),
    ("ChromeOS", re.compile(r"\bCrOS\b")),
    ("Windows", re.compile(r"\bWindows\b")),
    ("macOS", re.compile(r"\bMac OS X\b|\bMacintosh\b")),
    ("Linux", re.compile(r"\bLinux\b|\bX11\b")),
]
_FIRST_WORD = re.compile(r"^([A-Za-z][\w.-]{0,40})(?:/(\d+))?")


def describe(user_agent: str) -> str:
    """'Firefox 133 on Windows', 'Safari 18 on iOS', 'curl 8', or '' when the header says nothing."""
    header = (user_agent or "").strip()
    if not header:
        return ""
    system = next((name for name, pattern in _SYSTEMS if pattern.search(header)), "")
    for name, pattern in _BROWSERS:
        match = pattern.search(header)
        if match:
            return f"{name} {match.group(1)}" + (f" on {system}" if system else "")
    first = _FIRST_WORD.match(header)
    if first is None or first.group(1) == "Mozilla":
        return f"Unknown browser on {system}" if system else "Unknown browser"
    return " ".join(part for part in first.groups() if part)
