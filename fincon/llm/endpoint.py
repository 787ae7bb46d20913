"""What a config says about an OpenAI-compatible endpoint, without the HTTP
client: the default URL, the API key's environment variable name, whether a
URL is on this machine.

Apart from :mod:`fincon.llm.backends.openai_compat` so that the settings
model (and the run config that validates an ``llm`` block with it) imports
without ``httpx``, which only the ``llm`` extra installs.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

from fincon.llm.errors import CacheMiss, LLMAuthError, LLMUnavailable

DEFAULT_BASE_URL = "https://api.openai.com/v1"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_api_key_env(name: str) -> str:
    """``name`` if it looks like an environment variable name; a pasted key is
    refused without being repeated (it would end up in logs)."""
    if not isinstance(name, str) or not ENV_NAME.fullmatch(name):
        raise LLMAuthError(
            "api_key_env (--llm-api-key-env) must be the NAME of the environment variable that holds the API key "
            "(letters, digits and _, e.g. OPENAI_API_KEY), not the key itself; the value given is not shown. "
            "Put the key in the environment (export OPENAI_API_KEY=...) and name that variable"
        )
    return name


def is_local_url(base_url: str) -> bool:
    """True for a server on this machine (localhost, 127.0.0.0/8, ::1, 0.0.0.0)."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified


def check_listening(base_url: str, timeout: float = 3.0) -> None:
    """Fail now, in one line, when nothing accepts connections at ``base_url``
    (a command about to write a training must not leave one behind for a
    server that was never up); an answering server is not checked further."""

    parts = urlsplit(base_url)
    host = parts.hostname or "localhost"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as exc:
        raise LLMUnavailable(
            f"nothing is listening at {base_url} ({exc.strerror or exc}): start the server or fix --llm-base-url"
        ) from None


def check_server(settings) -> None:
    """What a run of ``settings`` (an ``LLMSettings``, or None for no model)
    would call is there: for a replay, its recorded cache file; on the OpenAI
    path, a server that accepts connections (:func:`check_listening`). A
    command that writes a folder of many runs calls this before its first
    file (an experiment used to run and keep its baselines, then fail on the
    team's missing recording)."""
    if settings is None:
        return
    if settings.cache.value == "replay":
        if not Path(settings.cache_path).exists():
            raise CacheMiss.no_recording(settings.cache_path)
    elif settings.backend == "openai":
        check_listening(settings.base_url)
