// mock-gemini.mjs — the Gemini API as the Gemini CLI 0.61.0 uses it with an API key
// (`GOOGLE_GEMINI_BASE_URL`), played by the policy of model.mjs, for running the Gemini CLI as an
// MCP client of geminicli-mcp.
//
// fake-gemini-api (fake-gemini's scripted API) plays fixed turns and cannot call
// gemini_read_answer with an id it has only just been shown, so the client tests use this
// policy-driven mock instead; its wire shapes follow fake-gemini-api's, which match captures of
// the real API. Routes: `:streamGenerateContent` (the conversation), `:generateContent`
// (one-shot JSON calls; under the `auto` model that is the router, which wants a classifier
// verdict) and `:countTokens`. The CLI names the MCP tool `tool` of server `gemini`
// `mcp_gemini_tool`; what the model receives is the `functionResponse`'s `response`: `{output}`
// on success, `{error}` on a failure.

import { FINAL_TEXT } from "./model.mjs";
import { json, serve, sse, startEvents } from "./mock-http.mjs";

const PREFIX = "mcp_gemini_";

const USAGE = { promptTokenCount: 100, candidatesTokenCount: 10, totalTokenCount: 110 };

/** The router's classifier verdict (the choice fake-gemini-api makes too). */
const VERDICT = JSON.stringify({
  reasoning: "A simple request.",
  model_choice: "flash",
  complexity_score: 10,
  complexity_reasoning: "A simple request.",
});

/** One complete GenerateContentResponse with `parts`. */
function response(model, parts) {
  return {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: USAGE,
    modelVersion: model,
  };
}

/** What the model reads in a function response, and whether the CLI marked it as an error. */
function shown(resp) {
  if (typeof resp?.output === "string") return [resp.output, false];
  if (typeof resp?.error === "string") return [resp.error, true];
  return [JSON.stringify(resp ?? null), resp?.error !== undefined];
}

/** Starts the mock for one conversation of `model` (a model.mjs Model). */
export async function startGemini(model, logFile) {
  /** The parts of the next model turn. */
  const turn = (body) => {
    // One function response per call made: when they match, the newest answers the last call.
    const responses = (body.contents ?? [])
      .flatMap((c) => c.parts ?? [])
      .filter((p) => p.functionResponse?.name?.startsWith(PREFIX));
    const answered = responses.length === model.calls.length;
    if (answered && responses.length > 0) model.saw(...shown(responses.at(-1).functionResponse.response));
    model.hear(body.contents);
    const step = answered ? model.next() : null;
    if (!step) return [{ text: FINAL_TEXT }];
    return [{ functionCall: { name: PREFIX + step.tool, args: step.arguments } }];
  };

  return serve(async (req, body, res) => {
    const url = new URL(req.url, "http://mock");
    const [, modelName = "", method = ""] = /\/models\/([^:/]+):(\w+)$/.exec(url.pathname) ?? [];
    if (req.method === "POST" && body && method === "countTokens") {
      return json(res, { totalTokens: Math.ceil(JSON.stringify(body).length / 4) });
    }
    if (req.method === "POST" && body && method === "generateContent") {
      return json(res, response(modelName, [{ text: VERDICT }]));
    }
    if (req.method !== "POST" || !body || method !== "streamGenerateContent") {
      return json(res, { error: { code: 404, message: "no route", status: "NOT_FOUND" } }, 404);
    }
    startEvents(res);
    sse(res, response(modelName, turn(body)));
    res.end();
  }, logFile);
}
