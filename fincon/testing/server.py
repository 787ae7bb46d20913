"""A model double behind an OpenAI-compatible HTTP endpoint on 127.0.0.1.

The doubles of :mod:`fincon.testing.doubles` answer in-process; a user's
command (``fincon backtest --llm-backend openai --llm-base-url ...``) needs a
server. :class:`DoubleServer` puts any of them behind ``POST
/v1/chat/completions`` (and ``GET /v1/models``), so a test or a measurement
runs the real CLI path, cache and masking included, without a model:

    with DoubleServer(TeamStub()) as url:
        main(["backtest", ..., "--llm-backend", "openai", "--llm-base-url", url, "--llm-model", "stub"])

``python -m fincon.testing.server --double team-stub --port 8765`` serves one
until stopped (Ctrl-C), for measurements run from a shell.
"""

from __future__ import annotations

import argparse
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fincon.llm.types import Message, SamplingParams
from fincon.testing.doubles import TeamStub


class DoubleServer:
    """Serve ``double`` (an object with ``complete(messages, schema, params)``)
    on 127.0.0.1 (``port`` 0: a free one); a context manager whose value is
    the base URL (``http://127.0.0.1:PORT/v1``). Calls are answered one at a
    time, in the order they arrive (a double's state is not thread-safe);
    ``usage`` False: no token usage in the answers (as some servers send)."""

    def __init__(self, double: Any, port: int = 0, usage: bool = True):
        self.double = double
        self.calls = 0
        lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the caller's output clean
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "double", "object": "model"}]})

            def do_POST(self):
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                rf = req.get("response_format") or {}
                schema = rf.get("json_schema", {}).get("schema") or rf.get("schema") or {}
                msgs = [Message(role=m["role"], content=m["content"]) for m in req["messages"]]
                params = SamplingParams(
                    temperature=float(req.get("temperature", 0.0)),
                    max_tokens=int(req.get("max_tokens", 200)),
                    seed=int(req.get("seed", 0)),
                )
                with lock:
                    server.calls += 1
                    done = server.double.complete(msgs, schema, params)
                self._send(
                    200,
                    {
                        "id": f"double-{server.calls}",
                        "object": "chat.completion",
                        "model": req.get("model", "double"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": done.text},
                                "finish_reason": "stop",
                            }
                        ],
                        **(
                            {
                                "usage": {
                                    "prompt_tokens": done.prompt_tokens,
                                    "completion_tokens": done.completion_tokens,
                                    "total_tokens": done.prompt_tokens + done.completion_tokens,
                                }
                            }
                            if usage
                            else {}
                        ),
                    },
                )

        self._http = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        return self.url

    def __exit__(self, *exc) -> None:
        self._http.shutdown()
        self._http.server_close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="serve a model double on 127.0.0.1 until Ctrl-C")
    p.add_argument("--double", choices=["team-stub"], default="team-stub")
    p.add_argument("--port", type=int, default=8765)
    args = p.parse_args(argv)
    with DoubleServer(TeamStub(), args.port) as url:
        print(f"serving the {args.double} double at {url}", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
