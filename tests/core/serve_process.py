"""A real ``zombietop serve`` process on loopback for tests: started with a ping key in its
environment, its address read from its first log line, every line it logs kept."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

KEY = "k3y-0f-the-cr0n-b0x-1234"
ZOMBIETOP = str(Path(sys.executable).with_name("zombietop"))
ADDRESS = re.compile(r"serving pings for .* at http://([^/]+)/ping/")
STARTED_WITHIN = 60.0


@dataclass
class ServeProcess:
    process: asyncio.subprocess.Process
    address: str
    log: list[str] = field(default_factory=list)
    """Every line the process wrote (stdout and stderr), in order."""

    def url(self, path: str, key: str = KEY) -> str:
        return f"http://{self.address}/ping/{key}/{path}"


async def _keep_lines(stream: asyncio.StreamReader, into: list[str]) -> None:
    while line := await stream.readline():
        into.append(line.decode(errors="replace").rstrip("\n"))


@contextlib.asynccontextmanager
async def serve_process(
    db: Path, *args: str, env: dict[str, str] | None = None, listen: str = "127.0.0.1:0"
) -> AsyncIterator[ServeProcess]:
    """Run ``zombietop --db DB serve --listen LISTEN ARGS`` until the block ends."""
    environment = {**os.environ, "ZOMBIETOP_PING_KEY": KEY, **(env or {})}
    process = await asyncio.create_subprocess_exec(
        ZOMBIETOP, "--db", str(db), "serve", "--listen", listen, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, env=environment,
    )  # fmt: skip
    assert process.stdout is not None
    log: list[str] = []
    address = None
    async with asyncio.timeout(STARTED_WITHIN):
        while address is None:
            line = (await process.stdout.readline()).decode(errors="replace")
            assert line, f"serve ended before it listened: {log}"
            log.append(line.rstrip("\n"))
            if found := ADDRESS.search(line):
                address = found.group(1)
    reader = asyncio.create_task(_keep_lines(process.stdout, log))
    try:
        yield ServeProcess(process, address, log)
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        await process.wait()
        await reader
