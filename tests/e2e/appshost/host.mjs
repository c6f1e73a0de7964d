// A test-only MCP Apps host, built from the ext-apps SDK's `app-bridge` export and the official MCP client:
// it connects to the served Lens Relay as an MCP client (it alone holds the credential), calls the review
// tool as a model would, loads the tool's `ui://` page into a sandboxed iframe (scripts only, an opaque
// origin: the page can reach nothing of the host), and proxies the page's tool calls to the server.
// Bundled at test time with editor/node_modules/.bin/esbuild (tests/e2e/test_review_app_browser.py).
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import {
  AppBridge,
  PostMessageTransport,
  getToolUiResourceUri,
  isToolVisibilityAppOnly,
  isToolVisibilityModelOnly,
} from "@modelcontextprotocol/ext-apps/app-bridge";

const HOST = { name: "lensrelay-test-host", version: "1.0.0" };

window.appCalls = [];

window.startReview = async ({ token, tool, args }) => {
  const client = new Client(HOST);
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", location.href), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  const reviewTool = byName.get(tool);
  const uri = getToolUiResourceUri(reviewTool);
  // What a host shows the model: every tool but the app-only ones.
  window.modelTools = tools.filter((t) => !isToolVisibilityAppOnly(t)).map((t) => t.name);

  const result = await client.callTool({ name: tool, arguments: args });
  const resource = await client.readResource({ uri });
  const page = resource.contents[0];

  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.id = "app";
  iframe.style.cssText = "width: 100%; height: 600px; border: 1px solid #ccc";
  document.body.append(iframe);

  const bridge = new AppBridge(client, HOST, { serverTools: {} });
  bridge.oninitialized = async () => {
    await bridge.sendToolInput({ arguments: args });
    await bridge.sendToolResult(result);
    window.appReady = true;
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  // Set after connect, which installs the SDK's own forwarding to the client. The host's own check: the
  // page may call only tools meant for apps (this server's, unless model-only); each call is recorded.
  bridge.oncalltool = async (params) => {
    const called = byName.get(params.name);
    if (!called || isToolVisibilityModelOnly(called)) throw new Error(`not for apps: ${params.name}`);
    const [startedAt, started] = [Date.now(), performance.now()];
    // A host far from the server, for one tool, when a test asks (window.slowTools: name -> ms).
    const slow = (window.slowTools || {})[params.name];
    if (slow) await new Promise((resolve) => setTimeout(resolve, slow));
    const answer = await client.callTool(params);
    window.appCalls.push({ name: params.name, startedAt, ms: performance.now() - started });
    return answer;
  };
  iframe.srcdoc = page.text;
  const key = result._meta?.["lensrelay/review"]?.key;
  const seenByModel = JSON.stringify([result.content, result.structuredContent]);
  return { mimeType: page.mimeType, uri, hasKey: Boolean(key), modelSawKey: Boolean(key) && seenByModel.includes(key) };
};
