// Runs and their timelines: one row per span, processor decisions labelled with their outcome.
// Clicking a row opens the run inspector (`window.openInspector(traceId, spanId)`) when one is
// loaded; without it the rows are plain. A durable run (a Temporal workflow) is marked in the
// list, and its page names the workflow: a link to Temporal's Web UI when the server knows it
// (`SLUICEGATE_TEMPORAL_UI`; the server builds the URL from its settings, never from span data),
// else the `temporal workflow show` command to copy.
"use strict";

const Runs = (() => {
  const { h, api, message, view, registerView } = Studio;
  const OUTCOME_LABEL = { pass: "passed", modified: "modified", abort: "blocked", retry: "retry", error: "error", held: "held", refused: "refused the call" };

  function inspect(traceId, spanId) {
    if (typeof window.openInspector === "function") window.openInspector(traceId, spanId);
  }

  function timelineRows(traceId, trace) {
    const total = Math.max(trace.durationMs, 0.001);
    return trace.spans.map((span) => {
      const decision = span.decision;
      const outcome = decision ? decision.outcome : span.status;
      const label = decision
        ? [decision.processorId, decision.phase, OUTCOME_LABEL[decision.outcome] || decision.outcome].join(" · ")
        : span.name;
      const bar = h("div", { class: "bar " + (decision ? "outcome-" + decision.outcome : "kind-" + span.kind),
        style: { left: (100 * span.startMs / total).toFixed(2) + "%", width: Math.max(0.5, 100 * span.durationMs / total).toFixed(2) + "%" } });
      const row = h("div", { class: "span-row", "data-outcome": outcome, "data-processor": decision ? decision.processorId : null,
        "data-span-id": span.spanId, "data-kind": span.kind, tabindex: "0",
        onclick: () => inspect(traceId, span.spanId),
        onkeydown: (event) => { if (event.key === "Enter") inspect(traceId, span.spanId); } },
      h("div", { class: "span-label" }, label, h("span", { class: "muted" }, " " + span.durationMs.toFixed(2) + " ms"),
        decision && decision.reason ? h("div", { class: "reason" }, "reason: " + decision.reason + (decision.retry ? " (retry)" : "")) : null),
      h("div", { class: "span-track" }, bar));
      return window.sluicegateInspector ? window.sluicegateInspector.attach(row, span) : row;
    });
  }

  const WEB_URL = /^https?:\/\/[^\s"'<>]+$/i;

  function durableView(durable) {
    if (!durable || typeof durable.workflowId !== "string") return null;
    const url = typeof durable.url === "string" && WEB_URL.test(durable.url) ? durable.url : null;
    const where = url
      ? h("a", { class: "workflow-link", href: url, target: "_blank", rel: "noopener noreferrer" }, "open in Temporal")
      : h("code", { class: "workflow-command", title: "the Temporal CLI shows this workflow" }, String(durable.command || ""));
    return h("p", { class: "durable-run", "data-workflow-id": durable.workflowId },
      "Temporal workflow ", h("code", { class: "workflow-id" }, durable.workflowId), " · ", where);
  }

  async function showTimeline(box, traceId) {
    try {
      const trace = await api("/api/studio/traces/" + encodeURIComponent(traceId));
      const decisions = trace.processors;
      const summary = decisions.length
        ? decisions.map((d) => d.label || d.processorId + (d.phase ? " · " + d.phase : "") + ": " + (OUTCOME_LABEL[d.outcome] || d.outcome)).join(", ")
        : "no processor spans recorded for this run";
      // `durableView` is null for a run that is not durable: replaceChildren would print "null"
      const parts = (trace.sameRun || []).length
        ? h("p", { class: "same-run" }, "The same run, before or after a decision: ",
          ...trace.sameRun.map((id) => h("a", { href: "#/runs/" + id, class: "same-run-link", "data-trace-id": id }, id.slice(0, 8) + " ")))
        : null;
      box.replaceChildren(...[h("p", { class: "muted" }, "trace " + traceId + " · " + trace.durationMs.toFixed(1) + " ms"),
        durableView(trace.durable), parts, h("p", { class: "summary" }, summary), ...timelineRows(traceId, trace)].filter((n) => n !== null));
    } catch (error) {
      box.replaceChildren(h("p", { class: "error" }, message(error)));
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
    const rows = traces.map((t) => h("tr", { "data-run-id": t.runId || null },
      h("td", {}, h("a", { href: "#/runs/" + t.traceId }, t.name),
        t.durable ? h("span", { class: "badge durable", title: "Temporal workflow " + t.durable.workflowId }, " durable") : null,
        (t.continuations || []).map((c, i) => h("a", { href: "#/runs/" + c.traceId, class: "badge resumed", "data-trace-id": c.traceId,
          title: "resumed after a decision" }, " resumed" + (t.continuations.length > 1 ? " " + (i + 1) : "")))),
      h("td", {}, t.agentId || ""),
      h("td", {}, new Date(t.startTime * 1000).toLocaleTimeString()),
      h("td", {}, t.durationMs.toFixed(1) + " ms"),
      h("td", {}, Object.entries(t.outcomes).map(([k, v]) => (OUTCOME_LABEL[k] || k) + " " + v).join(", "))));
    view.replaceChildren(h("h1", {}, "Recent runs"),
      traces.length ? h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, ["Run", "Agent", "Started", "Duration", "Processor decisions"].map((c) => h("th", {}, c)))), h("tbody", {}, rows)))
        : h("p", { class: "muted" }, "No runs yet."));
  }

  registerView("runs", "Runs", runsView);
  return { showTimeline, durableView, OUTCOME_LABEL };
})();
