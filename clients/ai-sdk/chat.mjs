// Drives POST /chat/{agentId} with the AI SDK's own client: `DefaultChatTransport` sends the
// request, `readUIMessageStream` builds the assistant message from the stream.
//   node chat.mjs <ai | ai-v5> <base URL> <scenario,scenario,...> [token]
// Scenarios: text, lookup (a tool result), tripwire, approve, decline. Prints one JSON object,
// by scenario: every streamed part (`chunks`) and the message the client built, per turn
// (for tests/server/protocols/test_ai_sdk_clients.py).
const [pkg, base, scenarios, token] = process.argv.slice(2);
const { DefaultChatTransport, readUIMessageStream } = await import(pkg);
const v5 = pkg === "ai-v5";
const headers = token ? { authorization: `Bearer ${token}` } : {};
const transport = new DefaultChatTransport({ api: `${base}/chat/echo${v5 ? "?version=v5" : ""}`, headers });
const user = (text) => ({ id: `u-${Math.random().toString(36).slice(2)}`, role: "user", parts: [{ type: "text", text }] });

let chatId; // one chat per scenario: its thread on the server

async function turn(messages, { body, message } = {}) {
  const stream = await transport.sendMessages({
    chatId, messages, trigger: "submit-message", messageId: undefined, abortSignal: undefined, body,
  });
  const [forParts, forMessage] = stream.tee();
  const chunks = [];
  const collecting = (async () => { for await (const c of forParts) chunks.push(c); })();
  let last;
  const errors = [];
  for await (const m of readUIMessageStream({ stream: forMessage, message, onError: (e) => errors.push(String(e)) })) {
    last = structuredClone(m);
  }
  await collecting;
  return { chunks, message: last, errors };
}

async function play(scenario) {
  chatId = `chat-${pkg}-${scenario}-${Math.random().toString(36).slice(2)}`;
  const out = {};
  if (scenario === "text") {
    out.first = await turn([user("hello, write to ada.lovelace@example.com please")]);
    return out;
  }
  if (scenario === "lookup") {
    out.first = await turn([user('/tool lookup {"name": "ada"}')]);
    return out;
  }
  if (scenario === "tripwire") {
    out.first = await turn([user("this is forbidden")]);
    return out;
  }
  const ask = user('/tool wipe {"path": "/tmp/important"}');
  const first = await turn([ask]);
  out.first = first;
  const approved = scenario === "approve";
  const assistant = structuredClone(first.message);
  let body;
  if (v5) {
    // ai v5 has no approval parts: answer Mastra's data-tool-call-approval with the run's id.
    const data = assistant.parts.find((p) => p.type === "data-tool-call-approval").data;
    body = { runId: data.runId, toolCallId: data.toolCallId, resumeData: approved ? { approved } : { approved, reason: "not today" } };
  } else {
    // What useChat's addToolApprovalResponse does to the part.
    const part = assistant.parts.find((p) => p.state === "approval-requested");
    part.state = "approval-responded";
    part.approval = { ...part.approval, approved, ...(approved ? {} : { reason: "not today" }) };
  }
  out.second = await turn([ask, assistant], { body, message: structuredClone(assistant) });
  return out;
}

const results = {};
for (const scenario of scenarios.split(",")) results[scenario] = await play(scenario);
process.stdout.write(JSON.stringify(results));
