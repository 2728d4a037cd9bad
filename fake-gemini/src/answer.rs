//! The run that reaches the model: the answer derived from the scenario's model behaviour for
//! the chosen output format (deltas, tool calls, stats, API failures with their retries and exit
//! codes), and the process faults that happen during it (floods, hangs, crashes, descendants).

use serde_json::{json, Value};

use crate::cli::Args;
use crate::invocation::Ctx;
use crate::output::{self, event, Format, Stats, Tokens};
use crate::scenario::{self, Descendant, FailureKind, Hang, Then, Turn, UnknownModel};
use crate::sys::{env_ms, sleep_ms};
use crate::sys::{err, err_line, out};
use crate::{clock, proc, texts};

/// Resolves a requested model as the real CLI does: (router version under auto, main version).
pub fn resolve_model(requested: &str) -> (Option<&'static str>, String, bool) {
    const KNOWN: &[&str] = &[
        "gemini-3-pro-preview",
        "gemini-3.1-pro-preview",
        "gemini-3.1-pro-preview-customtools",
        "gemini-3-flash-preview",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "gemini-2.5-flash-lite",
        "gemini-3.5-flash",
        "gemini-3.8-flash",
        "gemini-3-flash",
        "gemini-3.1-flash-lite",
        "gemini-3.5-flash-lite",
        "gemma-4-31b-it",
        "gemma-4-26b-a4b-it",
    ];
    match requested {
        "auto" | "auto-gemini-3" => (
            Some("gemini-3.5-flash-lite"),
            "gemini-3.8-flash".into(),
            true,
        ),
        "auto-gemini-2.5" => (
            Some("gemini-2.5-flash-lite"),
            "gemini-2.5-flash".into(),
            true,
        ),
        "pro" => (None, "gemini-3.1-pro-preview".into(), true),
        "flash" => (None, "gemini-3.8-flash".into(), true),
        "flash-lite" => (None, "gemini-3.5-flash-lite".into(), true),
        m => (None, m.to_string(), KNOWN.contains(&m)),
    }
}

/// The CLI's `estimateTextTokens`: over 100,000 UTF-16 units, a quarter token per unit; below,
/// 0.25 per ASCII unit and 1.5 per other unit.
fn estimate_text_tokens(s: &str) -> f64 {
    let units: Vec<u16> = s.encode_utf16().collect();
    if units.len() > 100_000 {
        return units.len() as f64 / 4.0;
    }
    units
        .iter()
        .map(|&u| if u <= 127 { 0.25 } else { 1.5 })
        .sum()
}

/// The `<session_context>` part the CLI sends before the prompt (date, paths, a listing of the
/// cwd) counts towards the same estimate: 492 ASCII characters in an empty directory, observed on
/// 0.61.0, so the limit measured there is 4,193,815 prompt characters sent, 4,193,816 not.
const SESSION_CONTEXT_TOKENS: f64 = 492.0 / 4.0;

/// Whether the CLI would skip the request as too large for the context window of `limit` tokens.
pub(crate) fn over_context_window(prompt: &str, limit: u64) -> bool {
    (SESSION_CONTEXT_TOKENS + estimate_text_tokens(prompt)).floor() as u64 > limit
}

const NON_UTF8_A: char = '\u{E000}';
const NON_UTF8_B: char = '\u{E001}';

/// Derives the CLI's output from the model behaviour.
pub(crate) struct Runner<'a> {
    ctx: &'a Ctx,
    format: Format,
    yolo: bool,
    raw: bool,
    pub(crate) session_id: String,
    requested: String,
    pub(crate) main_model: String,
    router_model: Option<String>,
    stats: Stats,
    pub(crate) reply: Option<String>,
    /// Text of the current (last) model turn, for `-o json`.
    turn_text: String,
    /// Everything the model said.
    pub(crate) full_text: String,
    /// Text mode: what stdout ends with.
    text_written: bool,
    text_last_nl: bool,
    chunks_emitted: u32,
    pub(crate) never_sent: bool,
    non_utf8: bool,
    /// Called once when the prompt goes to the model (after `delay-ms`, the request's latency),
    /// where the real CLI records the user message in the session file.
    pub(crate) on_sent: Option<Box<dyn FnOnce() + 'a>>,
}

impl<'a> Runner<'a> {
    /// Plan mode: under `auto` the CLI skips the classifier and asks the pro model with the
    /// custom tools (observed on 0.61.0, headless and in ACP).
    pub(crate) fn plan_mode(&mut self) {
        if self.requested == "auto" {
            self.router_model = None;
            self.main_model = self
                .ctx
                .scenario
                .model
                .version
                .clone()
                .unwrap_or_else(|| "gemini-3.1-pro-preview-customtools".into());
        }
    }

