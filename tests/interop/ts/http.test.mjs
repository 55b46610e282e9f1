// forge-bash over Streamable HTTP against the official TypeScript MCP SDK client:
// Client over StreamableHTTPClientTransport, on 127.0.0.1. FORGE_BASH_BIN names the
// binary under test. Each test starts its own server (`--http 127.0.0.1:0`, the port
// read from its log) with its own temporary directories and token, and stops only
// that process group.

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, existsSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const here = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.FORGE_BASH_BIN ?? resolve(here, "../../../target/debug/forge-bash");

const masked = (text) => text.replace(/\| \d+ms\]$/, "| Xms]");
const textOf = (result) => result.content[0].text;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${cond}`);
    await sleep(10);
  }
}

// Live processes whose working directory is `dir`, with their argv.
function processesIn(dir) {
  const found = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readlinkSync(`/proc/${name}/cwd`) !== dir) continue;
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const state = stat.slice(stat.lastIndexOf(")") + 1).trim()[0];
      if (state === "Z" || state === "X") continue;
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").slice(0, -1);
      found.push({ pid: Number(name), argv });
    } catch {}
  }
  return found;
}

const sleeping = (dir) => processesIn(dir).filter((p) => p.argv.join(" ") === "sleep 30");

// The audit rows of a state dir: [time, command, code, ms].
function auditRows(state) {
  if (!existsSync(state)) return [];
  return readdirSync(state)
    .filter((f) => /^audit-\d{4}-\d\d-\d\d\.tsv$/.test(f))
    .flatMap((f) => readFileSync(join(state, f), "utf8").split("\n").filter(Boolean))
    .map((line) => line.split("\t"));
}

const logged = (state, command, code) => auditRows(state).some((r) => r[1] === command && r[2] === String(code));

// Starts `forge-bash --http 127.0.0.1:0` in a process group of its own, with the
// workdir DIR/ws/{user} and the state dir DIR/state/{user}.
async function serve({ args = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "forge-bash-http-ts-"));
  // Every uid may pass through it: a root server runs each user's commands under a uid
  // of their own, from a mapping file and a range of this server's.
  chmodSync(dir, 0o711);
  const ws = join(dir, "ws");
  const states = join(dir, "state");
  const token = randomBytes(24).toString("hex");
  const child = spawn(
    BIN,
    [
      "--http", "127.0.0.1:0",
      "--workdir", join(ws, "{user}"),
      "--state-dir", join(states, "{user}"),
      ...args,
    ],
    {
      env: {
        ...process.env,
        FORGE_BASH_HTTP_TOKEN: token,
        FORGE_BASH_USER_UIDS_FILE: join(dir, "uids"),
        FORGE_BASH_USER_UIDS: "5100000-5100099",
      },
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    },
  );
  const exited = new Promise((r) => child.once("exit", (code, signal) => r({ code, signal })));
  let log = "";
  const addr = await new Promise((resolveAddr) => {
    const lines = createInterface({ input: child.stderr });
    lines.on("line", (line) => {
      log += line + "\n";
      const found = /serving MCP over HTTP at \/mcp addr=(\S+)/.exec(line);
      if (found) resolveAddr(found[1]);
    });
    lines.on("close", () => resolveAddr(null));
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
    const done = await Promise.race([exited, sleep(5000).then(() => null)]);
    if (!done) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
      await exited;
    }
  };
  if (!addr) {
    await stop();
    return { failed: log };
  }
  return {
    url: `http://${addr}/mcp`,
    token,
    workdir: (user) => join(ws, user),
    state: (user) => join(states, user),
    root: dir,
    ws,
    log: () => log,
    stop,
  };
}

async function connect(server, { user, token = server.token } = {}) {
  const headers = {};
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  if (user) headers["X-User-ID"] = user;
  const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers } });
  const client = new Client({ name: "forge-bash-interop-http", version: "0.0.0" });
  await client.connect(transport);
  return { client, transport };
}

// Runs `body` with a client of `user`'s session, closed after.
async function withClient(server, user, body) {
  const { client } = await connect(server, { user });
  try {
    await body(client);
  } finally {
    await client.close();
  }
}

const run = (client, command, options) =>
  client.callTool({ name: "run", arguments: { command } }, undefined, options);

// Runs `body` with a started server, stops the server after, and checks that nothing
// a command started is left in the workdirs of `users`.
async function withServer(server, users, body) {
  assert.ok(server.url, `the server did not start:\n${server.failed}`);
  try {
    await body(server);
  } catch (e) {
    e.message += `\n--- the server's log ---\n${server.log()}`;
    throw e;
  } finally {
    await server.stop();
  }
  for (const user of users) {
    await waitFor(() => processesIn(server.workdir(user)).length === 0, 5000);
  }
  rmSync(server.root, { recursive: true, force: true });
}

