// Preloaded (NODE_OPTIONS=--require) into the A2A server the agent panel starts
// (transport.py), which has no authentication of its own (0.25.2) and runs shell
// commands: it must answer this Neovim's host and nobody else.
//
// - Every TCP listen() of the process is bound to 127.0.0.1 (0.25.2 listens on every
//   interface); Unix sockets and handles are left alone.
// - Every HTTP request needs `Authorization: Bearer <secret>` (the secret comes in
//   GEMINI_COMPANION_A2A_TOKEN, known to the host alone) and a Host of
//   127.0.0.1:<port> or localhost:<port>; an Origin, if sent, must be that too (a web
//   page rebinding a name to 127.0.0.1 sends its own). Else 401 or 403, and the
//   request never reaches the server. Without a secret nothing is served.
// - The private Gemini home (GEMINI_COMPANION_A2A_HOME, gemini_home.py) is removed
//   when the process ends, by a signal too: the host may be gone (killed, or exited
//   at once on :qa), and Linux sends the server SIGTERM when it goes.
// - The variables above and this preload are taken out of the environment, so the
//   commands the agent runs (and Node programs among them) inherit neither.
"use strict";
const crypto = require("node:crypto");
const fs = require("node:fs");
const http = require("node:http");
const net = require("node:net");
const path = require("node:path");

const LOOPBACK = "127.0.0.1";
const HOME_PREFIX = "gemini-companion-a2a-";

function take(name) {
  const value = process.env[name];
  delete process.env[name];
  return value === undefined ? "" : value;
}

const secret = take("GEMINI_COMPANION_A2A_TOKEN");
const home = take("GEMINI_COMPANION_A2A_HOME");
const nodeOptions = take("GEMINI_COMPANION_A2A_NODE_OPTIONS");
if (nodeOptions) process.env.NODE_OPTIONS = nodeOptions;
else delete process.env.NODE_OPTIONS;

// -- loopback only -------------------------------------------------------------------
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    const rest = args.slice(1);
    if (typeof rest[0] === "string") rest.shift(); // a host given by the caller
    return listen.call(this, Number(first), LOOPBACK, ...rest);
  }
  if (first === undefined || typeof first === "function") {
    return listen.call(this, 0, LOOPBACK, ...args.filter((a) => a !== undefined));
  }
  if (first && typeof first === "object" && first.path === undefined && first.fd === undefined && !first._handle) {
    return listen.call(this, { ...first, host: LOOPBACK }, ...args.slice(1));
  }
  return listen.apply(this, args);
};

// -- this host only ------------------------------------------------------------------
const digest = (text) => crypto.createHash("sha256").update(String(text)).digest();
const secretDigest = digest(secret);

function refusal(server, req) {
  const address = server.address();
  const port = address && typeof address === "object" ? address.port : -1;
  const ours = [`${LOOPBACK}:${port}`, `localhost:${port}`];
  const host = String(req.headers.host || "").toLowerCase();
  if (!ours.includes(host)) return [403, "Forbidden: Host must be the loopback address and port"];
  const origin = req.headers.origin;
  if (origin !== undefined && !ours.map((o) => `http://${o}`).includes(String(origin).toLowerCase())) {
    return [403, "Forbidden: foreign Origin"];
  }
  const match = /^Bearer ([^\s]+)$/.exec(String(req.headers.authorization || ""));
  if (!secret || !match || !crypto.timingSafeEqual(digest(match[1]), secretDigest)) {
    return [401, "Unauthorized"];
  }
  return null;
}

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, ...args) {
  if (event === "request" || event === "checkContinue" || event === "checkExpectation") {
    const [req, res] = args;
    const refused = refusal(this, req);
    if (refused) {
      res.writeHead(refused[0], { "content-type": "text/plain", connection: "close" });
      res.end(`${refused[1]}\n`);
      return true;
    }
  } else if (event === "upgrade" || event === "connect") {
    const [req, socket] = args;
    if (refusal(this, req)) {
      socket.destroy();
      return true;
    }
  }
  return emit.call(this, event, ...args);
};

// -- the private home goes with the process --------------------------------------------
function removeHome() {
  if (home && path.isAbsolute(home) && path.basename(home).startsWith(HOME_PREFIX)) {
    try {
      fs.rmSync(home, { recursive: true, force: true }); // links are removed, not followed
    } catch {
      // the host removes it, or the next start does
    }
  }
}

if (home) {
  process.on("exit", removeHome);
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
    const onSignal = () => {
      removeHome();
      if (process.listenerCount(signal) === 1) {
        // Nobody else handles it: end as the signal would have without us.
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}
