// The aioseed console: one WebSocket feed for metrics, settings and actors (charts.js plots them);
// control calls carry the token from the URL fragment (never sent to the server by the browser).
"use strict";

const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
const authHeaders = token ? { Authorization: `Bearer ${token}` } : {};
let lastMetrics = {};

// Shows the feed's state; a control reply carries only settings, so the rest keeps its last value.
function showState(state) {
  if (state.metrics) lastMetrics = state.metrics;
  const m = lastMetrics;
  const s = state.settings || {};
  const status = document.getElementById("status");
  status.textContent = s.paused ? "paused" : "training";
  status.className = `status ${s.paused ? "paused" : "training"}`;
  document.getElementById("counters").textContent =
    `frames ${fmt(m["charts/frames"], 0)} · train steps ${fmt(m["learner/train_steps"], 0)} · ` +
    `episodes ${fmt(m["charts/episodes"], 0)} · actors ${fmt(m["actors/streams"], 0)} streams, ${fmt(m["actors/envs"], 0)} envs` +
    (m["replay/size"] != null
      ? ` · replay ${fmt(m["replay/size"], 0)}/${fmt(m["replay/capacity"], 0)} unrolls, ` +
        `${fmt(m["replay/sampled"], 0)} sampled / ${fmt(m["replay/inserted"], 0)} inserted`
      : "") +
    // aioseed serve: the checkpoint it serves (a newer one replaces it with --watch).
    (m["serve/checkpoint"] != null
      ? ` · serving checkpoint ${fmt(m["serve/checkpoint"], 0)} (train step ${fmt(m["serve/train_steps"], 0)}, ` +
        `frame ${fmt(m["serve/frames"], 0)}; ${fmt(m["serve/reloads"], 0)} reloads)`
      : "") +
    // Self-play: the frozen copy of the policy that plays the right side, and when it was taken.
    (m["selfplay/opponent_version"] != null
      ? ` · opponent: version ${fmt(m["selfplay/opponent_version"], 0)} (frame ${fmt(m["selfplay/opponent_frames"], 0)})`
      : "") +
    // Calls refused (bad input, limits, a hostile client): counted by status in /metrics as aioseed_refusals_*.
    (m["refusals/total"] ? ` · refused ${fmt(m["refusals/total"], 0)} calls` : "");
  // Updates whose loss or gradients were NaN/inf are skipped, not applied: a sign of hostile or broken rewards.
  const skipped = m["train/skipped_nonfinite"] || 0;
  const alert = document.getElementById("nonfinite");
  alert.hidden = !skipped;
  alert.textContent = `${fmt(skipped, 0)} update(s) skipped: non-finite loss or gradients`;
  document.getElementById("pause-note").textContent = s.paused
    ? `Training is paused: no train steps run, the unroll queue fills (${fmt(m["queue/depth"], 0)}/${fmt(m["queue/capacity"], 0)}) ` +
      "and then inference waits, so the actors stall by back-pressure until you resume."
    : "Pausing stops the train step; the unroll queue then fills and the actors stall by back-pressure.";
  const staged = s.staged || {};
  document.getElementById("batching-effect").textContent =
    `in effect: ${s.max_batch_size} rows, ${s.deadline_ms} ms` +
    (staged.max_batch_size !== s.max_batch_size || staged.deadline_ms !== s.deadline_ms
      ? ` · next batch: ${staged.max_batch_size} rows, ${staged.deadline_ms} ms` : "");
  const auto = s.auto;
  if (auto) {
    document.getElementById("auto").checked = Boolean(auto.enabled);
    document.getElementById("auto-reason").textContent = auto.enabled
      ? `auto (p99 target ${auto.latency_target_ms ?? "none"} ms): ${auto.reason}`
      : `auto ${auto.reason}`;
  }
  for (const [id, value] of [["max_batch_size", staged.max_batch_size], ["deadline_ms", staged.deadline_ms], ["learning_rate", s.learning_rate]]) {
    const input = document.getElementById(id);
    if (value !== undefined && document.activeElement !== input && !input.dataset.dirty) {
      input.value = String(Number(Number(value).toPrecision(6)));
    }
  }
  if (s.live) showLiveSettings(s.live, s.training || {});
  if (s.changes) showChanges(s.changes);
  if (state.actors) showActors(state.actors);
}

