// The wsserver demo page: chat with streaming text, voice with barge-in and push-to-talk,
// a connection indicator, tools the page runs, usage per answer. Plain ES modules, no
// build step: the SDK's built modules are served beside this file.
import { AudioPlayback, MicrophoneCapture, SessionClient, WebResumeStore } from "./sdk/index.js";

performance.mark("demo.start");
const RATE = 16000;
const WS_URL = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/`;
const LOG_KEY = "wsserver-demo-log";
const MAX_TURNS = 200;
const $ = (id) => document.getElementById(id);

/** What the page shows, kept in sessionStorage so a reload shows whole answers. */
const view = loadLog();
/** Read by the browser tests: every text delta's seq, every session.ready, the playback
 * worklet's flushes and its first report after each (the last 20 kept), and its latest
 * report of what it played since the last flush (whether audio is playing now). */
const probe = {
  deltaSeqs: [],
  readies: [],
  errors: [],
  flushes: [],
  played: { samples: 0, idle: true },
  // Milliseconds of audio received and not yet played: what a barge-in now would drop.
  queuedMs: () => {
    const queued = playback?.tracker.queued ?? [];
    return (queued.reduce((sum, q) => sum + q.samples, 0) * 1000) / RATE;
  },
};
window.demo = { view, probe };

const WEATHER_TOOL = {
  spec: {
    name: "get_weather",
    description: "current weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  },
  handler: async (args) => {
    const city = String(args?.city ?? "?");
    const temperature = 10 + ([...city].reduce((sum, c) => sum + c.charCodeAt(0), 0) % 20);
    return { city, temperature_c: temperature, sky: temperature > 20 ? "sunny" : "cloudy" };
  },
};

let client;
let capture;
let playback;
let mode = "off"; // "off" | "hands-free" | "push-to-talk"

start().catch((err) => showError(String(err?.message ?? err)));

async function start() {
  const answer = await fetch("/demo/token", { method: "POST" });
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.error ?? `token endpoint answered ${answer.status}`);
  // Authentication off: no credential. On: a fresh short-lived token per connection.
  const clientToken = body.token === null ? undefined : fetchToken(body.token);
  renderAll();
  await openClient(clientToken, true);
}

function fetchToken(first) {
  let spare = first;
  return async () => {
    if (spare !== undefined) {
      const token = spare;
      spare = undefined;
      return token;
    }
    const answer = await fetch("/demo/token", { method: "POST" });
    if (!answer.ok) throw new Error(`token endpoint answered ${answer.status}`);
    return (await answer.json()).token;
  };
}

async function openClient(clientToken, mayRetry) {
  const store = new WebResumeStore(sessionStorage);
  client = new SessionClient({
    url: WS_URL,
    clientToken,
    resumeStore: store,
    instructions: "You are a helpful voice assistant. Answer briefly.",
    audio: { sample_rate: RATE },
    tools: [WEATHER_TOOL],
    bufferEvents: false,
  });
  listen(client);
  try {
    await client.open();
  } catch (err) {
    // A stored session the server no longer has: start afresh, once.
    if (mayRetry && store.load() === undefined) {
      view.length = 0;
      saveLog();
      renderAll();
      return openClient(clientToken, false);
    }
    setConnection("closed");
    throw err;
  }
}

function listen(c) {
  c.on("session.ready", (ready) => {
    if (probe.readies.length === 0) performance.mark("session.ready");
    probe.readies.push({ resumed: ready.resumed, at: performance.now() });
    setConnection(ready.resumed ? "resumed" : "connected");
    $("session").textContent = ready.session_id;
  });
  c.on("response.created", (e) => assistant(e.response_id));
  c.on("response.text.delta", (e) => {
    const turn = assistant(e.response_id);
    if (e.seq <= turn.seq) return; // already in the saved transcript (before a reload)
    probe.deltaSeqs.push(e.seq);
    turn.text += e.delta;
    turn.seq = e.seq;
    changed(turn);
  });
  c.on("response.tool_call.delta", (e) => {
    const turn = assistant(e.response_id);
    turn.tools[e.call_id] = `${e.name}(${JSON.stringify(e.arguments)}) …`;
    changed(turn);
  });
  c.on("response.tool_call", (e) => {
    const turn = assistant(e.response_id);
    turn.tools[e.call_id] = `${e.name}(${JSON.stringify(e.arguments)}) → running in the page`;
    changed(turn);
    void WEATHER_TOOL.handler(e.arguments).then((result) => {
      turn.tools[e.call_id] = `${e.name}(${JSON.stringify(e.arguments)}) → ${JSON.stringify(result)}`;
      changed(turn);
    });
  });
  c.on("response.done", (e) => {
    const turn = assistant(e.response_id);
    const u = e.usage;
    turn.status = e.status;
    turn.usage = `${e.status}${e.reason ? ` (${e.reason})` : ""} · ${u.input_tokens} tokens in · ${u.output_tokens_generated} generated · ${u.output_tokens_delivered} delivered`;
    if (e.played_ms !== undefined) turn.usage += ` · ${e.played_ms} ms heard`;
    changed(turn);
  });
  c.on("response.truncated", (e) => {
    const turn = assistant(e.response_id);
    turn.status = "truncated";
    turn.usage = `cut short: ${e.reason}`;
    changed(turn);
  });
  c.on("input_audio.speech_started", () => setVoice("hearing you…"));
  c.on("input_audio.committed", () => setVoice(mode === "off" ? "voice off" : "thinking…"));
  c.on("input_audio.transcript", (e) => {
    remember({ role: "user", text: `🎤 ${e.transcript ?? e.text ?? ""}` });
    saveLog();
    renderAll();
  });
  c.on("error", (e) => {
    probe.errors.push(e.code);
    showError(`${e.code}: ${e.message}`);
  });
}

// -- connection indicator -----------------------------------------------------------------

function setConnection(state) {
  const el = $("connection");
  el.dataset.state = state;
  el.textContent = state;
}

setInterval(() => {
  const state = $("connection").dataset.state;
  if (client !== undefined && !client.connected && (state === "connected" || state === "resumed")) setConnection("dropped");
}, 200);

// -- chat -----------------------------------------------------------------------------------

$("ask").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text || client === undefined) return;
  $("input").value = "";
  remember({ role: "user", text });
  saveLog();
  renderAll();
  playback?.flush();
  void client.createResponse(text).catch((err) => showError(String(err.message)));
});

$("stop").addEventListener("click", () => {
  const running = [...view].reverse().find((t) => t.role === "assistant" && t.status === undefined);
  if (running === undefined) return;
  const playedMs = playback?.tracker.playedMs(running.id);
  playback?.flush(running.id);
  void client.interrupt({ responseId: running.id, renderedChars: running.text.length, ...(playedMs ? { playedMs } : {}) });
});

$("new-session").addEventListener("click", async () => {
  await client?.close().catch(() => undefined);
  sessionStorage.removeItem(LOG_KEY);
  location.reload();
});

function assistant(id) {
  let turn = view.find((t) => t.role === "assistant" && t.id === id);
  if (turn === undefined) {
    turn = { role: "assistant", id, text: "", seq: 0, tools: {} };
    remember(turn);
    renderAll();
  }
  return turn;
}

function changed(turn) {
  saveLog();
  // Escaped: a response id is the server's string, and not every string is a valid selector.
  render(turn, document.querySelector(`[data-response-id="${CSS.escape(turn.id)}"]`));
}

function renderAll() {
  const chat = $("chat");
  chat.replaceChildren(
    ...view.map((turn) => {
      const el = document.createElement("div");
      el.className = `turn ${turn.role}`;
      if (turn.role === "assistant") el.dataset.responseId = turn.id;
      render(turn, el);
      return el;
    }),
  );
}

function render(turn, el) {
  if (el === null || el === undefined) return;
  if (turn.role === "user") {
    el.textContent = turn.text;
    return;
  }
  if (turn.status !== undefined) el.dataset.status = turn.status;
  const text = document.createElement("div");
  text.className = "text";
  text.textContent = turn.text;
  const tools = Object.values(turn.tools).map((line) => {
    const t = document.createElement("div");
    t.className = "tool";
    t.textContent = `🔧 ${line}`;
    return t;
  });
  const parts = [...tools, text];
  if (turn.usage !== undefined) {
    const u = document.createElement("div");
    u.className = "usage";
    u.textContent = turn.usage;
    parts.push(u);
  }
  el.replaceChildren(...parts);
  $("chat").scrollTop = $("chat").scrollHeight;
}

function showError(message) {
  remember({ role: "user", text: `⚠ ${message}` });
  saveLog();
  renderAll();
}

function loadLog() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(LOG_KEY) ?? "[]");
    return Array.isArray(saved) ? saved.slice(-MAX_TURNS) : [];
  } catch {
    return [];
  }
}

/** Add a turn; only the last MAX_TURNS are kept (a page left open for hours stays small). */
function remember(turn) {
  view.push(turn);
  if (view.length > MAX_TURNS) view.splice(0, view.length - MAX_TURNS);
}

function saveLog() {
  try {
    sessionStorage.setItem(LOG_KEY, JSON.stringify(view));
  } catch {
    // Over the storage quota (a few MiB): the page goes on showing; a reload shows less.
    sessionStorage.removeItem(LOG_KEY);
  }
}

// -- voice ------------------------------------------------------------------------------------

function setVoice(text) {
  $("voice-state").textContent = text;
}

async function ensureAudio() {
  if (capture === undefined) {
    playback = new AudioPlayback(client, { sampleRate: RATE, onReport: noteFlush });
    capture = new MicrophoneCapture(client, { sampleRate: RATE });
    await playback.start();
    await capture.start();
  }
}

function noteFlush(report) {
  const last = probe.flushes.at(-1);
  if (report.type === "flushed") {
    probe.flushes.push({ dropped: report.dropped, nextPlayed: undefined });
    probe.played = { samples: 0, idle: true };
    if (probe.flushes.length > 20) probe.flushes.shift();
  } else {
    probe.played = { samples: report.samples, idle: report.idle };
    if (last !== undefined && last.nextPlayed === undefined) last.nextPlayed = report.samples;
  }
}

function turnDetection(type) {
  return client.send({ type: "session.update", audio: { sample_rate: RATE, turn_detection: { type } } });
}

$("voice-toggle").addEventListener("click", async () => {
  try {
    if (mode === "hands-free") {
      capture.muted = true;
      mode = "off";
      $("voice-toggle").textContent = "Start voice (hands-free)";
      setVoice("voice off");
      return;
    }
    await ensureAudio();
    if (mode === "push-to-talk") await turnDetection("server_vad");
    capture.muted = false;
    mode = "hands-free";
    $("talk").disabled = false;
    $("voice-toggle").textContent = "Stop voice";
    setVoice("listening (talk over the answer to interrupt it)");
  } catch (err) {
    showError(`microphone: ${err.message}`);
  }
});

$("talk").disabled = false;
$("talk").addEventListener("pointerdown", async () => {
  try {
    await ensureAudio();
    if (mode !== "push-to-talk") {
      await turnDetection("manual");
      mode = "push-to-talk";
      $("voice-toggle").textContent = "Start voice (hands-free)";
    }
    $("stop").click(); // talking interrupts the answer
    capture.muted = false;
    $("talk").classList.add("held");
    setVoice("talking… release to send");
  } catch (err) {
    showError(`microphone: ${err.message}`);
  }
});

for (const type of ["pointerup", "pointerleave"]) {
  $("talk").addEventListener(type, () => {
    if (mode !== "push-to-talk" || capture === undefined || capture.muted) return;
    capture.muted = true;
    $("talk").classList.remove("held");
    client.sendAudio(new Uint8Array(0), true); // the last chunk commits the turn
    setVoice("thinking…");
  });
}
