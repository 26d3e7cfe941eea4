// The agents: model, processors, tools and memory of each, with a link to chat with it.
"use strict";

(() => {
  const { h, api, chips, view, registerView } = Studio;

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

  registerView("agents", "Agents", agentsView, { also: ["chat"] });
})();
