// plugin-model.mjs — the Anthropic Messages API for `claude plugin eval`, played by a scripted
// model that decides from what Claude Code shows it whether a request is one for Gemini.
//
// The policy `follow` reads, like a model would, only the request Claude Code sends:
// 1. The user's request (the first user message's text that is not a `<system-reminder>`) and
//    the skill listing ("The following skills are available for use with the Skill tool:", one
//    `- name: description` line a skill). A skill fits when the words of its description's
//    "Use when …"/"Use for …" sentence share at least two words with the request, more than its
//    "not for …" part does; the best fit is invoked with the Skill tool. No skill fits: the model
//    answers directly, with no tool.
// 2. The skill's text (the Skill tool's result) names the tool to call (its first `gemini_prompt…`
//    name in backticks) and the approval mode (`approval_mode`: `"…"`). The model finds the tool
//    whose name ends in `__<that name>` (loading it with ToolSearch first when it is deferred) and
//    calls it with the request as `prompt`, the request's fenced block (a diff) as `context`, and
//    that approval mode.
// 3. The tool's result ends the turn: the final text quotes it ("Gemini says: …").
// So the plugin's own text decides: a skill whose description does not fit a review request, or
// one that names no tool, makes the review case fail.
//
// A command the user typed (`/geminicli-mcp:review …`: Claude Code sends `<command-name>` and then
// the command's text with its arguments in place) is followed the same way: the git command its
// text gives for the arguments (`staged` (`git diff --cached`), or the one for "Nothing given")
// runs with Bash, then the tool and approval mode its text names are called with that diff as
// `context` and the arguments' `focus:` in the prompt; the tool's result ends the turn.
//
// Two policies script the wrong behaviour, to show the evals fail on it: `always-gemini` calls
// the Gemini tool for every request (skipping the skills), `never-gemini` answers every request
// directly. Requests without tools (titles, summaries) are answered "ok".

import crypto from "node:crypto";
import { assistantMessage, streamMessage } from "./mock-anthropic.mjs";
import { json, serve } from "./mock-http.mjs";

/** The policies, by name. */
export const POLICIES = ["follow", "always-gemini", "never-gemini"];

/** Words that say nothing about what a request is for. */
const STOP = new Set(
  "the a an and or of to in on for with from by at is are be this that these those what which how when use user asks your you it its as not into than then one".split(
    " ",
  ),
);

/** The content words of `text`: lower case, letters and digits, three characters or more. */
function words(text) {
  return new Set(
    (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => w.length >= 3 && !STOP.has(w)),
  );
}

const overlap = (a, b) => [...a].filter((w) => b.has(w)).length;

/** Every text block of `content` (a string or a list of blocks). */
const texts = (content) =>
  typeof content === "string"
    ? [content]
    : (content ?? []).filter((b) => b?.type === "text").map((b) => b.text);

/** The user's request: the first user message's last text that is not a system reminder. */
function request(messages) {
  const first = (messages ?? []).find((m) => m.role === "user");
  return texts(first?.content)
    .filter((t) => !t.trimStart().startsWith("<system-reminder>"))
    .pop() ?? "";
}

/** Every text of the request body: the system prompt and every message's text blocks. */
function allText(body) {
  return [...texts(body.system), ...(body.messages ?? []).flatMap((m) => texts(m.content))].join("\n");
}

/** The skill listing: `[{name, description}]`. */
function skills(body) {
  const text = allText(body);
  const at = text.indexOf("The following skills are available for use with the Skill tool:");
  if (at < 0) return [];
  return [...text.slice(at).matchAll(/^- ([\w:.-]+): (.+)$/gm)].map((m) => ({ name: m[1], description: m[2] }));
}

/** How well a skill fits `req`: its "Use when/for" words shared, or 0 when its "not for" part fits as well. */
function fit(description, req) {
  const use = description.match(/\bUse (?:when|for|this skill when)\b([^]*)$/i)?.[1] ?? "";
  const [yes, no = ""] = use.split(/\bnot for\b/i);
  const want = words(req);
  const score = overlap(words(yes), want);
  return score >= 2 && score > overlap(words(no), want) ? score : 0;
}

