// The tether inspector: a session list and a live session page, and the workflow runs with a run
// page to act on them, over the /v1 API.
// Plain script, no build step. The API key (when the server has keys) lives in sessionStorage.
"use strict";

const ROOT = location.pathname.slice(0, location.pathname.indexOf("/inspect"));
const KEY_STORE = "tether.inspector.key";
const OPERATOR_STORE = "tether.inspector.operator";
const $ = (sel, root = document) => root.querySelector(sel);

// ------------------------------------------------------------------------------------------ API

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  const key = sessionStorage.getItem(KEY_STORE);
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

async function failure(response) {
  let body = {};
  try { body = await response.json(); } catch { /* not JSON */ }
  if (response.status === 401) askForKey(body.message || "this server needs an API key");
  return new ApiError(response.status, body.code || `http-${response.status}`, body.message || response.statusText);
}

async function api(path, { method = "GET", body } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(ROOT + path, init);
  if (response.status === 204) return null;
  if (!response.ok && !(response.headers.get("content-type") || "").includes("json")) throw await failure(response);
  const data = await response.json();
  if (!response.ok && !("success" in data && "session" in data)) {
    if (response.status === 401) askForKey(data.message);
    throw new ApiError(response.status, data.code, data.message);
  }
  return data;
}

// Reads a server-sent event stream from a fetch response: calls onFrame({event, id, data}) per frame.
async function readFrames(response, onFrame) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const frame = { event: "message", id: null, data: "" };
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const at = line.indexOf(":");
        const field = at < 0 ? line : line.slice(0, at);
        const text = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
        if (field === "data") frame.data += (frame.data ? "\n" : "") + text;
        else if (field === "event") frame.event = text;
        else if (field === "id") frame.id = text;
      }
      if (frame.data) onFrame({ ...frame, data: JSON.parse(frame.data) });
    }
  }
}

// ------------------------------------------------------------------------------------------ page chrome

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function showError(error) {
  const banner = $("#banner");
  banner.textContent = error.code ? `${error.code}: ${error.message}` : String(error.message || error);
  banner.hidden = false;
}

function clearError() { $("#banner").hidden = true; }

function askForKey(reason) {
  const form = $("#key-form");
  form.hidden = false;
  showError({ code: "unauthenticated", message: reason || "an API key is required" });
  $("#key-input").focus();
}

function setupKeyForm() {
  const form = $("#key-form");
  const forget = $("#key-forget");
  forget.hidden = !sessionStorage.getItem(KEY_STORE);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_STORE, $("#key-input").value.trim());
    location.reload();
  });
  forget.addEventListener("click", () => {
    sessionStorage.removeItem(KEY_STORE);
    location.reload();
  });
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return isNaN(date) ? iso : date.toLocaleString(undefined, { dateStyle: "short", timeStyle: "medium" });
}

function badge(status) { return el("span", { class: `badge ${status}` }, status.replace("_", " ")); }

function short(value, limit = 140) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > limit ? text.slice(0, limit - 1) + "…" : text;
}

function sessionHref(agent, id) {
  return `${ROOT}/inspect/${encodeURIComponent(agent)}/${encodeURIComponent(id)}`;
}

// ------------------------------------------------------------------------------------------ session list

async function listView() {
  $("#view").append($("#list-view").content.cloneNode(true));
  const { agents } = await api("/inspect/api/agents");
  const filters = $("#filters");
  const form = $("#new-session");
  filters.agent.append(el("option", { value: "" }, "all agents"));
  for (const agent of agents) {
    filters.agent.append(el("option", { value: agent.id }, agent.name || agent.id));
    form.agent.append(el("option", { value: agent.id }, agent.name || agent.id));
  }
  const params = new URLSearchParams(location.search);
  filters.agent.value = params.get("agent") || "";
  filters.status.value = params.get("status") || "";

  const fillFlows = () => {
    const agent = agents.find((a) => a.id === form.agent.value);
    form.flow.replaceChildren(el("option", { value: "" }, "none: wait for a message"),
      ...(agent ? agent.flows.map((f) => el("option", { value: f.id }, f.id)) : []));
  };
  form.agent.addEventListener("change", fillFlows);
  fillFlows();

  const loadHandoffs = async () => {
    let page;
    try { page = await api("/v1/handoffs"); } catch (error) {
      if (error instanceof ApiError && error.status === 403) { $("#handoffs-card").hidden = true; return; }
      throw error;
    }
    $("#handoffs-card").hidden = false;
    $("#handoffs tbody").replaceChildren(...page.sessions.map((h) => el("tr", { "data-session": h.session },
      el("td", {}, el("a", { href: sessionHref(h.agent, h.session) }, el("code", {}, h.session))),
      el("td", {}, h.agent), el("td", {}, when(h.since)), el("td", {}, h.reason || ""),
      el("td", {}, h.last_customer_message ? short(h.last_customer_message, 80) : ""))));
    $("#no-handoffs").hidden = page.sessions.length > 0;
  };

  const load = async () => {
    await loadHandoffs();
    const chosen = filters.agent.value ? agents.filter((a) => a.id === filters.agent.value) : agents;
    const query = filters.status.value ? `?status=${encodeURIComponent(filters.status.value)}` : "";
    const pages = await Promise.all(chosen.map((a) => api(`/v1/agents/${encodeURIComponent(a.id)}/sessions${query}`)));
    const rows = pages.flatMap((page) => page.sessions)
      .sort((a, b) => (b.saved_at || "").localeCompare(a.saved_at || ""));
    $("#sessions tbody").replaceChildren(...rows.map((s) => el("tr", {},
      el("td", {}, el("a", { href: sessionHref(s.agent, s.id) }, el("code", {}, s.id))),
      el("td", {}, s.agent), el("td", {}, badge(s.status)), el("td", {}, s.revision),
      el("td", {}, when(s.created_at)), el("td", {}, when(s.saved_at)))));
    $("#no-sessions").hidden = rows.length > 0;
  };
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    if (filters.agent.value) query.set("agent", filters.agent.value);
    if (filters.status.value) query.set("status", filters.status.value);
    history.replaceState(null, "", `${ROOT}/inspect/${query.size ? "?" + query : ""}`);
    load().catch(showError);
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    try {
      const body = {};
      if (form.flow.value) body.flow = form.flow.value;
      if (form.input.value.trim()) body.input = parseJson(form.input.value, "flow input");
      const created = await api(`/v1/agents/${encodeURIComponent(form.agent.value)}/sessions`,
        { method: "POST", body });
      location.href = sessionHref(form.agent.value, created.session);
    } catch (error) { showError(error); }
  });
  await load();
  setInterval(() => { if (!document.hidden) load().catch(() => {}); }, 5000);
}