    pub(crate) fn new(
        ctx: &'a Ctx,
        args: &Args,
        format: Format,
        yolo: bool,
        session_id: String,
    ) -> Self {
        let requested = args
            .nonempty("model")
            .map(String::from)
            .or_else(|| std::env::var("GEMINI_MODEL").ok().filter(|m| !m.is_empty()))
            .unwrap_or_else(|| "auto".into());
        let (router, main, _) = resolve_model(&requested);
        let m = &ctx.scenario.model;
        Runner {
            ctx,
            format,
            yolo,
            raw: args.flag("raw-output"),
            session_id,
            main_model: m.version.clone().unwrap_or(main),
            router_model: router.map(|r| m.router_version.clone().unwrap_or_else(|| r.to_string())),
            requested,
            stats: Stats::default(),
            reply: None,
            turn_text: String::new(),
            full_text: String::new(),
            text_written: false,
            text_last_nl: false,
            chunks_emitted: 0,
            never_sent: false,
            non_utf8: ctx.scenario.process.non_utf8,
            on_sent: None,
        }
    }

    fn tokens(&self) -> Tokens {
        let u = &self.ctx.scenario.model.usage;
        Tokens {
            prompt: u.prompt,
            candidates: u.candidates,
            thoughts: u.thoughts,
            cached: u.cached,
            tool: 0,
        }
    }

    /// The run's wall time as the CLI reports it: never less than the API latencies it adds up
    /// (a fast fake would otherwise print 0, which a real run that reached the model never does).
    fn duration(&self) -> u64 {
        let elapsed = self.ctx.start.elapsed().as_millis() as u64;
        elapsed.max(self.stats.latency_total() + 1)
    }

    fn write(&self, bytes: Vec<u8>) {
        if self.non_utf8 {
            let s = String::from_utf8_lossy(&bytes).into_owned();
            let mut b = Vec::with_capacity(bytes.len());
            for c in s.chars() {
                match c {
                    NON_UTF8_A => b.push(0xE9),
                    NON_UTF8_B => b.extend_from_slice(&[0xFF, 0xFE]),
                    c => {
                        let mut buf = [0u8; 4];
                        b.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                    }
                }
            }
            out(&b);
        } else {
            out(&bytes);
        }
    }

    fn emit(&self, kind: &str, fields: Value) {
        self.write(event(kind, fields));
    }

    fn chunk(&mut self, text: &str) {
        let clean = if self.raw {
            text.to_string()
        } else {
            output::strip_ansi(text)
        };
        self.turn_text.push_str(&clean);
        self.full_text.push_str(&clean);
        match self.format {
            Format::Text => {
                if !clean.is_empty() {
                    self.text_written = true;
                    self.text_last_nl = clean.ends_with('\n');
                    self.write(clean.into_bytes());
                }
            }
            Format::StreamJson => {
                let line = event(
                    "message",
                    json!({"role": "assistant", "content": clean, "delta": true}),
                );
                let sc = &self.ctx.scenario;
                match sc.process.long_line_bytes {
                    // `long-line` with `interval-ms`: the one line dribbles out in ten pieces,
                    // `interval-ms` apart (bytes flow, no line completes meanwhile).
                    Some(_) if sc.model.chunk_interval_ms > 0 => {
                        let piece = line.len().div_ceil(10).max(1);
                        for (k, p) in line.chunks(piece).enumerate() {
                            if k > 0 {
                                sleep_ms(sc.model.chunk_interval_ms);
                            }
                            self.write(p.to_vec());
                        }
                    }
                    _ => self.write(line),
                }
            }
            Format::Json => {}
        }
        self.chunks_emitted += 1;
    }

    fn ensure_newline(&mut self) {
        if self.format == Format::Text && self.text_written && !self.text_last_nl {
            self.write(b"\n".to_vec());
            self.text_last_nl = true;
        }
    }

    fn stream_stats(&self, duration: u64) -> Value {
        self.stats.stream_json(duration)
    }