// The training settings that may change live: a row each (name, value, what it takes, when it applies), built once.
function showLiveSettings(live, values) {
  const body = document.querySelector("#live tbody");
  if (!body.children.length) {
    document.getElementById("training-settings").hidden = false;
    body.replaceChildren(...live.map((setting) => {
      const row = document.createElement("tr");
      row.dataset.setting = setting.name;
      const input = setting.takes.startsWith("one of ")
        ? `<select name="${setting.name}">${setting.takes.slice(7).split(", ").map((c) => `<option>${escapeHtml(c)}</option>`).join("")}</select>`
        : `<input name="${setting.name}" type="number" step="any">`;
      row.title = `takes effect ${setting.takes_effect}`;
      row.innerHTML = `<td><label for="live-${setting.name}">${escapeHtml(setting.name)}</label>` +
        `<div class="hint">${escapeHtml(setting.takes)}</div></td><td>${input}</td>`;
      const field = row.querySelector("input, select");
      field.id = `live-${setting.name}`;
      field.oninput = () => (field.dataset.dirty = "1");
      return row;
    }));
  }
  for (const [name, value] of Object.entries(values)) {
    const field = document.getElementById(`live-${name}`);
    if (field && document.activeElement !== field && !field.dataset.dirty) {
      field.value = typeof value === "number" ? String(Number(value.toPrecision(6))) : String(value);
    }
  }
}

document.getElementById("live").onsubmit = async (event) => {
  event.preventDefault();
  const dirty = [...document.querySelectorAll("#live [data-dirty]")];
  const ack = document.getElementById("live-ack");
  if (!dirty.length) {
    ack.textContent = "nothing changed";
    return;
  }
  const body = Object.fromEntries(dirty.map((f) => [f.name, f.tagName === "SELECT" ? f.value : numeric(f)]));
  const reply = await control("/api/settings", body);
  if (!reply) return;
  for (const field of dirty) delete field.dataset.dirty;
  const { applied } = reply;
  ack.dataset.trainStep = String(applied.train_step);
  ack.textContent = applied.changed.length
    ? `Applied from train step ${applied.train_step} at ${new Date().toLocaleTimeString()}: ` +
      applied.changed.map((name) => `${name} = ${reply.training[name]}`).join(", ")
    : "already in effect: nothing changed";
};

function showActors(actors) {
  const body = document.querySelector("#actors tbody");
  body.replaceChildren(...actors.map((a) => {
    const row = document.createElement("tr");
    row.dataset.stream = a.stream;
    const cells = [a.stream, a.actor, a.address, a.envs, fmt(a.steps_per_s, 0),
                   new Date(a.connected_since * 1000).toLocaleTimeString(), `${fmt(Date.now() / 1000 - a.last_seen, 1)} s ago`];
    row.innerHTML = cells.map((c) => `<td>${escapeHtml(String(c))}</td>`).join("") + "<td><button>Disconnect</button></td>";
    const button = row.querySelector("button");
    button.onclick = () => control(`/api/actors/${a.stream}/disconnect`);
    if (a.address === "in-process") [button.disabled, button.title] = [true, "the learner's own actor: it cannot reconnect"];
    return row;
  }));
}

function fmt(value, digits) {
  return value === null || value === undefined ? "–" : Number(value).toFixed(digits);
}

function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function control(path, body) {
  const message = document.getElementById("message");
  let response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...authHeaders },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {  // the learner is gone or unreachable
    message.className = "error";
    message.textContent = `${path}: no answer (${error.message})`;
    return false;
  }
  const reply = await response.json().catch(() => ({}));
  message.className = response.ok ? "ok" : "error";
  message.textContent = response.ok
    ? `${path}: done at ${new Date().toLocaleTimeString()}`
    : `${path}: ${response.status} ${reply.error || ""}`;
  if (response.ok && reply.max_batch_size !== undefined) showState({ settings: reply });
  return response.ok ? reply : false;
}

for (const input of document.querySelectorAll("input[type=number]")) input.oninput = () => (input.dataset.dirty = "1");

// A cleared field is sent as null, which the learner refuses naming it (Number("") is 0, which it would take).
const numeric = (field) => (field.value.trim() === "" ? null : Number(field.value));