function parseJson(text, what) {
  try { return JSON.parse(text); } catch (error) {
    throw new ApiError(0, "invalid-json", `${what}: ${error.message}`);
  }
}

// ------------------------------------------------------------------------------------------ session page

class SessionPage {
  constructor(agent, id) {
    this.agent = agent;
    this.id = id;
    this.graphs = new Map();   // flow id -> graph
    this.events = [];
    this.lastEvent = 0;
    this.messages = [];
    this.shownFlow = null;     // the flow tab the user picked (null: follow the live run)
    this.sending = false;
    this.refreshing = null;
  }

  get path() { return `/v1/agents/${encodeURIComponent(this.agent)}/sessions/${encodeURIComponent(this.id)}`; }

  async start() {
    $("#view").append($("#session-view").content.cloneNode(true));
    $("#s-agent").textContent = this.agent;
    $("#s-id").textContent = this.id;
    $("#crumbs").replaceChildren(el("a", { href: `${ROOT}/inspect/` }, "sessions"), " / ", this.agent);
    const { agents } = await api("/inspect/api/agents");
    const agent = agents.find((a) => a.id === this.agent);
    for (const flow of agent ? agent.flows : []) this.graphs.set(flow.id, flow);
    $("#s-release").addEventListener("click", () => this.release());
    const name = $("#operator-name");
    name.value = sessionStorage.getItem(OPERATOR_STORE) || "";
    const label = () => { $("#operator-send").textContent = `Reply as ${name.value.trim() || "…"}`; };
    name.addEventListener("input", () => { sessionStorage.setItem(OPERATOR_STORE, name.value.trim()); label(); });
    label();
    $("#operator-form").addEventListener("submit", (event) => { event.preventDefault(); this.reply(); });
    $("#chat-form").addEventListener("submit", (event) => { event.preventDefault(); this.send(); });
    $("#chat-input").addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); this.send(); }
    });
    await this.refresh();
    this.watch();
  }

  // Loads the session state, the whole transcript and the events after the last one seen.
  async refresh() {
    if (this.refreshing) { this.again = true; return this.refreshing; }
    this.refreshing = (async () => {
      do {
        this.again = false;
        const [state, messages] = await Promise.all([api(this.path), this.transcript()]);
        await this.moreEvents();
        this.render(state, messages);
      } while (this.again);
    })().finally(() => { this.refreshing = null; });
    return this.refreshing;
  }

  // The transcript is append-only: read only the messages after the last one held.
  async transcript() {
    for (;;) {
      const last = this.messages.length ? this.messages[this.messages.length - 1].seq : 0;
      const page = await api(`${this.path}/transcript?after=${last}&limit=1000`);
      this.messages.push(...page.messages.filter((m) => m.seq > last));
      if (page.next === null) return this.messages;
    }
  }

  async moreEvents() {
    for (;;) {
      const page = await api(`${this.path}/events?after=${this.lastEvent}&limit=1000`);
      this.addEvents(page.events);
      if (page.next === null) return;
    }
  }

  addEvents(events) {
    for (const event of events) {
      if (event.seq <= this.lastEvent) continue;
      this.events.push(event);
      this.lastEvent = event.seq;
    }
  }

  // Follows the session: the session event stream when the server has it, else polling the events.
  async watch() {
    const live = $("#s-live");
    for (;;) {
      try {
        const response = await fetch(`${ROOT}${this.path}/stream?after=${this.lastEvent}`,
          { headers: headers({ Accept: "text/event-stream" }) });
        if (response.status === 404 || response.status === 405) return this.poll();
        if (!response.ok) throw await failure(response);
        live.classList.add("on");
        await readFrames(response, (frame) => {
          if (frame.id === null) return;
          const seq = Number(frame.id);
          if (seq > this.lastEvent) this.soon();
        });
      } catch (error) {
        if (error instanceof ApiError && (error.status === 401 || error.status === 403)) return;
      }
      live.classList.remove("on");
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  async poll() {
    const live = $("#s-live");
    live.classList.add("on", "polling");
    live.title = "live updates (polling)";
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if (document.hidden || this.sending) continue;
      try {
        const page = await api(`${this.path}/events?after=${this.lastEvent}&limit=1`);
        if (page.events.length) await this.refresh();
      } catch { /* the next poll retries */ }
    }
  }

  soon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh().catch(showError), 100);
  }

  async send() {
    const input = $("#chat-input");
    const text = input.value.trim();
    if (!text || this.sending) return;
    clearError();
    this.sending = true;
    $("#chat-send").disabled = true;
    input.value = "";
    const list = $("#transcript");
    list.append(el("li", { class: "msg user pending" }, el("div", { class: "bubble" }, text)));
    const bubble = el("div", { class: "bubble" });
    const streaming = el("li", { class: "msg assistant streaming" }, bubble);
    list.append(streaming);
    list.scrollTop = list.scrollHeight;
    try {
      const response = await fetch(`${ROOT}${this.path}/messages`, {
        method: "POST",
        headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream",
                           "Idempotency-Key": crypto.randomUUID() }),
        body: JSON.stringify({ text }),
      });
      if (!response.ok) throw await failure(response);
      let envelope = null;
      await readFrames(response, (frame) => {
        if (frame.event === "delta") {
          bubble.textContent += frame.data.text;
          list.scrollTop = list.scrollHeight;
        } else if (frame.event === "envelope") {
          envelope = frame.data;
        }
      });
      if (envelope && !envelope.success) showError({ code: envelope.code, message: envelope.message });
      if (envelope && envelope.session && envelope.session !== this.id) {
        location.href = sessionHref(this.agent, envelope.session);
        return;
      }
    } catch (error) {
      showError(error);
    } finally {
      this.sending = false;
      $("#chat-send").disabled = false;
    }
    await this.refresh().catch(showError);
  }

  async decide(approval, decision, feedback) {
    clearError();
    try {
      const result = await api(`${this.path}/approvals/${encodeURIComponent(approval)}`, {
        method: "POST", body: { decision, feedback: feedback || null, decided_by: "inspector" },
      });
      if (result && result.success === false) showError(result);
    } catch (error) { showError(error); }
    await this.refresh().catch(showError);
  }

  async release() {
    clearError();
    const by = $("#operator-name").value.trim() || null;
    try { await api(`${this.path}/release`, { method: "POST", body: { by } }); } catch (error) { showError(error); }
    await this.refresh().catch(showError);
  }

  // A person answers the customer of a handed-off session.
  async reply() {
    const input = $("#operator-input");
    const by = $("#operator-name").value.trim();
    const text = input.value.trim();
    if (!text || !by) return;
    clearError();
    $("#operator-send").disabled = true;
    try {
      await api(`${this.path}/operator-messages`, { method: "POST", body: { text, by } });
      input.value = "";
    } catch (error) { showError(error); } finally { $("#operator-send").disabled = false; }
    await this.refresh().catch(showError);
  }

  async deliver(wait, payload) {
    clearError();
    try {
      const result = wait.kind === "signal"
        ? await api(`${this.path}/signals/${encodeURIComponent(wait.event)}`, { method: "POST", body: { payload } })
        : await api(`${this.path}/events`, { method: "POST", body: { name: wait.event, payload } });
      if (result && result.success === false) showError(result);
    } catch (error) { showError(error); }
    await this.refresh().catch(showError);
  }

  render(state, messages) {
    const status = $("#s-status");
    status.replaceWith(Object.assign(badge(state.status), { id: "s-status" }));
    $("#s-revision").textContent = state.revision;
    $("#s-release").hidden = state.status !== "handed_off";
    $("#operator-form").hidden = state.status !== "handed_off";
    this.renderTranscript(messages);
    this.renderGraph(state.runs);
    this.renderRuns(state.runs);
    this.renderApprovals(state.pending_approvals);
    this.renderInputs(state.waiting);
    this.renderFields(state.data);
    this.renderUsage(state.usage || {}, state.cost || null);
    this.renderLog(state);
    this.renderEvents();
    const closed = state.status === "completed" || state.status === "aborted";
    $("#chat-input").disabled = closed;
    $("#chat-input").placeholder = closed ? `This session is ${state.status}.` : "Type a message…";
  }

  renderTranscript(messages) {
    const list = $("#transcript");
    if (this.sending) return;   // the message being sent is shown as it streams
    list.replaceChildren(...messages.map((m) => el("li", { class: `msg ${m.role} ${m.kind}`, "data-seq": m.seq },
      el("div", { class: "bubble" }, m.text),
      el("div", { class: "meta" }, [m.by ? `${m.by} (a person)` : null,
        m.kind !== "user" && m.kind !== "ai" && m.kind !== "agent" ? m.kind : null, m.node_id, when(m.at)]
        .filter(Boolean).join(" · ")))));
    if (!messages.length) list.append(el("li", { class: "empty" }, "No messages yet. Say something below."));
    list.scrollTop = list.scrollHeight;
  }

  renderGraph(runs) {
    const live = runs.filter((run) => run.node);
    const flows = [...this.graphs.keys()];
    // follow the run that moves: the last one not suspended under another
    const active = live.filter((run) => run.status !== "suspended").pop() || live[live.length - 1];
    const auto = active ? active.flow : flows[0];
    const shown = this.shownFlow && this.graphs.has(this.shownFlow) ? this.shownFlow : auto;
    const open = (id) => {
      if (!this.graphs.has(id)) return;
      this.shownFlow = id === auto ? null : id;
      this.renderGraph(runs);
    };
    $("#flow-tabs").replaceChildren(...flows.map((id) => el("button", {
      type: "button", class: `tab${id === shown ? " active" : ""}${live.some((r) => r.flow === id) ? " has-run" : ""}`,
      "data-flow": id,
      onclick: () => open(id),
    }, id)));
    const graph = this.graphs.get(shown);
    $("#graph").replaceChildren(graph ? drawFlow(graph, runs.filter((run) => run.flow === shown), open)
      : el("p", { class: "empty" }, "This agent has no flows."));
  }

  renderRuns(runs) {
    $("#runs tbody").replaceChildren(...runs.map((run) => el("tr", { "data-run": run.id },
      el("td", {}, run.flow), el("td", {}, el("code", {}, run.node || "–")), el("td", {}, badge(run.status)),
      el("td", {}, run.waiting ? `${run.waiting.kind}${run.waiting.event ? " " + run.waiting.event : ""}`
        + (run.waiting.until ? ` until ${when(run.waiting.until)}` : "") : ""),
      el("td", {}, when(run.started_at)),
      el("td", {}, Object.keys(run.state || {}).length
        ? el("details", {}, el("summary", {}, short(run.state, 40)), el("pre", {}, JSON.stringify(run.state, null, 2)))
        : ""))));
    $("#no-runs").hidden = runs.length > 0;
  }

  renderApprovals(approvals) {
    $("#approvals-card").classList.toggle("quiet", !approvals.length);
    $("#approvals").replaceChildren(...(approvals.length ? approvals.map((a) => {
      const request = a.request || {};
      const feedback = el("textarea", { rows: 2, placeholder: "Feedback (optional)", name: "feedback" });
      return el("div", { class: "approval", "data-approval": a.approval_id },
        el("p", { class: "summary" }, request.summary || a.name || "approval"),
        request.payload !== undefined && request.payload !== null
          ? el("pre", { class: "payload" }, JSON.stringify(request.payload, null, 2)) : null,
        el("p", { class: "approval-id", title: a.approval_id }, `${a.name || "approval"} · ${a.approval_id}`),
        feedback,
        el("div", { class: "buttons" },
          el("button", { type: "button", class: "approve", onclick: () => this.decide(a.approval_id, "approved", feedback.value) }, "Approve"),
          el("button", { type: "button", class: "reject", onclick: () => this.decide(a.approval_id, "rejected", feedback.value) }, "Reject")));
    }) : [el("p", { class: "empty" }, "Nothing waits on a decision.")]));
  }

  renderInputs(waiting) {
    const open = waiting.filter((w) => (w.kind === "signal" || w.kind === "event") && w.event);
    // a form still waited on is kept as it is: a live refresh must not undo what the user is typing
    const kept = new Map([...$("#inputs").querySelectorAll(".input-form")].map((form) => [form.dataset.wait, form]));
    $("#inputs-card").classList.toggle("quiet", !open.length);
    $("#inputs").replaceChildren(...(open.length
      ? open.map((w) => kept.get(w.key) || inputForm(w, (payload) => this.deliver(w, payload)))
      : [el("p", { class: "empty" }, "No run waits on a signal or an event.")]));
  }

  renderFields(data) {
    const entries = Object.entries(data || {});
    $("#fields").replaceChildren(...(entries.length ? entries.flatMap(([name, value]) =>
      [el("dt", {}, name), el("dd", {}, typeof value === "string" ? value : JSON.stringify(value))])
      : [el("p", { class: "empty" }, "No fields yet.")]));
  }

  renderUsage(usage, cost) {
    const count = (name) => Number(usage[name] || 0);
    const tokens = count("prompt_tokens") + count("completion_tokens");
    const dollars = cost && cost.estimated_cost ? ` · ~$${cost.estimated_cost.toFixed(4)}` : "";
    $("#s-usage").textContent = `${count("llm_calls")} model call${count("llm_calls") === 1 ? "" : "s"}`
      + (tokens ? ` · ${tokens.toLocaleString()} tokens` : "") + dollars;
    const rows = [["model calls", "llm_calls"], ["by agent steps", "agent_calls"], ["by workflow runs", "workflow_calls"],
      ["prompt tokens", "prompt_tokens"], ["completion tokens", "completion_tokens"],
      ["cached input tokens", "cached_input_tokens"], ["cache creation tokens", "cache_creation_tokens"],
      ["reasoning tokens", "reasoning_tokens"]]
      // the call and prompt/completion counts always; the others once there is something to say
      .filter(([, name]) => ["llm_calls", "prompt_tokens", "completion_tokens"].includes(name) || count(name));
    $("#usage").replaceChildren(...rows.flatMap(([label, name]) =>
      [el("dt", {}, label), el("dd", { "data-usage": name }, count(name).toLocaleString())]),
      ...(cost ? [el("dt", {}, "estimated cost"), el("dd", { "data-usage": "estimated_cost",
        title: cost.unpriced_calls ? `${cost.unpriced_calls} call(s) of a model with no price` : null },
        `$${cost.estimated_cost.toFixed(6)}${cost.unpriced_calls ? " (some calls unpriced)" : ""}`)] : []));
  }

  // The session's kept log, warn and error entries, newest first.
  renderLog(state) {
    const levels = ["log", "warn", "error"];
    const entries = levels.flatMap((level) => (state[level] || []).map((entry, index) => ({ ...entry, level, index })))
      .sort((a, b) => (Date.parse(b.at) - Date.parse(a.at)) || (b.index - a.index));
    $("#log-counts").textContent = levels.map((level) => `${(state[level] || []).length} ${level}`).join(" · ");
    $("#log").replaceChildren(...entries.map((entry) => {
      const { at, level, message, index, ...details } = entry;
      return el("li", { class: `entry ${level}` },
        el("span", { class: "level" }, level), el("span", { class: "at" }, when(at)),
        el("span", { class: "message" }, String(message ?? "")),
        Object.keys(details).length
          ? el("details", {}, el("summary", {}, short(details)), el("pre", {}, JSON.stringify(details, null, 2))) : null);
    }));
    if (!entries.length) $("#log").append(el("li", { class: "empty" }, "Nothing logged."));
  }

  renderEvents() {
    const list = $("#events");
    list.replaceChildren(...this.events.slice().reverse().map((e) => el("li", { class: `event ${e.type}`, "data-seq": e.seq },
      el("span", { class: "seq" }, `#${e.seq}`), el("span", { class: "type" }, e.type),
      el("span", { class: "at" }, when(e.at)),
      el("details", {}, el("summary", {}, short(describeEvent(e))), el("pre", {}, JSON.stringify(e.data, null, 2))))));
    if (!this.events.length) list.append(el("li", { class: "empty" }, "No events yet."));
  }
}

