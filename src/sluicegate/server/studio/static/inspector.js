// sluicegate studio: the run inspector. Clicking a timeline row opens, under it, what that span
// did: a processor's phase, outcome, duration, the chunks it dropped, the text it held back,
// its redactions by kind and (content captured) a before/after diff; a model call's prompt,
// answer, tokens and cost; a tool's arguments and result; the run span's Temporal workflow (a
// durable run). It reads the row's `detail`, built by
// the server (sluicegate.server.traces.inspect_row). Like studio.js it puts server data into the
// page as text nodes only, under the studio's Content-Security-Policy.
"use strict";

(function () {
  const WORDS = { pass: "passed", modified: "modified", held: "held", abort: "blocked", retry: "retry", error: "error" };
  const MAX_DIFF_TOKENS = 4000;

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function fact(name, value, cls) {
    return [el("dt", {}, name), el("dd", { class: cls || null }, value)];
  }

  function block(title, text, cls) {
    return el("div", { class: "inspector-block " + (cls || "") }, el("h4", {}, title), el("pre", {}, text));
  }

  function tokensOf(text) {
    return text.split(/(\s+)/).filter((t) => t !== "");
  }

  // A word diff (longest common subsequence): [{op: "same"|"del"|"ins", text}], or null when the
  // texts are too long to compare here.
  function diff(before, after) {
    const a = tokensOf(before), b = tokensOf(after);
    if (a.length * b.length > MAX_DIFF_TOKENS * MAX_DIFF_TOKENS / 4) return null;
    const rows = a.length + 1, cols = b.length + 1;
    const table = new Uint32Array(rows * cols);
    for (let i = a.length - 1; i >= 0; i--) {
      for (let j = b.length - 1; j >= 0; j--) {
        table[i * cols + j] = a[i] === b[j] ? table[(i + 1) * cols + j + 1] + 1
          : Math.max(table[(i + 1) * cols + j], table[i * cols + j + 1]);
      }
    }
    const out = [];
    const push = (op, text) => {
      const last = out[out.length - 1];
      if (last && last.op === op) last.text += text; else out.push({ op, text });
    };
    let i = 0, j = 0;
    while (i < a.length && j < b.length) {
      if (a[i] === b[j]) { push("same", a[i]); i++; j++; }
      else if (table[(i + 1) * cols + j] >= table[i * cols + j + 1]) { push("del", a[i]); i++; }
      else { push("ins", b[j]); j++; }
    }
    while (i < a.length) push("del", a[i++]);
    while (j < b.length) push("ins", b[j++]);
    return out;
  }

  function changeView(change) {
    const before = change.before || "", after = change.after || "";
    const parts = diff(before, after);
    const box = el("div", { class: "inspector-block change" }, el("h4", {}, "What it changed"));
    if (parts === null) {
      box.append(block("Before", before, "before"), block("After", after, "after"));
      return box;
    }
    box.append(el("pre", { class: "diff" }, parts.map((p) =>
      p.op === "same" ? document.createTextNode(p.text) : el(p.op, { class: p.op }, p.text))));
    return box;
  }

  function notCaptured(what) {
    return el("p", { class: "muted not-captured" }, what + " not captured: `sluicegate dev` records it "
      + "(or tracing.configure(capture_content=True, capture_changes=True)).");
  }

  function processorView(d) {
    const facts = [
      ...fact("Phase", d.phase),
      ...fact("Outcome", WORDS[d.outcome] || d.outcome, "outcome outcome-" + d.outcome),
      ...fact("Duration", d.hookMs === undefined ? d.durationMs.toFixed(2) + " ms"
        : Number(d.hookMs).toFixed(3) + " ms in the hook (span " + d.durationMs.toFixed(2) + " ms)", "duration"),
    ];
    if (d.step !== undefined) facts.push(...fact("Step", d.step));
    if (d.reason) facts.push(...fact("Reason", d.reason, "reason"));
    if (d.error) facts.push(...fact("Error", d.error, "error"));
    if (d.chunks) {
      facts.push(...fact("Chunks", d.chunks.seen + " seen · " + d.chunks.dropped + " dropped · "
        + d.chunks.modified + " replaced", "chunks"));
    }
    if (d.held) {
      facts.push(...fact("Held back", d.held.chars + " characters at most, for up to "
        + Number(d.held.ms || 0).toFixed(2) + " ms", "held"));
    }
    const out = [el("dl", {}, facts)];
    const kinds = Object.entries(d.redactions || {});
    if (kinds.length) {
      out.push(el("div", { class: "inspector-block" }, el("h4", {}, "Redactions"),
        el("table", { class: "redactions" }, el("tbody", {}, kinds.map(([kind, count]) =>
          el("tr", { "data-kind": kind }, el("td", {}, kind), el("td", {}, String(count))))))));
    }
    if (d.change) out.push(changeView(d.change));
    else if (d.outcome === "modified") out.push(notCaptured("What it changed was"));
    return out;
  }

  function money(value) {
    if (value === null || value === undefined) return "unpriced";
    return "$" + (value < 0.01 ? value.toPrecision(3) : value.toFixed(4));
  }

  function modelView(d) {
    const facts = [
      ...fact("Model", (d.provider ? d.provider + "/" : "") + (d.model || "")),
      ...fact("Tokens", "input " + (d.inputTokens ?? "?") + " · output " + (d.outputTokens ?? "?"), "tokens"),
      ...fact("Cost", d.replayed ? "replayed (no call)" : money(d.costUsd), "cost"),
      ...fact("Duration", d.durationMs.toFixed(2) + " ms"),
    ];
    if (d.finishReasons) facts.push(...fact("Finish", [].concat(d.finishReasons).join(", ")));
    if (d.error) facts.push(...fact("Error", d.error, "error"));
    const out = [el("dl", {}, facts)];
    if (d.prompt !== undefined) out.push(block("Prompt sent", d.prompt, "prompt"));
    if (d.answer !== undefined) out.push(block("Answer", d.answer, "answer"));
    if (d.prompt === undefined && d.answer === undefined) out.push(notCaptured("The prompt and answer were"));
    return out;
  }

  function toolView(d) {
    const facts = [...fact("Tool", d.tool), ...fact("Call", d.callId), ...fact("Duration", d.durationMs.toFixed(2) + " ms")];
    if (d.waiting) facts.push(...fact("Waiting", d.waiting));
    if (d.error) facts.push(...fact("Error", d.error, "error"));
    const out = [el("dl", {}, facts)];
    if (d.arguments !== undefined) out.push(block("Arguments", d.arguments, "arguments"));
    if (d.result !== undefined) out.push(block("Result", d.result, "result"));
    if (d.arguments === undefined && d.result === undefined) out.push(notCaptured("Arguments and result were"));
    return out;
  }

  function otherView(d) {
    const facts = [...fact("Duration", d.durationMs.toFixed(2) + " ms")];
    if (d.inputTokens !== undefined && d.inputTokens !== null) {
      facts.push(...fact("Tokens", "input " + d.inputTokens + " · output " + d.outputTokens, "tokens"));
    }
    if (d.steps !== undefined && d.steps !== null) facts.push(...fact("Steps", d.steps));
    if (d.finishReason) facts.push(...fact("Finish", d.finishReason));
    if (typeof d.workflowId === "string") facts.push(...fact("Temporal workflow", d.workflowId, "workflow-id"));
    if (d.error) facts.push(...fact("Error", d.error, "error"));
    return [el("dl", {}, facts)];
  }

  function panel(span) {
    const d = span.detail || { kind: span.kind, durationMs: span.durationMs };
    const title = span.decision ? span.decision.label : span.name;
    const body = d.kind === "processor" ? processorView(d) : d.kind === "model" ? modelView(d)
      : d.kind === "tool" ? toolView(d) : otherView(d);
    const attributes = Object.entries(span.attributes || {});
    return el("section", { class: "inspector", "data-span-id": span.spanId, "data-kind": d.kind, role: "region",
      "aria-label": "Inspector: " + title },
    el("h3", {}, title), ...body,
    el("details", {}, el("summary", {}, "All attributes (" + attributes.length + ")"),
      el("table", { class: "attributes" }, el("tbody", {}, attributes.map(([k, v]) =>
        el("tr", {}, el("td", {}, k), el("td", {}, typeof v === "string" ? v : JSON.stringify(v))))))));
  }

  // Opens the inspector under `row` for `span`, or closes it when it is open there.
  function toggle(row, span) {
    const next = row.nextElementSibling;
    const open = next && next.classList.contains("inspector") && next.dataset.spanId === span.spanId;
    for (const other of row.parentElement.querySelectorAll(".inspector")) other.remove();
    for (const other of row.parentElement.querySelectorAll(".span-row[aria-expanded='true']")) {
      other.setAttribute("aria-expanded", "false");
    }
    if (open) return;
    row.after(panel(span));
    row.setAttribute("aria-expanded", "true");
  }

  // Makes a timeline row open the inspector (click, Enter or Space).
  function attach(row, span) {
    row.setAttribute("tabindex", "0");
    row.setAttribute("role", "button");
    row.setAttribute("aria-expanded", "false");
    row.addEventListener("click", () => toggle(row, span));
    row.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); toggle(row, span); }
    });
    return row;
  }

  window.sluicegateInspector = { attach, toggle, diff };
})();
