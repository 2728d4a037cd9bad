// model.mjs — the "model" behind every mock API: a policy that calls gemini_prompt once (with
// the scenario's prompt and further arguments), then only does what it is shown.
//
// It knows nothing of the server's result format beyond the one sentence a model is meant to
// act on: `gemini_read_answer answer_id=ID offset=N`. It looks for that in the exact string the
// client handed it as the tool's result (plain text, or JSON of structuredContent, where the
// sentence sits inside a JSON string unchanged: the server writes it without quotes) and calls
// gemini_read_answer with those arguments until a result shows no continuation, then ends. The
// mocks translate its steps into their wire format and record what each call returned, and the
// task notifications a client adds to the conversation later (a call that became a background
// task: its result arrives in a new turn); the model only records those and ends that turn too.
//
// With `jobs` it starts the prompt as a job instead (gemini_start), reads the job's id in what it
// is shown (`gemini-` and 32 hex digits), and calls gemini_wait on it with `timeout_s` until it is
// shown the job completed, then reads on as above. With the jobs' `key` it starts the job under
// that idempotency_key and then starts it again (the second start should attach); with
// `cancelPrompt` it starts a second job of that prompt meanwhile, cancels it (gemini_cancel) and
// lists the jobs (gemini_jobs), before it waits on the first.

/**
 * What a prompt of the server (prompts/get, started by the user as a slash command) tells the
 * model to do: `Call TOOL with:` and its arguments, one a line, a JSON value or a named text.
 */
const INSTRUCTION = /Call (\w+) with:\n((?:- [a-z_]+: .*\n)+)/;

