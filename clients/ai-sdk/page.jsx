// A useChat page (from @ai-sdk/react) against POST /chat/echo, for
// tests/server/protocols/test_ai_sdk_page.py: a streamed answer, an approval answered with
// addToolApprovalResponse, a tripwire. `?api=<server URL>&token=<bearer token>`.
// Bundled with esbuild (bash clients/ai-sdk/run.sh --install-only builds dist/page.js).
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";
import { useState } from "react";
import { createRoot } from "react-dom/client";

const params = new URLSearchParams(location.search);
const transport = new DefaultChatTransport({
  api: `${params.get("api")}/chat/echo`,
  headers: { authorization: `Bearer ${params.get("token")}` },
});

function Part({ part, answer }) {
  if (part.type === "text") return <p className="text">{part.text}</p>;
  if (part.type === "data-tripwire") {
    return <p className="tripwire" data-processor={part.data.processorId}>{part.data.reason}</p>;
  }
  if (!part.type.startsWith("tool-")) return null;
  return (
    <div className="tool" data-state={part.state}>
      {part.state === "approval-requested" && (
        <>
          <button className="approve" onClick={() => answer({ id: part.approval.id, approved: true })}>Approve</button>
          <button className="decline" onClick={() => answer({ id: part.approval.id, approved: false, reason: "no" })}>
            Decline
          </button>
        </>
      )}
      {part.state === "output-available" && <pre className="output">{JSON.stringify(part.output)}</pre>}
    </div>
  );
}

function App() {
  const { messages, sendMessage, status, error, addToolApprovalResponse } = useChat({
    transport,
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  const [input, setInput] = useState("");
  return (
    <main data-status={status}>
      {messages.map((m) => (
        <section key={m.id} className={`message ${m.role}`}>
          {m.parts.map((p, i) => <Part key={i} part={p} answer={addToolApprovalResponse} />)}
        </section>
      ))}
      {error && <p className="error">{String(error)}</p>}
      <form
        onSubmit={(e) => {
          e.preventDefault();
          sendMessage({ text: input });
          setInput("");
        }}
      >
        <input id="input" value={input} onChange={(e) => setInput(e.target.value)} />
        <button id="send" type="submit" disabled={status !== "ready"}>Send</button>
      </form>
    </main>
  );
}

createRoot(document.getElementById("root")).render(<App />);
