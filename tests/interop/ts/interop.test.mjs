// forge-bash against the official TypeScript MCP SDK client (the library LibreChat uses):
// Client over StdioClientTransport. FORGE_BASH_BIN names the binary under test.
// Each test starts its own server with its own temporary workdir and state dir.

import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, existsSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const here = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.FORGE_BASH_BIN ?? resolve(here, "../../../target/debug/forge-bash");

async function forge(extraArgs = [], extraEnv = {}) {
  const dir = mkdtempSync(join(tmpdir(), "forge-bash-ts-"));
  const work = join(dir, "work");
  const state = join(dir, "state");
  mkdirSync(work);
  const transport = new StdioClientTransport({
    command: BIN,
    args: ["--workdir", work, "--state-dir", state, ...extraArgs],
    env: { ...getDefaultEnvironment(), ...extraEnv },
    stderr: "ignore",
  });
  const client = new Client({ name: "forge-bash-interop", version: "0.0.0" });
  await client.connect(transport);
  return { client, work, state, close: () => client.close() };
}

const masked = (text) => text.replace(/\| \d+ms\]$/, "| Xms]");
const textOf = (result) => result.content[0].text;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 1).trim()[0];
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

async function waitFor(cond, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${cond}`);
    await sleep(10);
  }
}

async function readPid(path) {
  await waitFor(() => existsSync(path) && readFileSync(path, "utf8").endsWith("\n"));
  return Number(readFileSync(path, "utf8").trim());
}

function killGroup(pgid) {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {}
}

test("lists exactly the run tool", async () => {
  const { client, work, close } = await forge();
  try {
    assert.equal(client.getServerVersion().name, "forge-bash");
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["run"]);
    assert.deepEqual(tools[0].inputSchema.required, ["command"]);
    assert.equal(tools[0].inputSchema.properties.command.type, "string");
    assert.ok(tools[0].description.includes(work));
    assert.equal(tools[0].annotations.title, "Forge Bash");
    assert.equal(tools[0].annotations.readOnlyHint, false);
    assert.equal(tools[0].annotations.destructiveHint, true);
    assert.equal(tools[0].annotations.openWorldHint, true);
  } finally {
    await close();
  }
});

test("runs echo hello", async () => {
  const { client, close } = await forge();
  try {
    const result = await client.callTool({ name: "run", arguments: { command: "echo hello" } });
    assert.equal(masked(textOf(result)), "hello\n\n[exit:0 | Xms]");
    assert.equal(result.isError, false);
  } finally {
    await close();
  }
});

test("overflow goes to a file", async () => {
  const { client, state, close } = await forge();
  try {
    const result = await client.callTool({ name: "run", arguments: { command: "seq 1 1000" } });
    const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => String(from + i)).join("\n");
    const file = join(state, "cmd-1.txt");
    const marker = `[... lines 31-940 of 1000 not shown, no error or failure among them: sed -n '31,940p' ${file}]`;
    assert.equal(
      masked(textOf(result)),
      `${range(1, 30)}\n${marker}\n${range(941, 1000)}\nOutput truncated. Full output written to ${file}\n[exit:0 | Xms]`,
    );
    assert.equal(readFileSync(file, "utf8").split("\n").length, 1001);
  } finally {
    await close();
  }
});

test("blocks rm and runs nothing of the chain", async () => {
  const { client, work, close } = await forge();
  try {
    const result = await client.callTool({ name: "run", arguments: { command: "touch marker; rm x" } });
    assert.equal(textOf(result), "rm is blocked. Use the uvilo-trash MCP tool instead.\n[exit:-1 | 0ms]");
    assert.equal(result.isError, true);
    assert.equal(existsSync(join(work, "marker")), false);
  } finally {
    await close();
  }
});

test("times out", async () => {
  const { client, close } = await forge(["--timeout-secs", "1"]);
  try {
    const started = Date.now();
    const result = await client.callTool({ name: "run", arguments: { command: "echo before; sleep 600" } });
    assert.ok(Date.now() - started < 5000);
    assert.equal(masked(textOf(result)), "ERROR: Command timed out after 1 s.\nbefore\n\n[exit:124 | Xms]");
    assert.equal(result.isError, true);
  } finally {
    await close();
  }
});

test("abort signal cancels the call and kills its process group", async () => {
  const { client, work, state, close } = await forge();
  let pgid;
  try {
    const controller = new AbortController();
    const call = client.callTool(
      { name: "run", arguments: { command: "echo $$ > pgid; bash -c 'echo $$ > inner; sleep 600' & wait" } },
      undefined,
      { signal: controller.signal },
    );
    pgid = await readPid(join(work, "pgid"));
    const inner = await readPid(join(work, "inner"));
    assert.ok(alive(inner));
    controller.abort("user stopped the response");
    await assert.rejects(call);
    await waitFor(() => !alive(pgid) && !alive(inner), 5000);
    await waitFor(() =>
      readdirSync(state).some((f) => f.startsWith("audit-") && readFileSync(join(state, f), "utf8").includes("\t130\t")),
    );
    const next = await client.callTool({ name: "run", arguments: { command: "echo next" } });
    assert.ok(textOf(next).startsWith("next\n"));
  } finally {
    if (pgid) killGroup(pgid);
    await close();
  }
});

test("onprogress receives progress during a long call", async () => {
  const { client, close } = await forge([], { FORGE_BASH_PROGRESS_INTERVAL_MS: "200" });
  try {
    const seen = [];
    const result = await client.callTool(
      { name: "run", arguments: { command: "sleep 1.2; echo finished" } },
      undefined,
      { onprogress: (p) => seen.push(p) },
    );
    assert.ok(textOf(result).startsWith("finished\n"));
    assert.ok(seen.length >= 2, `progress notifications: ${JSON.stringify(seen)}`);
    assert.ok(seen.every((p, i) => i === 0 || p.progress > seen[i - 1].progress));
    assert.match(seen[0].message, /^running for \d+ s$/);
  } finally {
    await close();
  }
});
