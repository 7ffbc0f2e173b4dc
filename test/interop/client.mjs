// Drives openhuman-host with the official TypeScript MCP SDK client and checks
// what a real MCP client sees.
//
//   node client.mjs stdio <command> [args...]
//   node client.mjs http <url> [--token TOKEN]
//
// Environment:
//   EXPECT_READONLY=1    the server runs with [autonomy] level = "readonly":
//                        act tools must not be listed and memory_store must
//                        be refused (the round trip through memory_store is
//                        not attempted)
//   CLIENT_DEADLINE_MS   whole-run deadline (default 60000)
//   CLIENT_REQUEST_MS    per-request timeout (default 20000)
//   EXTRA_CALLS          a JSON array of {"name", "arguments", "text"}: each
//                        tool is called (before the transport check) and must
//                        succeed with "text" in its text content
//   EXPECT_ABSENT        a JSON array of tool names that must be neither
//                        listed nor callable (JSON-RPC -32602)
//   RELAYED_PREFIXES     a JSON array of name prefixes of tools relayed from
//                        upstream servers, whose schemas are their servers'
//
// Prints "ok - name" or "not ok - name: why" per check, then
// "client: N passed, N failed". Exits 1 if any check failed, 2 on bad usage.
// Resolves the SDK from a node_modules next to this file or above it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { CheckFailed, checks, close, expect, text, watchTransport } from "./checks.mjs";

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
const relayed = JSON.parse(process.env.RELAYED_PREFIXES || "[]");
const deadlineMs = Number(process.env.CLIENT_DEADLINE_MS || 60000);
const requestMs = Number(process.env.CLIENT_REQUEST_MS || 20000);
const reqOpts = { timeout: requestMs };

// ---- reporting ---------------------------------------------------------

const { report, check, finish, deadline } = checks("client");
const stopDeadline = deadline(deadlineMs);

// ---- client ------------------------------------------------------------

const client = new Client({ name: "openhuman-interop-client", version: "1.0.0" });
const noTransportErrors = watchTransport(client);

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
  return { isError: res.isError === true, text: text(res), data: res.structuredContent };
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
  stopDeadline();
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
    // Tools relayed from upstream servers keep their servers' schemas and
    // annotations; the host's own are closed and annotated.
    if (relayed.some((prefix) => t.name.startsWith(prefix))) continue;
    expect(t.inputSchema?.additionalProperties === false, `${t.name}: input schema allows additional properties`);
    expect(t.annotations && typeof t.annotations === "object", `${t.name}: no annotations`);
  }
});
const tool = (name) => tools.find((t) => t.name === name);

// Claude Desktop and OpenAI-style clients accept only these names, and
// Claude Desktop hides the whole list when one fails.
const clientSafe = /^[a-zA-Z0-9_-]{1,64}$/;
await check("tools/list and prompts/list: every name matches ^[a-zA-Z0-9_-]{1,64}$", async () => {
  const bad = tools.map((t) => t.name).filter((n) => !clientSafe.test(n));
  expect(tools.length > 0 && bad.length === 0, `names clients refuse: ${JSON.stringify(bad)}`);
  if (client.getServerCapabilities()?.prompts) {
    const prompts = (await client.listPrompts(undefined, reqOpts)).prompts;
    const badPrompts = prompts.map((p) => p.name).filter((n) => !clientSafe.test(n));
    expect(badPrompts.length === 0, `prompt names clients refuse: ${JSON.stringify(badPrompts)}`);
  }
});