test("http: echo, over a session of user alice", async () => {
  await withServer(await serve(), ["alice"], async (server) => {
    await withClient(server, "alice", async (client) => {
      assert.equal(client.getServerVersion().name, "forge-bash");
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ["run"]);
      assert.ok(tools[0].description.includes(server.workdir("alice")));
      const result = await run(client, "echo hi");
      assert.equal(masked(textOf(result)), "hi\n\n[exit:0 | Xms]");
      assert.equal(result.isError, false);
      assert.ok(logged(server.state("alice"), "echo hi", 0));
    });
  });
});

test("http: rm is blocked and x stays", async () => {
  await withServer(await serve(), ["alice"], async (server) => {
    await withClient(server, "alice", async (client) => {
      assert.equal(masked(textOf(await run(client, "mkdir x && touch x/y"))), "\n[exit:0 | Xms]");
      const result = await run(client, "rm -rf x");
      assert.equal(textOf(result), "rm is blocked. Use the uvilo-trash MCP tool instead.\n[exit:-1 | 0ms]");
      assert.equal(result.isError, true);
      assert.ok(existsSync(join(server.workdir("alice"), "x", "y")));
      assert.ok(logged(server.state("alice"), "rm -rf x", -1));
    });
  });
});

test("http: overflow goes to a file in the user's state dir", async () => {
  await withServer(await serve(), ["alice"], async (server) => {
    await withClient(server, "alice", async (client) => {
      const result = await run(client, "seq 1 1000");
      const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i)).join("\n");
      const file = join(server.state("alice"), "cmd-1.txt");
      const marker = `[... lines 31-940 of 1000 not shown, no error or failure among them: sed -n '31,940p' ${file}]`;
      assert.equal(
        masked(textOf(result)),
        `${range(1, 30)}\n${marker}\n${range(941, 1000)}\nOutput truncated. Full output written to ${file}\n[exit:0 | Xms]`,
      );
      assert.equal(result.isError, false);
      assert.equal(readFileSync(file, "utf8"), `${range(1, 1000)}\n`);
    });
  });
});

test("http: an abort signal cancels sleep 30: audit code 130, the sleep is gone", async () => {
  await withServer(await serve(), ["alice"], async (server) => {
    await withClient(server, "alice", async (client) => {
      const work = server.workdir("alice");
      const controller = new AbortController();
      const call = run(client, "sleep 30", { signal: controller.signal });
      await waitFor(() => sleeping(work).length === 1);
      const started = Date.now();
      controller.abort("user stopped the response");
      await assert.rejects(call);
      await waitFor(() => logged(server.state("alice"), "sleep 30", 130), 5000);
      await waitFor(() => sleeping(work).length === 0, 5000);
      assert.ok(Date.now() - started < 5000);
      // The session still works.
      assert.ok(textOf(await run(client, "echo next")).startsWith("next\n"));
    });
  });
});

test("http: terminateSession (DELETE) while sleep 30 runs: audit code 130, the sleep is gone", async () => {
  await withServer(await serve(), ["alice"], async (server) => {
    const { client, transport } = await connect(server, { user: "alice" });
    const work = server.workdir("alice");
    try {
      const call = run(client, "sleep 30");
      call.catch(() => {});
      await waitFor(() => sleeping(work).length === 1);
      const started = Date.now();
      await transport.terminateSession();
      assert.equal(transport.sessionId, undefined);
      await waitFor(() => logged(server.state("alice"), "sleep 30", 130), 5000);
      await waitFor(() => sleeping(work).length === 0, 5000);
      assert.ok(Date.now() - started < 5000);
      // The session is over, and so is the call: no answer comes, and closing the
      // client fails it.
      await client.close();
      await assert.rejects(call, /Connection closed/);
    } finally {
      await client.close();
    }
  });
});