document.getElementById("batching").onsubmit = async (event) => {
  event.preventDefault();
  const ok = await control("/api/settings", {
    max_batch_size: numeric(document.getElementById("max_batch_size")),
    deadline_ms: numeric(document.getElementById("deadline_ms")),
  });
  if (ok) for (const id of ["max_batch_size", "deadline_ms"]) delete document.getElementById(id).dataset.dirty;
};
document.getElementById("auto").onchange = async (event) => {
  const box = event.target;
  if (!(await control("/api/settings", { auto: box.checked }))) box.checked = !box.checked;  // refused: as it was
};
document.getElementById("optimiser").onsubmit = async (event) => {
  event.preventDefault();
  if (await control("/api/settings", { learning_rate: numeric(document.getElementById("learning_rate")) })) {
    delete document.getElementById("learning_rate").dataset.dirty;
  }
};
document.getElementById("pause").onclick = () => control("/api/pause");
document.getElementById("resume").onclick = () => control("/api/resume");
document.getElementById("checkpoint").onclick = async (event) => {
  const button = event.target;
  button.disabled = true;  // one save at a time: each click would queue another between train steps
  try {
    if (await control("/api/checkpoint")) loadRun();
  } finally {
    button.disabled = false;
  }
};

// The run panel: what the run is, its key hyperparameters and the checkpoints kept.
async function loadRun() {
  const response = await fetch("/api/run", { headers: authHeaders }).catch(() => null);
  if (!response || !response.ok) return;  // unreachable or refused: the next poll tries again
  const run = await response.json();
  const info = [
    ["environment", run.env], ["agent", `${run.agent} (${run.architecture})`], ["network", run.network],
    ["devices", `${run.devices.join(", ")}; inference ${run.inference_devices.join(", ")}`],
    ["aioseed", run.version], ["logdir", run.logdir ?? "none"], ["started", new Date(run.started).toLocaleString()],
    ["seed", run.seed ?? "none"],
  ];
  document.getElementById("run-info").innerHTML = info
    .map(([k, v]) => `<dt>${k}</dt><dd data-key="${k}">${escapeHtml(String(v))}</dd>`).join("");
  document.querySelector("#hyperparameters tbody").innerHTML = Object.entries(run.hyperparameters)
    .map(([k, v]) => `<tr><td>${escapeHtml(k)}</td><td>${escapeHtml(JSON.stringify(v))}</td></tr>`).join("");
  document.querySelector("#checkpoints tbody").innerHTML = run.checkpoints.length
    ? run.checkpoints.slice().reverse().map((c) =>
        `<tr><td>${escapeHtml(c.path.split("/").pop())}</td><td>${c.train_steps}</td><td>${c.frames}</td>` +
        `<td>${new Date(c.time * 1000).toLocaleTimeString()}</td></tr>`).join("")
    : `<tr><td colspan="4">none yet</td></tr>`;
}
loadRun();
setInterval(loadRun, 30000);

// The newest evaluation clip (evaluation actors record them into LOGDIR/videos).
async function loadClip() {
  const response = await fetch("/api/clips", { headers: authHeaders }).catch(() => null);
  if (!response || !response.ok) return;
  const [newest] = await response.json();
  const video = document.getElementById("clip-video");
  if (!newest || video.dataset.name === newest.name) return;
  video.dataset.name = newest.name;
  video.src = `/api/clips/${encodeURIComponent(newest.name)}${token ? `?token=${encodeURIComponent(token)}` : ""}`;
  document.getElementById("clip-name").textContent =
    `${newest.name}, written ${new Date(newest.time * 1000).toLocaleTimeString()}`;
  document.getElementById("clip").hidden = false;
}
loadClip();
setInterval(loadClip, 5000);

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const query = token ? `?token=${encodeURIComponent(token)}` : "";
  const ws = new WebSocket(`${scheme}://${location.host}/api/feed${query}`);
  ws.onmessage = (event) => {
    const state = JSON.parse(event.data);
    if (state.series) {
      clearCharts();
      state.series.slice(-WINDOW).forEach(addPoint);
    }
    else if (state.metrics && state.metrics.time) addPoint(state.metrics);
    showState(state);
  };
  ws.onclose = () => {
    const status = document.getElementById("status");
    // The feed needs the token too (a page on another site must not read the console).
    status.textContent = token ? "disconnected, retrying…" : "no token in the URL (#token=…): open the URL the learner printed";
    status.className = "status";
    setTimeout(connect, 2000);
  };
}
connect();
