// mock-anthropic.mjs — the Anthropic Messages API as Claude Code 2.1.328 uses it, played by the
// policy of model.mjs: `POST /v1/messages` (streamed or not) and `/v1/messages/count_tokens`.
//
// Adapted from the research tooling of Claude Code (mock-anthropic.mjs, policies/follow.mjs),
// cut down to what the client tests need. Claude Code names the MCP tool `tool` of server
// `gemini` `mcp__gemini__tool`. With tool search on (Claude Code's default), MCP tools are
// deferred: the request lists `ToolSearch` instead, and the mock selects the server's tools
// with it first, as a model is told to. A call Claude Code moved to the background as a task
// comes back in a later turn as a `<task-notification>` in a user message; each one is handed to
// the model once.

import crypto from "node:crypto";
import { FINAL_TEXT } from "./model.mjs";
import { json, serve, sse } from "./mock-http.mjs";

const PREFIX = "mcp__gemini__";

/** The text a tool_result shows the model: the string, or its text blocks joined by newlines. */
function resultText(content) {
  if (typeof content === "string") return content;
  return (content ?? []).map((b) => (b?.type === "text" ? b.text : JSON.stringify(b))).join("\n");
}

/** A background task's notification, as Claude Code writes it into a user message. */
const NOTIFICATION = /<task-notification>[\s\S]*?<\/task-notification>/g;

/** The task notifications of `messages` in order: text blocks of user messages, not results. */
function notifications(messages) {
  return (messages ?? [])
    .filter((m) => m.role === "user")
    .flatMap((m) => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content ?? []))
    .filter((b) => b?.type === "text")
    .flatMap((b) => b.text.match(NOTIFICATION) ?? []);
}

/** Token estimate for count_tokens: 4 ASCII characters a token, any other UTF-16 unit one. */
export function estimateTokens(value) {
  const s = JSON.stringify(value ?? "");
  let ascii = 0;
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) < 128) ascii++;
  return Math.ceil(ascii / 4) + (s.length - ascii);
}

const newId = (prefix) => `${prefix}_mock${crypto.randomBytes(9).toString("hex")}`;

/** Streams `msg` as the Messages API does (message_start … message_stop). */
export function streamMessage(res, msg) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  sse(res, { type: "message_start", message: { ...msg, content: [], stop_reason: null } }, "message_start");
  msg.content.forEach((block, index) => {
    const start = block.type === "text" ? { type: "text", text: "" } : { ...block, input: {} };
    sse(res, { type: "content_block_start", index, content_block: start }, "content_block_start");
    const delta =
      block.type === "text"
        ? { type: "text_delta", text: block.text }
        : { type: "input_json_delta", partial_json: JSON.stringify(block.input) };
    sse(res, { type: "content_block_delta", index, delta }, "content_block_delta");
    sse(res, { type: "content_block_stop", index }, "content_block_stop");
  });
  sse(
    res,
    {
      type: "message_delta",
      delta: { stop_reason: msg.stop_reason, stop_sequence: null },
      usage: { output_tokens: msg.usage.output_tokens },
    },
    "message_delta",
  );
  sse(res, { type: "message_stop" }, "message_stop");
  res.end();
}

/** The assistant message answering `body` with `content`, as the Messages API shapes it. */
export const assistantMessage = (body, content) => ({
  id: newId("msg"),
  type: "message",
  role: "assistant",
  model: body.model ?? "mock",
  content,
  stop_reason: content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
  stop_sequence: null,
  usage: { input_tokens: estimateTokens(body.messages), output_tokens: 10 },
});

/** Starts the mock for one conversation of `model` (a model.mjs Model). */
export async function startAnthropic(model, logFile) {
  let pending = null; // the model's step waiting for a tool search
  let searched = false;
  let lastUseId = null;

  const reply = assistantMessage;

  /** The reply of the main loop: the model's next call, a tool search first, or the end. */
  const mainLoop = (body) => {
    // The conversation only grows: the notifications past those recorded are new.
    for (const seen of notifications(body.messages).slice(model.notifications.length)) model.notified(seen);
    // The result need not be in the last message: Claude Code may add a `system` one after it.
    const ours = (body.messages ?? [])
      .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .find((b) => b?.type === "tool_result" && b.tool_use_id === lastUseId);
    if (ours && !pending) model.saw(resultText(ours.content), ours.is_error === true);
    model.hear(body.messages);
    const step = pending ?? (ours || model.calls.length === 0 ? model.next() : null);
    pending = null;
    if (!step) return [{ type: "text", text: FINAL_TEXT }];
    const name = PREFIX + step.tool;
    const tools = (body.tools ?? []).map((t) => t.name);
    if (!tools.includes(name) && tools.includes("ToolSearch") && !searched) {
      searched = true;
      pending = step;
      const query = `select:${PREFIX}${step.tool},${PREFIX}gemini_read_answer`;
      return [{ type: "tool_use", id: newId("toolu"), name: "ToolSearch", input: { query } }];
    }
    lastUseId = newId("toolu");
    return [{ type: "tool_use", id: lastUseId, name, input: step.arguments }];
  };

  return serve(async (req, body, res) => {
    const path = new URL(req.url, "http://mock").pathname;
    if (req.method === "POST" && path === "/v1/messages/count_tokens") {
      return json(res, { input_tokens: estimateTokens([body?.system, body?.messages, body?.tools]) });
    }
    if (req.method !== "POST" || path !== "/v1/messages") return json(res, {});
    // Side queries (titles, summaries) carry no tools; they are not the conversation.
    const content = body?.tools?.length ? mainLoop(body) : [{ type: "text", text: "ok" }];
    const msg = reply(body ?? {}, content);
    if (body?.stream) streamMessage(res, msg);
    else json(res, msg);
  }, logFile);
}
