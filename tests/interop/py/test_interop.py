"""forge-bash against the official MCP Python SDK: ClientSession over stdio_client.

FORGE_BASH_BIN names the binary under test (`.ci/run` sets it to the one cargo built).
Each test starts its own server with its own temporary workdir and state dir.
"""

import os
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import assert_seq_overflow, masked, text_of

BIN = os.environ.get("FORGE_BASH_BIN", str(Path(__file__).resolve().parents[3] / "target/debug/forge-bash"))

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def forge(tmp_path: Path, *args: str):
    work = tmp_path / "work"
    work.mkdir()
    state = tmp_path / "state"
    params = StdioServerParameters(
        command=BIN,
        args=["--workdir", str(work), "--state-dir", str(state), *args],
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session, work, state


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


async def wait_for_pid(path: Path) -> int:
    with anyio.fail_after(10):
        while not (path.exists() and path.read_text().endswith("\n")):
            await anyio.sleep(0.01)
    return int(path.read_text())


async def test_list_tools(tmp_path):
    async with forge(tmp_path) as (session, work, _):
        tools = (await session.list_tools()).tools
        assert [t.name for t in tools] == ["run"]
        schema = tools[0].input_schema if hasattr(tools[0], "input_schema") else tools[0].inputSchema
        assert schema["required"] == ["command"]
        assert schema["properties"]["command"]["type"] == "string"
        assert str(work) in tools[0].description


async def test_echo_hello(tmp_path):
    async with forge(tmp_path) as (session, _, _):
        result = await session.call_tool("run", {"command": "echo hello"})
        assert masked(text_of(result)) == "hello\n\n[exit:0 | Xms]"
        assert not (result.is_error if hasattr(result, "is_error") else result.isError)


async def test_overflow(tmp_path):
    async with forge(tmp_path) as (session, _, state):
        result = await session.call_tool("run", {"command": "seq 1 1000"})
        assert_seq_overflow(text_of(result), state / "cmd-1.txt")


async def test_blocked_rm(tmp_path):
    async with forge(tmp_path) as (session, work, _):
        result = await session.call_tool("run", {"command": "touch marker; rm x"})
        assert text_of(result) == "rm is blocked. Use the uvilo-trash MCP tool instead.\n[exit:-1 | 0ms]"
        assert result.is_error if hasattr(result, "is_error") else result.isError
        assert not (work / "marker").exists()


async def test_timeout(tmp_path):
    async with forge(tmp_path, "--timeout-secs", "1") as (session, _, _):
        started = time.monotonic()
        result = await session.call_tool("run", {"command": "echo before; sleep 600"})
        assert time.monotonic() - started < 5
        assert masked(text_of(result)) == "ERROR: Command timed out after 1 s.\nbefore\n\n[exit:124 | Xms]"


async def test_cancel_kills_the_process_group(tmp_path):
    async with forge(tmp_path) as (session, work, state):
        async def long_call():
            await session.call_tool("run", {"command": "echo $$ > pgid; bash -c 'echo $$ > inner; sleep 600' & wait"})

        pgid = None
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(long_call)
                pgid = await wait_for_pid(work / "pgid")
                inner = await wait_for_pid(work / "inner")
                assert alive(inner)
                # The client's own abort: cancelling the awaiting task sends
                # notifications/cancelled for the request.
                group.cancel_scope.cancel()
            with anyio.fail_after(5):
                while alive(pgid) or alive(inner):
                    await anyio.sleep(0.02)
            with anyio.fail_after(5):
                while not any("\t130\t" in p.read_text() for p in state.glob("audit-*.tsv")):
                    await anyio.sleep(0.02)
            # The session still works.
            result = await session.call_tool("run", {"command": "echo next"})
            assert text_of(result).startswith("next\n")
        finally:
            if pgid:
                try:
                    os.killpg(pgid, 9)
                except ProcessLookupError:
                    pass
