// Drives the real Gemini CLI IdeClient (@google/gemini-cli-core, pinned in
// package.json) for the test-suite. Commands arrive as JSON lines on stdin;
// everything the client observes goes out as JSON lines on stdout:
//   {"cmd":"connect"}                         -> {"event":"status",...,"connectMs":n}
//   {"cmd":"openDiff","filePath":p,"newContent":c,"id":k} -> later {"event":"diff","id":k,"result":{...},"tHr":ms}
//     (tHr: wall-clock ms with sub-ms precision, when the openDiff promise resolved; hrNs:
//     the same moment on the monotonic clock Neovim's vim.uv.hrtime() reads, in ns)
//   {"cmd":"closeDiff","filePath":p,"id":k}   -> {"event":"closeDiff","id":k,"result":...}
//   {"cmd":"status"}                          -> {"event":"status",...}
//   {"cmd":"reconnect"}                       -> disconnect, connect again: {"event":"status",...,"connectMs":n}
//   {"cmd":"disconnect"}                      -> {"event":"disconnected"} and exit
// IDE_DRIVER_SCRIPT: a JSON array of commands to run before reading stdin.
// Context pushed by the IDE is reported as {"event":"context","context":...}.
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { IdeClient, ideContextStore } from '@google/gemini-cli-core';

import { appendFileSync } from 'node:fs';

// IDE_DRIVER_OUT: also append events to this file (used when running in a
// Neovim :terminal, whose screen is no place to parse JSON from).
const outFile = process.env.IDE_DRIVER_OUT;
const out = (obj) => {
  const line = JSON.stringify(obj) + '\n';
  process.stdout.write(line);
  if (outFile) appendFileSync(outFile, line);
};
const fail = (err) => out({ event: 'error', message: String(err && err.stack ? err.stack : err) });

const client = await IdeClient.getInstance();
ideContextStore.subscribe((context) => out({ event: 'context', context: context ?? null, t: Date.now() }));

const statusOf = () => {
  const s = client.getConnectionStatus();
  return { event: 'status', status: s.status, details: s.details ?? null,
    displayName: client.getDetectedIdeDisplayName() ?? null,
    diffing: client.isDiffingEnabled() };
};

// Commands run one after another; end of input waits for them, then exits.
let chain = Promise.resolve();
const rl = createInterface({ input: process.stdin });
if (process.env.IDE_DRIVER_SCRIPT) {
  for (const cmd of JSON.parse(process.env.IDE_DRIVER_SCRIPT)) {
    chain = chain.then(() => handle(JSON.stringify(cmd)));
  }
}
rl.on('line', (line) => { chain = chain.then(() => handle(line)); });
rl.on('close', () => chain.then(() => process.exit(0)));

async function handle(line) {
  if (!line.trim()) return;
  let cmd;
  try { cmd = JSON.parse(line); } catch (e) { fail(e); return; }
  try {
    switch (cmd.cmd) {
      case 'connect': {
        const t0 = performance.now();
        await client.connect({ logToConsole: false });
        out({ ...statusOf(), connectMs: performance.now() - t0 });
        break;
      }
      case 'status': out(statusOf()); break;
      case 'openDiff':
        client.openDiff(cmd.filePath, cmd.newContent).then(
          (result) => out({ event: 'diff', id: cmd.id, result, t: Date.now(), tHr: performance.timeOrigin + performance.now(),
            hrNs: process.hrtime.bigint().toString() }),
          (err) => out({ event: 'diff', id: cmd.id, error: String(err) }));
        out({ event: 'openDiffSent', id: cmd.id, t: Date.now() });
        break;
      case 'closeDiff': {
        const result = await client.closeDiff(cmd.filePath, cmd.options);
        out({ event: 'closeDiff', id: cmd.id, result: result ?? null });
        break;
      }
      case 'reconnect': {
        // Disconnect and connect again in the same process (a warm connect()).
        await client.disconnect();
        const t0 = performance.now();
        await client.connect({ logToConsole: false });
        out({ ...statusOf(), connectMs: performance.now() - t0 });
        break;
      }
      case 'disconnect':
        await client.disconnect();
        out({ event: 'disconnected' });
        process.exit(0);
        break;
      default: fail('unknown command ' + cmd.cmd);
    }
  } catch (e) { fail(e); }
}