function describeEvent(event) {
  const data = event.data || {};
  const parts = [data.flow || data.flow_id, data.node || data.node_id, data.code, data.message || data.detail]
    .filter((part) => typeof part === "string" && part);
  return parts.length ? parts.join(" · ") : JSON.stringify(data);
}

// A typed payload form for a run waiting on a signal or an event.
function inputForm(wait, submit) {
  const type = el("select", { name: "type" }, ...["text", "number", "boolean", "JSON", "none"].map((t) => el("option", {}, t)));
  const value = el("input", { name: "value", placeholder: "value" });
  const form = el("form", { class: "input-form", "data-wait": wait.key },
    el("p", { class: "summary" }, `${wait.kind} `, el("code", {}, wait.event), ` (flow ${wait.flow})`),
    el("div", { class: "inline" }, type, value, el("button", { type: "submit" }, wait.kind === "signal" ? "Send signal" : "Send event")));
  type.addEventListener("change", () => {
    const next = type.value === "JSON" ? el("textarea", { name: "value", rows: 3, placeholder: '{"amount": 30}' })
      : type.value === "boolean" ? el("select", { name: "value" }, el("option", {}, "true"), el("option", {}, "false"))
        : el("input", { name: "value", type: type.value === "number" ? "number" : "text", step: "any",
          placeholder: "value", disabled: type.value === "none" });
    form.elements.value.replaceWith(next);
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const raw = form.elements.value.value;
    try {
      const payload = type.value === "number" ? (raw.trim() === "" ? null : Number(raw))
        : type.value === "boolean" ? raw === "true"
          : type.value === "JSON" ? parseJson(raw, `${wait.event} payload`)
            : type.value === "none" ? null : raw;
      if (typeof payload === "number" && !isFinite(payload)) throw new ApiError(0, "invalid-input", `${wait.event}: not a number`);
      submit(payload);
    } catch (error) { showError(error); }
  });
  return form;
}

