// Tools: the app's tools and each agent's, their input schema, and a form to run one with
// arguments (fields generated from a flat object schema, else a JSON editor). A tool that
// requires approval says why it is not run from here: the server refuses it (403) unless its
// operator allows running such tools directly.
"use strict";

(() => {
  const { h, api, message, pretty, schemaOf, view, registerView } = Studio;
  const SIMPLE = ["string", "number", "integer", "boolean"];

  function typeOf(property) {
    const type = Array.isArray(property.type) ? property.type.find((t) => t !== "null") : property.type;
    if (property.enum) return "enum";
    return SIMPLE.includes(type) ? type : null;
  }

  // Whether the schema is an object whose properties can each be one form field.
  function formable(schema) {
    return schema && schema.type === "object" && schema.properties &&
      Object.values(schema.properties).every((p) => typeOf(p || {}) !== null);
  }

  // A form for a flat object schema; `read()` returns the arguments or throws naming the field.
  function schemaForm(schema, key) {
    const required = new Set(schema.required || []);
    const fields = Object.entries(schema.properties).map(([name, property]) => {
      const type = typeOf(property);
      const id = key + "-" + name;
      let control;
      if (type === "boolean") control = h("input", { type: "checkbox", id, name });
      else if (type === "enum") control = h("select", { id, name }, required.has(name) ? null : h("option", { value: "" }, "—"),
        property.enum.map((v) => h("option", { value: JSON.stringify(v) }, String(v))));
      else control = h("input", { id, name, inputmode: type === "string" ? null : "decimal", autocomplete: "off",
        placeholder: property.default !== undefined ? "default " + JSON.stringify(property.default) : type });
      if (required.has(name)) control.setAttribute("aria-required", "true");
      const label = h("label", { for: id, class: required.has(name) ? "required" : null, title: required.has(name) ? "required" : null }, name);
      return { name, type, control, node: h("div", { class: "field" }, label, control, property.description ? h("div", { class: "muted" }, property.description) : null) };
    });
    function read() {
      const out = {};
      for (const { name, type, control } of fields) {
        if (type === "boolean") { out[name] = control.checked; continue; }
        const raw = control.value.trim();
        if (!raw) {
          if (required.has(name)) throw new Error(name + " is required");
          continue;
        }
        if (type === "enum") out[name] = JSON.parse(raw);
        else if (type === "string") out[name] = control.value;
        else {
          const value = Number(raw);
          if (!Number.isFinite(value) || (type === "integer" && !Number.isInteger(value))) throw new Error(name + " must be " + (type === "integer" ? "an integer" : "a number") + ", got " + JSON.stringify(raw));
          out[name] = value;
        }
      }
      return out;
    }
    return { nodes: fields.map((f) => f.node), read };
  }

  function jsonEditor(key) {
    const area = h("textarea", { id: key + "-json", class: "tool-json", rows: 4, spellcheck: "false" }, "{}");
    function read() {
      try { return JSON.parse(area.value || "null"); } catch (error) { throw new Error("the arguments are not JSON: " + error.message); }
    }
    return { nodes: [h("label", { for: key + "-json" }, "Arguments (JSON)"), area], read };
  }

  // Why a tool that waits for a person is not run from this page (the server's 403 says it too).
  function approvalNotice(tool) {
    return h("p", { class: "tool-approval", role: "note" },
      h("strong", {}, "Requires approval. "),
      "In an agent run each call of " + tool.id + " waits for a person to approve it, so the server " +
      "refuses to run it directly from here (403) unless its operator allows that (",
      h("code", {}, "--allow-unapproved-tool-execution"), "). Try it in the chat, where you approve the call.");
  }

  function toolCard(tool, runPath, key) {
    const schema = schemaOf(tool.inputSchema);
    const editor = formable(schema) ? schemaForm(schema, key) : jsonEditor(key);
    const output = h("pre", { class: "tool-run-result", role: "status" });
    async function run(event) {
      event.preventDefault();
      output.className = "tool-run-result";
      let data;
      try { data = editor.read(); } catch (error) {
        output.textContent = message(error);
        output.className = "tool-run-result failed";
        return;
      }
      output.textContent = "running…";
      try {
        const result = await api(runPath, { method: "POST", body: JSON.stringify({ data }) });
        output.textContent = pretty(result);
        output.className = "tool-run-result ok";
      } catch (error) {
        output.textContent = message(error);
        output.className = "tool-run-result failed";
      }
    }
    return h("section", { class: "card tool-card", "data-tool": tool.id, "data-key": key,
      "data-approval": tool.requireApproval ? "required" : null },
      h("h3", {}, h("code", {}, tool.id)),
      tool.description ? h("p", {}, tool.description) : null,
      tool.requireApproval ? approvalNotice(tool) : null,
      h("details", { class: "schema" }, h("summary", {}, "Input schema"), h("pre", {}, pretty(schema))),
      h("form", { class: "tool-form", onsubmit: run }, ...editor.nodes, h("div", { class: "row" }, h("button", { type: "submit" }, "Run"))),
      output);
  }

  async function toolsView() {
    const [tools, agents] = await Promise.all([api("/api/tools"), api("/api/agents")]);
    const sections = [];
    const appTools = Object.values(tools);
    sections.push(h("section", { class: "tool-group", "data-scope": "app" }, h("h2", {}, "App tools"),
      appTools.length ? appTools.map((t) => toolCard(t, "/api/tools/" + encodeURIComponent(t.id) + "/execute", "app-" + t.id))
        : h("p", { class: "muted" }, "No tools are registered on the app (Sluicegate(tools=[...]).")));
    for (const [agentId, agent] of Object.entries(agents)) {
      const own = Object.entries(agent.tools);
      if (!own.length) continue;
      sections.push(h("section", { class: "tool-group", "data-scope": agentId }, h("h2", {}, "Tools of " + agent.name),
        own.map(([toolId, t]) => toolCard(t, "/api/agents/" + encodeURIComponent(agentId) + "/tools/" + encodeURIComponent(toolId) + "/execute",
          agentId + "-" + toolId))));
    }
    view.replaceChildren(h("h1", {}, "Tools"), ...sections);
  }

  registerView("tools", "Tools", toolsView);
})();
