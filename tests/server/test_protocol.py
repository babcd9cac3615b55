"""Answers leave in one send: the head and body uvicorn writes separately go out together."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.server import ServerState

from app.server.protocol import BerthHttpProtocol, CoalescingTransport


class RecordingTransport:
    """The asyncio.Transport calls CoalescingTransport makes, recorded."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def get_extra_info(self, name: str) -> Any:
        if name in ("peername", "sockname"):
            return ("127.0.0.1", 8888)
        return None if name in ("ssl_object", "sslcontext", "socket") else f"extra {name}"

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_writes_of_one_loop_step_are_one_write_at_its_end() -> None:
    async def scenario() -> list[list[bytes]]:
        inner = RecordingTransport()
        transport = CoalescingTransport(inner, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        transport.write(b"{}")
        seen = [list(inner.writes)]
        assert transport.get_write_buffer_size() == 40
        await asyncio.sleep(0)
        seen.append(list(inner.writes))
        return seen

    during, after = asyncio.run(scenario())
    assert during == []
    assert after == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]


def test_close_sends_what_is_pending_first_and_the_rest_is_the_transports() -> None:
    async def scenario() -> RecordingTransport:
        inner = RecordingTransport()
        transport = CoalescingTransport(inner, asyncio.get_running_loop())  # type: ignore[arg-type]
        transport.write(b"last words")
        transport.close()
        assert transport.get_extra_info("cipher") == "extra cipher"
        transport.write(b"after close")
        await asyncio.sleep(0)  # the flush scheduled by that write finds the transport closing
        return inner

    inner = asyncio.run(scenario())
    assert inner.writes == [b"last words"] and inner.closed


def test_an_answer_is_one_write_to_the_socket() -> None:
    app = FastAPI()

    @app.post("/filter")
    def filter_() -> dict[str, str]:
        return {"Error": ""}

    async def scenario() -> list[bytes]:
        config = uvicorn.Config(app, log_config=None)
        config.load()
        protocol = BerthHttpProtocol(config=config, server_state=ServerState(), app_state={})
        inner = RecordingTransport()
        protocol.connection_made(inner)  # type: ignore[arg-type]
        protocol.data_received(b"POST /filter HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n")
        for _ in range(100):
            if inner.writes:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)  # a second write, were there one, would be made by now
        return inner.writes

    writes = asyncio.run(scenario())
    assert len(writes) == 1
    head, _, body = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and body == b'{"Error":""}'