    /// Runs the model; `None` = the process ends by a signal or hangs.
    #[expect(
        clippy::too_many_lines,
        reason = "the real CLI's headless run in its order (router, stream, tools, result), as observed"
    )]
    pub(crate) fn run(&mut self) -> Option<i32> {
        let ctx = self.ctx;
        let sc = &ctx.scenario;
        if sc.process.hang == Some(Hang::BeforeOutput) {
            ctx.log(None);
            proc::hang();
        }
        if self.format == Format::StreamJson {
            self.emit(
                "init",
                json!({"session_id": self.session_id, "model": self.requested}),
            );
        }
        if let Some(raw) = &sc.environment.raw_stdout_before_answer {
            out(raw.as_bytes());
        } else if runs_memory_show(&ctx.prompt) {
            // The one slash command that runs with -p: raw text on stdout, then still sent.
            out(memory_show().as_bytes());
        }
        if self.format == Format::StreamJson {
            self.emit("message", json!({"role": "user", "content": ctx.prompt}));
            if sc.process.invalid_json {
                out(b"{\"type\":\"message\",\"timestamp\":\n");
            }
        }
        if sc.process.hang == Some(Hang::BeforeOutput) {
            ctx.log(None);
            proc::hang();
        }
        // A prompt beyond the context window is never sent.
        let limit = sc
            .environment
            .context_window_tokens
            .or_else(|| env_ms("FAKE_GEMINI_CONTEXT_TOKENS"))
            .unwrap_or(1_048_576);
        if over_context_window(&ctx.prompt, limit) {
            self.never_sent = true;
            ctx.log(Some(0));
            return Some(self.success(&[]));
        }
        if let Some(n) = sc.process.flood_stderr_bytes {
            flood_stderr(n, &ctx.version);
        }
        let (_, _, known) = resolve_model(&self.requested);
        let mut failure = sc.model.failure.clone();
        if crate::scenario::failing_model().is_some_and(|m| m != self.requested) {
            failure = None;
        }
        if !known
            && sc.model.unknown_model == UnknownModel::NotFound
            && failure.is_none()
            && sc.model.version.is_none()
        {
            failure = Some(scenario::Failure::status(404));
        }
        let exit_hint = self.predict_exit(failure.as_ref());
        if sc.process.crash_signal.is_none()
            && sc.process.hang.is_none()
            && sc.process.hang_after_chunks.is_none()
            && !(sc.process.descendant.is_some() && sc.process.then == Then::Hang)
            && sc.environment.cancel_after_chunks.is_none()
        {
            ctx.log(exit_hint);
        } else {
            ctx.log(None);
        }
        if let Some(router) = self.router_model.clone() {
            if failure
                .as_ref()
                .is_none_or(|f| f.kind != FailureKind::Network)
            {
                self.stats
                    .response(&router, "utility_router", self.tokens(), 3);
            }
        }
        sleep_ms(sc.model.delay_ms);
        crate::sys::wait_for_file(sc.model.until_file.as_deref(), |ms| {
            sleep_ms(ms);
            true
        });
        if let Some(sent) = self.on_sent.take() {
            sent();
        }
        // `after-turns`: that many responses (and their tool calls) come first.
        let deferred = failure
            .clone()
            .filter(|f| f.after_turns.is_some_and(|n| n > 0));
        if let Some(f) = failure.filter(|_| deferred.is_none()) {
            return Some(self.fail(&f));
        }
        if let Some(n) = sc.process.flood_stdout_bytes {
            return Some(self.flood(n));
        }
        let mut turns: Vec<Turn> = sc.model.turns.clone();
        if turns.is_empty() {
            turns.push(Turn {
                chunks: vec!["Hello".into(), " there! How can I help?".into()],
                ..Turn::default()
            });
        }
        if let Some(r) = &self.reply {
            let last = turns.last_mut().expect("one turn");
            last.text = Some(r.clone());
            last.chunks.clear();
        }
        if let Some(n) = sc.process.long_line_bytes {
            turns = vec![Turn {
                text: Some(pattern(n as usize, false)),
                ..Turn::default()
            }];
        }
        if self.non_utf8 {
            turns = vec![Turn {
                chunks: vec![format!("caf{NON_UTF8_A} "), format!("{NON_UTF8_B} ok")],
                ..Turn::default()
            }];
            err(b"warning: \xff\xfe not utf-8\n");
        }
        let mut warnings: Vec<&str> = Vec::new();
        let mut turn_count = 0u32;
        let mut i = 0usize;
        let mut loops = 0u32;
        while i < turns.len() {
            if let Some(f) = deferred
                .as_ref()
                .filter(|f| f.after_turns.is_some_and(|n| turn_count >= n))
            {
                return Some(self.fail(f));
            }
            if let Some(max) = sc.environment.max_session_turns {
                if turn_count >= max {
                    return Some(self.fatal("FatalTurnLimitedError", texts::TURN_LIMIT, 53, true));
                }
            }
            turn_count += 1;
            let turn = turns[i].clone();
            self.turn_text.clear();
            let mut chunks = turn.chunks.clone();
            if chunks.is_empty() {
                if let Some(t) = &turn.text {
                    chunks.push(t.clone());
                }
            }
            let suppress_calls = sc.model.loop_detected && loops >= 4;
            for (k, c) in chunks.iter().enumerate() {
                if k > 0 || self.chunks_emitted > 0 {
                    sleep_ms(sc.model.chunk_interval_ms);
                }
                self.chunk(c);
                self.after_chunk();
            }
            // Every response reports the scenario's usage; the loop detector's extra request is
            // not counted (observed: 4 counted responses for 6 answers).
            let tok = self.tokens();
            if !suppress_calls {
                self.stats
                    .response(&self.main_model.clone(), "main", tok, 40);
            }
            if suppress_calls {
                // The loop detector suppresses the repeated call and asks the model once more.
                let again = chunks.join("");
                self.chunk(&again);
                self.ensure_newline();
                warnings.push(texts::LOOP_DETECTED);
                if self.format == Format::StreamJson {
                    self.emit(
                        "error",
                        json!({"severity": "warning", "message": texts::LOOP_DETECTED}),
                    );
                }
                break;
            }
            if !turn.tool_calls.is_empty() {
                self.ensure_newline();
                let ms = clock::call_stamp_ms();
                for (n, call) in turn.tool_calls.iter().enumerate() {
                    if let Some(code) = self.tool(call, ms, n) {
                        return Some(code);
                    }
                }
                if sc.model.loop_detected {
                    loops += 1;
                    continue;
                }
            }
            i += 1;
        }
        if let Some(f) = &deferred {
            return Some(self.fail(f));
        }
        Some(self.success(&warnings))
    }

    fn after_chunk(&mut self) {
        let sc = &self.ctx.scenario;
        if sc.process.hang_after_chunks == Some(self.chunks_emitted) {
            proc::hang();
        }
        if self.chunks_emitted != 1 {
            if let Some(n) = sc.environment.cancel_after_chunks {
                if self.chunks_emitted == n {
                    self.cancel();
                }
            }
            return;
        }
        if let Some(n) = sc.environment.cancel_after_chunks {
            if n == 1 {
                self.cancel();
            }
        }
        if let Some(sig) = sc.process.crash_signal {
            proc::die_by_signal(sig);
        }
        if let Some(d) = sc.process.descendant {
            let hold = sc.process.descendant_hold_ms.unwrap_or(600_000);
            if let Err(e) = proc::spawn_holder(hold, d == Descendant::SetsidGrandchild) {
                err_line(&format!("fake-gemini: cannot spawn the descendant: {e}"));
                crate::sys::exit_now(99);
            }
            if sc.process.then == Then::Hang {
                proc::hang();
            }
        }
        if sc.process.hang == Some(Hang::AfterOutput) {
            proc::hang();
        }
    }

    fn cancel(&mut self) -> ! {
        err(b"\nCancelling...\n");
        let code = self.fatal("FatalCancellationError", texts::CANCELLED, 130, false);
        crate::sys::exit_now(code);
    }

    /// Runs one tool call; `Some(code)` ends the run (fatal tool error).
    fn tool(&mut self, call: &scenario::ToolCall, ms: i64, n: usize) -> Option<i32> {
        let id = format!("{0}__{0}_{ms}_{n}", call.name);
        let params = Value::Object(
            call.args
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        if self.format == Format::StreamJson {
            self.emit(
                "tool_use",
                json!({"tool_name": call.name, "tool_id": id, "parameters": params}),
            );
        }
        let not_registered = call.name == "run_shell_command" && !self.yolo;
        let error: Option<(String, String)> = if not_registered {
            let m = "Tool \"run_shell_command\" not found. Did you mean one of: \"update_topic\", \"grep_search\", \"invoke_agent\"?".to_string();
            Some(("tool_not_registered".into(), m))
        } else {
            call.error_type.as_ref().map(|t| {
                (
                    t.clone(),
                    call.error_message
                        .clone()
                        .unwrap_or_else(|| format!("{} failed", call.name)),
                )
            })
        };
        self.stats.tool(&call.name, error.is_none(), 5, self.yolo);
        match error {
            None => {
                let output = call.output.clone().unwrap_or_else(|| {
                    if call.name == "list_directory" {
                        "Directory is empty.".into()
                    } else {
                        String::new()
                    }
                });
                if self.format == Format::StreamJson {
                    self.emit(
                        "tool_result",
                        json!({"tool_id": id, "status": "success", "output": output}),
                    );
                }
                None
            }
            Some((kind, msg)) => {
                if kind == "no_space_left" {
                    let full = format!("Error executing tool {}: {msg}", call.name);
                    if self.format == Format::StreamJson {
                        self.emit("tool_result", json!({"tool_id": id, "status": "error", "output": msg, "error": {"type": kind, "message": msg}}));
                    }
                    return Some(self.fatal(&kind, &full, 54, false));
                }
                if self.format == Format::StreamJson {
                    self.emit("tool_result", json!({"tool_id": id, "status": "error", "output": msg, "error": {"type": kind, "message": msg}}));
                }
                err_line(&format!("Error executing tool {}: {msg}", call.name));
                None
            }
        }
    }

    /// A fatal error of the run in the chosen format.
    fn fatal(&mut self, kind: &str, msg: &str, code: i32, twice: bool) -> i32 {
        match self.format {
            Format::StreamJson => {
                let stats = self.stream_stats(0);
                self.emit("result", json!({"status": "error", "error": {"type": kind, "message": msg}, "stats": stats}));
            }
            Format::Json => {
                let doc = output::error_doc(&self.session_id, kind, msg, Some(code as i64));
                err(format!("{doc}\n").as_bytes());
                if twice {
                    err(format!("[ERROR] {doc}\n").as_bytes());
                }
            }
            Format::Text => {
                self.ensure_newline();
                err_line(msg);
                if twice {
                    err_line(&format!("[ERROR] {msg}"));
                }
            }
        }
        code
    }

    fn success(&mut self, warnings: &[&str]) -> i32 {
        match self.format {
            Format::Text => self.ensure_newline(),
            Format::StreamJson => {
                let stats = self.stream_stats(self.duration());
                self.emit("result", json!({"status": "success", "stats": stats}));
            }
            Format::Json => {
                let mut doc = serde_json::Map::new();
                doc.insert("session_id".into(), json!(self.session_id));
                doc.insert("response".into(), json!(self.turn_text));
                doc.insert("stats".into(), self.stats.json());
                if !warnings.is_empty() {
                    doc.insert("warnings".into(), json!(warnings));
                }
                let text = serde_json::to_string_pretty(&Value::Object(doc)).expect("json");
                if self.ctx.scenario.process.invalid_json {
                    let cut = text.len() / 2;
                    let cut = (0..=cut)
                        .rev()
                        .find(|i| text.is_char_boundary(*i))
                        .unwrap_or(0);
                    self.write(text.as_bytes()[..cut].to_vec());
                } else {
                    self.write(text.into_bytes());
                }
            }
        }
        0
    }

    fn predict_exit(&self, f: Option<&scenario::Failure>) -> Option<i32> {
        let sc = &self.ctx.scenario;
        let text = self.format == Format::Text;
        if let Some(f) = f {
            return Some(match f.kind {
                FailureKind::EmptyResponse => 0,
                FailureKind::MalformedStream => 1,
                FailureKind::Network => return None,
                FailureKind::QuotaDaily | FailureKind::RateLimit => {
                    if text {
                        1
                    } else {
                        173
                    }
                }
                FailureKind::Status => {
                    let s = f.status.unwrap_or(500);
                    if text || s == 404 {
                        1
                    } else {
                        (s & 0xFF) as i32
                    }
                }
            });
        }
        if sc
            .environment
            .max_session_turns
            .is_some_and(|m| (m as usize) < sc.model.turns.len())
        {
            return Some(53);
        }
        if sc
            .model
            .turns
            .iter()
            .flat_map(|t| &t.tool_calls)
            .any(|c| c.error_type.as_deref() == Some("no_space_left"))
        {
            return Some(54);
        }
        Some(0)
    }

    fn report_file(&self) -> String {
        let now = clock::now_ms();
        let path = std::env::temp_dir().join(format!(
            "gemini-client-error-Turn.run-sendMessageStream-{}.json",
            clock::report_stamp(now)
        ));
        let _ = std::fs::write(
            &path,
            serde_json::to_string_pretty(
                &json!({"error": {"message": "fake-gemini emulated API error"}, "context": []}),
            )
            .expect("json"),
        );
        path.display().to_string()
    }

    #[expect(
        clippy::too_many_lines,
        reason = "one arm per failure kind, each with the exact output the real CLI prints in each format"
    )]
    fn fail(&mut self, f: &scenario::Failure) -> i32 {
        let v = &self.ctx.version;
        let delay = f.attempt_delay_ms.unwrap_or(20);
        let main = self.main_model.clone();
        let text = self.format == Format::Text;
        match f.kind {
            FailureKind::Network => {
                let mut n = 1u32;
                loop {
                    err(format!(
                        "Attempt {n} failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request\n{}",
                        texts::fill(texts::FETCH_FAILED_STACK, v)
                    )
                    .as_bytes());
                    sleep_ms(delay.max(1));
                    n = if n >= 10 { 1 } else { n + 1 };
                }
            }
            FailureKind::EmptyResponse => {
                let attempts = f.attempts.unwrap_or(4);
                for k in 0..attempts {
                    if k > 0 {
                        sleep_ms(delay);
                    }
                }
                self.stats
                    .api_error(&main, "main", "NO_RESPONSE_TEXT", attempts as u64);
                match self.format {
                    Format::StreamJson => {
                        self.emit(
                            "error",
                            json!({"severity": "error", "message": texts::EMPTY_RESPONSE}),
                        );
                        let stats = self.stream_stats(self.duration());
                        self.emit("result", json!({"status": "error", "stats": stats}));
                    }
                    Format::Json => {
                        let mut doc = serde_json::Map::new();
                        doc.insert("session_id".into(), json!(self.session_id));
                        doc.insert("response".into(), json!(""));
                        doc.insert("stats".into(), self.stats.json());
                        doc.insert(
                            "error".into(),
                            json!({"type": "INVALID_STREAM", "message": texts::EMPTY_RESPONSE}),
                        );
                        out(serde_json::to_string_pretty(&Value::Object(doc))
                            .expect("json")
                            .as_bytes());
                    }
                    // Observed by the differential suite: text mode prefixes `[ERROR] `.
                    Format::Text => err_line(&format!("[ERROR] {}", texts::EMPTY_RESPONSE)),
                }
                0
            }
            FailureKind::MalformedStream => {
                let partial = f.partial.clone().unwrap_or_else(|| "partial ".into());
                self.chunk(&partial);
                self.stats.touch(&main);
                let msg = "Expected property name or '}' in JSON at position 1";
                err(format!(
                    "Error when talking to Gemini API Full report available at: {} SyntaxError: {msg}\n{}",
                    self.report_file(),
                    texts::JSON_PARSE_STACK
                )
                .as_bytes());
                match self.format {
                    Format::StreamJson => {
                        let stats = self.stream_stats(0);
                        self.emit("result", json!({"status": "error", "error": {"type": "unknown", "message": format!("[API Error: {msg}]")}, "stats": stats}));
                    }
                    Format::Json => {
                        err(format!(
                            "{}\n",
                            // Observed by the differential suite: type `Error`, code 1.
                            output::error_doc(&self.session_id, "Error", msg, Some(1))
                        )
                        .as_bytes());
                    }
                    Format::Text => {
                        // Observed: the partial delta stays without a newline.
                        err_line(&format!("{}[object Object]", texts::CRITICAL));
                    }
                }
                1
            }
            FailureKind::QuotaDaily | FailureKind::RateLimit => {
                let daily = f.kind == FailureKind::QuotaDaily;
                let status = 429u16;
                let api_msg = f.message.clone().unwrap_or_else(|| {
                    if daily {
                        texts::QUOTA_DAILY.into()
                    } else {
                        texts::QUOTA_RETRYABLE.into()
                    }
                });
                if !daily {
                    self.retries(
                        status,
                        "RESOURCE_EXHAUSTED",
                        texts::QUOTA_RETRYABLE,
                        f.attempts.unwrap_or(10),
                        delay,
                        texts::QUOTA_RETRYABLE,
                    );
                }
                let (class, pos, details, reason) = if daily {
                    (
                        "TerminalQuotaError",
                        "307344:16",
                        "[ [Object], [Object] ]",
                        "  reason: undefined,\n",
                    )
                } else {
                    ("RetryableQuotaError", "307333:14", "[]", "")
                };
                err(format!(
                    "Error when talking to Gemini API Full report available at: {} {class}: {api_msg}\n{}  cause: {{\n    code: 429,\n    message: 'Resource has been exhausted (e.g. check quota).',\n    details: {details}\n  }},\n  retryDelayMs: undefined,\n{reason}  status: 429\n}}\n",
                    self.report_file(),
                    texts::fill(texts::QUOTA_STACK, v).replace("{pos}", pos)
                )
                .as_bytes());
                self.api_fatal(
                    status,
                    &api_msg,
                    &format!("[API Error: {api_msg}]\n{}", texts::QUOTA_HINT),
                    if text { 1 } else { 173 },
                )
            }
            FailureKind::Status => {
                let status = f.status.unwrap_or(500);
                if status == 404 {
                    return self.model_not_found(f.message.clone());
                }
                let (state, default_msg) = match status {
                    400 => ("INVALID_ARGUMENT", "Invalid argument provided.".to_string()),
                    401 => ("UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.".into()),
                    403 => ("PERMISSION_DENIED", "The caller does not have permission".into()),
                    404 => ("NOT_FOUND", format!("models/{} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", self.requested)),
                    503 => ("UNAVAILABLE", "The model is overloaded. Please try again later.".into()),
                    _ => ("INTERNAL", "Internal error encountered.".into()),
                };
                let m = f.message.clone().unwrap_or(default_msg);
                let body = serde_json::to_string(
                    &json!({"error": {"code": status, "message": m, "status": state}}),
                )
                .expect("json");
                if status >= 500 || status == 429 {
                    self.retries(status, state, &m, f.attempts.unwrap_or(10), delay, &body);
                }
                err(format!(
                    "Error when talking to Gemini API Full report available at: {} _ApiError: {body}\n{}  status: {status}\n}}\n",
                    self.report_file(),
                    texts::fill(texts::API_ERROR_STACK, v)
                )
                .as_bytes());
                let code = if text || status == 404 {
                    1
                } else {
                    (status & 0xFF) as i32
                };
                self.api_fatal(status, &body, &format!("[API Error: {body}]"), code)
            }
        }
    }

    /// A 404 (observed by the differential suite): the CLI classifies it as ModelNotFoundError
    /// with the API's message, which names the model it called; exit 1 in every format, and
    /// the json document's `code` is 1, not 404.
    fn model_not_found(&mut self, message: Option<String>) -> i32 {
        let m = message.unwrap_or_else(|| {
            format!(
                "models/{} is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.",
                self.main_model
            )
        });
        err(format!(
            "Error when talking to Gemini API Full report available at: {} ModelNotFoundError: {m}\n{}  code: 404\n}}\n",
            self.report_file(),
            texts::fill(texts::API_ERROR_STACK, &self.ctx.version)
        )
        .as_bytes());
        self.api_fatal(1, &m, &format!("[API Error: {m}]"), 1)
    }

    /// `Attempt N failed…` blocks for attempts 1..N-1, then the final line.
    fn retries(
        &mut self,
        status: u16,
        state: &str,
        msg: &str,
        attempts: u32,
        delay: u64,
        final_text: &str,
    ) {
        let body = serde_json::to_string(
            &json!({"error": {"code": status, "message": msg, "status": state}}),
        )
        .expect("json");
        let stack = texts::fill(texts::API_ERROR_STACK, &self.ctx.version);
        for n in 1..attempts.max(1) {
            err(format!(
                "Attempt {n} failed with status {status}. Retrying with backoff... _ApiError: {body}\n{stack}  status: {status}\n}}\n"
            )
            .as_bytes());
            sleep_ms(delay);
        }
        err_line(&format!(
            "Attempt {} failed: {final_text}. Max attempts reached",
            attempts.max(1)
        ));
    }

    fn api_fatal(&mut self, status: u16, json_msg: &str, stream_msg: &str, code: i32) -> i32 {
        let main = self.main_model.clone();
        self.stats.touch(&main);
        match self.format {
            Format::StreamJson => {
                let stats = self.stream_stats(0);
                self.emit("result", json!({"status": "error", "error": {"type": "unknown", "message": stream_msg}, "stats": stats}));
            }
            Format::Json => {
                err(format!(
                    "{}\n",
                    output::error_doc(&self.session_id, "Error", json_msg, Some(status as i64))
                )
                .as_bytes());
            }
            Format::Text => {
                self.ensure_newline();
                err_line(&format!("{}[object Object]", texts::CRITICAL));
            }
        }
        code
    }

    /// A huge answer of `n` content bytes, written in large blocks.
    fn flood(&mut self, n: u64) -> i32 {
        const BLOCK: usize = 1 << 16;
        let main = self.main_model.clone();
        self.stats.response(&main, "main", self.tokens(), 40);
        match self.format {
            Format::Text => {
                let block = pattern(BLOCK, true);
                let mut left = n;
                let mut o = std::io::stdout().lock();
                use std::io::Write;
                while left > 0 {
                    let k = left.min(BLOCK as u64) as usize;
                    if o.write_all(&block.as_bytes()[..k]).is_err() {
                        crate::sys::exit_now(0);
                    }
                    left -= k as u64;
                }
                if o.flush().is_err() {
                    crate::sys::exit_now(0);
                }
                self.text_written = n > 0;
                self.text_last_nl = n > 0 && block.as_bytes()[(n as usize - 1) % BLOCK] == b'\n';
                drop(o);
                self.ensure_newline();
                0
            }
            Format::StreamJson => {
                let block = pattern(BLOCK, false);
                let line = event(
                    "message",
                    json!({"role": "assistant", "content": block, "delta": true}),
                );
                let mut left = n;
                let mut o = std::io::stdout().lock();
                use std::io::Write;
                while left >= BLOCK as u64 {
                    if o.write_all(&line).is_err() {
                        crate::sys::exit_now(0);
                    }
                    left -= BLOCK as u64;
                }
                drop(o);
                if left > 0 {
                    self.emit("message", json!({"role": "assistant", "content": &block[..left as usize], "delta": true}));
                }
                self.success(&[])
            }
            Format::Json => {
                let block = pattern(BLOCK, false);
                let head = format!(
                    "{{\n  \"session_id\": \"{}\",\n  \"response\": \"",
                    self.session_id
                );
                out(head.as_bytes());
                let mut left = n;
                while left > 0 {
                    let k = left.min(BLOCK as u64) as usize;
                    out(&block.as_bytes()[..k]);
                    left -= k as u64;
                }
                let stats = serde_json::to_string_pretty(&json!({"stats": self.stats.json()}))
                    .expect("json");
                // Re-indent the stats object into the outer document.
                let inner = stats
                    .trim_start_matches('{')
                    .trim_end_matches('}')
                    .trim_end();
                out(format!("\",{inner}\n}}").as_bytes());
                0
            }
        }
    }
}

