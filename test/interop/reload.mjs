// Checks config reload from a real MCP client's side: one TypeScript SDK
// client stays connected over stdio while the config enables, then
// disables, the searxng provider and the server gets SIGHUP each time.
//
//   node reload.mjs <config file> <searxng base url> <command> [args...]
//
// The client must see notifications/tools/list_changed after each change,
// find searxng_search listed and callable after enabling it (against the
// test server at <searxng base url>), and gone after disabling it; an
// invalid config followed by SIGHUP must change nothing. Prints "ok - name"
// or "not ok - name: why" per check, then "reload: N passed, N failed".
import { writeFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { checks, close, expect, text, watchTransport } from "./checks.mjs";

const [configPath, searxngURL, command, ...args] = process.argv.slice(2);
if (!configPath || !searxngURL || !command) {
  console.error("usage: node reload.mjs <config file> <searxng base url> <command> [args...]");
  process.exit(2);
}

const { check, report, finish, deadline } = checks("reload");
const stopDeadline = deadline(60000);

const client = new Client({ name: "openhuman-reload-client", version: "1.0.0" });
const noTransportErrors = watchTransport(client);
let changes = 0;
const waiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changes++;
  while (waiters.length) waiters.shift()();
});
function nextChange(ms) {
  const seen = changes;
  return new Promise((resolve, reject) => {
    if (changes > seen) return resolve();
    const timer = setTimeout(() => reject(new Error(`no notifications/tools/list_changed within ${ms} ms`)), ms);
    waiters.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
function writeConfig(enabled) {
  writeFileSync(configPath, `[providers.searxng]\nenabled = ${enabled}\nbase_url = "${searxngURL}"\n`);
}
async function toolNames() {
  const res = await client.listTools(undefined, { timeout: 10000 });
  return res.tools.map((t) => t.name);
}

const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: "inherit" });
await client.connect(transport, { timeout: 20000 });
const pid = transport.pid;

await check("searxng_search is not listed while searxng is disabled", async () => {
  expect(pid > 0, "the transport has no server pid");
  const names = await toolNames();
  expect(!names.includes("searxng_search"), `listed: ${names.join(", ")}`);
});

// reloadWith writes the config with searxng enabled or disabled, sends
// SIGHUP, waits for list_changed and returns the tools listed then.
async function reloadWith(enabled) {
  writeConfig(enabled);
  const changed = nextChange(15000);
  process.kill(pid, "SIGHUP");
  await changed;
  return toolNames();
}

await check("enabling searxng and SIGHUP: list_changed, then the tool is listed and answers", async () => {
  const names = await reloadWith(true);
  expect(names.includes("searxng_search"), `not listed after the reload: ${names.join(", ")}`);
  const res = await client.callTool({ name: "searxng_search", arguments: { query: "reef survey" } }, undefined, { timeout: 20000 });
  expect(res.isError !== true, `isError: ${text(res)}`);
  expect(text(res).includes("Reef survey"), `the answer lacks the test server's result: ${text(res)}`);
});

await check("an invalid config and SIGHUP change nothing", async () => {
  writeFileSync(configPath, "[providers.searxng]\nenabled = maybe\n");
  let changedAnyway = false;
  const changed = nextChange(1500).then(() => (changedAnyway = true), () => {});
  process.kill(pid, "SIGHUP");
  await changed;
  expect(!changedAnyway, "list_changed after an invalid config");
  const names = await toolNames();
  expect(names.includes("searxng_search"), `searxng_search gone after an invalid config: ${names.join(", ")}`);
});

await check("disabling searxng and SIGHUP: list_changed, then the tool is gone", async () => {
  const names = await reloadWith(false);
  expect(!names.includes("searxng_search"), `still listed: ${names.join(", ")}`);
});

await check("no transport errors", noTransportErrors);

await close(client, report);
stopDeadline();
finish();
