// sluicegate studio, eval page (#/eval): run `sluicegate eval` on an uploaded JSONL dataset
// through POST /api/eval, built with core.js's helpers (server data as text nodes only). The
// router gives `window.sluicegateEvalView(view)` its nav entry and route.
"use strict";

(function () {
  const { h: el, svg: svgEl, api } = Studio;

  const fmt = (value) => (value === null || value === undefined ? "-" : Number(value).toFixed(3));

  function chart(kinds) {
    const bars = Object.entries(kinds).filter(([, s]) => s.leak_rate !== null);
    const left = 170, width = 320, row = 22;
    const svg = svgEl("svg", { width: left + width + 70, height: row * bars.length + 10, role: "img", "aria-label": "Leak rate per label" });
    bars.forEach(([label, score], i) => {
      const y = 4 + i * row;
      const bar = Math.max(1, score.leak_rate * width);
      const colour = score.leak_rate <= 0.02 ? "#2e7d32" : score.leak_rate <= 0.2 ? "#f9a825" : "#c62828";
      svg.append(
        svgEl("text", { x: left - 8, y: y + 14, "text-anchor": "end" }, label),
        svgEl("rect", { x: left, y: y + 2, width: bar.toFixed(1), height: row - 6, fill: colour }),
        svgEl("text", { x: (left + bar + 6).toFixed(1), y: y + 14 }, (score.leak_rate * 100).toFixed(1) + " %"));
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
    const agents = await api("/api/agents");
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
        const data = await api("/api/eval", { method: "POST", body: JSON.stringify({ dataset: await file.files[0].text(),
          agentId: agent.value || null, processors: ids, phase: phase.value, html: true }) });
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