/// Whether the CLI runs `/memory show` for this input: its gate (`isSlashCommand`) looks at the
/// raw input — the first character must be `/`, and `//` and `/*` are not commands — and only then
/// is the input trimmed and split into words (`/memory show\n\nmore words` runs it too).
pub fn runs_memory_show(input: &str) -> bool {
    let gate = input.starts_with('/') && !input.starts_with("//") && !input.starts_with("/*");
    let mut words = input.split_whitespace();
    gate && words.next() == Some("/memory") && words.next() == Some("show")
}

/// What `/memory show` prints: the cwd's GEMINI.md, or that memory is empty.
fn memory_show() -> String {
    let Ok(cwd) = std::env::current_dir() else {
        return "Memory is currently empty.\n".into();
    };
    let path = cwd.join("GEMINI.md");
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let p = path.display();
            format!(
                "Current memory content from 1 file(s):\n\n---\n--- Project ---\n--- Context from: {p} ---\n{}\n--- End of Context from: {p} ---\n---\n",
                text.trim_end()
            )
        }
        Err(_) => "Memory is currently empty.\n".into(),
    }
}

/// A deterministic filler: words (and, for text, a newline every 100 bytes).
pub(crate) fn pattern(n: usize, lines: bool) -> String {
    const WORDS: &[u8] =
        b"lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ";
    let mut s = Vec::with_capacity(n);
    let mut i = 0usize;
    while s.len() < n {
        if lines && s.len() % 100 == 99 {
            s.push(b'\n');
        } else {
            s.push(WORDS[i % WORDS.len()]);
            i += 1;
        }
    }
    String::from_utf8(s).expect("ascii")
}

