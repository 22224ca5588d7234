// Preloaded (NODE_OPTIONS=--require) into the A2A server the agent panel starts:
// @google/gemini-cli-a2a-server 0.25.2 listens on every interface, and an agent
// that runs shell commands must never be reachable from the network. Every TCP
// listen() of the process is bound to 127.0.0.1 instead; Unix sockets and
// handles are left alone.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
const LOOPBACK = "127.0.0.1";
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
