// sluicegate studio: a small client of the server's /api routes. No framework, no build step.
// Every piece of server data goes into the page as text nodes (never as HTML). The page runs
// under a strict Content-Security-Policy: no inline script or style attribute (styles are set
// through el.style), no HTML strings (Trusted Types), fetches to this origin only.
"use strict";

const view = document.getElementById("view");
const RUNNABLE = ["input", "outputStream", "outputStep", "outputResult"];

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "style") Object.assign(el.style, value);
    else if (value !== undefined && value !== null && value !== false) el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function token() { return localStorage.getItem("sluicegate.token") || ""; }

function headers(extra) {
  const out = Object.assign({ "content-type": "application/json" }, extra || {});
  if (token()) out.authorization = "Bearer " + token();
  return out;
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ headers: headers() }, options || {}));
  if (response.status === 401) { askToken(); throw new Error("this server needs a bearer token"); }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || ("HTTP " + response.status));
  return body;
}

function askToken() {
  const value = prompt("Bearer token (SLUICEGATE_API_TOKEN)", token());
  if (value !== null) { localStorage.setItem("sluicegate.token", value.trim()); route(); }
}
document.getElementById("token-button").addEventListener("click", askToken);

function fail(error) { view.replaceChildren(h("p", { class: "error" }, String(error.message || error))); }

function chips(items, cls) {
  return items.length ? items.map((item) => h("span", { class: "chip " + (cls || "") }, item)) : [h("span", { class: "muted" }, "none")];
}

// ---------------------------------------------------------------- agents

async function agentsView() {
  const agents = await api("/api/agents");
  const cards = Object.entries(agents).map(([id, agent]) => h("section", { class: "card agent", "data-agent": id },
    h("h2", {}, agent.name, h("span", { class: "muted" }, " · " + agent.provider + "/" + agent.modelId)),
    agent.description ? h("p", {}, agent.description) : null,
    h("dl", {},
      h("dt", {}, "Input processors"), h("dd", {}, chips(agent.inputProcessors.map((p) => p.id), "input")),
      h("dt", {}, "Output processors"), h("dd", {}, chips(agent.outputProcessors.map((p) => p.id), "output")),
      h("dt", {}, "Error processors"), h("dd", {}, chips((agent.errorProcessors || []).map((p) => p.id), "error")),
      h("dt", {}, "Tools"), h("dd", {}, chips(Object.keys(agent.tools))),
      h("dt", {}, "Memory"), h("dd", {}, agent.supportsMemory ? "yes" : "no")),
    h("a", { class: "button", href: "#/chat/" + encodeURIComponent(id) }, "Chat")));
  view.replaceChildren(h("h1", {}, "Agents"), ...cards);
}

// ---------------------------------------------------------------- chat

async function* sse(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    const records = buffer.split("\n\n");
    buffer = records.pop();
    for (const record of records) {
      if (!record.startsWith("data: ")) continue;
      const data = record.slice(6);
      if (data === "[DONE]") return;
      yield JSON.parse(data);
    }
  }
}

function pretty(value) {
  if (value === undefined) return "";
  try { return JSON.stringify(value, null, 2); } catch (error) { return String(value); }
}

// Refusals a second try cannot change: 403 (not this caller's run), 404 (stale or unknown run),
// 409 (already decided, being resumed). The card stays closed after them; after others (400:
// resume data the tool refused, 401: no token yet, network errors) it can be sent again.
const FINAL_STATUSES = [403, 404, 409];