pub(crate) fn flood_stderr(n: u64, version: &str) {
    let block = format!(
        "Attempt 1 failed with status 500. Retrying with backoff... _ApiError: {{\"error\":{{\"code\":500,\"message\":\"Internal error encountered.\",\"status\":\"INTERNAL\"}}}}\n{}  status: 500\n}}\n",
        texts::fill(texts::API_ERROR_STACK, version)
    );
    let mut big = String::new();
    while big.len() < (1 << 16) {
        big.push_str(&block);
    }
    let bytes = big.as_bytes();
    let mut left = n as usize;
    let mut e = std::io::stderr().lock();
    use std::io::Write;
    while left > 0 {
        let k = left.min(bytes.len());
        if e.write_all(&bytes[..k]).is_err() {
            break;
        }
        left -= k;
    }
    let _ = e.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The observed runs of 0.61.0: only an input whose first character is `/` runs the command.
    #[test]
    fn memory_show_runs_only_where_the_real_cli_runs_it() {
        for (input, runs) in [
            ("/memory show", true),
            ("/memory show\n", true),
            ("/memory show\n\nextra words", true),
            ("\u{feff}/memory show", false),
            ("\u{a0}/memory show", false),
            ("\u{2028}/memory show", false),
            ("\u{3000}/memory show", false),
            ("\u{200b}/memory show", false),
            (" /memory show", false),
            ("\t/memory show", false),
            ("\n/memory show", false),
            ("//memory show", false),
            ("\\/memory show", false),
            ("/memory add x", false),
        ] {
            assert_eq!(runs_memory_show(input), runs, "{input:?}");
        }
    }

    #[test]
    fn models_resolve_like_the_real_cli() {
        assert_eq!(
            resolve_model("auto"),
            (
                Some("gemini-3.5-flash-lite"),
                "gemini-3.8-flash".into(),
                true
            )
        );
        assert_eq!(
            resolve_model("pro"),
            (None, "gemini-3.1-pro-preview".into(), true)
        );
        assert_eq!(
            resolve_model("gemini-2.5-pro"),
            (None, "gemini-2.5-pro".into(), true)
        );
        assert_eq!(
            resolve_model("not-a-model"),
            (None, "not-a-model".into(), false)
        );
    }

    #[test]
    fn token_estimate_follows_the_cli() {
        assert_eq!(estimate_text_tokens("abcdefgh"), 2.0);
        assert_eq!(estimate_text_tokens("éééééééééé"), 15.0);
        // Over 100,000 UTF-16 units every unit weighs a quarter token, ASCII or not.
        assert_eq!(estimate_text_tokens(&"é".repeat(100_004)), 25_001.0);
    }

    #[test]
    fn context_window_limit_is_the_measured_one() {
        assert!(!over_context_window(&"a".repeat(4_193_815), 1_048_576));
        assert!(over_context_window(&"a".repeat(4_193_816), 1_048_576));
        assert!(!over_context_window(&"é".repeat(4_193_815), 1_048_576));
        assert!(over_context_window(&"é".repeat(4_193_816), 1_048_576));
    }

    #[test]
    fn filler_has_the_exact_size_and_line_shape() {
        let p = pattern(1000, true);
        assert_eq!(p.len(), 1000);
        assert!(p.lines().all(|l| l.len() == 99));
        assert!(!pattern(300, false).contains('\n'));
    }
}
