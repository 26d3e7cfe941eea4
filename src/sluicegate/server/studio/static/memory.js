// Memory: the selected agent's threads for one resource, and a thread's stored messages, tool
// calls and their results shown as such.
"use strict";

(() => {
  const { h, api, message, view, registerView } = Studio;

  async function memoryView() {
    const agents = await api("/api/agents");
    const withMemory = Object.keys(agents).filter((id) => agents[id].supportsMemory);
    const agentSelect = h("select", { id: "memory-agent" }, withMemory.map((id) => h("option", { value: id }, agents[id].name || id)));
    const resource = h("input", { id: "memory-resource", placeholder: "studio", value: "studio", autocomplete: "off" });
    const threads = h("div", { id: "memory-threads" });
    const messages = h("div", { id: "memory-messages" });
    let loads = 0;

    async function load() {
      const mine = ++loads;
      const query = new URLSearchParams({ agentId: agentSelect.value, resourceId: resource.value.trim() || "studio" });
      messages.replaceChildren();
      try {
        const page = await api("/api/memory/threads?" + query);
        if (mine !== loads) return;
        threads.replaceChildren(...(page.threads.length ? page.threads.map((t) => h("button", { class: "thread", type: "button", "data-thread": t.id, onclick: () => open(t) },
          (t.title || t.id) + " · " + new Date(t.updatedAt).toLocaleString())) : [h("p", { class: "muted" }, "No threads of " + agentSelect.value + " for this resource.")]));
      } catch (error) { if (mine === loads) threads.replaceChildren(h("p", { class: "error" }, message(error))); }
    }

    async function open(thread) {
      for (const b of threads.querySelectorAll("button.thread")) b.classList.toggle("active", b.dataset.thread === thread.id);
      const query = new URLSearchParams({ agentId: agentSelect.value, resourceId: thread.resourceId, perPage: "1000" });
      try {
        const page = await api("/api/memory/threads/" + encodeURIComponent(thread.id) + "/messages?" + query);
        const shown = Messages.thread(page.messages);
        messages.replaceChildren(h("h2", {}, thread.title || thread.id),
          h("p", { class: "muted" }, page.total + " stored messages · ", h("a", { href: "#/chat/" + encodeURIComponent(agentSelect.value), onclick: () => {
            localStorage.setItem("sluicegate.chat." + agentSelect.value, JSON.stringify({ threadId: thread.id, resourceId: thread.resourceId }));
          } }, "continue in chat")),
          ...(shown.length ? shown : [h("p", { class: "muted" }, "No messages.")]));
      } catch (error) { messages.replaceChildren(h("p", { class: "error" }, message(error))); }
    }

    agentSelect.addEventListener("change", load);
    view.replaceChildren(h("h1", {}, "Memory"),
      withMemory.length ? h("form", { class: "row wrap", onsubmit: (e) => { e.preventDefault(); load(); } },
        h("label", { for: "memory-agent" }, "Agent"), agentSelect,
        h("label", { for: "memory-resource" }, "Resource id"), resource, h("button", { type: "submit" }, "List threads"))
        : h("p", { class: "muted" }, "No agent has memory."),
      h("div", { class: "split" }, threads, messages));
    if (withMemory.length) await load();
  }

  registerView("memory", "Memory", memoryView);
})();