await check("tools/list: memory tools and their annotations", () => {
  const readTools = ["memory_search", "memory_recall", "tree_read_chunk", "tree_browse", "tree_top_entities", "tree_list_sources"];
  const actTools = ["memory_store", "memory_note", "tree_tag"];
  for (const name of readTools) expect(tool(name), `${name} is not listed`);
  if (readonly) {
    // At level readonly every act is refused, so none is listed.
    for (const name of actTools) expect(!tool(name), `${name} is listed though level readonly refuses it`);
  }
  for (const name of readonly ? [] : actTools) {
    expect(tool(name), `${name} is not listed`);
    const a = tool(name).annotations || {};
    expect(a.readOnlyHint !== true && a.destructiveHint === true && a.idempotentHint === true, `${name} annotations ${JSON.stringify(a)}`);
  }
  for (const name of ["memory_search", "memory_recall", "tree_read_chunk", "tree_browse", "tree_top_entities", "tree_list_sources"])
    expect(tool(name).annotations?.readOnlyHint === true, `${name} readOnlyHint is not true`);
  expect(tool("memory_search").annotations?.readOnlyHint === true, "memory_search readOnlyHint is not true");
  expect(tool("tree_read_chunk").annotations?.readOnlyHint === true, "tree_read_chunk readOnlyHint is not true");
  if (!readonly) {
    const store = tool("memory_store").annotations || {};
    expect(store.readOnlyHint !== true, "memory_store claims to be read-only");
    expect(store.destructiveHint === true, "memory_store destructiveHint is not true");
  }
});

const nonce = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
const word = `quokka${nonce}`;

if (!readonly) {
  let chunkId;
  await check("memory_store returns a document_id", async () => {
    const r = await callTool("memory_store", {
      title: `Interop field note ${nonce}`,
      content: `Field note ${nonce}.\n\nA ${word} was seen near the east gate at dawn.`,
      tags: ["interop"],
    });
    expect(!r.isError, r.text);
    expect(typeof r.data?.document_id === "string" && r.data.document_id !== "", `no document_id in ${JSON.stringify(r.data)}`);
  });
  await check("memory_search finds it, chunk_id at the hit's top level", async () => {
    const r = await callTool("memory_search", { query: word, k: 5 });
    expect(!r.isError, r.text);
    expect(Array.isArray(r.data?.chunks), `structuredContent has no chunks array: ${JSON.stringify(r.data)}`);
    const hit = r.data.chunks.find((h) => JSON.stringify(h).toLowerCase().includes(word));
    expect(hit, `no hit mentions ${word}: ${r.text}`);
    expect(typeof hit.chunk_id === "string" && hit.chunk_id !== "", `hit has no top-level chunk_id: ${JSON.stringify(hit)}`);
    chunkId = hit.chunk_id;
  });
  await check("tree_read_chunk returns the stored text", async () => {
    expect(chunkId, "no chunk_id from memory_search");
    const r = await callTool("tree_read_chunk", { chunk_id: chunkId });
    expect(!r.isError, r.text);
    const chunk = r.data?.chunk;
    expect(chunk && typeof chunk === "object", `no chunk in ${JSON.stringify(r.data)}`);
    expect(chunk.chunk_id === chunkId, `asked for ${chunkId}, got ${chunk.chunk_id}`);
    expect(JSON.stringify(chunk).includes(word), `chunk does not contain ${word}`);
    expect(r.text.includes(word), `text content does not contain ${word}`);
  });
}