/** The tool names Claude Code lists, loaded or deferred (names in the deferred-tools section). */
function toolNames(body) {
  const loaded = (body.tools ?? []).map((t) => t.name);
  const text = allText(body);
  const at = text.indexOf("deferred tools are now available via ToolSearch");
  const deferred = at < 0 ? [] : [...text.slice(at).matchAll(/^(mcp__\S+)$/gm)].map((m) => m[1]);
  return { loaded, deferred };
}

/** The command the user typed: its arguments and its text as Claude Code expanded it. */
function commandText(messages) {
  const blocks = texts((messages ?? []).find((m) => m.role === "user" && texts(m.content).some((t) => t.includes("<command-name>")))?.content);
  const at = blocks.findIndex((t) => t.includes("<command-name>"));
  if (at < 0) return null;
  const args = blocks[at].match(/<command-args>([^]*?)<\/command-args>/)?.[1]?.trim() ?? "";
  return { args, text: blocks.slice(at + 1).join("\n") };
}

/** The fenced block of `text` (a diff pasted into the request), if any. */
const fenced = (text) => text.match(/```[a-z]*\n([^]*?)```/)?.[1];

const newId = (prefix) => `${prefix}_mock${crypto.randomBytes(9).toString("hex")}`;

/** The tool_use blocks of the assistant and the tool_result blocks of the user, by id. */
function results(messages) {
  const out = new Map();
  for (const m of messages ?? []) {
    if (m.role !== "user" || !Array.isArray(m.content)) continue;
    for (const b of m.content) if (b?.type === "tool_result") out.set(b.tool_use_id, b);
  }
  return out;
}

const resultText = (r) => (typeof r.content === "string" ? r.content : texts(r.content).join("\n"));

/**
 * Starts the mock API for `policy` (one of POLICIES). Each conversation is stateless on the mock's
 * side: the next step is derived from the messages so far, so concurrent runs do not mix.
 * `decisions` records, per conversation, what the model did: `{request, skill, tool, arguments}`,
 * with the Gemini call's `id` and, once it answered, what the model was shown (`seen`); a typed
 * command's conversation has `skill: "command"` and the git command it ran (`git`).
 */
