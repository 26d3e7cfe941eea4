// Processors: the catalogue, each workflow drawn as its graph, and "try it" on one phase.
"use strict";

(() => {
  const { h, api, chips, message, view, registerView } = Studio;
  const RUNNABLE = ["input", "outputStream", "outputStep", "outputResult"];

  function card(p) {
    const phases = p.phases.filter((phase) => RUNNABLE.includes(phase));
    const phase = h("select", { class: "try-phase", "aria-label": "Phase" }, phases.map((x) => h("option", { value: x }, x)));
    const text = h("textarea", { class: "try-text", rows: 2, placeholder: "Text to run through " + p.id, "aria-label": "Text" });
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
      } catch (error) { result.textContent = message(error); result.className = "try-result blocked"; }
    }
    return h("section", { class: "card processor", "data-processor": p.id },
      h("h2", {}, p.name, p.name !== p.id ? h("span", { class: "muted" }, " · " + p.id) : null, p.isWorkflow ? h("span", { class: "chip" }, "workflow") : null),
      h("p", { class: "description" }, p.description || ""),
      h("dl", {}, h("dt", {}, "Hooks"), h("dd", {}, chips(p.hooks || p.phases)),
        h("dt", {}, "Used by"), h("dd", {}, chips(p.configurations.map((c) => c.agentId + " (" + c.type + ")")))),
      p.isWorkflow && p.stepGraph ? h("figure", { class: "workflow" }, WorkflowGraph.draw(p.stepGraph, p.id),
        h("figcaption", { class: "muted" }, "Steps run top to bottom; side by side: a parallel stage (all run) or a branch (the first whose condition holds).")) : null,
      phases.length ? h("form", { class: "try", onsubmit: tryIt }, phase, text, h("button", { type: "submit" }, "Try it"), result)
        : h("p", { class: "muted" }, "Its hooks need a live run; try it through an agent."));
  }

  async function processorsView() {
    const processors = await api("/api/processors");
    view.replaceChildren(h("h1", {}, "Processors"), ...Object.values(processors).map(card));
  }

  registerView("processors", "Processors", processorsView);
})();