if (!readonly) {
  // The whole memory tree: entities, sources, browse, recall, tags, notes.
  let tripChunk;
  const trip = `Trip ${nonce}`;
  await check("memory tree: a stored document's entities, source and chunk", async () => {
    const r = await callTool("memory_store", {
      title: trip,
      namespace: `interop-${nonce}`,
      content: `Planning ${trip} with ana.${nonce}@example.com, flights via @sky${nonce}, see https://example.org/${nonce} #travel${nonce} on 2026-12-24.`,
    });
    expect(!r.isError, r.text);
    const s = await callTool("memory_search", { query: `trip ${nonce}` });
    const hit = (s.data?.chunks || []).find((h) => h.document_id === r.data.document_id);
    expect(hit, `search did not find ${trip}: ${s.text}`);
    expect(hit.source_id === `mcp:interop-${nonce}` && hit.source_kind === "note", `hit: ${JSON.stringify(hit)}`);
    tripChunk = hit.chunk_id;
  });
  await check("tree_top_entities: email, handle, url, hashtag and date of the document", async () => {
    const r = await callTool("tree_top_entities", { k: 50 });
    expect(!r.isError, r.text);
    const ids = (r.data?.entities || []).map((e) => e.entity_id);
    for (const want of [`email:ana.${nonce}@example.com`, `handle:@sky${nonce}`, `url:https://example.org/${nonce}`, `hashtag:#travel${nonce}`, "date:2026-12-24"])
      expect(ids.includes(want), `${want} not in ${JSON.stringify(ids.slice(0, 12))}`);
    const email = await callTool("tree_top_entities", { kind: "email", k: 50 });
    expect((email.data?.entities || []).every((e) => e.kind === "email"), "kind filter let other kinds through");
  });
  await check("tree_list_sources: the namespace with its chunk count and the user's mentions", async () => {
    const r = await callTool("tree_list_sources", { user_email_hint: `ANA.${nonce}@example.com` });
    expect(!r.isError, r.text);
    const src = (r.data?.sources || []).find((x) => x.source_id === `mcp:interop-${nonce}`);
    expect(src, `no source mcp:interop-${nonce} in ${r.text}`);
    expect(src.chunk_count === 1 && src.source_kind === "note" && src.user_mention_count === 1, JSON.stringify(src));
    expect(r.data.sources[0].source_id === src.source_id, "the source that mentions the user is not first");
  });
  await check("tree_browse: filters ANDed, newest first, total before paging", async () => {
    const all = await callTool("tree_browse", { k: 1 });
    expect(!all.isError, all.text);
    expect(typeof all.data?.total === "number" && all.data.total >= 2 && all.data.chunks.length === 1, all.text);
    const byEntity = await callTool("tree_browse", { entity_ids: [`email:ana.${nonce}@example.com`], source_kinds: ["note"] });
    expect(byEntity.data?.total === 1 && byEntity.data.chunks[0].chunk_id === tripChunk, byEntity.text);
    const none = await callTool("tree_browse", { entity_ids: [`email:ana.${nonce}@example.com`], source_kinds: ["document"] });
    expect(none.data?.total === 0 && none.data.chunks.length === 0, none.text);
    const page2 = await callTool("tree_browse", { k: 1, offset: 1 });
    expect(page2.data.chunks[0]?.chunk_id !== all.data.chunks[0].chunk_id, "offset did not page");
    expect(all.data.chunks[0].updated_ms >= page2.data.chunks[0].updated_ms, "not newest first");
  });
  await check("memory_recall: a natural-language question finds the document, mode reported", async () => {
    const r = await callTool("memory_recall", { query: `Who is coming on ${trip}?`, k: 5 });
    expect(!r.isError, r.text);
    expect(r.data?.mode === "keyword" || r.data?.mode === "hybrid", `mode ${r.data?.mode}`);
    expect(r.data.chunks[0]?.chunk_id === tripChunk && r.data.chunks[0].score > 0, r.text);
  });
  await check("tree_tag: replaces the set, tags are searchable, bounds rejected", async () => {
    const r = await callTool("tree_tag", { chunk_id: tripChunk, tags: [`alpha${nonce}`, "beta", "Beta"] });
    expect(!r.isError, r.text);
    expect(JSON.stringify(r.data?.tags) === JSON.stringify([`alpha${nonce}`, "beta"]), `tags ${JSON.stringify(r.data?.tags)}`);
    const s = await callTool("memory_search", { query: `alpha${nonce}` });
    expect(s.data?.chunks?.[0]?.chunk_id === tripChunk, `tag not searchable: ${s.text}`);
    await callTool("tree_tag", { chunk_id: tripChunk, tags: ["gamma"] });
    const read = await callTool("tree_read_chunk", { chunk_id: tripChunk });
    expect(JSON.stringify(read.data?.chunk?.tags) === '["gamma"]', `tags not replaced: ${JSON.stringify(read.data?.chunk?.tags)}`);
    await expectRejected("tree_tag", { chunk_id: tripChunk, tags: ["x".repeat(129)] }, "tags");
    await expectRejected("tree_tag", { chunk_id: tripChunk, tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, "tags");
    await expectRejected("tree_tag", { chunk_id: tripChunk, tags: [] }, "tags");
    await expectRejected("tree_tag", { chunk_id: `chk_missing_${nonce}`, tags: ["x"] }, "chunk");
  });
  await check("memory_note: linked to its chunk and searchable; unknown chunk rejected", async () => {
    const r = await callTool("memory_note", { chunk_id: tripChunk, note_text: `Rebooked via wombat${nonce}.` });
    expect(!r.isError, r.text);
    const s = await callTool("memory_search", { query: `wombat${nonce}` });
    const hit = s.data?.chunks?.[0];
    expect(hit && hit.annotates_chunk_id === tripChunk, `note hit: ${s.text}`);
    const read = await callTool("tree_read_chunk", { chunk_id: tripChunk });
    expect(read.data?.chunk?.notes?.[0]?.text === `Rebooked via wombat${nonce}.`, `notes: ${JSON.stringify(read.data?.chunk?.notes)}`);
    await expectRejected("memory_note", { chunk_id: `chk_missing_${nonce}`, note_text: "x" }, "chunk");
  });
}

await check("tree_read_chunk of an unknown id is chunk: null, not an error", async () => {
  const r = await callTool("tree_read_chunk", { chunk_id: `chk_missing_${nonce}` });
  expect(!r.isError, `isError result: ${r.text}`);
  expect(r.data && "chunk" in r.data && r.data.chunk === null, `structuredContent is ${JSON.stringify(r.data)}`);
});

await check("the old dotted name memory.search still reaches memory_search", async () => {
  const r = await callTool("memory.search", { query: word, k: 5 });
  expect(!r.isError, r.text);
  expect(Array.isArray(r.data?.chunks), `structuredContent has no chunks array: ${JSON.stringify(r.data)}`);
  if (!readonly) expect(JSON.stringify(r.data.chunks).toLowerCase().includes(word), `no hit mentions ${word}: ${r.text}`);
});

await check("rejects k = 0", () => expectRejected("memory_search", { query: word, k: 0 }, "k"));
await check("rejects k = 51 (no clamping)", () => expectRejected("memory_search", { query: word, k: 51 }, "k"));
await check('rejects k = "5" (string)', () => expectRejected("memory_search", { query: word, k: "5" }, "k"));
await check("rejects an unknown argument", () =>
  expectRejected("memory_search", { query: word, unexpected_flag: true }, "unexpected_flag"),
);
await check("rejects a blank query", () => expectRejected("memory_search", { query: "  \t " }, "query"));
await check("rejects a missing query", () => expectRejected("memory_search", { k: 5 }, "query"));

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
  await check("readonly: memory_store is refused naming the level setting", async () => {
    const r = await callTool("memory_store", { title: `Refused ${nonce}`, content: `The ${word} must not be stored.` });
    expect(r.isError, `memory_store was allowed: ${r.text}`);
    expect(/\blevel\b/.test(r.text), `refusal does not mention "level": ${r.text}`);
  });
  await check("readonly: read tools still answer and nothing was stored", async () => {
    const r = await callTool("memory_search", { query: word });
    expect(!r.isError, r.text);
    const hits = r.data?.chunks || [];
    expect(hits.length === 0, `refused store left ${hits.length} hit(s)`);
  });
}

