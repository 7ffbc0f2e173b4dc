// Drives openhuman-host in discovery mode with the official TypeScript MCP
// SDK client: the server lists only the pinned tools and the three
// discovery tools; the client finds an upstream tool with tool_search,
// reads it with tool_describe, calls it with tool_call, and is refused a
// tool its profile excludes.
//
//   node client-discovery.mjs stdio <command> [args...]
//
// Environment:
//   EXPECT_TOOLS   a JSON array: exactly the tool names tools/list must show
//   FIND           {"query", "tool"}: tool_search for query must return tool
//   CALL           {"arguments", "text"}: tool_call of FIND's tool with
//                  arguments must succeed with text in its result
//   REFUSED        {"name", "arguments", "text"}: tool_call of name must be
//                  refused with text in its error
//
// Prints "ok - name" or "not ok - name: why" per check, then
// "client: N passed, N failed". Exits 1 if any check failed, 2 on bad usage.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { checks, expect, text } from "./checks.mjs";

const [mode, command, ...args] = process.argv.slice(2);
if (mode !== "stdio" || !command) {
  console.error("usage: node client-discovery.mjs stdio <command> [args...]");
  process.exit(2);
}
const expectTools = JSON.parse(process.env.EXPECT_TOOLS || "[]");
const find = JSON.parse(process.env.FIND || "{}");
const call = JSON.parse(process.env.CALL || "{}");
const refused = JSON.parse(process.env.REFUSED || "{}");
const reqOpts = { timeout: 20000 };

const { check, finish, deadline } = checks("client");
const stopDeadline = deadline(60000);

const client = new Client({ name: "openhuman-interop-discovery", version: "1.0.0" });
const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });

await check("connect", async () => {
  await client.connect(transport, reqOpts);
});

await check("tools/list shows the pinned and discovery tools only", async () => {
  const names = (await client.listTools(undefined, reqOpts)).tools.map((t) => t.name).sort();
  const want = [...expectTools].sort();
  expect(JSON.stringify(names) === JSON.stringify(want), `listed ${JSON.stringify(names)}, want ${JSON.stringify(want)}`);
});

await check("tool_search finds the upstream tool", async () => {
  const res = await client.callTool({ name: "tool_search", arguments: { query: find.query, k: 3 } }, undefined, reqOpts);
  expect(!res.isError, `error: ${text(res)}`);
  const names = (res.structuredContent?.tools || []).map((t) => t.name);
  expect(names.includes(find.tool), `tool_search ${JSON.stringify(find.query)} returned ${JSON.stringify(names)}, want ${find.tool}`);
});

await check("tool_describe gives its schema", async () => {
  const res = await client.callTool({ name: "tool_describe", arguments: { name: find.tool } }, undefined, reqOpts);
  expect(!res.isError, `error: ${text(res)}`);
  const schema = res.structuredContent?.inputSchema;
  expect(schema && schema.type === "object", `no input schema in ${text(res).slice(0, 200)}`);
  for (const arg of Object.keys(call.arguments || {})) {
    expect(schema.properties && arg in schema.properties, `argument ${arg} missing from ${JSON.stringify(schema)}`);
  }
});

await check("tool_call calls it", async () => {
  const res = await client.callTool({ name: "tool_call", arguments: { name: find.tool, arguments: call.arguments } }, undefined, reqOpts);
  expect(!res.isError, `error: ${text(res)}`);
  expect(text(res).includes(call.text), `result ${JSON.stringify(text(res))}, want ${JSON.stringify(call.text)}`);
});

await check("tool_call of a tool the profile excludes is refused", async () => {
  const res = await client.callTool({ name: "tool_call", arguments: { name: refused.name, arguments: refused.arguments } }, undefined, reqOpts);
  expect(res.isError, `not refused: ${text(res)}`);
  expect(text(res).includes(refused.text), `refusal ${JSON.stringify(text(res))}, want ${JSON.stringify(refused.text)}`);
});

stopDeadline();
await client.close().catch(() => {});
finish();
