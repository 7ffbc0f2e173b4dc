// Runs a plan of tool calls against openhuman-host with the official
// TypeScript MCP SDK client over stdio, and prints what the client saw as
// one JSON document for the Go test (memory_test.go) to check.
//
//   node client-memory.mjs PLAN.json <command> [args...]
//
// PLAN.json:
//   {
//     "client_name": "…",            // clientInfo.name the client announces
//     "steps": [
//       {"name": "store", "tool": "memory_store", "arguments": {…}},
//       {"name": "forget", "tool": "memory_forget",
//        "arguments": {"document_ids": ["${store.document_id}"]}}
//     ]
//   }
//
// A string argument that is exactly "${step.path}" is replaced by the value
// at path (dot-separated; array indexes are numbers) in an earlier step's
// structuredContent; a missing value fails the run before the call.
//
// Prints {"server": serverInfo, "results": {name: {isError, text, data}},
// "transport_errors": [...]}: a protocol error of one call is recorded as
// {"protocol_error": message} and the plan goes on. Exits 0 when the plan
// ran to its end, 1 when it could not (connect, a missing reference, the
// deadline), 2 on bad usage.
//
// Environment: CLIENT_DEADLINE_MS (whole run, default 60000) and
// CLIENT_REQUEST_MS (each request, default 20000).
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { text } from "./checks.mjs";

const [planPath, command, ...args] = process.argv.slice(2);
if (!planPath || !command) {
  console.error("usage: node client-memory.mjs PLAN.json <command> [args...]");
  process.exit(2);
}
const plan = JSON.parse(readFileSync(planPath, "utf8"));
const deadlineMs = Number(process.env.CLIENT_DEADLINE_MS || 60000);
const reqOpts = { timeout: Number(process.env.CLIENT_REQUEST_MS || 20000) };

const out = { server: null, results: {}, transport_errors: [] };

function fail(why) {
  out.failure = why;
  console.log(JSON.stringify(out));
  process.exit(1);
}

const watchdog = setTimeout(() => fail(`the run did not finish within ${deadlineMs} ms`), deadlineMs);

// resolve replaces "${step.path}" strings in v with earlier results.
function resolve(v) {
  if (typeof v === "string") {
    const m = /^\$\{([^.}]+)((?:\.[^.}]+)*)\}$/.exec(v);
    if (!m) return v;
    const from = out.results[m[1]];
    if (!from) fail(`reference ${v}: no earlier step named ${m[1]}`);
    let cur = from.data;
    for (const key of m[2].split(".").slice(1)) {
      if (cur === null || typeof cur !== "object" || !(key in cur)) fail(`reference ${v}: not in ${JSON.stringify(from)}`);
      cur = cur[key];
    }
    return cur;
  }
  if (Array.isArray(v)) return v.map(resolve);
  if (v !== null && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolve(x)]));
  return v;
}

const client = new Client({ name: plan.client_name, version: "1.0.0" });
client.onerror = (e) => out.transport_errors.push(e?.message || String(e));
const transport = new StdioClientTransport({
  command,
  args,
  // The server reads its data and config locations from the environment.
  env: { ...process.env },
  stderr: "inherit",
});

try {
  await client.connect(transport, reqOpts);
} catch (e) {
  fail(`connect: ${e?.message || String(e)}`);
}
out.server = client.getServerVersion() ?? null;

for (const step of plan.steps) {
  if (step.name in out.results) fail(`two steps are named ${step.name}`);
  const callArgs = resolve(step.arguments ?? {});
  try {
    const res = await client.callTool({ name: step.tool, arguments: callArgs }, undefined, reqOpts);
    out.results[step.name] = { isError: res.isError === true, text: text(res), data: res.structuredContent ?? null };
  } catch (e) {
    out.results[step.name] = { protocol_error: e?.message || String(e) };
  }
}

await client.close();
clearTimeout(watchdog);
console.log(JSON.stringify(out));
