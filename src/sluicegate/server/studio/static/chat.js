// Chat with one agent: a streamed answer with its tool calls and results, the thread's history
// (reloaded when a thread is picked and when the page loads), per-run overrides, the runs
// waiting on a person, and the run's timeline.
"use strict";

(() => {
  const { h, api, headers, askToken, message, pretty, sse, view, registerView } = Studio;

  // Refusals a second try cannot change: 403 (not this caller's run), 404 (stale or unknown run),
  // 409 (already decided, being resumed). The card stays closed after them; after others (400:
  // resume data the tool refused, 401: no token yet, network errors) it can be sent again.
  const FINAL_STATUSES = [403, 404, 409];

  // The thread and resource a chat with an agent last used, kept across page loads.
  function remembered(agentId) {
    try { return JSON.parse(localStorage.getItem("sluicegate.chat." + agentId)) || {}; } catch (error) { return {}; }
  }
  function remember(agentId, value) { localStorage.setItem("sluicegate.chat." + agentId, JSON.stringify(value)); }

  function newThreadId() {
    const bytes = crypto.getRandomValues(new Uint8Array(6));
    return "chat-" + [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  // The overrides panel: model, instructions and request context for the next runs. `read()`
  // returns the body fields, or throws an Error naming the field at fault.
  function overridesPanel(agent) {
    const model = h("input", { id: "override-model", placeholder: agent.provider + "/" + agent.modelId, autocomplete: "off" });
    const instructions = h("textarea", { id: "override-instructions", rows: 3, placeholder: "replaces the agent's instructions for this run" });
    const context = h("textarea", { id: "override-context", rows: 3, placeholder: "{\"tier\": \"gold\"}", spellcheck: "false" });
    const problem = h("p", { id: "overrides-error", class: "error", role: "alert" });
    const count = h("span", { class: "chip", id: "overrides-count" }, "none");
    function active() {
      const n = [model, instructions, context].filter((f) => f.value.trim()).length;
      count.textContent = n ? n + " active" : "none";
    }
    for (const field of [model, instructions, context]) field.addEventListener("input", () => { problem.textContent = ""; active(); });
    const panel = h("details", { class: "overrides card", id: "chat-overrides" },
      h("summary", {}, "Run overrides ", count),
      h("p", { class: "muted" }, "Apply to the messages you send from here on. The server must allow model and instructions overrides (sluicegate dev does; serve needs SLUICEGATE_ALLOW_CLIENT_OVERRIDES=1)."),
      h("label", { for: "override-model" }, "Model"), model,
      h("label", { for: "override-instructions" }, "Instructions"), instructions,
      h("label", { for: "override-context" }, "Request context (a JSON object)"), context,
      problem);
    function read() {
      const out = {};
      if (model.value.trim()) out.model = model.value.trim();
      if (instructions.value.trim()) out.instructions = instructions.value;
      const raw = context.value.trim();
      if (raw) {
        let value;
        try { value = JSON.parse(raw); } catch (error) {
          throw fieldError(context, "Request context is not valid JSON: " + error.message);
        }
        if (value === null || typeof value !== "object" || Array.isArray(value)) {
          throw fieldError(context, "Request context must be a JSON object like {\"key\": \"value\"}, not " + (Array.isArray(value) ? "an array" : value === null ? "null" : typeof value));
        }
        out.requestContext = value;
      }
      return out;
    }
    function fieldError(field, text) {
      panel.open = true;
      problem.textContent = text;
      field.setAttribute("aria-invalid", "true");
      field.addEventListener("input", () => field.removeAttribute("aria-invalid"), { once: true });
      return new Error(text);
    }
    return { panel, read, problem };
  }

  async function chatView(agentId) {
    const agent = await api("/api/agents/" + encodeURIComponent(agentId));
    const agentPath = "/api/agents/" + encodeURIComponent(agentId);
    const saved = remembered(agentId);
    const log = h("div", { class: "chat-log", id: "chat-log", "aria-live": "polite" });
    const input = h("textarea", { id: "chat-input", rows: 3, placeholder: "Message " + agent.name, "aria-label": "Message" });
    const thread = h("input", { id: "chat-thread", placeholder: "new thread on first message", value: saved.threadId || "", autocomplete: "off" });
    const resource = h("input", { id: "chat-resource", placeholder: "studio", value: saved.resourceId || "studio", autocomplete: "off" });
    const threadList = h("select", { id: "chat-threads", "aria-label": "Threads of this resource" }, h("option", { value: "" }, "— pick a thread —"));
    const historyState = h("p", { id: "chat-history-state", class: "muted" });
    const timelineBox = h("div", { id: "timeline", class: "timeline" }, h("p", { class: "muted" }, "Send a message to see its timeline."));
    const suspendedBox = h("div", { id: "suspended-runs", class: "suspended" });
    const send = h("button", { type: "submit", id: "chat-send" }, "Send");
    const overrides = overridesPanel(agent);
    const memoryFields = agent.supportsMemory
      ? h("fieldset", { class: "memory-fields" }, h("legend", {}, "Memory"),
        h("div", { class: "field" }, h("label", { for: "chat-thread" }, "Thread id"), thread),
        h("div", { class: "field" }, h("label", { for: "chat-resource" }, "Resource id (whose threads)"), resource),
        h("div", { class: "field" }, h("label", { for: "chat-threads" }, "Earlier threads"),
          h("div", { class: "row" }, threadList, h("button", { type: "button", id: "chat-new-thread", class: "small", onclick: newThread }, "New thread"))),
        historyState)
      : h("p", { class: "muted" }, "This agent has no memory: each message starts a new conversation.");
    const form = h("form", { class: "chat-form", onsubmit: (event) => { event.preventDefault(); sendMessage(); } },
      input, h("div", { class: "row" }, send));

    function owner() {
      if (!agent.supportsMemory) return {};
      const threadId = thread.value.trim();
      return threadId ? { threadId, resourceId: resource.value.trim() || "studio" } : {};
    }

    function save() { remember(agentId, { threadId: thread.value.trim(), resourceId: resource.value.trim() || "studio" }); }

    // The resource's threads with this agent, newest first.
    async function loadThreads() {
      if (!agent.supportsMemory) return;
      const query = new URLSearchParams({ agentId, resourceId: resource.value.trim() || "studio" });
      try {
        const page = await api("/api/memory/threads?" + query);
        threadList.replaceChildren(h("option", { value: "" }, page.threads.length ? "— pick a thread —" : "— no threads yet —"),
          ...page.threads.map((t) => h("option", { value: t.id }, (t.title || t.id) + " · " + new Date(t.updatedAt).toLocaleString())));
        threadList.value = page.threads.some((t) => t.id === thread.value.trim()) ? thread.value.trim() : "";
      } catch (error) {
        historyState.textContent = "threads: " + message(error);
      }
    }

    // The thread's stored conversation replaces the log.
    let historyLoads = 0;
    let historyLoading = Promise.resolve();
    function loadHistory() {
      historyLoading = readHistory();
      return historyLoading;
    }
    async function readHistory() {
      const mine = ++historyLoads;
      const who = owner();
      log.replaceChildren();
      if (!agent.supportsMemory || !who.threadId) { historyState.textContent = ""; return; }
      historyState.textContent = "loading thread " + who.threadId + "…";
      const query = new URLSearchParams({ agentId, resourceId: who.resourceId, perPage: "1000" });
      try {
        const page = await api("/api/memory/threads/" + encodeURIComponent(who.threadId) + "/messages?" + query);
        if (mine !== historyLoads) return;
        log.replaceChildren(...Messages.thread(page.messages));
        calls.clear();  // a call still waiting on a person gets its result on its stored card
        for (const card of log.querySelectorAll(".tool-call")) calls.set(card.dataset.toolCallId, card);
        historyState.textContent = !page.messages.length ? ""
          : "thread " + who.threadId + ": " + (page.hasMore ? "the first " + page.messages.length + " of " : "") + page.total + " stored messages";
        log.scrollTop = log.scrollHeight;
      } catch (error) {
        if (mine !== historyLoads) return;
        // A thread that does not exist yet is made by the first message sent to it.
        historyState.textContent = error.status === 404 ? "new thread " + who.threadId + ": the first message creates it" : message(error);
      }
    }

    async function switchThread() {
      save();
      const [, runs] = await Promise.all([loadHistory(), loadSuspended()]);
      showWaitingInputs(runs);
    }

    // A run waiting on a person has not stored its messages in the thread yet (that happens when
    // it ends): after a reload, the user's message that started it comes from the run itself.
    function showWaitingInputs(runs) {
      const who = owner();
      if (!who.threadId || !runs) return;
      for (const run of runs) {
        if (run.threadId !== who.threadId) continue;
        for (const stored of run.messages || []) {
          if ([...log.querySelectorAll("[data-message-id]")].some((n) => n.dataset.messageId === stored.id)) continue;
          const node = Messages.stored(stored);
          if (!node) continue;
          node.classList.add("waiting-input");
          node.dataset.runId = run.runId;
          log.append(node);
        }
      }
    }

    function newThread() {
      thread.value = newThreadId();
      threadList.value = "";
      switchThread();
      input.focus();
    }

    // Tool-call cards by call id: a result that arrives in a later stream (after an approval or a
    // resume) completes the card of its call.
    const calls = new Map();

    // Renders one run's stream into `answer`; cards for decisions are added to the log after it.
    async function streamInto(answer, response, who) {
      const traceId = response.headers.get("x-sluicegate-trace-id");
      let text = null;
      function textNode() {
        if (!text) { text = h("div", { class: "text" }); answer.append(text); }
        return text;
      }
      for await (const chunk of sse(response)) {
        const p = chunk.payload || {};
        if (chunk.type === "text-delta") textNode().append(p.text);
        else if (chunk.type === "tripwire") {
          answer.append(h("div", { class: "tripwire" }, "Blocked by " + (p.processorId || "a processor") + ": " + p.reason));
        } else if (chunk.type === "error") {
          answer.append(h("div", { class: "error" }, (p.error && p.error.message) || "error"));
        } else if (chunk.type === "tool-call") {
          const card = Messages.toolCard(p);
          calls.set(p.toolCallId, card);
          answer.append(card);
          text = null;  // text after a tool call starts below its card
        } else if (chunk.type === "tool-result" || chunk.type === "tool-error") {
          let card = calls.get(p.toolCallId);
          if (!card) { card = Messages.toolCard(p); calls.set(p.toolCallId, card); answer.append(card); }
          Messages.settle(card, { result: chunk.type === "tool-error" ? p.error : p.result, isError: chunk.type === "tool-error" || Boolean(p.isError) });
          text = null;
        } else if (chunk.type === "tool-output-denied") {
          // declined by a person, or refused by a processor (`processorId` names it)
          const card = calls.get(p.toolCallId);
          if (card) Messages.settle(card, { denied: true, reason: p.reason, refusedBy: p.processorId });
          else answer.append(h("div", { class: "tool-denied" }, Messages.deniedText(p.toolName, p.reason, p.processorId)));
        } else if (chunk.type === "tool-call-approval" || chunk.type === "tool-call-suspended") {
          const kind = chunk.type === "tool-call-approval" ? "approval" : "suspend";
          const card = calls.get(p.toolCallId);
          if (card) Messages.waiting(card, kind === "approval" ? "waiting for a person's approval" : "waiting for input from a person");
          showDecision(chunk.runId, p, kind, who);
        } else if (chunk.type.startsWith("data-")) {
          answer.append(h("div", { class: "data" }, chunk.type + " " + JSON.stringify(chunk.data)));
        }
      }
      if (traceId) await Runs.showTimeline(timelineBox, traceId);
    }

    async function post(path, body, answer, who) {
      const response = await fetch(agentPath + path, { method: "POST", headers: headers(), body: JSON.stringify(body) });
      if (response.status === 401) askToken();
      if (!response.ok) {
        const problem = await response.json().catch(() => ({}));
        return { status: response.status, field: problem.field, error: problem.error || ("HTTP " + response.status) };
      }
      log.append(answer);
      try {
        await streamInto(answer, response, who);
      } catch (error) {  // the route accepted: whatever was decided stands, only the reading broke
        answer.append(h("div", { class: "error" }, "the stream broke off: " + message(error)));
      }
      return null;
    }

    async function sendMessage() {
      const text = input.value.trim();
      if (!text) return;
      let tuning;
      try { tuning = overrides.read(); } catch (error) { return; }  // the panel shows what is wrong
      if (agent.supportsMemory && !thread.value.trim()) { thread.value = newThreadId(); save(); }
      input.value = "";
      send.disabled = true;
      await historyLoading;  // the thread's history first, then this message below it
      log.append(h("div", { class: "msg user" }, h("span", { class: "role muted" }, "user"), h("div", { class: "text" }, text)));
      const answer = h("div", { class: "msg assistant" }, h("span", { class: "role muted" }, "assistant"));
      const body = Object.assign({ messages: [{ role: "user", content: text }] }, tuning);
      const who = owner();
      if (who.threadId) body.memory = { thread: who.threadId, resource: who.resourceId };
      send.disabled = true;
      try {
        const failed = await post("/stream", body, answer, who);
        if (failed) {
          log.append(h("div", { class: "msg assistant" }, h("span", { class: "error" }, failed.error)));
          // Refused because of an override (named by the field, or the only thing that changed).
          const field = failed.field || "";
          const ours = /^(model|instructions|requestContext)\b/.test(field) || (!field && Object.keys(tuning).length > 0);
          if (failed.status === 400 && ours) {
            overrides.panel.open = true;
            overrides.problem.textContent = failed.error;
          }
        }
      } catch (error) {
        log.append(h("div", { class: "msg assistant" }, h("span", { class: "error" }, message(error))));
      } finally {
        send.disabled = false;
        if (who.threadId) historyState.textContent = "thread " + who.threadId;
        loadSuspended();
        loadThreads();
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
          problem.textContent = message(error);
          status.textContent = "";
          card.dataset.state = "open";
          for (const b of buttons) b.disabled = false;
        } finally {
          loadSuspended();
        }
      }

      if (kind === "approval") {
        const reason = h("input", { class: "decline-reason", placeholder: "reason for declining (optional)", maxlength: 4000, "aria-label": "Reason for declining" });
        const approve = h("button", { type: "button", class: "approve", onclick: () => decide("/approve-tool-call", {}, "Approving") }, "Approve");
        const decline = h("button", { type: "button", class: "decline", onclick: () => {
          const text = reason.value.trim();
          decide("/decline-tool-call", text ? { reason: text } : {}, "Declining");
        } }, "Decline");
        buttons.push(approve, decline, reason);
        card.append(h("h3", {}, "Approve ", h("code", {}, call.toolName), "?"),
          h("p", { class: "muted" }, "The run waits before this tool call. Arguments:"),
          h("pre", { class: "args" }, pretty(call.args)));
        // An MCP tool's own hints (readOnlyHint, destructiveHint, ...): claims of its server, as text.
        if (call.annotations) card.append(h("p", { class: "muted" }, "The tool says about itself:"),
          h("pre", { class: "annotations" }, pretty(call.annotations)));
        card.append(h("div", { class: "row" }, approve, decline, reason));
      } else {
        const data = h("textarea", { class: "resume-data", rows: 3, placeholder: "resume data as JSON, e.g. {\"confirmed\": true}", "aria-label": "Resume data" });
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
        suspendedBox.replaceChildren(h("p", { class: "error" }, message(failure)));
        return;
      }
      if (!page.runs.length) {
        suspendedBox.replaceChildren(h("p", { class: "muted" }, "No run is waiting on a person."));
        return page.runs;
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
      return page.runs;
    }

    view.replaceChildren(h("h1", {}, "Chat with " + agent.name),
      h("div", { class: "split" },
        h("div", {}, memoryFields, log, form, overrides.panel),
        h("div", {}, h("h2", {}, "Waiting on a person ", h("button", { type: "button", id: "suspended-refresh", class: "small", onclick: loadSuspended }, "Refresh")),
          suspendedBox, h("h2", {}, "Run timeline"), timelineBox)));
    threadList.addEventListener("change", () => {
      if (!threadList.value) return;
      thread.value = threadList.value;
      switchThread();
    });
    thread.addEventListener("change", () => { threadList.value = ""; switchThread(); loadThreads(); });
    resource.addEventListener("change", () => { save(); loadThreads(); loadHistory(); loadSuspended(); });
    input.focus();
    const [, , runs] = await Promise.all([loadThreads(), loadHistory(), loadSuspended()]);
    showWaitingInputs(runs);
  }

  registerView("chat", null, chatView);
})();