// ------------------------------------------------------------------------------------------ flow graph (SVG)

const SVG = "http://www.w3.org/2000/svg";
const BOX = { w: 190, h: 44, gap: 26 };

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, value);
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

// Nodes top to bottom in declaration order; the next node below; other moves as lanes on the left;
// terminals, stays and code-decided moves as chips on the right. Live runs' nodes are highlighted.
function drawFlow(graph, runs, onFlow) {
  const index = new Map(graph.nodes.map((node, i) => [node.id, i]));
  const arcs = [];
  const chips = new Map(graph.nodes.map((node) => [node.id, []]));
  const straight = [];
  for (const edge of graph.edges) {
    const from = index.get(edge.source);
    if (edge.kind === "goto" && index.has(edge.target)) {
      const to = index.get(edge.target);
      const line = { from, to, label: edge.label, declared: edge.declared, span: Math.abs(to - from) };
      (to === from + 1 ? straight : arcs).push(line);
    } else {
      const name = edge.kind === "start_flow" ? `flow ${edge.target}` : edge.kind;
      chips.get(edge.source).push({
        text: edge.kind === "code" ? "code decides" : edge.kind === "stay" ? "↺ stay"
          : `${edge.label ? edge.label + " " : ""}→ ${name}`,
        flow: edge.kind === "start_flow" ? edge.target : null, declared: edge.declared });
    }
  }
  const lanes = [];
  for (const arc of arcs.sort((a, b) => a.span - b.span)) {
    const low = Math.min(arc.from, arc.to), high = Math.max(arc.from, arc.to);
    let lane = 0;
    while ((lanes[lane] || []).some(([a, b]) => low < b && a < high)) lane += 1;
    (lanes[lane] = lanes[lane] || []).push([low, high]);
    arc.lane = lane;
  }
  const left = 24 + lanes.length * 16 + (arcs.some((a) => a.label) ? 40 : 0);
  const right = left + BOX.w;
  const chipWidth = Math.max(0, ...[...chips.values()].map((texts) =>
    texts.reduce((sum, chip) => sum + chip.text.length * 6.6 + 22, 0)));
  const top = 26;
  const y = (i) => top + i * (BOX.h + BOX.gap);
  const width = right + (chipWidth ? chipWidth + 24 : 0) + 12;
  const height = y(graph.nodes.length) - BOX.gap + 16;
  const root = svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "flow", "data-flow": graph.id });
  root.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
    markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M0,0 L10,5 L0,10 z", class: "head" }))));

  const startAt = index.get(graph.start) ?? 0;
  root.append(svg("text", { x: left, y: y(startAt) - 8, class: "start-label" }, `▶ ${graph.id}`));
  for (const { from, label, declared } of straight) {
    const x = left + BOX.w / 2;
    root.append(svg("line", { x1: x, y1: y(from) + BOX.h, x2: x, y2: y(from + 1) - 2,
      class: `edge${declared ? " declared" : ""}`, "marker-end": "url(#arrow)" }));
    if (label) root.append(svg("text", { x: x + 6, y: y(from) + BOX.h + BOX.gap / 2 + 4, class: "edge-label" }, label));
  }
  for (const arc of arcs) {
    const x = left - 14 - arc.lane * 16;
    const y1 = y(arc.from) + BOX.h / 2 - 7, y2 = y(arc.to) + BOX.h / 2 + 7;
    const bend = y2 > y1 ? 6 : -6;
    root.append(svg("path", { class: `edge arc${arc.declared ? " declared" : ""}`, "marker-end": "url(#arrow)",
      d: `M${left},${y1} H${x + 6} Q${x},${y1} ${x},${y1 + bend} V${y2 - bend} Q${x},${y2} ${x + 6},${y2} H${left - 2}` }));
    if (arc.label) root.append(svg("text", { x: x - 3, y: (y1 + y2) / 2, class: "edge-label", "text-anchor": "end" }, arc.label));
  }
  graph.nodes.forEach((node, i) => {
    const here = runs.filter((run) => run.node === node.id);
    const visits = runs.reduce((sum, run) => sum + ((run.visits || {})[node.id] || 0), 0);
    const group = svg("g", { class: `node ${node.kind}${here.length ? " current" : ""}${visits ? " visited" : ""}`,
      "data-node": node.id, transform: `translate(${left},${y(i)})` });
    group.append(svg("rect", { width: BOX.w, height: BOX.h, rx: 8 }),
      svg("text", { x: 12, y: 18, class: "label" }, node.label.length > 24 ? node.label.slice(0, 23) + "…" : node.label),
      svg("text", { x: 12, y: 34, class: "kind" }, here.length ? `${node.kind} · ${here.map((r) => r.status).join(", ")}` : node.kind));
    if (visits) group.append(svg("text", { x: BOX.w - 10, y: 18, class: "visits", "text-anchor": "end" }, `×${visits}`));
    group.append(svg("title", {}, `${node.id} (${node.kind})${here.length ? ": " + here.map((r) => `run ${r.id} ${r.status}`).join("; ") : ""}`));
    root.append(group);
    let chipX = right + 14;
    for (const chip of chips.get(node.id)) {
      const w = chip.text.length * 6.6 + 14;
      const cy = y(i) + BOX.h / 2;
      const group = svg("g", { class: `chip${chip.flow ? " link" : ""}`, "data-flow": chip.flow || "" },
        svg("rect", { x: chipX, y: cy - 10, width: w, height: 20, rx: 10 }),
        svg("text", { x: chipX + 7, y: cy + 4 }, chip.text));
      if (chip.flow && onFlow) group.addEventListener("click", () => onFlow(chip.flow));
      root.append(svg("line", { x1: right, y1: cy, x2: chipX, y2: cy, class: "edge chip-edge" }), group);
      chipX += w + 8;
    }
  });
  return root;
}

