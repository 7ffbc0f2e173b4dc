// Drives openhuman-host with the official TypeScript MCP SDK client and checks
// what a real MCP client sees.
//
//   node client.mjs stdio <command> [args...]
//   node client.mjs http <url> [--token TOKEN]
//
// Environment:
//   EXPECT_READONLY=1    the server runs with [autonomy] level = "readonly":
//                        memory.store must be refused (and the round trip
//                        through memory.store is not attempted)
//   CLIENT_DEADLINE_MS   whole-run deadline (default 60000)
//   CLIENT_REQUEST_MS    per-request timeout (default 20000)
//
// Prints "ok - name" or "not ok - name: why" per check, then
// "client: N passed, N failed". Exits 1 if any check failed, 2 on bad usage.
// Resolves the SDK from a node_modules next to this file or above it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";

const USAGE = "usage: node client.mjs stdio <command> [args...] | node client.mjs http <url> [--token TOKEN]";

function parseArgs(argv) {
  const [mode, target, ...rest] = argv;
  if (mode === "stdio" && target) return { mode, command: target, args: rest };
  if (mode === "http" && target) {
    let token;
    for (let i = 0; i < rest.length; i++) {
      if (rest[i] === "--token" && i + 1 < rest.length) token = rest[++i];
      else return null;
    }
    return { mode, url: target, token };
  }
  return null;
}

const opts = parseArgs(process.argv.slice(2));
if (!opts) {
  console.error(USAGE);
  process.exit(2);
}

const readonly = process.env.EXPECT_READONLY === "1";
const deadlineMs = Number(process.env.CLIENT_DEADLINE_MS || 60000);
const requestMs = Number(process.env.CLIENT_REQUEST_MS || 20000);
const reqOpts = { timeout: requestMs };

// ---- reporting ---------------------------------------------------------

const tally = { passed: 0, failed: 0 };

function report(name, why) {
  if (why === undefined) {
    tally.passed++;
    console.log(`ok - ${name}`);
  } else {
    tally.failed++;
    console.log(`not ok - ${name}: ${String(why).replace(/\s+/g, " ").slice(0, 400)}`);
  }
}

function finish() {
  console.log(`client: ${tally.passed} passed, ${tally.failed} failed`);
  process.exit(tally.failed > 0 ? 1 : 0);
}

class CheckFailed extends Error {}

function expect(cond, why) {
  if (!cond) throw new CheckFailed(why);
}

// Runs one check; a thrown error (a failed expectation, a protocol error,
// a timeout) fails it with the error's message.
async function check(name, fn) {
  try {
    await fn();
    report(name);
  } catch (e) {
    report(name, e?.message || String(e));
  }
}

const watchdog = setTimeout(() => {
  report("deadline", `the run did not finish within ${deadlineMs} ms`);
  finish();
}, deadlineMs);

// ---- client ------------------------------------------------------------

const transportErrors = [];
const client = new Client({ name: "openhuman-interop-client", version: "1.0.0" });
client.onerror = (e) => transportErrors.push(e?.message || String(e));

const transport =
  opts.mode === "stdio"
    ? new StdioClientTransport({
        command: opts.command,
        args: opts.args,
        // The server reads its data and config locations from the
        // environment, so it gets the caller's whole environment.
        env: { ...process.env },
        stderr: "inherit",
      })
    : new StreamableHTTPClientTransport(new URL(opts.url), {
        requestInit: opts.token ? { headers: { Authorization: `Bearer ${opts.token}` } } : undefined,
      });

