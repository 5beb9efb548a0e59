"""A fault-injecting HTTP proxy in front of the tests' S3 server: the endpoint down, throttled, or held.

:class:`FaultProxy` listens on 127.0.0.1 and forwards every request to the real server
(``tests/s3_fixtures.py``'s SeaweedFS) unless a rule matches it. A rule matches a request by a
substring of ``"<METHOD> <target>"``, the target URL-decoded — the path *and* the query, so a listing
(``GET /lake?list-type=2&prefix=<table>/_delta_log/``) matches its table like a ``GET`` of a log
file does. That is how a phase of a run is picked out: the input table's prefix, ``…/quarantine/``,
``…/dq_results/_delta_log/``, the registry's ``…/dq_contracts/``. What a matching request gets:

* ``down`` — the connection is reset without an answer, as from an endpoint that went away;
* ``throttle`` — ``503 SlowDown`` (S3's throttling answer), for the first ``count`` matching requests;
* ``hold`` — the request waits until ``count`` matching requests are held (or ``timeout`` seconds),
  then all go through at once: a barrier that makes concurrent writers meet at one commit.

Every request is recorded (method, target, what was done, the upstream status): :meth:`FaultProxy.requests`.
One request per connection: each forwarded request and its answer carry ``Connection: close``, so
every request is decided on its own. The proxy runs in a process of its own (``python
s3_fault_proxy.py UPSTREAM`` prints its port), switched by the test through ``/_fault/…`` requests.
Plain Python (threads, sockets): no dependency.

Example::

    with FaultProxy(s3.server.settings.endpoint_url) as proxy:
        proxy.down("/dq_results/_delta_log/")
        ...  # the results commit fails; everything else goes through
        proxy.clear()
"""

from __future__ import annotations

import dataclasses
import json
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

#: Requests to this path are the test's commands to the proxy, never forwarded.
CONTROL = "/_fault/"

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message></Error>"
)


@dataclasses.dataclass
class Rule:
    """Requests whose decoded target contains ``match`` get ``action`` (``down``, ``throttle``, ``hold``)."""

    match: str
    action: str
    count: int | None = None  # throttle: how many requests; hold: how many to gather
    timeout: float = 20.0  # hold: release whoever is held after this many seconds
    served: int = 0
    released: threading.Event = dataclasses.field(default_factory=threading.Event)


@dataclasses.dataclass(frozen=True)
class Seen:
    method: str
    target: str
    action: str  # "pass", "down", "throttle", "hold"
    status: int | None  # the upstream's status of a forwarded request
    at: float


class ProxyServer:
    """The proxy itself (in its own process): threads on 127.0.0.1 forwarding to ``upstream`` (``http://host:port``)."""

    def __init__(self, upstream: str) -> None:
        parsed = urllib.parse.urlparse(upstream)
        self.upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.rules: list[Rule] = []
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._held = threading.Condition(self._lock)
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def clear(self) -> None:
        """Every rule removed (held requests released): the endpoint is back."""
        with self._lock:
            for rule in self.rules:
                rule.released.set()
            self.rules.clear()
            self._held.notify_all()

    def _add(self, rule: Rule) -> Rule:
        with self._lock:
            self.rules.append(rule)
        return rule

    # ---------------------------------------------------------------------------------- serving

    def serve_forever(self) -> None:
        self._accept()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _decide(self, target: str) -> tuple[str, Rule | None]:
        with self._lock:
            for rule in self.rules:
                if rule.match not in target:
                    continue
                if rule.action == "throttle":
                    if rule.count is not None and rule.served >= rule.count:
                        continue
                    rule.served += 1
                return rule.action, rule
        return "pass", None

    def _record(self, method: str, target: str, action: str, status: int | None) -> None:
        with self._lock:
            self.seen.append(Seen(method, target, action, status, time.time()))

    def _serve(self, client: socket.socket) -> None:
        try:
            client.settimeout(60)  # a request that never completes frees its thread
            head, rest = _read_head(client)
            if head is None:
                return
            method, raw_target = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[:2]
            if raw_target.startswith(CONTROL):
                self._control(client, method, raw_target, _read_body(client, _headers(head), rest))
                return
            target = urllib.parse.unquote(raw_target)
            action, rule = self._decide(f"{method} {target}")
            if action == "down":
                self._record(method, target, action, None)
                # An abortive close (RST): the client sees the connection reset, no answer.
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            if action == "throttle":
                self._record(method, target, action, 503)
                if _headers(head).get("expect", "").lower() != "100-continue":
                    _read_body(client, _headers(head), rest)  # read, so the client is not cut off mid-send
                client.sendall(
                    b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\nRetry-After: 0\r\n"
                    + f"Content-Length: {len(SLOW_DOWN)}\r\nConnection: close\r\n\r\n".encode()
                    + SLOW_DOWN
                )
                return
            if action == "hold" and rule is not None:
                self._wait_held(rule)
                action = "hold"
            self._forward(client, method, target, head, rest, action)
        except OSError:
            return
        finally:
            client.close()

    def _control(self, client: socket.socket, method: str, target: str, body: bytes) -> None:
        """The test's commands: ``POST /_fault/rule`` (a rule as JSON), ``POST /_fault/clear``, ``GET /_fault/seen``."""
        answer: Any = {"ok": True}
        command = target[len(CONTROL) :]
        if command == "rule":
            fields = json.loads(body)
            self._add(Rule(fields["match"], fields["action"], fields.get("count"), fields.get("timeout", 20.0)))
        elif command == "clear":
            self.clear()
        elif command == "seen":
            with self._lock:
                answer = [dataclasses.asdict(entry) for entry in self.seen]
        data = json.dumps(answer).encode()
        client.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )

    def _wait_held(self, rule: Rule) -> None:
        with self._held:
            rule.served += 1
            if rule.count is not None and rule.served >= rule.count:
                rule.released.set()
                self._held.notify_all()
            deadline = time.monotonic() + rule.timeout
            while not rule.released.is_set() and time.monotonic() < deadline:
                self._held.wait(timeout=0.1)
            rule.released.set()  # whoever came first waited long enough: release the others too
            self._held.notify_all()

    def _forward(self, client: socket.socket, method: str, target: str, head: bytes, rest: bytes, action: str) -> None:
        status: int | None = None
        try:
            headers = _headers(head)
            if headers.get("expect", "").lower() == "100-continue":
                client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")  # answered here; upstream gets the whole body
            body = _read_body(client, headers, rest)
            with socket.create_connection(self.upstream, timeout=60) as upstream:
                upstream.sendall(_close_after(head, drop=(b"expect:",)) + body)
                answer = b""
                while True:
                    data = upstream.recv(65536)
                    if not data:
                        break
                    answer += data
            status = _status(answer)
            answer_head, sep, answer_body = answer.partition(b"\r\n\r\n")
            # Told to close: the client never sends a second request on a connection decided for the first.
            client.sendall(_close_after(answer_head + sep) + answer_body)
        finally:
            self._record(method, target, action, status)