// ------------------------------------------------------------------------------------------ workflow runs

function runHref(id) { return `${ROOT}/inspect/workflow-runs/${encodeURIComponent(id)}`; }

// What a run waits on, in a few words (the list's column).
function waitingText(waits) {
  return waits.map((w) => {
    if (w.kind === "approval") return `${w.decision === "rejected" ? "rejected" : "approval"} at ${w.node}: ${w.summary}`;
    if (w.kind === "input") return `input at ${w.node}: ${w.prompt}`;
    if (w.kind === "agent" || w.kind === "worker") return `${w.kind === "agent" ? "agent work" : "a worker"} at ${w.nodes.join(", ")}`;
    if (w.kind === "failed") return `failed at ${w.node}${w.error ? ": " + w.error : ""}`;
    return `blocked at ${w.node}: ${w.why}`;
  }).join("; ");
}

async function runsView() {
  $("#view").append($("#runs-view").content.cloneNode(true));
  $("#nav-runs").classList.add("here");
  const filters = $("#run-filters");
  const params = new URLSearchParams(location.search);
  filters.waiting.value = params.get("waiting") || "";
  filters.status.value = params.get("status") || "";
  let next = null;

  const row = (r) => el("tr", { "data-run": r.run },
    el("td", {}, el("a", { href: runHref(r.run) }, el("code", {}, r.run))), el("td", {}, r.workflow),
    el("td", {}, badge(r.status)), el("td", { class: "waits" }, short(waitingText(r.waiting_on), 160)),
    el("td", {}, when(r.saved_at)));
  const load = async (more = false) => {
    const query = new URLSearchParams();
    if (filters.waiting.value) query.set("waiting", filters.waiting.value);
    if (filters.status.value) query.set("status", filters.status.value);
    if (more && next) query.set("after", next);
    const page = await api(`/v1/workflow-runs?${query}`);
    const body = $("#wf-runs tbody");
    if (more) body.append(...page.runs.map(row)); else body.replaceChildren(...page.runs.map(row));
    next = page.next;
    $("#wf-more").hidden = next === null;
    $("#no-wf-runs").hidden = body.children.length > 0;
  };
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    if (filters.waiting.value) query.set("waiting", filters.waiting.value);
    if (filters.status.value) query.set("status", filters.status.value);
    history.replaceState(null, "", `${ROOT}/inspect/workflow-runs${query.size ? "?" + query : ""}`);
    load().catch(showError);
  });
  $("#wf-more").addEventListener("click", () => load(true).catch(showError));

  const { workflows } = await api("/v1/workflows");
  const form = $("#start-run");
  const startable = workflows.filter((w) => !w.error);
  $("#start-run-card").hidden = !startable.length;
  form.workflow.replaceChildren(...startable.map((w) => el("option", { value: w.id }, w.id)));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    try {
      const body = {};
      if (form.input.value.trim()) body.input = parseJson(form.input.value, "run input");
      const run = await api(`/v1/workflows/${encodeURIComponent(form.workflow.value)}/runs`, { method: "POST", body });
      location.href = runHref(run.run);
    } catch (error) { showError(error); }
  });
  await load();
  setInterval(() => { if (!document.hidden && !$("#wf-more").dataset.paged) load().catch(() => {}); }, 5000);
  $("#wf-more").addEventListener("click", () => { $("#wf-more").dataset.paged = "1"; });
}