async function chatView(agentId) {
  const agent = await api("/api/agents/" + encodeURIComponent(agentId));
  const agentPath = "/api/agents/" + encodeURIComponent(agentId);
  const log = h("div", { class: "chat-log", id: "chat-log" });
  const input = h("textarea", { id: "chat-input", rows: 3, placeholder: "Message " + agent.name });
  const thread = h("input", { id: "chat-thread", placeholder: "thread id (optional)" });
  const resource = h("input", { id: "chat-resource", placeholder: "resource id" });
  const timelineBox = h("div", { id: "timeline", class: "timeline" }, h("p", { class: "muted" }, "Send a message to see its timeline."));
  const suspendedBox = h("div", { id: "suspended-runs", class: "suspended" });
  const send = h("button", { type: "submit", id: "chat-send" }, "Send");
  const form = h("form", { class: "chat-form", onsubmit: (event) => { event.preventDefault(); sendMessage(); } },
    input, agent.supportsMemory ? h("div", { class: "row" }, thread, resource) : null, send);

  function owner() {
    const threadId = thread.value.trim();
    return threadId ? { threadId, resourceId: resource.value.trim() || "studio" } : {};
  }

  // Renders one run's stream into `answer`; cards for decisions are added to the log after it.
  async function streamInto(answer, response, who) {
    const traceId = response.headers.get("x-sluicegate-trace-id");
    for await (const chunk of sse(response)) {
      const p = chunk.payload || {};
      if (chunk.type === "text-delta") answer.append(p.text);
      else if (chunk.type === "tripwire") {
        answer.append(h("div", { class: "tripwire" }, "Blocked by " + (p.processorId || "a processor") + ": " + p.reason));
      } else if (chunk.type === "error") {
        answer.append(h("div", { class: "error" }, (p.error && p.error.message) || "error"));
      } else if (chunk.type === "tool-call") {
        answer.append(h("div", { class: "tool" }, "tool " + p.toolName + " " + JSON.stringify(p.args)));
      } else if (chunk.type === "tool-result") {
        answer.append(h("div", { class: "tool tool-result" }, "result of " + p.toolName + " " + JSON.stringify(p.result)));
      } else if (chunk.type === "tool-output-denied") {
        answer.append(h("div", { class: "tool-denied" }, "declined: " + p.toolName + " did not run. " + (p.reason || "")));
      } else if (chunk.type === "tool-call-approval") {
        showDecision(chunk.runId, p, "approval", who);
      } else if (chunk.type === "tool-call-suspended") {
        showDecision(chunk.runId, p, "suspend", who);
      } else if (chunk.type.startsWith("data-")) {
        answer.append(h("div", { class: "data" }, chunk.type + " " + JSON.stringify(chunk.data)));
      }
    }
    if (traceId) await showTimeline(timelineBox, traceId);
  }

  async function post(path, body, answer, who) {
    const response = await fetch(agentPath + path, { method: "POST", headers: headers(), body: JSON.stringify(body) });
    if (response.status === 401) askToken();
    if (!response.ok) {
      const problem = await response.json().catch(() => ({}));
      return { status: response.status, error: problem.error || ("HTTP " + response.status) };
    }
    log.append(answer);
    try {
      await streamInto(answer, response, who);
    } catch (error) {  // the route accepted: whatever was decided stands, only the reading broke
      answer.append(h("div", { class: "error" }, "the stream broke off: " + String(error.message || error)));
    }
    return null;
  }

  async function sendMessage() {
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    log.append(h("div", { class: "msg user" }, text));
    const answer = h("div", { class: "msg assistant" });
    const body = { messages: [{ role: "user", content: text }] };
    const who = owner();
    if (who.threadId) body.memory = { thread: who.threadId, resource: who.resourceId };
    send.disabled = true;
    try {
      const failed = await post("/stream", body, answer, who);
      if (failed) log.append(h("div", { class: "msg assistant" }, h("span", { class: "error" }, failed.error)));
    } catch (error) {
      log.append(h("div", { class: "msg assistant" }, h("span", { class: "error" }, String(error.message || error))));
    } finally {
      send.disabled = false;
      loadSuspended();
    }
  }

  // A card asking the person about one pending tool call. The arguments (or the suspend
  // payload) are shown exactly as they arrived, after the server's output guardrails, and
  // only ever as text.
  function showDecision(runId, call, kind, who, fromList) {
    // One card per pending question: opening it from the list shows the card there is (open or
    // being decided); a stream asking again (a tool that suspends a second time) gets a new one.
    const live = fromList ? ["open", "deciding"] : ["open"];
    const existing = [...log.querySelectorAll(".decision")].find((c) => c.dataset.runId === runId &&
      c.dataset.toolCallId === call.toolCallId && live.includes(c.dataset.state));
    if (existing) { existing.scrollIntoView({ block: "nearest" }); return existing; }
    const status = h("p", { class: "decision-status" });
    const problem = h("p", { class: "error decision-error", role: "alert" });
    const buttons = [];
    const card = h("section", { class: "card decision " + kind, "data-run-id": runId, "data-tool-call-id": call.toolCallId,
      "data-tool": call.toolName, "data-state": "open" });

    async function decide(path, body, verb) {
      if (card.dataset.state !== "open") return;  // a second click while the first is in flight
      card.dataset.state = "deciding";
      for (const b of buttons) b.disabled = true;
      problem.textContent = "";
      status.textContent = verb + "…";
      const answer = h("div", { class: "msg assistant" });
      const payload = Object.assign({ runId, toolCallId: call.toolCallId }, body);
      if (who && who.resourceId) payload.resourceId = who.resourceId;
      try {
        const failed = await post(path, payload, answer, who);
        if (failed) {
          problem.textContent = failed.error;
          status.textContent = "";
          const final = FINAL_STATUSES.includes(failed.status);
          card.dataset.state = final ? "stale" : "open";
          if (!final) for (const b of buttons) b.disabled = false;
          return;
        }
        card.dataset.state = "decided";
        status.textContent = verb.replace(/ing$/, "ed");
      } catch (error) {
        problem.textContent = String(error.message || error);
        status.textContent = "";
        card.dataset.state = "open";
        for (const b of buttons) b.disabled = false;
      } finally {
        loadSuspended();
      }
    }

    if (kind === "approval") {
      const reason = h("input", { class: "decline-reason", placeholder: "reason for declining (optional)", maxlength: 4000 });
      const approve = h("button", { type: "button", class: "approve", onclick: () => decide("/approve-tool-call", {}, "Approving") }, "Approve");
      const decline = h("button", { type: "button", class: "decline", onclick: () => {
        const text = reason.value.trim();
        decide("/decline-tool-call", text ? { reason: text } : {}, "Declining");
      } }, "Decline");
      buttons.push(approve, decline, reason);
      card.append(h("h3", {}, "Approve ", h("code", {}, call.toolName), "?"),
        h("p", { class: "muted" }, "The run waits before this tool call. Arguments:"),
        h("pre", { class: "args" }, pretty(call.args)),
        h("div", { class: "row" }, approve, decline, reason));
    } else {
      const data = h("textarea", { class: "resume-data", rows: 3, placeholder: "resume data as JSON, e.g. {\"confirmed\": true}" });
      const resume = h("button", { type: "button", class: "resume", onclick: () => {
        let value;
        try { value = JSON.parse(data.value); } catch (error) {
          problem.textContent = "resume data is not JSON: " + error.message;
          return;
        }
        decide("/resume-stream", { resumeData: value }, "Resuming");
      } }, "Resume");
      buttons.push(resume, data);
      card.append(h("h3", {}, h("code", {}, call.toolName), " is waiting for input"),
        h("p", { class: "muted" }, "It asked:"),
        h("pre", { class: "suspend-payload" }, pretty(call.suspendPayload)),
        h("p", { class: "muted" }, "Arguments:"),
        h("pre", { class: "args" }, pretty(call.args)),
        data, h("div", { class: "row" }, resume));
    }
    card.append(status, problem);
    log.append(card);
    card.scrollIntoView({ block: "nearest" });
    return card;
  }

  // The agent's runs waiting on a person, one group per thread.
  // Only the latest of overlapping loads is drawn; aria-busy stays set until it is.
  let loads = 0;
  async function loadSuspended() {
    const mine = ++loads;
    suspendedBox.setAttribute("aria-busy", "true");
    const query = new URLSearchParams(owner());
    let page, failure;
    try {
      page = await api(agentPath + "/suspended-runs" + (query.toString() ? "?" + query : ""));
    } catch (error) {
      failure = error;
    }
    if (mine !== loads) return;
    suspendedBox.setAttribute("aria-busy", "false");
    if (failure) {
      suspendedBox.replaceChildren(h("p", { class: "error" }, String(failure.message || failure)));
      return;
    }
    if (!page.runs.length) {
      suspendedBox.replaceChildren(h("p", { class: "muted" }, "No run is waiting on a person."));
      return;
    }
    const groups = new Map();
    for (const run of page.runs) {
      const key = run.threadId || "";
      if (!groups.has(key)) groups.set(key, []);
      groups.get(key).push(run);
    }
    suspendedBox.replaceChildren(...[...groups].map(([threadId, runs]) => h("div", { class: "thread-group", "data-thread": threadId },
      h("h3", {}, threadId ? "Thread " + threadId : "No thread"),
      ...runs.map((run) => h("div", { class: "suspended-run", "data-run-id": run.runId },
        h("div", { class: "muted" }, "run " + run.runId + " · since " + new Date(run.suspendedAt).toLocaleString() +
          (run.expiresAt ? " · expires " + new Date(run.expiresAt).toLocaleString() : "")),
        ...run.toolCalls.map((call) => h("div", { class: "pending-call", "data-tool-call-id": call.toolCallId },
          h("code", {}, call.toolName), " ", h("span", { class: "chip" }, call.requiresApproval ? "needs approval" : "needs input"),
          h("button", { type: "button", class: "open-call", onclick: () => showDecision(run.runId, call,
            call.requiresApproval ? "approval" : "suspend", { threadId: run.threadId, resourceId: run.resourceId }, true) }, "Open"))))))));
  }

  view.replaceChildren(h("h1", {}, "Chat with " + agent.name),
    h("div", { class: "split" }, h("div", {}, log, form),
      h("div", {}, h("h2", {}, "Waiting on a person ", h("button", { type: "button", id: "suspended-refresh", class: "small", onclick: loadSuspended }, "Refresh")),
        suspendedBox, h("h2", {}, "Run timeline"), timelineBox)));
  thread.addEventListener("change", loadSuspended);
  resource.addEventListener("change", loadSuspended);
  input.focus();
  await loadSuspended();
}

