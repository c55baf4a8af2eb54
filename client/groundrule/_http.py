"""The two transports: drive an `Exchange` (`_protocol.py`) over httpx, blocking or with asyncio.

Everything that decides what to do with an answer lives in `_protocol.py`; these loops only send
and wait, so the sync and the async client cannot drift apart.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from ._config import Config
from ._protocol import Done, Exchange, Outcome
from ._version import __version__


def send(
    http: httpx.Client, config: Config, method: str, path: str, payload: dict[str, Any] | None, *, replayable: bool
) -> dict[str, Any]:
    exchange = Exchange(config, method, path, payload, replayable=replayable)
    while True:
        outcome: Outcome
        try:
            outcome = http.request(exchange.method, exchange.path, content=exchange.content)
        except httpx.TransportError as error:
            outcome = error
        step = exchange.handle(outcome)
        if isinstance(step, Done):
            return step.body
        time.sleep(step.delay)


async def send_async(
    http: httpx.AsyncClient, config: Config, method: str, path: str, payload: dict[str, Any] | None, *, replayable: bool
) -> dict[str, Any]:
    exchange = Exchange(config, method, path, payload, replayable=replayable)
    while True:
        outcome: Outcome
        try:
            outcome = await http.request(exchange.method, exchange.path, content=exchange.content)
        except httpx.TransportError as error:
            outcome = error
        step = exchange.handle(outcome)
        if isinstance(step, Done):
            return step.body
        await asyncio.sleep(step.delay)


def client_options(config: Config) -> dict[str, Any]:
    return {
        "base_url": config.api_root + "/",
        "timeout": config.timeout,
        "headers": {
            "Authorization": f"Bearer {config.api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"groundrule-python/{__version__}",
        },
    }
