// An independent check of `quarry mcp`: the official TypeScript MCP client
// starts the server over stdio, lists its tools, ingests a folder through
// a job and searches it. It prints "N passed, M failed" and exits non-zero
// on any failure. Environment: QUARRY_BIN (the quarry binary), QUARRY_KB
// (a knowledge base directory), QUARRY_DOCS (a folder with guide.md).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const { QUARRY_BIN, QUARRY_KB, QUARRY_DOCS } = process.env;
let passed = 0, failed = 0;
function check(name, ok, detail) {
  if (ok) { passed++; } else { failed++; console.error(`FAIL ${name}: ${detail ?? ""}`); }
}

const transport = new StdioClientTransport({
  command: QUARRY_BIN,
  args: ["mcp", "--kb", QUARRY_KB, "--root", QUARRY_DOCS],
  stderr: "inherit",
});
const client = new Client({ name: "quarry-ts-check", version: "1.0.0" });
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const want of ["knowledge_search", "knowledge_ask", "knowledge_ingest", "knowledge_ingest_status",
    "knowledge_add_documents", "knowledge_delete", "knowledge_status"]) {
    check(`tool ${want} listed`, names.includes(want), names.join(","));
  }
  const search = tools.find((t) => t.name === "knowledge_search");
  check("search schema requires query", search?.inputSchema?.required?.includes("query"), JSON.stringify(search?.inputSchema));
  check("search has an output schema", !!search?.outputSchema);

  const ingest = await client.callTool({ name: "knowledge_ingest", arguments: { paths: [QUARRY_DOCS] } });
  const job = ingest.structuredContent?.job_id;
  check("ingest returns a job id", typeof job === "string" && job.length > 0, JSON.stringify(ingest));
  let state = "running";
  for (let i = 0; i < 200 && state === "running"; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const st = await client.callTool({ name: "knowledge_ingest_status", arguments: { job_id: job } });
    state = st.structuredContent?.state;
  }
  check("ingest job finishes", state === "done", state);

  const res = await client.callTool({ name: "knowledge_search", arguments: { query: "volcano lava eruption", top_k: 3 } });
  const top = res.structuredContent?.results?.[0];
  check("search finds the guide", top?.source === "guide.md", JSON.stringify(res.structuredContent));
  check("search result carries headings", Array.isArray(top?.headings) && top.headings[0] === "Volcanoes", JSON.stringify(top));
  check("search returns readable text", res.content?.some((c) => c.type === "text" && c.text.includes("guide.md")), JSON.stringify(res.content));

  const bad = await client.callTool({ name: "knowledge_search", arguments: { query: "x", filter: "year >= 'soon'" } });
  check("a bad filter is a tool error", bad.isError === true, JSON.stringify(bad));

  const outside = await client.callTool({ name: "knowledge_ingest", arguments: { paths: ["/etc"] } });
  check("a path outside the roots is refused", outside.isError === true, JSON.stringify(outside));
} catch (e) {
  failed++;
  console.error(`FAIL unexpected error: ${e?.stack ?? e}`);
} finally {
  await client.close().catch(() => {});
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
