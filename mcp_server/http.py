"""Streamable HTTP transport on 127.0.0.1, behind a bearer token: anyone else on the machine gets a 401."""

from __future__ import annotations

import hmac
import json
import secrets
import sys

import uvicorn

from papervault.errors import PapervaultError

TOKEN_ENV = "PAPERVAULT_MCP_TOKEN"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def new_token() -> str:
    return secrets.token_urlsafe(32)


class BearerAuth:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>` (compared in constant time)."""

    def __init__(self, app, token: str):
        if not token:
            raise ValueError("an empty token would let anyone in")
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope, receive, send):
        # lifespan messages start the session manager; only requests are checked
        if scope["type"] == "http":
            given = b""
            for name, value in scope.get("headers") or ():
                if name == b"authorization":
                    given = value
                    break
            scheme, _, cred = given.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(cred.strip(), self._token):
                body = json.dumps({"error": "unauthorized",
                                   "error_description": "send Authorization: Bearer <token> "
                                                        "(the token papervault mcp --http printed or "
                                                        "$PAPERVAULT_MCP_TOKEN)"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="papervault"'),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(server, token: str, *, host: str = "127.0.0.1", path: str = "/mcp"):
    """The server's streamable-HTTP Starlette app wrapped in the bearer check."""
    app = server.streamable_http_app(streamable_http_path=path, host=host)
    return BearerAuth(app, token)


def serve_http(server, *, token: str, host: str = "127.0.0.1", port: int = 8765, path: str = "/mcp",
               announce=None) -> None:
    """Run until interrupted. Refuses any host but loopback: the vault is not for the network."""
    if host not in LOOPBACK:
        raise PapervaultError(f"refusing to listen on {host}", fix="the MCP server binds 127.0.0.1 only; "
                              "put a reverse proxy with TLS in front of it to share it")
    config = uvicorn.Config(http_app(server, token, host=host, path=path), host=host, port=port,
                            log_level="warning", lifespan="on")
    srv = uvicorn.Server(config)
    if announce:
        announce(f"http://{host}:{port}{path}")
    srv.run()


def eprint(*args) -> None:
    print(*args, file=sys.stderr, flush=True)
