// Messages as people read them, shared by the chat and the memory view: text, and each tool call
// as a card with its arguments and, once it has one, its result (or error).
"use strict";

const Messages = (() => {
  const { h, pretty } = Studio;

  // The card of one tool call; `settle` fills in its result later (from a stream).
  function toolCard(call) {
    const result = h("div", { class: "tool-result-slot" }, h("span", { class: "muted" }, "waiting for the result…"));
    const card = h("div", { class: "tool-call", "data-tool-call-id": call.toolCallId || "", "data-tool": call.toolName || "", "data-state": "call" },
      h("div", { class: "tool-head" }, h("span", { class: "chip tool-chip" }, "tool call"), " ", h("code", {}, call.toolName || "?")),
      h("div", { class: "muted" }, "arguments"), h("pre", { class: "tool-args" }, pretty(call.args)),
      result);
    return card;
  }

  function settle(card, outcome) {
    const slot = card.querySelector(".tool-result-slot");
    if (outcome.denied) {
      card.dataset.state = "denied";
      if (outcome.refusedBy) card.dataset.refusedBy = outcome.refusedBy;
      slot.replaceChildren(h("div", { class: "tool-denied" }, deniedText(card.dataset.tool, outcome.reason, outcome.refusedBy)));
      return;
    }
    card.dataset.state = outcome.isError ? "error" : "result";
    slot.replaceChildren(h("div", { class: "muted" }, outcome.isError ? "error" : "result"),
      h("pre", { class: "tool-output" + (outcome.isError ? " error" : "") }, pretty(outcome.result)));
  }

  // Who stopped a call that never ran: a person declined it, or a processor refused it.
  function deniedText(tool, reason, refusedBy) {
    const who = refusedBy ? "refused by " + refusedBy : "declined";
    return who + ": " + (tool || "the tool") + " did not run. " + (reason || "");
  }

  function waiting(card, text) {
    card.dataset.state = "waiting";
    card.querySelector(".tool-result-slot").replaceChildren(h("span", { class: "muted" }, text));
  }

  // The parts of a stored message (Mastra's format 2) that a person should see, as nodes.
  function partNodes(message) {
    const content = message.content;
    if (typeof content === "string") return content ? [h("div", { class: "text" }, content)] : [];
    const nodes = [];
    for (const part of (content && content.parts) || []) {
      if (part.type === "text" && part.text) nodes.push(h("div", { class: "text" }, part.text));
      else if (part.type === "reasoning" && (part.text || part.reasoning)) nodes.push(h("div", { class: "reasoning muted" }, "reasoning: " + (part.text || part.reasoning)));
      else if (part.type === "tool-invocation" && part.toolInvocation) {
        const call = part.toolInvocation;
        const card = toolCard({ toolCallId: call.toolCallId, toolName: call.toolName, args: call.args });
        if (call.state === "result") settle(card, { result: call.result, isError: Boolean(call.isError) });
        else card.querySelector(".tool-result-slot").replaceChildren(h("span", { class: "muted" }, "no result stored"));
        nodes.push(card);
      } else if (part.type === "tool-call") {
        nodes.push(toolCard({ toolCallId: part.toolCallId, toolName: part.toolName, args: part.args !== undefined ? part.args : part.input }));
      } else if (part.type === "tool-result") {
        const card = toolCard({ toolCallId: part.toolCallId, toolName: part.toolName, args: part.args });
        settle(card, { result: part.result !== undefined ? part.result : part.output, isError: Boolean(part.isError) });
        nodes.push(card);
      } else if (part.type && part.type.startsWith("data-")) nodes.push(h("div", { class: "data" }, part.type + " " + pretty(part.data)));
    }
    return nodes;
  }

  // One stored message, or null when it holds nothing to show (a bare step marker).
  function stored(message) {
    const nodes = partNodes(message);
    if (!nodes.length) return null;
    const hasTools = nodes.some((n) => n.classList.contains("tool-call"));
    return h("div", { class: "msg " + message.role + (hasTools ? " has-tools" : ""), "data-message-id": message.id },
      h("span", { class: "role muted" }, message.role), ...nodes);
  }

  // A thread's messages; a tool call and its result stored in two messages end as one card.
  function thread(messages) {
    const shown = [];
    const cards = new Map();
    for (const message of messages) {
      const node = stored(message);
      if (!node) continue;
      let merged = false;
      for (const card of node.querySelectorAll(".tool-call")) {
        const id = card.dataset.toolCallId;
        const earlier = id && cards.get(id);
        if (earlier && ["call", "waiting"].includes(earlier.dataset.state) && card.dataset.state !== "call") {
          earlier.querySelector(".tool-result-slot").replaceWith(card.querySelector(".tool-result-slot"));
          earlier.dataset.state = card.dataset.state;
          card.remove();
          merged = true;
        } else if (id) cards.set(id, card);
      }
      if (merged && !node.querySelector(".text, .tool-call, .data, .reasoning")) continue;
      shown.push(node);
    }
    return shown;
  }

  return { toolCard, settle, deniedText, waiting, stored, thread };
})();
