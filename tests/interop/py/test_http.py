"""forge-bash over Streamable HTTP against the official MCP Python SDK: ClientSession over
streamable_http_client, on 127.0.0.1.

FORGE_BASH_BIN names the binary under test. Each test starts its own server
(`--http 127.0.0.1:0`, the port read from its log) with its own temporary directories and
token, and stops only that process group.
"""

import os
import re
import secrets
import signal
import subprocess
import tempfile
import threading
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from conftest import assert_seq_overflow, masked, text_of

BIN = os.environ.get("FORGE_BASH_BIN", str(Path(__file__).resolve().parents[3] / "target/debug/forge-bash"))

pytestmark = pytest.mark.anyio


def processes_in(directory: Path) -> list[tuple[int, list[str]]]:
    """Live processes whose working directory is `directory`, with their argv."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "cwd") != str(directory):
                continue
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        found.append((int(entry.name), [a.decode() for a in argv]))
    return found


def sleeping(directory: Path) -> list[int]:
    return [pid for pid, argv in processes_in(directory) if argv == ["sleep", "30"]]


def audit_rows(state: Path) -> list[list[str]]:
    """The audit rows of a state dir: [time, command, code, ms]."""
    rows = []
    for log in sorted(state.glob("audit-*.tsv")):
        rows += [line.split("\t") for line in log.read_text().splitlines()]
    return rows


def logged(state: Path, command: str, code: int) -> bool:
    return any(row[1] == command and row[2] == str(code) for row in audit_rows(state))


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside an exception group (the SDK's task groups wrap them)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def wait_until(condition, seconds: float = 10):
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.01)


@dataclass
class Server:
    url: str
    token: str
    root: Path

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    def workdir(self, user: str) -> Path:
        return self.root / "ws" / user

    def state(self, user: str) -> Path:
        return self.root / "state" / user


class NoLandlock(Exception):
    pass


@contextmanager
def serve(tmp_path: Path, *args: str):
    """`forge-bash --http 127.0.0.1:0` in a process group of its own, with the workdir
    TMP/ws/{user} and the state dir TMP/state/{user}; stopped (SIGTERM, then SIGKILL to
    its group) after. TMP is a directory of its own in the system's temp dir (not
    pytest's, which only its user may enter) that every uid may pass through: a root
    server runs each user's commands under a uid of their own, from a mapping file and
    a range of this server's."""
    with tempfile.TemporaryDirectory(prefix="forge-bash-http-py-") as made:
        root = Path(made)
        root.chmod(0o711)
        with _serve(root, *args) as server:
            yield server


@contextmanager
def _serve(tmp_path: Path, *args: str):
    token = secrets.token_hex(24)
    process = subprocess.Popen(
        [BIN, "--http", "127.0.0.1:0",
         "--workdir", str(tmp_path / "ws" / "{user}"),
         "--state-dir", str(tmp_path / "state" / "{user}"), *args],
        env={**os.environ, "FORGE_BASH_HTTP_TOKEN": token,
             "FORGE_BASH_USER_UIDS_FILE": str(tmp_path / "uids"),
             "FORGE_BASH_USER_UIDS": "5000000-5000099"},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )
    log: list[str] = []
    addr = None
    try:
        for line in process.stderr:
            log.append(line)
            if found := re.search(r"serving MCP over HTTP at /mcp addr=(\S+)", line):
                addr = found.group(1)
                break
        if addr is None:
            process.wait(10)
            text = "".join(log)
            if re.search(r"--sandbox: this kernel has no Landlock|needs Landlock ABI", text):
                raise NoLandlock(text.strip().splitlines()[-1])
            raise AssertionError(f"the server did not start:\n{text}")
        # The rest of the log is read, so that the server never blocks on it.
        threading.Thread(target=lambda: log.extend(process.stderr), daemon=True).start()
        try:
            yield Server(f"http://{addr}/mcp", token, tmp_path)
        except BaseException:
            print("--- the server's log ---", "".join(log), sep="\n")  # shown when a test fails
            raise
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@dataclass
class Connection:
    session: ClientSession
    http: httpx2.AsyncClient
    ids: list[str] = field(default_factory=list)

    async def run(self, command: str):
        return await self.session.call_tool("run", {"command": command})