// ---------------------------------------------------------------- runs and timelines

const OUTCOME_LABEL = { pass: "passed", modified: "modified", abort: "blocked", retry: "retry", error: "error" };

function timelineRows(trace) {
  const total = Math.max(trace.durationMs, 0.001);
  return trace.spans.map((span) => {
    const decision = span.decision;
    const outcome = decision ? decision.outcome : span.status;
    const label = decision
      ? [decision.processorId, decision.phase, OUTCOME_LABEL[decision.outcome] || decision.outcome].join(" · ")
      : span.name;
    const bar = h("div", { class: "bar " + (decision ? "outcome-" + decision.outcome : "kind-" + span.kind),
      style: { left: (100 * span.startMs / total).toFixed(2) + "%", width: Math.max(0.5, 100 * span.durationMs / total).toFixed(2) + "%" } });
    return h("div", { class: "span-row", "data-outcome": outcome, "data-processor": decision ? decision.processorId : null },
      h("div", { class: "span-label" }, label, h("span", { class: "muted" }, " " + span.durationMs.toFixed(2) + " ms"),
        decision && decision.reason ? h("div", { class: "reason" }, "reason: " + decision.reason + (decision.retry ? " (retry)" : "")) : null),
      h("div", { class: "span-track" }, bar));
  });
}