for (const extra of JSON.parse(process.env.EXTRA_CALLS || "[]")) {
  await check(`extra call: ${extra.name}`, async () => {
    const r = await callTool(extra.name, extra.arguments || {});
    expect(!r.isError, r.text);
    expect(r.text.includes(extra.text || ""), `text ${JSON.stringify(r.text)} lacks ${JSON.stringify(extra.text)}`);
  });
}

for (const name of JSON.parse(process.env.EXPECT_ABSENT || "[]")) {
  await check(`absent tool: ${name}`, async () => {
    const listed = (await client.listTools(undefined, reqOpts)).tools.map((t) => t.name);
    expect(!listed.includes(name), `${name} is listed`);
    try {
      const r = await client.callTool({ name, arguments: {} }, undefined, reqOpts);
      throw new CheckFailed(`${name} was callable: ${JSON.stringify(r).slice(0, 200)}`);
    } catch (e) {
      if (e instanceof CheckFailed) throw e;
      expect(e instanceof McpError && e.code === ErrorCode.InvalidParams, `calling ${name}: ${e?.message || e}`);
    }
  });
}

await check("no transport errors (stdout carries protocol only)", noTransportErrors);

await close(client, report);
stopDeadline();
console.log(`# ${opts.mode}${readonly ? " readonly" : ""}: ${Date.now() - started} ms`);
finish();