test("http: alice and bob have their own workdirs and audit logs", async () => {
  await withServer(await serve(), ["alice", "bob"], async (server) => {
    const { client: alice, transport: alicesTransport } = await connect(server, { user: "alice" });
    const bob = (await connect(server, { user: "bob" })).client;
    try {
      assert.equal(masked(textOf(await run(alice, "pwd"))), `${server.workdir("alice")}\n\n[exit:0 | Xms]`);
      assert.equal(masked(textOf(await run(bob, "pwd"))), `${server.workdir("bob")}\n\n[exit:0 | Xms]`);
      await run(alice, "echo alice-was-here > note.txt");
      await run(bob, "echo bob-was-here");
      assert.equal(masked(textOf(await run(alice, "ls"))), "note.txt\n\n[exit:0 | Xms]");
      assert.equal(masked(textOf(await run(bob, "ls -A"))), "\n[exit:0 | Xms]");
      assert.equal(
        masked(textOf(await run(bob, "cat note.txt"))),
        "\n--- stderr ---\ncat: note.txt: No such file or directory\n\n[exit:1 | Xms]",
      );
      assert.equal(readFileSync(join(server.workdir("alice"), "note.txt"), "utf8"), "alice-was-here\n");
      assert.equal(existsSync(join(server.workdir("bob"), "note.txt")), false);
      const commands = (user) => auditRows(server.state(user)).map((r) => r[1]);
      assert.deepEqual(commands("alice"), ["pwd", "echo alice-was-here > note.txt", "ls"]);
      assert.deepEqual(commands("bob"), ["pwd", "echo bob-was-here", "ls -A", "cat note.txt"]);
      // Bob cannot take over alice's session: its user is fixed when it starts.
      const takeover = await fetch(server.url, {
        method: "POST",
        headers: {
          authorization: `Bearer ${server.token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-session-id": alicesTransport.sessionId,
          "mcp-protocol-version": alicesTransport.protocolVersion,
          "x-user-id": "bob",
        },
        body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/call", params: { name: "run", arguments: { command: "touch taken" } } }),
      });
      assert.equal(takeover.status, 403);
      await takeover.body?.cancel();
      assert.equal(existsSync(join(server.workdir("alice"), "taken")), false);
      assert.equal(existsSync(join(server.workdir("bob"), "taken")), false);
    } finally {
      await alice.close();
      await bob.close();
    }
  });
});

test("http: with --sandbox, bob cannot read alice's file", async (t) => {
  const sandboxed = await serve({ args: ["--sandbox"] });
  if (!sandboxed.url && /--sandbox: this kernel has no Landlock|needs Landlock ABI/.test(sandboxed.failed)) {
    t.skip(`no Landlock here: ${sandboxed.failed.trim().split("\n").pop()}`);
    return;
  }
  await withServer(sandboxed, ["alice", "bob"], async (server) => {
    const alice = (await connect(server, { user: "alice" })).client;
    const bob = (await connect(server, { user: "bob" })).client;
    try {
      const file = join(server.workdir("alice"), "note.txt");
      await run(alice, "echo alice-was-here > note.txt");
      assert.equal(masked(textOf(await run(alice, `cat ${file}`))), "alice-was-here\n\n[exit:0 | Xms]");
      const result = await run(bob, `cat ${file}`);
      assert.equal(masked(textOf(result)), `\n--- stderr ---\ncat: ${file}: Permission denied\n\n[exit:1 | Xms]`);
      assert.match(textOf(await run(bob, `ls ${server.workdir("alice")}`)), /Permission denied/);
    } finally {
      await alice.close();
      await bob.close();
    }
  });
});

test("http: no token or a wrong one gets 401, and nothing runs", async () => {
  await withServer(await serve(), [], async (server) => {
    const initialize = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "plain-fetch", version: "0" } },
    });
    const post = (extra) =>
      fetch(server.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "x-user-id": "alice",
          ...extra,
        },
        body: initialize,
      });
    for (const headers of [{}, { authorization: `Bearer ${server.token}x` }, { authorization: "Bearer " }, { authorization: server.token }]) {
      const response = await post(headers);
      assert.equal(response.status, 401, JSON.stringify(headers));
      assert.equal(response.headers.get("www-authenticate"), "Bearer");
      assert.equal(response.headers.get("mcp-session-id"), null);
      await response.body?.cancel();
    }
    // The SDK's client without the token, and with a wrong one, fails to connect.
    for (const token of [null, "wrong-token-0123456789"]) {
      await assert.rejects(connect(server, { user: "alice", token }), (e) => {
        assert.ok(e instanceof StreamableHTTPError, String(e));
        assert.equal(e.code, 401);
        return true;
      });
    }
    assert.equal(existsSync(join(server.ws, "alice")), false, "no workdir was made for alice");
    // The right token is let in.
    const allowed = await post({ authorization: `Bearer ${server.token}` });
    assert.equal(allowed.status, 200);
    assert.ok(allowed.headers.get("mcp-session-id"));
    await allowed.body?.cancel();
  });
});