class RunPage {
  constructor(id) {
    this.id = id;
    this.asks = "";   // what the action forms were built for: rebuilt only when it changes
  }

  get path() { return `/v1/workflow-runs/${encodeURIComponent(this.id)}`; }

  async start() {
    $("#view").append($("#run-view").content.cloneNode(true));
    $("#nav-runs").classList.add("here");
    $("#r-id").textContent = this.id;
    $("#crumbs").replaceChildren(el("a", { href: `${ROOT}/inspect/workflow-runs` }, "workflow runs"), " / ", this.id);
    const by = $("#r-by");
    by.value = sessionStorage.getItem(OPERATOR_STORE) || "";
    by.addEventListener("input", () => sessionStorage.setItem(OPERATOR_STORE, by.value.trim()));
    $("#r-cancel").addEventListener("click", () => {
      const reason = prompt("Why cancel this run? (optional)");
      if (reason !== null) this.act("cancel", null, { reason: reason.trim() || null });
    });
    await this.refresh();
    setInterval(() => { if (!document.hidden) this.refresh().catch(() => {}); }, 2000);
  }

  async refresh() { this.render(await api(this.path)); }

  // One action (approve, reject, input, retry on a node; cancel on the run); the page shows the run after it.
  async act(action, node, body = {}) {
    clearError();
    const path = node === null ? `${this.path}/${action}`
      : `${this.path}/nodes/${encodeURIComponent(node)}/${action}`;
    try {
      const run = await api(path, { method: "POST", body: { by: $("#r-by").value.trim() || null, ...body } });
      this.asks = "";
      this.render(run);
    } catch (error) { showError(error); }
  }

