// Drives openhuman-host with the TypeScript MCP SDK's v2 client
// (@modelcontextprotocol/client), which speaks both protocol eras, and
// checks what a client that can answer questions sees: act confirmation,
// a sub-agent on the client's own model, and an upstream server's
// elicitation relayed.
//
//   node client-mrtr.mjs <revision> stdio <command> [args...]
//   node client-mrtr.mjs <revision> http <url>
//
// <revision> is 2026-07-28 (questions come as input_required results the
// client answers and retries) or 2025-11-25 (questions come as requests
// during the call).
//
// The server must run with [autonomy] confirm_acts = "when_supported" and
// level "supervised", the agent provider without an llm endpoint, and the
// go-sdk conformance everything-server as an upstream server whose tools
// are prefixed "up_".
//
// Prints "ok - name" or "not ok - name: why" per check, then
// "client: N passed, N failed". Exits 1 if any check failed, 2 on bad usage.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [revision, mode, target, ...rest] = process.argv.slice(2);
if (!["2026-07-28", "2025-11-25"].includes(revision) || !["stdio", "http"].includes(mode) || !target) {
  console.error("usage: node client-mrtr.mjs <2026-07-28|2025-11-25> stdio <command> [args...] | http <url>");
  process.exit(2);
}
const requestMs = Number(process.env.CLIENT_REQUEST_MS || 60000);
const reqOpts = { timeout: requestMs };

const tally = { passed: 0, failed: 0 };
function check(name, ok, why) {
  if (ok) {
    tally.passed++;
    console.log(`ok - ${name}`);
  } else {
    tally.failed++;
    console.log(`not ok - ${name}: ${why}`);
  }
}
const text = (res) => (res?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

// What the client's user and model answer.
const asked = [];
let confirmAnswer = true;
const samples = [];

const client = new Client(
  { name: "ts-v2-probe", version: "2.4.0" },
  {
    capabilities: { elicitation: { form: {} }, sampling: {} },
    versionNegotiation: { mode: revision === "2026-07-28" ? { pin: revision } : "legacy" },
  },
);
client.setRequestHandler("elicitation/create", async (request) => {
  const message = request.params.message ?? "";
  asked.push(message);
  if (message.startsWith("Allow ")) {
    return { action: "accept", content: { confirm: confirmAnswer } };
  }
  return { action: "accept", content: { name: "Alice" } };
});
client.setRequestHandler("sampling/createMessage", async (request) => {
  samples.push(request.params);
  return {
    model: "probe-model",
    role: "assistant",
    stopReason: "endTurn",
    content: { type: "text", text: "The coral summary, from the client's own model." },
  };
});

const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args: rest, env: { ...process.env }, stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(target));

try {
  await client.connect(transport, reqOpts);
  const negotiated = client.getNegotiatedProtocolVersion?.() ?? "";
  check(`negotiated ${revision}`, negotiated === "" || negotiated === revision, `negotiated ${negotiated}`);

  // Act confirmation: asked, and honoured both ways.
  asked.length = 0;
  let res = await client.callTool(
    { name: "memory_store", arguments: { title: "Reef survey", content: "Corals recovered on the north reef." } },
    reqOpts,
  );
  const question = asked.find((m) => m.startsWith("Allow ")) ?? "";
  check("act confirmation asked", question.includes("memory_store") && question.includes("Reef survey"), `asked ${JSON.stringify(asked)}`);
  check("confirmed act ran", !res.isError && /Reef survey|stored/i.test(text(res)), `result ${JSON.stringify(res)}`);

  confirmAnswer = false;
  asked.length = 0;
  res = await client.callTool({ name: "memory_store", arguments: { title: "Declined note", content: "x" } }, reqOpts);
  check("declined act refused", res.isError === true && text(res).includes("you did not confirm it"), `result ${JSON.stringify(res)}`);
  confirmAnswer = true;

  // A sub-agent on the client's model.
  samples.length = 0;
  res = await client.callTool(
    { name: "agent_run_subagent", arguments: { agent_id: "summarizer", prompt: "Summarise: corals recovered on the north reef." } },
    reqOpts,
  );
  check("sub-agent sampled the client's model", samples.length >= 1, "no sampling request reached the client");
  check("sub-agent answered with the client's text", !res.isError && text(res).includes("from the client's own model"), `result ${JSON.stringify(res)}`);

  // An upstream server's elicitation reaches the client.
  asked.length = 0;
  res = await client.callTool({ name: "up_test_input_required_result_elicitation", arguments: {} }, reqOpts);
  check("upstream elicitation relayed", asked.some((m) => m.includes("What is your name?")), `asked ${JSON.stringify(asked)}`);
  check("upstream used the answer", !res.isError && text(res).includes("Hello, Alice!"), `result ${JSON.stringify(res)}`);
} catch (err) {
  check("run", false, err?.stack ?? String(err));
} finally {
  await client.close().catch(() => {});
}
console.log(`client: ${tally.passed} passed, ${tally.failed} failed`);
process.exit(tally.failed > 0 ? 1 : 0);
