// mock-openai.mjs — the OpenAI Responses API as Codex 0.169.0 uses it (`POST /v1/responses`,
// streamed), played by the policy of model.mjs.
//
// Adapted from the research tooling of Codex (mock-openai.mjs, policies/follow.mjs), cut down to
// what the client tests need. For `gpt-5.5` Codex defers MCP tools behind a client-executed
// `tool_search`; the mock searches first, then calls the tool as Codex exposes it: a function
// call with `namespace: "mcp__gemini"` and the tool's own name. What the model receives is the
// call's `function_call_output`: a string, or content items (shown here joined by newlines).

import { FINAL_TEXT } from "./model.mjs";
import { json, serve, sse, startEvents } from "./mock-http.mjs";

const NAMESPACE = "mcp__gemini";

/** The text of a function_call_output: the string, or its items' texts joined by newlines. */
function outputText(output) {
  if (typeof output === "string") return output;
  return (output ?? []).map((c) => (typeof c?.text === "string" ? c.text : JSON.stringify(c))).join("\n");
}

/** Every tool the request offers, namespaced ones and those a tool search revealed included. */
function listTools(body) {
  const out = [];
  const walk = (tools, namespace) => {
    for (const t of tools ?? []) {
      if (t?.type === "namespace") walk(t.tools, t.name);
      else out.push({ name: t?.name ?? t?.type, namespace, type: t?.type });
    }
  };
  walk(body.tools);
  for (const item of body.input ?? []) if (item?.type === "tool_search_output") walk(item.tools);
  return out;
}

/** Streams the output items of one response (response.created … response.completed). */
function streamResponse(res, id, items, body) {
  startEvents(res);
  const event = (data) => sse(res, data, data.type);
  event({ type: "response.created", response: { id, object: "response", status: "in_progress" } });
  items.forEach((item, i) => {
    const added = item.type === "message" ? { ...item, content: [] } : item;
    event({ type: "response.output_item.added", output_index: i, item: added });
    if (item.type === "message") {
      const delta = item.content[0].text;
      event({
        type: "response.output_text.delta",
        output_index: i,
        content_index: 0,
        item_id: item.id,
        delta,
      });
    }
    event({ type: "response.output_item.done", output_index: i, item });
  });
  const input = Math.ceil(JSON.stringify(body).length / 4);
  const usage = {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 10,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + 10,
  };
  event({
    type: "response.completed",
    response: { id, object: "response", status: "completed", output: items, usage },
  });
  res.end();
}

/** Starts the mock for one conversation of `model` (a model.mjs Model). */
export async function startOpenAI(model, logFile) {
  let seq = 0;
  let pending = null; // the model's step waiting for a tool search
  let searched = false;
  let lastCallId = null;
  const next = (prefix) => `${prefix}_${++seq}`;

  /** The output items of the next response. */
  const turn = (body) => {
    const ours = (body.input ?? []).find(
      (it) => it?.type === "function_call_output" && it.call_id === lastCallId,
    );
    if (ours && !pending) model.saw(outputText(ours.output), null);
    model.hear(body.input);
    const step = pending ?? (ours || model.calls.length === 0 ? model.next() : null);
    pending = null;
    if (!step) {
      const content = [{ type: "output_text", text: FINAL_TEXT, annotations: [] }];
      return [{ type: "message", id: next("msg"), role: "assistant", content }];
    }
    const tools = listTools(body);
    const found = tools.find((t) => t.namespace === NAMESPACE && t.name === step.tool);
    if (!found && !searched && tools.some((t) => t.type === "tool_search")) {
      searched = true;
      pending = step;
      const search = { query: "gemini", limit: 8 };
      return [
        {
          type: "tool_search_call",
          id: next("ts"),
          call_id: next("call"),
          status: "completed",
          execution: "client",
          arguments: search,
        },
      ];
    }
    lastCallId = next("call");
    const args = JSON.stringify(step.arguments);
    return [
      {
        type: "function_call",
        id: next("fc"),
        call_id: lastCallId,
        namespace: NAMESPACE,
        name: step.tool,
        arguments: args,
      },
    ];
  };

  return serve(async (req, body, res) => {
    const path = new URL(req.url, "http://mock").pathname;
    if (req.method === "POST" && path.endsWith("/responses") && body) {
      return streamResponse(res, next("resp"), turn(body), body);
    }
    if (req.method === "GET" && path.endsWith("/models"))
      return json(res, { object: "list", data: [], models: [] });
    json(res, {});
  }, logFile);
}