  render(run) {
    $("#r-workflow").textContent = run.workflow;
    $("#r-status").replaceWith(Object.assign(badge(run.status), { id: "r-status" }));
    $("#r-usage").textContent = run.model_calls ? `${run.model_calls} model call(s)` : "";
    $("#r-cancel").hidden = ["complete", "cancelled"].includes(run.status) || (run.status === "failed"
      && !run.waiting_on.some((w) => w.kind === "failed" && w.retryable));
    this.renderWaiting(run);
    this.renderNodes(run);
    $("#r-io").replaceChildren(el("dt", {}, "input"), el("dd", {}, JSON.stringify(run.input)),
      el("dt", {}, "output"), el("dd", {}, run.output ? JSON.stringify(run.output) : "–"));
    const events = run.events.slice().reverse();
    $("#r-events").replaceChildren(...events.map((e) => el("li", { class: `event ${e.type.replace(".", "-")}`, "data-seq": e.seq },
      el("span", { class: "seq" }, `#${e.seq}`), el("span", { class: "type" }, e.type), el("span", { class: "at" }, when(e.at)),
      el("details", {}, el("summary", {}, short(describeRunEvent(e))), el("pre", {}, JSON.stringify(e.data, null, 2))))));
    if (!events.length) $("#r-events").append(el("li", { class: "empty" }, "No events yet."));
  }

