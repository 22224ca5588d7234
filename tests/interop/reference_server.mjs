// A reference IDE companion server for bench/client_floor.py: the smallest one the
// official MCP TypeScript SDK allows (the SDK the VS Code companion is built on), in
// Node, with no editor behind it. It measures what the real IdeClient itself costs:
// whatever this server cannot beat, no server can.
//   node reference_server.mjs <workspace>  -> prints {"port":n,"pid":n}, writes the
//   discovery file; an openDiff call is answered at once and, 300 ms later, the
//   proposal is sent back as ide/diffAccepted, printing {"sentNs":"<monotonic ns>"}.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const token = randomUUID();
const transports = {};

function session() {
  const server = new McpServer({ name: 'reference', version: '0' });
  server.tool('openDiff', { filePath: z.string(), newContent: z.string() }, async ({ filePath, newContent }) => {
    setTimeout(async () => {
      const sent = process.hrtime.bigint();
      await server.server.notification({ method: 'ide/diffAccepted', params: { filePath, content: newContent } });
      console.log(JSON.stringify({ sentNs: sent.toString() }));
    }, 300);
    return { content: [] };
  });
  server.tool('closeDiff', { filePath: z.string() }, async () => ({ content: [] }));
  return server;
}

const http_server = http.createServer(async (req, res) => {
  if (req.headers.authorization !== `Bearer ${token}`) {
    res.writeHead(401);
    res.end();
    return;
  }
  const id = req.headers['mcp-session-id'];
  let transport = id && transports[id];
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sid) => { transports[sid] = transport; },
    });
    await session().connect(transport);
  }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
});

http_server.listen(0, '127.0.0.1', () => {
  const port = http_server.address().port;
  const dir = join(tmpdir(), 'gemini', 'ide');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `gemini-ide-server-${process.pid}-${port}.json`), JSON.stringify({
    port, workspacePath: process.argv[2], authToken: token,
    ideInfo: { name: 'vscode', displayName: 'VS Code' },
  }));
  console.log(JSON.stringify({ port, pid: process.pid }));
});
