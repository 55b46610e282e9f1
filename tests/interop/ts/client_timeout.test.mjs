// A 70 s command under LibreChat's request timeout for a registration without `timeout:`.
// LibreChat's MCPConnection is this SDK's Client over StdioClientTransport (its env the
// SDK's default environment plus the yaml's `env:`), and MCPManager.callTool calls a tool
// with client.request(tools/call, CallToolResultSchema, { timeout: connection.timeout,
// resetTimeoutOnProgress: true, signal }), where connection.timeout is the yaml's `timeout`
// (undefined here) and no onprogress is given: the SDK's default of 60 s. The two tests run
// at the same time (about 70 s in all); tests/interop/run runs this file beside the others.

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const here = dirname(fileURLToPath(import.meta.url));
const BIN = process.env.FORGE_BASH_BIN ?? resolve(here, "../../../target/debug/forge-bash");
const COMMAND = "echo started; sleep 70; echo done";

async function forge(extraArgs) {
  const dir = mkdtempSync(join(tmpdir(), "forge-bash-ts-"));
  const work = join(dir, "work");
  const state = join(dir, "state");
  mkdirSync(work);
  const transport = new StdioClientTransport({
    command: BIN,
    args: ["--workdir", work, "--state-dir", state, ...extraArgs],
    env: { ...getDefaultEnvironment(), RUST_LOG: "warn" },
    stderr: "ignore",
  });
  const client = new Client({ name: "forge-bash-interop", version: "0.0.0" }, { capabilities: {} });
  await client.connect(transport);
  return { client, state, close: () => client.close() };
}

// A tool call as MCPManager.callTool makes it, for a registration without `timeout:`.
function callAsLibreChat(client, command) {
  return client.request(
    { method: "tools/call", params: { name: "run", arguments: { command } } },
    CallToolResultSchema,
    { timeout: undefined, resetTimeoutOnProgress: true, signal: new AbortController().signal },
  );
}

const textOf = (result) => result.content[0].text;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function auditRows(state) {
  return readdirSync(state)
    .filter((f) => f.startsWith("audit-"))
    .flatMap((f) => readFileSync(join(state, f), "utf8").split("\n"))
    .filter((row) => row !== "");
}

async function waitFor(cond, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${cond}`);
    await sleep(50);
  }
}

function killGroup(pgid) {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {}
}

describe("a 70 s command at LibreChat's default 60 s request timeout", { concurrency: true }, () => {
  test("with --yield-after 50 it is answered at 50 s, and the wait it names brings the rest", async () => {
    const { client, state, close } = await forge(["--yield-after", "50"]);
    let pgid;
    try {
      const started = Date.now();
      const result = await callAsLibreChat(client, COMMAND);
      const took = Date.now() - started;
      assert.ok(took >= 50000 && took < 60000, `answered after ${took} ms`);
      const text = textOf(result);
      const yielded = text.match(
        /^started\n\n\[still running in the background \(process group (\d+)\); its output goes to (\S+) — wait for it with: (timeout 45 tail -n \+1 --pid=\1 -f \2); stop it with: kill -- -\1\]\n\[running \| \d+ms\]$/,
      );
      assert.ok(yielded, text);
      pgid = Number(yielded[1]);
      const [, , file, wait] = yielded;
      assert.ok(file.startsWith(state));

      // The agent's next call, the wait the answer names, is answered when the command ends.
      const rest = textOf(await callAsLibreChat(client, wait));
      assert.match(rest, /^done\n<U\+005B>exit:0 \| \d+ms\]\n\n\[exit:0 \| \d+ms\]$/);
      assert.match(readFileSync(file, "utf8"), /^done\n\[exit:0 \| \d+ms\]\n$/);
      await waitFor(() => auditRows(state).some((row) => row.includes(`\t${COMMAND}\t0\t`) && row.endsWith("\tbackground")));
    } finally {
      if (pgid) killGroup(pgid);
      await close();
    }
  });

  test("without --yield-after the client gives up at 60 s with Request timed out and the call is cancelled", async () => {
    const { client, state, close } = await forge([]);
    try {
      const started = Date.now();
      await assert.rejects(callAsLibreChat(client, COMMAND), (error) => {
        assert.equal(error.code, -32001);
        assert.match(error.message, /Request timed out/);
        return true;
      });
      const took = Date.now() - started;
      assert.ok(took >= 60000 && took < 65000, `gave up after ${took} ms`);
      // The SDK sends notifications/cancelled: the command is stopped and what it wrote is lost.
      await waitFor(() => auditRows(state).some((row) => row.includes(`\t${COMMAND}\t130\t`)));
    } finally {
      await close();
    }
  });
});