async function showTimeline(box, traceId) {
  try {
    const trace = await api("/api/studio/traces/" + encodeURIComponent(traceId));
    const decisions = trace.processors;
    const summary = decisions.length
      ? decisions.map((d) => d.processorId + ": " + (OUTCOME_LABEL[d.outcome] || d.outcome)).join(", ")
      : "no processor spans recorded for this run";
    box.replaceChildren(h("p", { class: "muted" }, "trace " + traceId + " · " + trace.durationMs.toFixed(1) + " ms"),
      h("p", { class: "summary" }, summary), ...timelineRows(trace));
  } catch (error) {
    box.replaceChildren(h("p", { class: "error" }, String(error.message || error)));
  }
}

async function runsView(traceId) {
  if (traceId) {
    const box = h("div", { class: "timeline" });
    view.replaceChildren(h("h1", {}, "Run"), h("a", { href: "#/runs" }, "← all runs"), box);
    await showTimeline(box, traceId);
    return;
  }
  const traces = await api("/api/studio/traces");
  const rows = traces.map((t) => h("tr", {},
    h("td", {}, h("a", { href: "#/runs/" + t.traceId }, t.name)),
    h("td", {}, t.agentId || ""),
    h("td", {}, new Date(t.startTime * 1000).toLocaleTimeString()),
    h("td", {}, t.durationMs.toFixed(1) + " ms"),
    h("td", {}, Object.entries(t.outcomes).map(([k, v]) => (OUTCOME_LABEL[k] || k) + " " + v).join(", "))));
  view.replaceChildren(h("h1", {}, "Recent runs"),
    traces.length ? h("table", {}, h("thead", {}, h("tr", {}, ["Run", "Agent", "Started", "Duration", "Processor decisions"].map((c) => h("th", {}, c)))), h("tbody", {}, rows))
      : h("p", { class: "muted" }, "No runs yet."));
}

// ---------------------------------------------------------------- memory