// Calls a tool and flattens the result. Protocol errors propagate.
async function callTool(name, args) {
  const res = await client.callTool({ name, arguments: args }, undefined, reqOpts);
  const text = (res.content || [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  return { isError: res.isError === true, text, data: res.structuredContent };
}

// A call the server must refuse with an isError result whose text names the
// offending argument.
async function expectRejected(tool, args, argName) {
  const r = await callTool(tool, args);
  expect(r.isError, `accepted ${JSON.stringify(args)}: ${r.text}`);
  const named = new RegExp(`(^|[^A-Za-z0-9_])${argName}([^A-Za-z0-9_]|$)`);
  expect(named.test(r.text), `message does not name "${argName}": ${r.text}`);
}

const started = Date.now();

try {
  await client.connect(transport, reqOpts);
} catch (e) {
  report("connect", e?.message || String(e));
  clearTimeout(watchdog);
  finish();
}

// ---- checks ------------------------------------------------------------

await check("initialize: serverInfo and capabilities", () => {
  const info = client.getServerVersion();
  expect(info?.name === "openhuman-host", `serverInfo.name is ${JSON.stringify(info?.name)}`);
  expect(typeof info?.version === "string" && info.version !== "", "serverInfo.version is empty");
  const caps = client.getServerCapabilities() || {};
  expect(caps.tools, "no tools capability");
  expect(caps.resources, "no resources capability");
});

let tools = [];
await check("tools/list: every tool is fully described", async () => {
  tools = (await client.listTools(undefined, reqOpts)).tools;
  expect(tools.length > 0, "no tools listed");
  for (const t of tools) {
    expect(typeof t.description === "string" && t.description.trim() !== "", `${t.name}: no description`);
    expect(t.inputSchema?.type === "object", `${t.name}: input schema type is ${t.inputSchema?.type}`);
    expect(t.inputSchema?.additionalProperties === false, `${t.name}: input schema allows additional properties`);
    expect(t.annotations && typeof t.annotations === "object", `${t.name}: no annotations`);
  }
});
const tool = (name) => tools.find((t) => t.name === name);

await check("tools/list: memory tools and their annotations", () => {
  for (const name of ["memory.store", "memory.search", "tree.read_chunk"]) expect(tool(name), `${name} is not listed`);
  expect(tool("memory.search").annotations?.readOnlyHint === true, "memory.search readOnlyHint is not true");
  expect(tool("tree.read_chunk").annotations?.readOnlyHint === true, "tree.read_chunk readOnlyHint is not true");
  const store = tool("memory.store").annotations || {};
  expect(store.readOnlyHint !== true, "memory.store claims to be read-only");
  expect(store.destructiveHint === true, "memory.store destructiveHint is not true");
});

const nonce = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
const word = `quokka${nonce}`;

if (!readonly) {
  let chunkId;
  await check("memory.store returns a document_id", async () => {
    const r = await callTool("memory.store", {
      title: `Interop field note ${nonce}`,
      content: `Field note ${nonce}.\n\nA ${word} was seen near the east gate at dawn.`,
      tags: ["interop"],
    });
    expect(!r.isError, r.text);
    expect(typeof r.data?.document_id === "string" && r.data.document_id !== "", `no document_id in ${JSON.stringify(r.data)}`);
  });
  await check("memory.search finds it, chunk_id at the hit's top level", async () => {
    const r = await callTool("memory.search", { query: word, k: 5 });
    expect(!r.isError, r.text);
    expect(Array.isArray(r.data?.chunks), `structuredContent has no chunks array: ${JSON.stringify(r.data)}`);
    const hit = r.data.chunks.find((h) => JSON.stringify(h).toLowerCase().includes(word));
    expect(hit, `no hit mentions ${word}: ${r.text}`);
    expect(typeof hit.chunk_id === "string" && hit.chunk_id !== "", `hit has no top-level chunk_id: ${JSON.stringify(hit)}`);
    chunkId = hit.chunk_id;
  });
  await check("tree.read_chunk returns the stored text", async () => {
    expect(chunkId, "no chunk_id from memory.search");
    const r = await callTool("tree.read_chunk", { chunk_id: chunkId });
    expect(!r.isError, r.text);
    const chunk = r.data?.chunk;
    expect(chunk && typeof chunk === "object", `no chunk in ${JSON.stringify(r.data)}`);
    expect(chunk.chunk_id === chunkId, `asked for ${chunkId}, got ${chunk.chunk_id}`);
    expect(JSON.stringify(chunk).includes(word), `chunk does not contain ${word}`);
    expect(r.text.includes(word), `text content does not contain ${word}`);
  });
}

await check("tree.read_chunk of an unknown id is chunk: null, not an error", async () => {
  const r = await callTool("tree.read_chunk", { chunk_id: `chk_missing_${nonce}` });
  expect(!r.isError, `isError result: ${r.text}`);
  expect(r.data && "chunk" in r.data && r.data.chunk === null, `structuredContent is ${JSON.stringify(r.data)}`);
});

await check("rejects k = 0", () => expectRejected("memory.search", { query: word, k: 0 }, "k"));
await check("rejects k = 51 (no clamping)", () => expectRejected("memory.search", { query: word, k: 51 }, "k"));
await check('rejects k = "5" (string)', () => expectRejected("memory.search", { query: word, k: "5" }, "k"));
await check("rejects an unknown argument", () =>
  expectRejected("memory.search", { query: word, unexpected_flag: true }, "unexpected_flag"),
);
await check("rejects a blank query", () => expectRejected("memory.search", { query: "  \t " }, "query"));
await check("rejects a missing query", () => expectRejected("memory.search", { k: 5 }, "query"));

await check("unknown tool is JSON-RPC -32602", async () => {
  let r;
  try {
    r = await callTool("no_such.tool", {});
  } catch (e) {
    expect(e instanceof McpError, `not a protocol error: ${e?.message || e}`);
    expect(e.code === ErrorCode.InvalidParams, `code ${e.code}: ${e.message}`);
    return;
  }
  throw new CheckFailed(`answered with a tool result (isError=${r.isError}): ${r.text}`);
});

if (readonly) {
  await check("readonly: memory.store is refused naming the level setting", async () => {
    const r = await callTool("memory.store", { title: `Refused ${nonce}`, content: `The ${word} must not be stored.` });
    expect(r.isError, `memory.store was allowed: ${r.text}`);
    expect(/\blevel\b/.test(r.text), `refusal does not mention "level": ${r.text}`);
  });
  await check("readonly: read tools still answer and nothing was stored", async () => {
    const r = await callTool("memory.search", { query: word });
    expect(!r.isError, r.text);
    const hits = r.data?.chunks || [];
    expect(hits.length === 0, `refused store left ${hits.length} hit(s)`);
  });
}

await check("no transport errors (stdout carries protocol only)", () => {
  expect(transportErrors.length === 0, transportErrors.slice(0, 3).join(" | "));
});

try {
  await client.close();
} catch (e) {
  report("close", e?.message || String(e));
}
clearTimeout(watchdog);
console.log(`# ${opts.mode}${readonly ? " readonly" : ""}: ${Date.now() - started} ms`);
finish();