  // The approvals and input requests, each with its form; a form being filled in is kept as it is.
  renderWaiting(run) {
    const asks = JSON.stringify(run.waiting_on);
    if (asks === this.asks) return;
    this.asks = asks;
    const cards = run.waiting_on.map((w) => {
      if (w.kind === "approval") return this.approvalForm(w);
      if (w.kind === "input") return this.inputForm(w);
      return el("p", { class: "wait", "data-wait": w.kind }, waitingText([w]));
    });
    $("#r-waiting").replaceChildren(...(cards.length ? cards : [el("p", { class: "empty" }, `Nothing: the run is ${run.status}.`)]));
  }

  approvalForm(w) {
    const feedback = el("textarea", { rows: 2, name: "feedback", placeholder: "Feedback (needed to reject)" });
    const typed = w.schema && w.schema.kind && w.schema.kind !== "text";
    const response = typed ? el("textarea", { rows: 2, name: "response", placeholder: `response (JSON, ${w.schema.kind})` }) : null;
    const rejected = w.decision === "rejected";
    return el("div", { class: "ask approval", "data-node": w.node },
      el("p", { class: "summary" }, `${w.node}: ${w.summary}`),
      el("p", { class: "muted" }, rejected ? "rejected: waiting for a fresh request" : `${w.approval} approval`),
      rejected ? null : feedback, rejected ? null : response,
      rejected ? null : el("div", { class: "buttons" },
        el("button", { type: "button", class: "approve", onclick: () => {
          try {
            const body = { feedback: feedback.value.trim() || null };
            if (response && response.value.trim()) body.response = parseJson(response.value, `${w.node} response`);
            this.act("approve", w.node, body);
          } catch (error) { showError(error); }
        } }, "Approve"),
        el("button", { type: "button", class: "reject", onclick: () => {
          if (!feedback.value.trim()) { showError({ code: "feedback-needed", message: "say why you reject it" }); return; }
          this.act("reject", w.node, { feedback: feedback.value.trim() });
        } }, "Reject")));
  }

  inputForm(w) {
    const kind = (w.schema && w.schema.kind) || "text";
    const answer = kind === "text" ? el("input", { name: "response", placeholder: "answer" })
      : el("textarea", { rows: 3, name: "response", placeholder: `answer (JSON, ${kind})` });
    const form = el("form", { class: "ask input", "data-node": w.node },
      el("p", { class: "summary" }, `${w.node} asks: ${w.prompt}`), answer,
      el("div", { class: "buttons" }, el("button", { type: "submit" }, "Answer")));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      try {
        const response = kind === "text" ? answer.value : parseJson(answer.value, `${w.node} answer`);
        this.act("input", w.node, { response });
      } catch (error) { showError(error); }
    });
    return form;
  }

  renderNodes(run) {
    const retryable = new Set(run.waiting_on.filter((w) => w.kind === "failed" && w.retryable).map((w) => w.node));
    $("#r-nodes tbody").replaceChildren(...run.nodes.map((node) => {
      const attempts = node.attempts || [];
      const last = attempts[attempts.length - 1];
      const verdict = last && last.verdict ? ` · check ${last.verdict.passed ? "passed" : "failed"}` : "";
      const detail = node.error || (node.approval ? `${node.approval.summary}${node.approval.decision ? " [" + node.approval.decision
        + (node.approval.feedback ? ": " + node.approval.feedback : "") + "]" : ""}` : "")
        || (node.input_request ? `${node.input_request.prompt}${node.input_request.response !== undefined
          && node.input_request.response !== null ? " → " + JSON.stringify(node.input_request.response) : ""}` : "")
        || (node.output && node.output.summary) || "";
      return el("tr", { "data-node": node.id },
        el("td", {}, el("code", {}, node.id)), el("td", {}, node.kind || ""), el("td", {}, badge(node.status)),
        el("td", {}, attempts.length ? `${attempts.length}${last.exit_code !== undefined && last.exit_code !== null
          ? " · exit " + last.exit_code : ""}${verdict}` : ""),
        el("td", { class: "detail" }, short(detail, 200), el("details", {}, el("summary", {}, "state"),
          el("pre", {}, JSON.stringify(node, null, 2)))),
        el("td", {}, retryable.has(node.id)
          ? el("button", { type: "button", class: "retry", onclick: () => this.act("retry", node.id) }, "Retry") : ""));
    }));
  }
}

function describeRunEvent(event) {
  const data = event.data || {};
  if (event.type === "workflow.action") {
    return [data.action, data.node, data.by && `by ${data.by}`, data.feedback || data.reason].filter(Boolean).join(" · ");
  }
  return [data.node, data.status].filter(Boolean).join(" · ") || JSON.stringify(data);
}

// ------------------------------------------------------------------------------------------ start

async function main() {
  setupKeyForm();
  const rest = location.pathname.slice(ROOT.length + "/inspect".length).split("/").filter(Boolean);
  try {
    if (rest[0] === "workflow-runs") {
      if (rest.length === 2) await new RunPage(decodeURIComponent(rest[1])).start();
      else await runsView();
    } else if (rest.length === 2) await new SessionPage(decodeURIComponent(rest[0]), decodeURIComponent(rest[1])).start();
    else {
      $("#nav-sessions").classList.add("here");
      await listView();
    }
  } catch (error) { showError(error); }
}

main();
