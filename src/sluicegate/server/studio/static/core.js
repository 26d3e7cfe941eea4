// sluicegate studio: a small client of the server's /api routes. No framework, no build step.
// Every piece of server data goes into the page as text nodes (never as HTML). The page runs
// under a strict Content-Security-Policy: no inline script or style attribute (styles are set
// through el.style), no HTML strings (Trusted Types), fetches to this origin only.
//
// This file holds what every view shares, and the router. Each view is a script of its own that
// calls `Studio.registerView(name, label, render)`: that adds its link to the nav and its route
// (`#/<name>/<arg>`). A view file loaded after this one needs nothing else.
"use strict";

const Studio = (() => {
  const view = document.getElementById("view");
  const nav = document.getElementById("nav");
  const views = new Map();

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
      else if (key === "style") Object.assign(el.style, value);
      else if (value !== undefined && value !== null && value !== false) el.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  // An SVG element: presentation attributes only (a `style` attribute would be refused).
  function svg(tag, attrs, ...children) {
    const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, String(value));
    for (const child of children.flat()) {
      if (child === null || child === undefined || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  function token() { return localStorage.getItem("sluicegate.token") || ""; }

  function headers(extra) {
    const out = Object.assign({ "content-type": "application/json" }, extra || {});
    if (token()) out.authorization = "Bearer " + token();
    return out;
  }

  function askToken() {
    const value = prompt("Bearer token (SLUICEGATE_API_TOKEN)", token());
    if (value !== null) { localStorage.setItem("sluicegate.token", value.trim()); route(); }
  }

  // The JSON of an /api route; a refusal is an Error with the server's message (which names the
  // field at fault) and its HTTP status.
  async function api(path, options) {
    const response = await fetch(path, Object.assign({ headers: headers() }, options || {}));
    if (response.status === 401) { askToken(); throw new Error("this server needs a bearer token"); }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const error = new Error(body.error || ("HTTP " + response.status));
      error.status = response.status;
      throw error;
    }
    return body;
  }

  function message(error) { return String((error && error.message) || error); }

  function fail(error) { view.replaceChildren(h("p", { class: "error" }, message(error))); }

  function chips(items, cls) {
    return items.length ? items.map((item) => h("span", { class: "chip " + (cls || "") }, item)) : [h("span", { class: "muted" }, "none")];
  }

  function pretty(value) {
    if (value === undefined) return "";
    try { return JSON.stringify(value, null, 2); } catch (error) { return String(value); }
  }

  // Mastra ships JSON schemas superjson-encoded in a string (`{"json": schema}`).
  function schemaOf(encoded) {
    if (!encoded) return null;
    if (typeof encoded !== "string") return encoded;
    try { const parsed = JSON.parse(encoded); return parsed && parsed.json !== undefined ? parsed.json : parsed; } catch (error) { return null; }
  }

  async function* sse(response) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      const records = buffer.split("\n\n");
      buffer = records.pop();
      for (const record of records) {
        if (!record.startsWith("data: ")) continue;
        const data = record.slice(6);
        if (data === "[DONE]") return;
        yield JSON.parse(data);
      }
    }
  }

  // A view: `render(arg)` fills `view`. `also` lists other route names whose pages belong to
  // this nav entry (a chat is reached from Agents).
  function registerView(name, label, render, options) {
    views.set(name, { render, also: (options && options.also) || [] });
    if (label && !nav.querySelector(`a[data-view="${name}"]`)) {
      nav.insertBefore(h("a", { href: "#/" + name, "data-view": name }, label), nav.querySelector("[data-static]"));
    }
  }

  function routeFor(name) {
    for (const [key, entry] of views) if (entry.also.includes(name)) return { owner: key, render: views.get(name) && views.get(name).render };
    return { owner: name, render: views.get(name) && views.get(name).render };
  }

  let current = 0;
  async function route() {
    const [name, ...rest] = (location.hash.replace(/^#\//, "") || "agents").split("/");
    const arg = rest.length ? decodeURIComponent(rest.join("/")) : undefined;
    const target = views.has(name) ? name : "agents";
    const { owner } = routeFor(target);
    for (const link of nav.querySelectorAll("a[data-view]")) link.classList.toggle("active", link.dataset.view === owner);
    const mine = ++current;
    view.setAttribute("aria-busy", "true");
    try {
      await views.get(target).render(arg);
    } catch (error) {
      if (mine === current) fail(error);
    } finally {
      if (mine === current) view.setAttribute("aria-busy", "false");
    }
  }

  function start() {
    // The eval page's script renders through `window.sluicegateEvalView(view)`.
    if (typeof window.sluicegateEvalView === "function" && !views.has("eval")) {
      registerView("eval", "Eval", () => window.sluicegateEvalView(view));
    }
    document.getElementById("token-button").addEventListener("click", askToken);
    window.addEventListener("hashchange", route);
    route();
  }
  document.addEventListener("DOMContentLoaded", start);

  return { view, h, svg, api, headers, askToken, message, fail, chips, pretty, schemaOf, sse, registerView, route };
})();