async function memoryView() {
  const agents = await api("/api/agents");
  const withMemory = Object.keys(agents).filter((id) => agents[id].supportsMemory);
  const agentSelect = h("select", { id: "memory-agent" }, withMemory.map((id) => h("option", { value: id }, id)));
  const resource = h("input", { id: "memory-resource", placeholder: "resource id", value: "studio" });
  const threads = h("div", { id: "memory-threads" });
  const messages = h("div", { id: "memory-messages" });

  async function load() {
    const query = new URLSearchParams({ agentId: agentSelect.value, resourceId: resource.value.trim() });
    try {
      const page = await api("/api/memory/threads?" + query);
      threads.replaceChildren(...(page.threads.length ? page.threads.map((t) => h("button", { class: "thread", type: "button", onclick: () => open(t) },
        (t.title || t.id) + " · " + new Date(t.updatedAt).toLocaleString())) : [h("p", { class: "muted" }, "No threads for this resource.")]));
    } catch (error) { threads.replaceChildren(h("p", { class: "error" }, error.message)); }
  }

  async function open(thread) {
    const query = new URLSearchParams({ agentId: agentSelect.value, resourceId: thread.resourceId });
    const page = await api("/api/memory/threads/" + encodeURIComponent(thread.id) + "/messages?" + query);
    messages.replaceChildren(h("h2", {}, thread.title || thread.id), ...page.messages.map((m) => h("div", { class: "msg " + m.role },
      h("span", { class: "muted" }, m.role + " "), (m.content.parts || []).filter((p) => p.type === "text").map((p) => p.text).join(""))));
  }

  view.replaceChildren(h("h1", {}, "Memory"),
    withMemory.length ? h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); load(); } }, agentSelect, resource, h("button", { type: "submit" }, "List threads"))
      : h("p", { class: "muted" }, "No agent has memory."),
    h("div", { class: "split" }, threads, messages));
  if (withMemory.length) await load();
}

// ---------------------------------------------------------------- processors

async function processorsView() {
  const processors = await api("/api/processors");
  const cards = Object.values(processors).map((p) => {
    const phases = p.phases.filter((phase) => RUNNABLE.includes(phase));
    const phase = h("select", { class: "try-phase" }, phases.map((x) => h("option", { value: x }, x)));
    const text = h("textarea", { class: "try-text", rows: 2, placeholder: "Text to run through " + p.id });
    const result = h("pre", { class: "try-result" });
    async function tryIt(event) {
      event.preventDefault();
      const role = phase.value === "input" ? "user" : "assistant";
      const messages = [{ id: "try-1", role, content: { format: 2, parts: [{ type: "text", text: text.value }] } }];
      try {
        const out = await api("/api/processors/" + encodeURIComponent(p.id) + "/execute",
          { method: "POST", body: JSON.stringify({ phase: phase.value, messages }) });
        const lines = [];
        if (out.tripwire) lines.push("BLOCKED: " + out.tripwire.reason);
        else lines.push(out.success ? "passed" : "failed: " + (out.error || ""));
        if (out.chunks) lines.push("stream: " + out.chunks.filter((c) => c.type === "text-delta").map((c) => c.payload.text).join(""));
        else if (out.messages) lines.push("messages: " + out.messages.map((m) => (m.content.parts || []).filter((x) => x.type === "text").map((x) => x.text).join("")).join(" | "));
        result.textContent = lines.join("\n");
        result.className = "try-result " + (out.tripwire ? "blocked" : "passed");
      } catch (error) { result.textContent = String(error.message || error); result.className = "try-result blocked"; }
    }
    return h("section", { class: "card processor", "data-processor": p.id },
      h("h2", {}, p.name, h("span", { class: "muted" }, " · " + p.id)),
      h("p", {}, p.description || ""),
      h("dl", {}, h("dt", {}, "Hooks"), h("dd", {}, chips(p.hooks || p.phases)),
        h("dt", {}, "Used by"), h("dd", {}, chips(p.configurations.map((c) => c.agentId + " (" + c.type + ")")))),
      phases.length ? h("form", { class: "try", onsubmit: tryIt }, phase, text, h("button", { type: "submit" }, "Try it"), result)
        : h("p", { class: "muted" }, "Its hooks need a live run; try it through an agent."));
  });
  view.replaceChildren(h("h1", {}, "Processors"), ...cards);
}

// ---------------------------------------------------------------- routing

async function route() {
  const [name, arg] = (location.hash.replace(/^#\//, "") || "agents").split("/");
  for (const link of document.querySelectorAll("nav a[data-view]")) link.classList.toggle("active", link.dataset.view === name || (name === "chat" && link.dataset.view === "agents"));
  try {
    if (name === "chat") await chatView(decodeURIComponent(arg));
    else if (name === "runs") await runsView(arg);
    else if (name === "memory") await memoryView();
    else if (name === "processors") await processorsView();
    else if (name === "eval" && window.sluicegateEvalView) await window.sluicegateEvalView(view);
    else await agentsView();
  } catch (error) { fail(error); }
}

window.addEventListener("hashchange", route);
route();