export async function startPluginModel(policy, logFile) {
  if (!POLICIES.includes(policy)) throw new Error(`unknown policy ${policy}`);
  const decisions = [];

  /** The tool_use that calls `suffix`'s tool, through ToolSearch while it is deferred. */
  const callTool = (body, suffix, input) => {
    const { loaded, deferred } = toolNames(body);
    const name = [...loaded, ...deferred].find((n) => n.endsWith(`__${suffix}`));
    if (!name) return null;
    if (!loaded.includes(name) && loaded.includes("ToolSearch")) {
      return { type: "tool_use", id: newId("toolu"), name: "ToolSearch", input: { query: `select:${name}` } };
    }
    return { type: "tool_use", id: newId("toolu"), name, input };
  };

  const step = (body) => {
    const messages = body.messages ?? [];
    const req = request(messages);
    const assistant = messages.filter((m) => m.role === "assistant").flatMap((m) => (Array.isArray(m.content) ? m.content : []));
    const uses = assistant.filter((b) => b?.type === "tool_use");
    const done = results(messages);
    const last = uses[uses.length - 1];
    const lastResult = last && done.get(last.id);
    const decision = { request: req, skill: null, tool: null, arguments: null };

    // A Gemini tool answered: report it.
    if (last && /__gemini_prompt\w*$/.test(last.name) && lastResult) {
      const made = decisions.find((d) => d.id === last.id);
      if (made) made.seen = resultText(lastResult);
      return [{ type: "text", text: `Gemini says: ${resultText(lastResult)}` }];
    }
    if (policy === "never-gemini") return [{ type: "text", text: "Answered directly, without Gemini." }];

    const geminiInput = (approval) => ({
      prompt: req,
      ...(fenced(req) ? { context: fenced(req) } : {}),
      approval_mode: approval,
    });
    const pending = uses.find((u) => u.name === "ToolSearch" && done.has(u.id));
    if (policy === "always-gemini") {
      const suffix = pending ? pending.input.query.split("__").pop() : "gemini_prompt";
      const use = callTool(body, suffix, geminiInput("plan"));
      if (use && use.name !== "ToolSearch") decisions.push({ ...decision, id: use.id, tool: use.name, arguments: use.input });
      return use ? [use] : [{ type: "text", text: "No Gemini tool is listed." }];
    }

    const command = commandText(messages);
    if (command) return commandStep(body, command, uses, done, decision);

    // follow: the skill first, then the tool its text names.
    const skillUse = uses.find((u) => u.name === "Skill");
    if (!skillUse) {
      const best = skills(body)
        .map((s) => ({ ...s, score: fit(s.description, req) }))
        .filter((s) => s.score > 0)
        .sort((a, b) => b.score - a.score)[0];
      if (!best) {
        decisions.push(decision);
        return [{ type: "text", text: "Answered directly, without Gemini." }];
      }
      return [{ type: "tool_use", id: newId("toolu"), name: "Skill", input: { skill: best.name } }];
    }
    const skillText = done.has(skillUse.id) ? resultText(done.get(skillUse.id)) : "";
    // Claude Code may put the skill's body in a later user message instead of the result.
    const body_ = skillText.includes("gemini_prompt") ? skillText : allText(body);
    const tool = body_.match(/`(gemini_prompt\w*)`/)?.[1];
    const approval = body_.match(/`approval_mode`: `"(\w+)"`/)?.[1];
    if (!tool || !approval) return [{ type: "text", text: "The skill names no Gemini tool." }];
    const use = callTool(body, tool, geminiInput(approval));
    if (!use) return [{ type: "text", text: `No tool ending in ${tool} is listed.` }];
    if (use.name !== "ToolSearch") {
      decisions.push({ ...decision, id: use.id, skill: skillUse.input.skill, tool: use.name, arguments: use.input });
    }
    return [use];
  };

  /** The steps of a typed command: its git command with Bash, then the Gemini tool it names. */
  const commandStep = (body, { args, text }, uses, done, decision) => {
    const bash = uses.find((u) => u.name === "Bash");
    if (!bash) {
      const given = args.match(/\b(staged|unstaged)\b/)?.[1];
      const git = given
        ? text.match(new RegExp("`" + given + "` \\(`([^`]+)`\\)"))?.[1]
        : text.match(/Nothing given:[^(]*\(`([^`]+)`\)/)?.[1];
      if (!git) return [{ type: "text", text: "The command names no git command." }];
      return [{ type: "tool_use", id: newId("toolu"), name: "Bash", input: { command: git, description: "the change" } }];
    }
    if (!done.has(bash.id)) return [{ type: "text", text: "Bash gave no result." }];
    const diff = resultText(done.get(bash.id));
    const tool = text.match(/`(gemini_prompt\w*)`/)?.[1];
    const approval = text.match(/`approval_mode: "(\w+)"`/)?.[1];
    if (!tool || !approval) return [{ type: "text", text: "The command names no Gemini tool." }];
    const focus = args.match(/focus:\s*(.+)$/)?.[1];
    const prompt = `Review this change.${focus ? ` Focus on ${focus}.` : ""}`;
    const use = callTool(body, tool, { prompt, context: diff, approval_mode: approval });
    if (!use) return [{ type: "text", text: `No tool ending in ${tool} is listed.` }];
    if (use.name !== "ToolSearch") {
      decisions.push({ ...decision, id: use.id, skill: "command", git: bash.input.command, tool: use.name, arguments: use.input });
    }
    return [use];
  };

  const reply = assistantMessage;

  const server = await serve(async (req, body, res) => {
    const path = new URL(req.url, "http://mock").pathname;
    // No token counting: `claude plugin details` then shows Claude Code's own estimate, not this
    // mock's.
    if (req.method === "POST" && path === "/v1/messages/count_tokens") {
      return json(res, { type: "error", error: { type: "not_found_error", message: "not here" } }, 404);
    }
    if (req.method !== "POST" || path !== "/v1/messages") return json(res, {});
    const content = body?.tools?.length ? step(body) : [{ type: "text", text: "ok" }];
    const msg = reply(body ?? {}, content);
    if (body?.stream) streamMessage(res, msg);
    else json(res, msg);
  }, logFile);
  return { ...server, decisions };
}