def _read_head(sock: socket.socket) -> tuple[bytes | None, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    return head + b"\r\n\r\n", rest


def _headers(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines if ":" in line)}


def _close_after(head: bytes, drop: tuple[bytes, ...] = ()) -> bytes:
    """A request's or an answer's head with ``Connection: close`` (one request per connection)."""
    dropped = (b"connection:", b"keep-alive:", *drop)
    lines = [line for line in head.split(b"\r\n") if line and not line.lower().startswith(dropped)]
    return b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n"


def _read_body(sock: socket.socket, headers: dict[str, str], rest: bytes) -> bytes:
    """The request's whole body (``Content-Length`` bytes, or every chunk of a chunked one) as sent."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        data = rest
        position = 0
        while True:  # walk the chunks: size line, data, CRLF; a zero size ends it (then trailers, CRLF)
            while b"\r\n" not in data[position:]:
                data += _recv(sock)
            line_end = data.index(b"\r\n", position)
            size = int(data[position:line_end].split(b";")[0], 16)
            if size == 0:
                while not data.endswith(b"\r\n\r\n") or len(data) < line_end + 4:
                    data += _recv(sock)
                return data
            position = line_end + 2 + size + 2
            while len(data) < position:
                data += _recv(sock)
    length = int(headers.get("content-length", "0") or 0)
    data = rest
    while len(data) < length:
        data += _recv(sock)
    return data


def _recv(sock: socket.socket) -> bytes:
    chunk = sock.recv(65536)
    if not chunk:
        raise ConnectionError("the client closed the connection mid-request")
    return chunk


def _status(data: bytes) -> int | None:
    try:
        return int(data.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


class FaultProxy:
    """The test's handle: starts the proxy in a process of its own, switches its rules, reads what it saw.

    A process, not a thread of the test's: delta-rs calls hold the GIL while they wait for S3, and a
    proxy thread of the same interpreter would then never answer them.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultProxy:
        self._process = subprocess.Popen(
            [sys.executable, __file__, self.upstream], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self._process.stdout is not None
        self.port = int(self._process.stdout.readline().decode().strip())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=10)

    def down(self, match: str = "") -> None:
        """Reset every connection whose request matches (``""``: every request — the endpoint is down)."""
        self._call("rule", {"match": match, "action": "down"})

    def throttle(self, match: str, count: int) -> None:
        """Answer ``503 SlowDown`` to the first ``count`` matching requests, then forward again."""
        self._call("rule", {"match": match, "action": "throttle", "count": count})

    def hold(self, match: str, count: int, timeout: float = 20.0) -> None:
        """Hold matching requests until ``count`` are waiting (or ``timeout`` s after the first), then forward."""
        self._call("rule", {"match": match, "action": "hold", "count": count, "timeout": timeout})

    def clear(self) -> None:
        """Every rule removed (held requests released): the endpoint is back."""
        self._call("clear")

    def requests(self, match: str = "", action: str | None = None, **where: Any) -> list[Seen]:
        """The recorded requests whose ``"<METHOD> <target>"`` contains ``match`` (and that got ``action``; other
        fields ``where``)."""
        seen = [Seen(**entry) for entry in self._call("seen", method="GET")]
        return [
            s
            for s in seen
            if match in f"{s.method} {s.target}"
            and (action is None or s.action == action)
            and all(getattr(s, key) == value for key, value in where.items())
        ]

    def _call(self, command: str, payload: Any = None, method: str = "POST") -> Any:
        data = json.dumps(payload).encode() if payload is not None else b""
        request = urllib.request.Request(f"{self.endpoint_url}{CONTROL}{command}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())


def main(argv: list[str]) -> None:
    server = ProxyServer(argv[0])
    print(server.port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