@asynccontextmanager
async def connect(server: Server, user: str, token: str | None = ""):
    """A ClientSession of `user` over the SDK's streamable HTTP client; the httpx client
    carries the headers, and remembers the session ids the server hands out."""
    token = server.token if token == "" else token
    headers = {"X-User-ID": user}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    ids: list[str] = []

    async def remember(response):
        if session_id := response.headers.get("mcp-session-id"):
            ids.append(session_id)

    async with create_mcp_http_client(headers=headers) as http:
        http.event_hooks["response"].append(remember)
        async with streamable_http_client(server.url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield Connection(session, http, ids)


async def no_process_left(server: Server, *users: str):
    for user in users:
        await wait_until(lambda: not processes_in(server.workdir(user)), 5)


async def test_http_echo(tmp_path):
    with serve(tmp_path) as server:
        async with connect(server, "alice") as alice:
            tools = (await alice.session.list_tools()).tools
            assert [t.name for t in tools] == ["run"]
            assert str(server.workdir("alice")) in tools[0].description
            result = await alice.run("echo hi")
            assert masked(text_of(result)) == "hi\n\n[exit:0 | Xms]"
            assert not result.is_error
            assert logged(server.state("alice"), "echo hi", 0)
    await no_process_left(server, "alice")


async def test_http_blocked_rm(tmp_path):
    with serve(tmp_path) as server:
        async with connect(server, "alice") as alice:
            assert masked(text_of(await alice.run("mkdir x && touch x/y"))) == "\n[exit:0 | Xms]"
            result = await alice.run("rm -rf x")
            assert text_of(result) == "rm is blocked. Use the uvilo-trash MCP tool instead.\n[exit:-1 | 0ms]"
            assert result.is_error
            assert (server.workdir("alice") / "x" / "y").exists()
            assert logged(server.state("alice"), "rm -rf x", -1)
    await no_process_left(server, "alice")


async def test_http_overflow(tmp_path):
    with serve(tmp_path) as server:
        async with connect(server, "alice") as alice:
            result = await alice.run("seq 1 1000")

            assert_seq_overflow(text_of(result), server.state("alice") / "cmd-1.txt")
    await no_process_left(server, "alice")


async def test_http_cancel(tmp_path):
    with serve(tmp_path) as server:
        work = server.workdir("alice")
        async with connect(server, "alice") as alice:
            async with anyio.create_task_group() as group:
                group.start_soon(alice.run, "sleep 30")
                await wait_until(lambda: len(sleeping(work)) == 1)
                # The client's own abort: cancelling the awaiting task sends
                # notifications/cancelled for the request.
                group.cancel_scope.cancel()
            await wait_until(lambda: logged(server.state("alice"), "sleep 30", 130), 5)
            await wait_until(lambda: not sleeping(work), 5)
            # The session still works.
            assert text_of(await alice.run("echo next")).startswith("next\n")
    await no_process_left(server, "alice")


async def test_http_delete_ends_the_session_and_its_command(tmp_path):
    with serve(tmp_path) as server:
        work = server.workdir("alice")
        async with connect(server, "alice") as alice:
            outcome = []

            async def call():
                try:
                    outcome.append(await alice.run("sleep 30"))
                except Exception as e:  # the session is gone: the call fails
                    outcome.append(e)

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                await wait_until(lambda: len(sleeping(work)) == 1)
                # The DELETE the SDK sends when its client closes, sent now, on the
                # session's own connection pool (its headers carry the token).
                response = await alice.http.delete(server.url, headers={"mcp-session-id": alice.ids[0]})
                assert response.status_code == 204, response
                await wait_until(lambda: logged(server.state("alice"), "sleep 30", 130), 5)
                await wait_until(lambda: not sleeping(work), 5)
                group.cancel_scope.cancel()
            assert not any(hasattr(o, "content") for o in outcome), outcome
            # The session is over.
            with pytest.raises(MCPError):
                await alice.run("echo after")
    await no_process_left(server, "alice")


async def test_http_two_users(tmp_path):
    with serve(tmp_path) as server:
        async with connect(server, "alice") as alice, connect(server, "bob") as bob:
            assert masked(text_of(await alice.run("pwd"))) == f"{server.workdir('alice')}\n\n[exit:0 | Xms]"
            assert masked(text_of(await bob.run("pwd"))) == f"{server.workdir('bob')}\n\n[exit:0 | Xms]"
            await alice.run("echo alice-was-here > note.txt")
            await bob.run("echo bob-was-here")
            assert masked(text_of(await alice.run("ls"))) == "note.txt\n\n[exit:0 | Xms]"
            assert masked(text_of(await bob.run("ls -A"))) == "\n[exit:0 | Xms]"
            assert masked(text_of(await bob.run("cat note.txt"))) == (
                "\n--- stderr ---\ncat: note.txt: No such file or directory\n\n[exit:1 | Xms]"
            )
            assert (server.workdir("alice") / "note.txt").read_text() == "alice-was-here\n"
            assert not (server.workdir("bob") / "note.txt").exists()

            def commands(user):
                return [row[1] for row in audit_rows(server.state(user))]

            assert commands("alice") == ["pwd", "echo alice-was-here > note.txt", "ls"]
            assert commands("bob") == ["pwd", "echo bob-was-here", "ls -A", "cat note.txt"]
    await no_process_left(server, "alice", "bob")


async def test_http_sandboxed_users(tmp_path):
    try:
        with serve(tmp_path, "--sandbox") as server:
            async with connect(server, "alice") as alice, connect(server, "bob") as bob:
                note = server.workdir("alice") / "note.txt"
                await alice.run("echo alice-was-here > note.txt")
                assert masked(text_of(await alice.run(f"cat {note}"))) == "alice-was-here\n\n[exit:0 | Xms]"
                assert masked(text_of(await bob.run(f"cat {note}"))) == (
                    f"\n--- stderr ---\ncat: {note}: Permission denied\n\n[exit:1 | Xms]"
                )
                assert "Permission denied" in text_of(await bob.run(f"ls {server.workdir('alice')}"))
    except NoLandlock as e:
        pytest.skip(f"no Landlock here: {e}")
    await no_process_left(server, "alice", "bob")


async def test_http_401(tmp_path):
    with serve(tmp_path) as server:
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "httpx", "version": "0"}},
        }
        base = {"accept": "application/json, text/event-stream", "x-user-id": "alice"}
        async with httpx2.AsyncClient(timeout=10) as http:
            for extra in ({}, {"authorization": f"Bearer {server.token}x"}, {"authorization": f"Basic {server.token}"}):
                response = await http.post(server.url, json=initialize, headers={**base, **extra})
                assert response.status_code == 401, extra
                assert response.headers["www-authenticate"] == "Bearer"
                assert "mcp-session-id" not in response.headers
            # The SDK's client without the token, or with a wrong one, cannot start a session.
            for token in (None, "wrong-token-0123456789"):
                with pytest.raises(Exception) as caught:
                    async with connect(server, "alice", token=token):
                        pass
                assert [type(e) for e in leaves(caught.value)] == [MCPError], caught.value
            assert not (server.ws / "alice").exists(), "no workdir was made for alice"
            async with http.stream(
                "POST", server.url, json=initialize, headers={**base, "authorization": f"Bearer {server.token}"}
            ) as response:
                assert response.status_code == 200
                assert response.headers["mcp-session-id"]
