// A processor workflow drawn as its graph (inline SVG): one row per stage from input to output;
// a parallel stage's steps side by side (all run, then join), a branch's steps in the order
// their conditions are tried (the first that holds runs; none: the data passes unchanged).
"use strict";

const WorkflowGraph = (() => {
  const { svg } = Studio;
  const BOX_W = 168, BOX_H = 38, GAP_X = 18, ROW_H = 78, PAD = 12, LABEL_W = 64;

  function rows(stepGraph) {
    const out = [[{ label: "input", kind: "io" }]];
    for (const [index, stage] of stepGraph.entries()) {
      let nodes;
      if (stage.type === "map") nodes = [{ label: "map", sub: "reshapes the data", kind: "map" }];
      else nodes = stage.steps.map((step, i) => ({
        label: step.id, kind: step.kind,
        sub: stage.type === "branch" ? "when condition " + (i + 1) + " holds" : step.kind === "function" ? "function step" : step.processorId !== step.id ? step.processorId : "processor",
      }));
      if (stage.type === "branch") nodes.push({ label: "no condition holds", sub: "data unchanged", kind: "pass" });
      out.push(nodes.map((n) => Object.assign(n, { stage: stage.type, index })));
    }
    out.push([{ label: "output", kind: "io" }]);
    return out;
  }

  function draw(stepGraph, id) {
    const layout = rows(stepGraph);
    const widest = Math.max(...layout.map((r) => r.length));
    const width = LABEL_W + widest * BOX_W + (widest - 1) * GAP_X + 2 * PAD;
    const height = layout.length * ROW_H - (ROW_H - BOX_H) + 2 * PAD;
    const root = svg("svg", { class: "workflow-graph", viewBox: "0 0 " + width + " " + height, width, height, role: "img",
      "aria-label": "workflow " + id + ": " + stepGraph.map((s) => s.type).join(", ") });
    const centres = layout.map((row, r) => {
      const span = row.length * BOX_W + (row.length - 1) * GAP_X;
      const left = LABEL_W + PAD + (widest * BOX_W + (widest - 1) * GAP_X - span) / 2;
      return row.map((_, i) => ({ x: left + i * (BOX_W + GAP_X) + BOX_W / 2, y: PAD + r * ROW_H }));
    });
    const edges = svg("g", { class: "wf-edges" });
    for (let r = 0; r + 1 < layout.length; r++) {
      for (const from of centres[r]) for (const to of centres[r + 1]) {
        const y1 = from.y + BOX_H, y2 = to.y, mid = (y1 + y2) / 2;
        edges.append(svg("path", { class: "wf-edge", d: `M${from.x},${y1} C${from.x},${mid} ${to.x},${mid} ${to.x},${y2}` }));
      }
    }
    root.append(edges);
    layout.forEach((row, r) => {
      const stage = row[0].stage;
      if (stage) root.append(svg("text", { class: "wf-stage", x: PAD, y: centres[r][0].y + BOX_H / 2 + 4 }, stage));
      row.forEach((node, i) => {
        const { x, y } = centres[r][i];
        const group = svg("g", { class: "wf-node kind-" + node.kind, "data-step": node.label, "data-stage-type": node.stage || "io" },
          svg("rect", { x: x - BOX_W / 2, y, width: BOX_W, height: BOX_H, rx: node.kind === "io" ? BOX_H / 2 : 6 }),
          svg("text", { class: "wf-label", x, y: y + (node.sub ? 16 : 24), "text-anchor": "middle" }, clip(node.label)),
          node.sub ? svg("text", { class: "wf-sub", x, y: y + 30, "text-anchor": "middle" }, clip(node.sub)) : null,
          svg("title", {}, node.label + (node.sub ? " — " + node.sub : "")));
        root.append(group);
      });
    });
    return root;
  }

  function clip(text) { return text.length > 24 ? text.slice(0, 23) + "…" : text; }

  return { draw };
})();