/** The first string in `value` (any JSON) containing `needle`. */
function findText(value, needle) {
  if (typeof value === "string") return value.includes(needle) ? value : undefined;
  if (value && typeof value === "object") {
    for (const v of Object.values(value)) {
      const found = findText(v, needle);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

/** Token estimate, as the Anthropic mock counts: 4 ASCII characters a token, any other UTF-16 unit one. */
export function estimateTokens(text) {
  let ascii = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 128) ascii++;
  return Math.ceil(ascii / 4) + (text.length - ascii);
}

/**
 * The call a prompt's message asks for: each `- name: VALUE` line an argument (a JSON value as
 * is; `context: the diff below, verbatim` the text between `<diff>` and `</diff>`), words after a
 * JSON value (a note) left out.
 */
export function instructedCall(text) {
  const found = INSTRUCTION.exec(text);
  if (!found) return null;
  const args = {};
  for (const line of found[2].trimEnd().split("\n")) {
    const [, name, raw] = /^- ([a-z_]+): (.*)$/.exec(line);
    if (name === "context") {
      const diff = /<diff>\n([\s\S]*)<\/diff>/.exec(text);
      if (diff) args.context = diff[1];
      continue;
    }
    const value = /^("(?:[^"\\]|\\.)*"|\d+)/.exec(raw);
    if (value) args[name] = JSON.parse(value[1]);
  }
  return { tool: found[1], arguments: args };
}

/** A job's id, as gemini_start shows it. */
const JOB_ID = /gemini-[0-9a-f]{32}/;

/** A finished job, as gemini_wait shows it in its text or in the JSON of its structuredContent. */
const JOB_DONE = /completed after|"state":\s*"completed"/;

/** The continuation a result may show; the last one in a result wins (it survives a head cut). */
const CONTINUATION = /gemini_read_answer answer_id=(\S+) offset=(\d+)/g;

/** More calls than any scenario needs: a loop ends here instead of at the client's timeout. */
const MAX_CALLS = 64;

/** The text the model ends with; `done` in the driver's report means it was sent. */
export const FINAL_TEXT = "I have read the whole answer.";

/** One conversation of the policy: the first call, then what the results say. */
export class Model {
  /**
   * `prompt`: the argument of the first gemini_prompt call, `extra` its other arguments (e.g.
   * `{approval_mode: "ask"}`). Each call and notification records `at_ms`, when it happened in
   * milliseconds since the model was made (the start of the run).
   */
  constructor(prompt, extra = {}, jobs = null, follow = null) {
    /**
     * `follow`: a text the prompt's message holds (e.g. `Have Gemini review`); the first call is
     * then the one that message asks for, read from what the client sends ([`Model.hear`]), and
     * `heard` keeps that message's text.
     */
    this.follow = follow;
    this.heard = null;
    this.heardIn = 0;
    this.prompt = prompt;
    this.extra = extra;
    /**
     * `{waitS, key, cancelPrompt}`: start the prompt as a job (under the idempotency_key `key`,
     * twice, when given), start and cancel a job of `cancelPrompt` when given, then wait on the
     * first `waitS` seconds at a time.
     */
    this.jobs = jobs;
    this.calls = [];
    this.notifications = [];
    this.ended = false;
    this.started = Date.now();
  }

  /**
   * The next step after the results so far: `{tool, arguments}` to call an MCP tool of the
   * server (unprefixed name), or `null` to end the turn with FINAL_TEXT.
   */
  next() {
    if (this.ended) return null;
    if (this.calls.length === 0 && this.follow) {
      const text = this.decoded ?? this.heard;
      const step = text ? instructedCall(text) : null;
      return step ? this.#call(step.tool, step.arguments) : this.#end();
    }
    if (this.calls.length === 0 && !this.jobs) {
      return this.#call("gemini_prompt", { prompt: this.prompt, ...this.extra });
    }
    const last = this.calls[this.calls.length - 1];
    if (last && (last.seen === undefined || this.calls.length >= MAX_CALLS)) return this.#end();
    if (this.jobs) {
      const step = this.#jobStep(last);
      if (step !== undefined) return step;
    }
    const found = [...last.seen.matchAll(CONTINUATION)].pop();
    if (!found) return this.#end();
    const args = { answer_id: found[1], offset: Number(found[2]) };
    // The same continuation twice would loop: a model would stop too.
    const repeated = this.calls.some(
      (c) => c.arguments.answer_id === args.answer_id && c.arguments.offset === args.offset,
    );
    if (repeated) return this.#end();
    return this.#call("gemini_read_answer", args);
  }

  /**
   * The next step of the jobs' part of the conversation: the opening calls in their order, then
   * waits on the first job until it shows completed; `undefined` once that part is over.
   */
  #jobStep(last) {
    const { key, cancelPrompt, waitS } = this.jobs;
    const idOf = (call) => (call?.seen?.match(JOB_ID) ?? [])[0];
    const start = (prompt, more) => () => this.#call("gemini_start", { arguments: { prompt, ...this.extra }, ...more });
    const keyed = key ? { idempotency_key: key } : {};
    const opening = [
      start(this.prompt, keyed),
      ...(key ? [start(this.prompt, keyed)] : []),
      ...(cancelPrompt
        ? [
            start(cancelPrompt, {}),
            () => (idOf(last) ? this.#call("gemini_cancel", { job_id: idOf(last) }) : this.#end()),
            () => this.#call("gemini_jobs", {}),
          ]
        : []),
    ];
    if (this.calls.length < opening.length) return opening[this.calls.length]();
    if (last.tool === "gemini_read_answer" || (last.tool === "gemini_wait" && JOB_DONE.test(last.seen))) {
      return undefined;
    }
    const id = idOf(this.calls[0]);
    return id ? this.#call("gemini_wait", { job_ids: [id], timeout_s: waitS }) : this.#end();
  }

  /** Reads a request's conversation (any JSON) for the message it follows, the first time. */
  hear(conversation) {
    if (!this.follow) return;
    const found = findText(conversation, this.follow);
    if (found !== undefined) this.heardIn++;
    if (this.heard === null) this.heard = found ?? null;
    // The Gemini CLI hands a prompt's text to its model JSON-encoded (a quoted string, its
    // newlines as \n): the model reads that string's value.
    if (this.heard?.startsWith('"')) {
      try {
        this.decoded = JSON.parse(this.heard);
      } catch {
        // not one JSON string: read as it is
      }
    }
  }

  /** Records what the client showed as the result of the last call. */
  saw(seen, error) {
    const last = this.calls[this.calls.length - 1];
    if (last && last.seen === undefined) Object.assign(last, { seen, error });
  }

  /** Records a task notification the client showed (`seen`: its text as the model received it). */
  notified(seen) {
    this.notifications.push({ seen, at_ms: Date.now() - this.started });
  }

  #call(tool, args) {
    const at_ms = Date.now() - this.started;
    this.calls.push({ tool, arguments: args, seen: undefined, error: null, at_ms });
    return { tool, arguments: args };
  }

  #end() {
    this.ended = true;
    return null;
  }
}
