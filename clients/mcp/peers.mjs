// Clients nobody here wrote, against `sluicegate serve`'s MCP routes; prints one JSON line.
//   node peers.mjs mastra-mcp <base> <serverId> <token> [http|sse]  # @mastra/mcp's MCPClient
//   node peers.mjs client-js  <base> <serverId> <token>             # the unmodified @mastra/client-js
import { MastraClient } from "@mastra/client-js";
import { MCPClient } from "@mastra/mcp";

const [mode, base, serverId, token, transport = "http"] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${token}` };

if (mode === "mastra-mcp") {
  const path = transport === "sse" ? "sse" : "mcp";
  const mcp = new MCPClient({
    id: `sluicegate-peer-${transport}`,
    servers: { sg: { url: new URL(`${base}/api/mcp/${serverId}/${path}`), requestInit: { headers }, eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...(init?.headers ?? {}), ...headers } }) } } },
    timeout: 30000,
  });
  try {
    const tools = await mcp.listTools();
    const result = await tools["sg_add"].execute({ a: 2, b: 3 }, {});
    console.log(JSON.stringify({ tools: Object.keys(tools).sort(), result }));
  } finally {
    await mcp.disconnect();
  }
} else if (mode === "client-js") {
  const client = new MastraClient({ baseUrl: base, headers, retries: 0 });
  const servers = await client.getMcpServers();
  const tools = await client.getMcpServerTools(serverId);
  console.log(JSON.stringify({ servers, tools }));
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
