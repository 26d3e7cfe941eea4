// sluicegate studio, eval page (#/eval): run `sluicegate eval` on an uploaded JSONL dataset
// through POST /api/eval. Self-contained (its own helpers), loaded before studio.js, whose
// router calls window.sluicegateEvalView. Same rules as studio.js: server data goes in as text
// nodes only, styles through el.style, fetches to this origin only.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (key === "style") Object.assign(node.style, value);
      else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  async function post(path, body) {
    const headers = { "content-type": "application/json" };
    const token = localStorage.getItem("sluicegate.token");
    if (token) headers.authorization = "Bearer " + token;
    const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error(data.error || ("HTTP " + response.status));
    return data;
  }

  async function get(path) {
    const headers = {};
    const token = localStorage.getItem("sluicegate.token");
    if (token) headers.authorization = "Bearer " + token;
    const response = await fetch(path, { headers });
    return response.ok ? response.json() : {};
  }

  const fmt = (value) => (value === null || value === undefined ? "-" : Number(value).toFixed(3));

  function chart(kinds) {
    const bars = Object.entries(kinds).filter(([, s]) => s.leak_rate !== null);
    const left = 170, width = 320, row = 22;
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("width", String(left + width + 70));
    svg.setAttribute("height", String(row * bars.length + 10));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "Leak rate per label");
    bars.forEach(([label, score], i) => {
      const y = 4 + i * row;
      const add = (tag, attrs, text) => {
        const node = document.createElementNS(SVG, tag);
        for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
        if (text !== undefined) node.textContent = text;
        svg.append(node);
      };
      const bar = Math.max(1, score.leak_rate * width);
      const colour = score.leak_rate <= 0.02 ? "#2e7d32" : score.leak_rate <= 0.2 ? "#f9a825" : "#c62828";
      add("text", { x: left - 8, y: y + 14, "text-anchor": "end" }, label);
      add("rect", { x: left, y: y + 2, width: bar.toFixed(1), height: row - 6, fill: colour });
      add("text", { x: (left + bar + 6).toFixed(1), y: y + 14 }, (score.leak_rate * 100).toFixed(1) + " %");
    });
    return svg;
  }

  function reportView(data) {
    const report = data.report;
    const columns = ["label", "gold", "recall", "predicted", "precision", "F1", "leak rate", "over-redacted"];
    const rows = Object.entries(report.kinds).map(([label, s]) => [label, s.gold, fmt(s.recall), s.predicted,
      fmt(s.precision), fmt(s.f1), s.leak_rate === null ? "-" : `${fmt(s.leak_rate)} (${s.leaked}/${s.leak_checked})`,
      s.over_redacted_chars]);
    const lat = report.latency_ms, det = report.detector;
    const lines = [
      `${report.examples} texts, phase ${report.phase}, ${report.blocked} blocked`,
      `over-redaction: ${report.over_redaction.chars} of ${report.over_redaction.non_pii_chars} non-PII characters`,
      `latency per text: p50 ${fmt(lat.p50)} ms, p99 ${fmt(lat.p99)} ms`,
      `detector calls: ${det.calls}, tokens in/out ${det.input_tokens}/${det.output_tokens}, cost $${det.cost_usd.toFixed(4)}`,
    ];
    if (report.verdicts) {
      const v = report.verdicts;
      lines.push(`verdicts: accuracy ${fmt(v.accuracy)}; block→blocked ${v.true_block}, block→passed ${v.false_pass}, pass→blocked ${v.false_block}, pass→passed ${v.true_pass}`);
    }
    const parts = [
      el("h3", {}, "Leak rate per label"), chart(report.kinds),
      el("table", { class: "eval-scores" },
        el("thead", {}, el("tr", {}, columns.map((c) => el("th", {}, c)))),
        el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c)))))),
      el("ul", {}, lines.map((l) => el("li", {}, l))),
    ];
    if (data.html) {
      const url = URL.createObjectURL(new Blob([data.html], { type: "text/html" }));
      parts.push(el("a", { href: url, download: "sluicegate-eval.html" }, "Download the HTML report"));
    }
    return el("div", { id: "eval-report" }, parts);
  }

  async function evalView(view) {
    const agents = await get("/api/agents");
    const agent = el("select", { id: "eval-agent" }, Object.keys(agents).map((id) => el("option", { value: id }, id)));
    const phase = el("select", { id: "eval-phase" }, el("option", { value: "input" }, "input"), el("option", { value: "output" }, "output"));
    const processors = el("input", { id: "eval-processors", placeholder: "processor ids, comma-separated (optional)" });
    const file = el("input", { id: "eval-file", type: "file", accept: ".jsonl,.json,.txt" });
    const status = el("p", { id: "eval-status" });
    const out = el("div", {});
    const run = el("button", { id: "eval-run", type: "button", onclick: async () => {
      out.replaceChildren();
      if (!file.files.length) { status.textContent = "Choose a JSONL dataset first."; return; }
      status.textContent = "Running…";
      run.disabled = true;
      try {
        const ids = processors.value.split(",").map((s) => s.trim()).filter(Boolean);
        const data = await post("/api/eval", { dataset: await file.files[0].text(), agentId: agent.value || null,
          processors: ids, phase: phase.value, html: true });
        status.textContent = "";
        out.append(reportView(data));
      } catch (error) {
        status.textContent = error.message;
      } finally { run.disabled = false; }
    } }, "Run eval");
    view.replaceChildren(el("section", {},
      el("h2", {}, "Evaluate a processor chain"),
      el("p", {}, "Upload a JSONL dataset: one {\"text\", \"spans\": [{\"start\", \"end\", \"label\"}]} or {\"text\", \"expected\": \"pass\"|\"block\"} per line."),
      el("label", {}, "Agent ", agent), " ", el("label", {}, "Phase ", phase), " ", processors, " ", file, " ", run,
      status, out));
  }

  window.sluicegateEvalView = evalView;
})();
