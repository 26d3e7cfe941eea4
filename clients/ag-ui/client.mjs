// AG-UI's own client (@ag-ui/client's HttpAgent, unmodified) against sluicegate's AG-UI route.
// Usage: node client.mjs <base URL> [bearer token]. Prints one JSON object: what each scenario saw.
// tests/server/protocols/test_ag_ui_client.py serves the app and checks the answers.
import { HttpAgent } from "@ag-ui/client";

const [base, token] = process.argv.slice(2);
const headers = token ? { authorization: `Bearer ${token}` } : {};

function agent(agentId, threadId) {
  return new HttpAgent({ url: `${base}/api/agents/${agentId}/ag-ui`, headers, threadId });
}

// Runs once; every event the client applied, the run's outcome, and the error if it failed.
async function run(client, params = {}) {
  const seen = { events: [], error: null, outcome: null };
  const subscriber = {
    onEvent: ({ event }) => {
      seen.events.push(event);
    },
    onRunFinishedEvent: (args) => {
      seen.outcome = { outcome: args.outcome, interrupts: args.interrupts ?? null, pending: args.pendingToolCallIds ?? null };
    },
    onRunErrorEvent: ({ event }) => {
      seen.error = { message: event.message, code: event.code ?? null, metadata: event.metadata ?? null };
    },
  };
  try {
    await client.runAgent(params, subscriber);
  } catch (error) {
    seen.thrown = String(error?.message ?? error);
  }
  seen.text = seen.events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
  seen.types = seen.events.map((e) => e.type);
  return seen;
}

function say(client, text) {
  client.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
}

const out = {};

{
  const client = agent("plain", "client-plain");
  say(client, "hello there");
  out.plain = await run(client);
  out.plain.messages = client.messages;
}
{
  const client = agent("guarded", "client-guarded");
  say(client, "write to alice.secret@example.com today please");
  out.redacted = await run(client);
  out.redacted.messages = client.messages;
}
{
  const client = agent("echo", "client-tripwire");
  say(client, "a forbidden word");
  out.tripwire = await run(client);
}
{
  const client = agent("echo", "client-approval");
  say(client, '/tool wipe {"path": "/tmp/client"}');
  const asked = await run(client);
  const interrupt = asked.outcome?.interrupts?.[0];
  const answered = await run(client, {
    resume: [{ interruptId: interrupt?.id, status: "resolved", payload: { approved: true } }],
  });
  out.approval = { asked, answered, messages: client.messages };
}
{
  const client = agent("echo", "client-frontend");
  const tools = [
    {
      name: "pick_colour",
      description: "Ask the user to pick a colour in the page.",
      parameters: { type: "object", properties: { hint: { type: "string" } } },
    },
  ];
  say(client, '/tool pick_colour {"hint": "warm"}');
  const asked = await run(client, { tools });
  const callId = asked.outcome?.pending?.[0];
  client.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId: callId, content: '{"colour": "red"}' });
  const answered = await run(client, { tools });
  out.frontend = { asked, answered, callId };
}
{
  const client = agent("slow", "client-abort");
  say(client, "go");
  const seen = [];
  const running = client.runAgent({}, {
    onTextMessageContentEvent: () => {
      seen.push(1);
      if (seen.length === 2) client.abortRun();
    },
  });
  try {
    await running;
    out.abort = { deltas: seen.length, thrown: null };
  } catch (error) {
    out.abort = { deltas: seen.length, thrown: String(error?.message ?? error) };
  }
}

process.stdout.write(JSON.stringify(out));
