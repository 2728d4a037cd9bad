//! What the model reads: every tool result, success or failure, of every tool and both backends,
//! rendered for its reader and under one byte budget.
//!
//! Most clients hand the model `structuredContent` as JSON instead of the text block (Claude Code
//! on success; Codex always), others the text, a few the whole result: so each reads well on its
//! own — the answer first, then only what a model can act on — and the whole serialised result
//! (text block plus JSON-escaped `structuredContent`) stays within the budget, below the clients'
//! cuts (Claude Code moves a result over 50,000 characters into a file; Codex keeps 47,964 bytes,
//! head and tail). An answer over the budget keeps its head, and says at its start and at its end
//! — places that survive a head-and-tail cut — how to read on with `gemini_read_answer`.

use std::fmt::Write as _;

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Map, Value};

use crate::answers::Answers;
use crate::error::{ErrorKind, Failure, PARTIAL_TEXT_CHARS};
use crate::gemini::outcome;

/// The stderr tail a failure shows by default (the whole kept tail with `debug`).
pub(crate) const STDERR_SHOWN_BYTES: usize = 1024;
/// The name of the tool that reads on.
pub(crate) const READ_ANSWER: &str = "gemini_read_answer";

/// How a call's result is rendered.
#[derive(Clone, Copy)]
pub(crate) struct Render<'a> {
    /// The kept long answers.
    pub answers: &'a Answers,
    /// The budget of the whole serialised result.
    pub budget: usize,
    /// Whether the client gets `structuredContent` (protocol 2025-06-18 and later): then the
    /// text block and the JSON share the budget.
    pub structured: bool,
    /// `debug`: the whole stderr tail, unfiltered.
    pub debug: bool,
}

/// Where a cut text continues: the id to read it by, the next offset and the whole length, in
/// characters.
#[derive(Debug, Clone)]
pub(crate) struct Continuation {
    /// The kept text's id.
    pub answer_id: String,
    /// The first character not shown.
    pub next_offset: usize,
    /// The characters of the whole text.
    pub total_chars: usize,
}

impl Continuation {
    /// The call that reads on, as a model would write it: no quotes, so it reads the same inside
    /// a JSON string.
    pub(crate) fn call(&self) -> String {
        format!(
            "{READ_ANSWER} answer_id={} offset={}",
            self.answer_id, self.next_offset
        )
    }

    fn head_note(&self, from: usize) -> String {
        format!(
            "[This is characters {from}–{} of {}: the answer is longer than one result. Read on with {}.]",
            self.next_offset,
            self.total_chars,
            self.call()
        )
    }

    fn tail_note(&self) -> String {
        format!(
            "[Continued: {} returns the next part ({} more characters).]",
            self.call(),
            self.total_chars - self.next_offset
        )
    }
}

/// The serialised size of a result, what a client receives: counted as it is written, never
/// held (an answer as long as the output cap would be, twice over, while the buffer doubles).
pub(crate) fn size(result: &CallToolResult) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, result).map_or(usize::MAX, |()| count.0)
}

/// The byte offset of character `chars` in `text` (its length when past the end).
fn byte_at(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

impl Render<'_> {
    /// `text` from character `from`, whole when the result `build` makes of it fits the budget;
    /// otherwise the longest head that fits, kept whole in the store and continued there.
    /// `build(page, continuation)` makes the result for one page.
    pub(crate) fn page(
        &self,
        text: &str,
        from: usize,
        max_chars: Option<usize>,
        build: impl Fn(&str, Option<&Continuation>) -> CallToolResult,
        kept_id: Option<&str>,
    ) -> CallToolResult {
        let start = byte_at(text, from);
        let rest = &text[start..];
        let rest_chars = rest.chars().count();
        let whole = max_chars.is_none_or(|m| m >= rest_chars);
        // A result holds its text at least once: a text longer than the budget never fits whole,
        // and is not built whole to find that out.
        if whole && rest.len() <= self.budget {
            let result = build(rest, None);
            if size(&result) <= self.budget {
                return result;
            }
        }
        let total_chars = from + rest_chars;
        let answer_id = match kept_id {
            Some(id) => id.to_string(),
            None => self.answers.keep(text.to_string(), total_chars).0,
        };
        let fits = |n: usize| {
            let cont = Continuation {
                answer_id: answer_id.clone(),
                next_offset: from + n,
                total_chars,
            };
            let end = byte_at(rest, n);
            let result = build(&rest[..end], (n < rest_chars).then_some(&cont));
            (size(&result) <= self.budget).then_some(result)
        };
        // A page is at most `budget` bytes, so at most that many characters: search below it.
        let mut lo = 1usize;
        let mut hi = rest_chars
            .min(self.budget)
            .min(max_chars.unwrap_or(usize::MAX));
        if fits(hi).is_none() {
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if fits(mid).is_some() {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
        } else {
            lo = hi;
        }
        // End the page at a line break near its end when there is one: the next part then starts
        // on a line of its own.
        let end = byte_at(rest, lo);
        let window = rest[..end].char_indices().rev().take(200);
        let n = match window
            .filter(|(_, c)| *c == '\n')
            .map(|(i, _)| rest[..=i].chars().count())
            .next()
        {
            Some(n) if n > lo / 2 => n,
            _ => lo,
        };
        fits(n)
            .or_else(|| fits(lo))
            .unwrap_or_else(|| build(&rest[..byte_at(rest, 1)], None))
    }

    /// A prompt tool's answer. `json` is `gemini_prompt_structured`'s value, which is never cut:
    /// too long for the budget, it is a failure saying so, readable whole by its id.
    pub(crate) fn answer(
        &self,
        text: &str,
        facts: &Map<String, Value>,
        json_value: Option<Value>,
    ) -> CallToolResult {
        if let Some(value) = json_value {
            let mut sc = Map::new();
            sc.insert("json".into(), value);
            sc.extend(facts.clone());
            if text.len() <= self.budget {
                let result = self.result(text.to_string(), Value::Object(sc), false);
                if size(&result) <= self.budget {
                    return result;
                }
            }
            let total_chars = text.chars().count();
            let (id, _) = self.answers.keep(text.to_string(), total_chars);
            let f = Failure::new(
                ErrorKind::ResultTooLarge,
                format!(
                    "the structured answer is {} bytes of JSON, more than one result may hold ({} bytes, {}); a structured answer is never cut. Its JSON text is kept: read it with {READ_ANSWER} answer_id={id} offset=0, or ask for less",
                    text.len(),
                    self.budget,
                    crate::config::settings::RESULT_BUDGET_BYTES.name
                ),
            );
            return self.failure(&f);
        }
        self.page(
            text,
            0,
            None,
            |page, cont| {
                let mut sc = Map::new();
                let mut shown = String::new();
                if let Some(c) = cont {
                    sc.insert("readOn".into(), json!(c.head_note(0)));
                    let _ = write!(shown, "{}\n\n", c.head_note(0));
                }
                sc.insert("response".into(), json!(page));
                shown.push_str(page);
                sc.extend(facts.clone());
                if let Some(c) = cont {
                    sc.insert("answerId".into(), json!(c.answer_id));
                    sc.insert("nextOffset".into(), json!(c.next_offset));
                    sc.insert("totalChars".into(), json!(c.total_chars));
                    sc.insert("continued".into(), json!(c.tail_note()));
                    let _ = write!(shown, "\n\n{}", c.tail_note());
                }
                let mut result = self.result(shown, Value::Object(sc), false);
                // Resources reach few models, but a client may fetch the whole answer itself.
                if let Some(resource) = cont.and_then(|c| self.answers.resource(&c.answer_id)) {
                    result.content.push(ContentBlock::resource_link(resource));
                }
                result
            },
            None,
        )
    }

    /// `gemini_read_answer`: the part of a kept answer from `offset`.
    pub(crate) fn read(
        &self,
        answer_id: &str,
        offset: usize,
        max_chars: Option<usize>,
    ) -> CallToolResult {
        let Some(text) = self.answers.get(answer_id) else {
            return self.failure(&Failure::invalid_input(format!(
                "no kept answer has the id {answer_id:?}: answers are kept in memory, the last {} and at most {} MiB, oldest first out, and only while the server runs. Run the prompt again",
                crate::answers::MAX_STORED_ANSWERS,
                crate::answers::MAX_STORED_BYTES / (1024 * 1024)
            )));
        };
        let total_chars = text.chars().count();
        if offset > total_chars {
            return self.failure(&Failure::invalid_input(format!(
                "offset {offset} is past the end of the answer ({total_chars} characters)"
            )));
        }
        self.page(
            &text,
            offset,
            max_chars,
            |page, cont| {
                let end = offset + page.chars().count();
                let mut sc = Map::new();
                sc.insert("answer_id".into(), json!(answer_id));
                sc.insert("offset".into(), json!(offset));
                sc.insert("text".into(), json!(page));
                sc.insert("next_offset".into(), cont.map_or(Value::Null, |c| json!(c.next_offset)));
                sc.insert("total_chars".into(), json!(total_chars));
                let shown = match cont {
                    Some(c) => {
                        sc.insert("continued".into(), json!(c.tail_note()));
                        format!(
                            "{}\n\n{page}\n\n{}",
                            c.head_note(offset),
                            c.tail_note()
                        )
                    }
                    None => format!(
                        "[Characters {offset}–{end} of {total_chars}: the end of the answer.]\n\n{page}"
                    ),
                };
                self.result(shown, Value::Object(sc), false)
            },
            Some(answer_id),
        )
    }

    /// A failure: the text and `structuredContent` say the same — the first line, the fix, the
    /// retry delay, the validation errors, the stderr tail without the CLI's noise, the partial
    /// answer. A partial answer or raw response too long to show is cut, kept and readable on.
    pub(crate) fn failure(&self, f: &Failure) -> CallToolResult {
        self.failure_with(f, &Map::new())
    }

    /// [`Render::failure`] with what the call asked to see (`extras`: its task note, debug
    /// report, …) added to `structuredContent`.
    pub(crate) fn failure_with(&self, f: &Failure, extras: &Map<String, Value>) -> CallToolResult {
        let (text, mut sc) = self.failure_parts(f);
        sc.extend(extras.clone());
        self.result(text, Value::Object(sc), true)
    }

    /// The `acp` set's `gemini` failure: gemini_mcp's contract (`success: false`, `SESSION_ID`,
    /// `agent_messages`, `error`, …) with the kind, exit code and fix, and `extras` on top.
    pub(crate) fn agent_failure(&self, f: &Failure, extras: &Map<String, Value>) -> CallToolResult {
        let (text, parts) = self.failure_parts(f);
        let mut v = Map::new();
        v.insert("success".into(), json!(false));
        v.insert("SESSION_ID".into(), json!(f.run.session_id));
        v.insert(
            "agent_messages".into(),
            parts.get("partialResponse").cloned().unwrap_or(json!("")),
        );
        v.insert("thought".into(), json!(""));
        v.insert("stop_reason".into(), Value::Null);
        v.insert("tool_calls".into(), json!([]));
        v.insert("plan".into(), json!([]));
        for key in [
            "error",
            "errorKind",
            "exitCode",
            "fix",
            "retryDelayMs",
            "stderrTail",
        ] {
            if let Some(value) = parts.get(key) {
                v.insert(key.into(), value.clone());
            }
        }
        v.extend(extras.clone());
        self.result(text, Value::Object(v), true)
    }

    /// A listing or another small value: its compact JSON as the text, and as `structuredContent`.
    pub(crate) fn value(&self, v: Value) -> CallToolResult {
        self.result(v.to_string(), v, false)
    }

    /// The `acp` set's `gemini` answer (gemini_mcp's contract in `v`): whole when it fits the
    /// budget, else `agent_messages` cut like a prompt tool's answer, continued by its id.
    pub(crate) fn agent_answer(&self, v: Map<String, Value>) -> CallToolResult {
        let messages = v["agent_messages"].as_str().unwrap_or_default().to_string();
        self.page(
            &messages,
            0,
            None,
            |page, cont| {
                let mut sc = v.clone();
                sc.insert("agent_messages".into(), json!(page));
                let mut shown = page.to_string();
                if let Some(c) = cont {
                    shown = format!("{}\n\n{page}\n\n{}", c.head_note(0), c.tail_note());
                    sc.insert("answerId".into(), json!(c.answer_id));
                    sc.insert("nextOffset".into(), json!(c.next_offset));
                    sc.insert("totalChars".into(), json!(c.total_chars));
                    sc.insert("continued".into(), json!(c.tail_note()));
                }
                self.result(shown, Value::Object(sc), false)
            },
            None,
        )
    }

    /// The text and `structuredContent` fields of a failure.
    fn failure_parts(&self, f: &Failure) -> (String, Map<String, Value>) {
        let mut sc = Map::new();
        let mut text = f.first_line();
        sc.insert("error".into(), json!(text));
        sc.insert("errorKind".into(), json!(f.kind.as_str()));
        sc.insert("exitCode".into(), json!(f.exit_code));
        let stderr = if self.debug {
            f.run.stderr_tail.trim_end().to_string()
        } else if f.kind.stderr_helps() {
            stderr_shown(&f.run.stderr_tail)
        } else {
            String::new()
        };
        let fix = f.fix_shown(!stderr.is_empty());
        sc.insert("fix".into(), json!(fix));
        let _ = write!(text, "\nfix: {fix}");
        if let Some(ms) = f.retry_delay_ms {
            sc.insert("retryDelayMs".into(), json!(ms));
            let _ = write!(text, "\nretry after: {ms} ms");
        }
        if let Some(invalid) = &f.invalid {
            text.push_str("\nvalidation errors:");
            let mut errors = Vec::new();
            for e in &invalid.errors {
                let path = if e.instance_path.is_empty() {
                    "(root)"
                } else {
                    &e.instance_path
                };
                let _ = write!(text, "\n  {path}: {}", e.message);
                errors.push(json!({"instancePath": e.instance_path, "message": e.message}));
            }
            sc.insert("validationErrors".into(), Value::Array(errors));
            let raw = self.clip(&invalid.raw);
            let _ = write!(text, "\n--- raw response ---\n{raw}");
            sc.insert("rawResponse".into(), json!(raw));
        }
        if !stderr.is_empty() {
            let _ = write!(text, "\n--- stderr (tail) ---\n{stderr}");
            sc.insert("stderrTail".into(), json!(stderr));
        }
        if let Some(partial) = &f.run.partial_response {
            let partial = self.clip(partial);
            let _ = write!(text, "\n--- partial response ---\n{partial}");
            sc.insert("partialResponse".into(), json!(partial));
        }
        if let Some(id) = &f.run.session_id {
            sc.insert("sessionId".into(), json!(id));
        }
        if let Some(s) = f.run.signal {
            sc.insert("signal".into(), json!(s));
        }
        (text, sc)
    }

    /// A partial answer or raw response as a failure shows it: whole up to
    /// [`PARTIAL_TEXT_CHARS`] characters, else its head and where to read the rest (the whole is
    /// kept in the store of answers, which shares it: no copy).
    fn clip(&self, text: &std::sync::Arc<String>) -> String {
        let total = text.chars().count();
        if total <= PARTIAL_TEXT_CHARS {
            return text.to_string();
        }
        Self::clipped(text, self.answers.keep_shared(text.clone(), total).0, total)
    }

    /// The first [`PARTIAL_TEXT_CHARS`] of `text`, and how to read on in the answer kept as `id`.
    fn clipped(text: &str, id: String, total: usize) -> String {
        let cut = byte_at(text, PARTIAL_TEXT_CHARS);
        format!(
            "{}\n[… {} more characters: {READ_ANSWER} answer_id={id} offset={PARTIAL_TEXT_CHARS}]",
            &text[..cut],
            total - PARTIAL_TEXT_CHARS
        )
    }

    /// A result of the given text and `structuredContent` (the latter only for clients that
    /// take it).
    pub(crate) fn result(&self, text: String, structured: Value, error: bool) -> CallToolResult {
        let content = vec![ContentBlock::text(text)];
        let mut result = if error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        };
        if self.structured {
            result.structured_content = Some(structured);
        }
        result
    }
}

/// The end of a failed run's stderr as a failure shows it by default: without the lines the CLI
/// prints on every run or that say nothing a model can act on (terminal and colour warnings, the
/// YOLO and ripgrep notices, start-up metrics, JavaScript stack frames), the private paths of its
/// error reports, and at most [`STDERR_SHOWN_BYTES`] of what is left (its end).
pub(crate) fn stderr_shown(tail: &str) -> String {
    let mut kept: Vec<String> = Vec::new();
    for line in tail.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() && kept.last().is_none_or(|l| l.is_empty()) {
            continue;
        }
        if is_noise(trimmed) {
            continue;
        }
        kept.push(without_report_path(line.trim_end()));
    }
    while kept.last().is_some_and(|l| l.is_empty()) {
        kept.pop();
    }
    let text = kept.join("\n");
    crate::error::tail_lossy(text.as_bytes(), STDERR_SHOWN_BYTES)
}

/// Lines the CLI prints on every run, or that say nothing about a failure: its notices
/// ([`outcome::is_notice`]) and JavaScript stack frames.
fn is_noise(line: &str) -> bool {
    outcome::is_notice(line)
        || (line.starts_with("at ") && (line.contains("file://") || line.contains("node:")))
        || line.starts_with("at async ")
        || line.starts_with("at process.")
}

/// The CLI's `Full report available at: /tmp/gemini-client-error-….json` names a file in the
/// run's private temporary directory, which is gone once the call ends: the path is dropped.
fn without_report_path(line: &str) -> String {
    const MARK: &str = "Full report available at: ";
    let Some(at) = line.find(MARK) else {
        return line.to_string();
    };
    let rest = &line[at + MARK.len()..];
    let after = rest
        .find(".json ")
        .map_or("", |i| &rest[i + ".json ".len()..]);
    format!("{}{after}", &line[..at]).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_BUDGET_BYTES;
    use crate::error::{ErrorKind, RunFacts};

    fn render(answers: &Answers, budget: usize) -> Render<'_> {
        Render {
            answers,
            budget,
            structured: true,
            debug: false,
        }
    }

    fn facts() -> Map<String, Value> {
        let Value::Object(m) = json!({"sessionId": "s", "model": "m"}) else {
            unreachable!()
        };
        m
    }

    #[test]
    fn a_short_answer_comes_whole_with_only_what_a_model_acts_on() {
        let answers = Answers::default();
        let r = render(&answers, DEFAULT_BUDGET_BYTES).answer("hi", &facts(), None);
        let sc = r.structured_content.unwrap();
        assert_eq!(
            sc,
            json!({"response": "hi", "sessionId": "s", "model": "m"})
        );
        assert_eq!(r.content[0].as_text().unwrap().text, "hi");
    }

    /// Reads `answer` to its end the way a model would: follow each result's continuation.
    fn read_all(r: &Render<'_>, answer: &str) -> (String, usize) {
        let first = r.answer(answer, &facts(), None);
        assert!(size(&first) <= r.budget, "{} > {}", size(&first), r.budget);
        let sc = first.structured_content.clone().unwrap();
        let mut text = sc["response"].as_str().unwrap().to_string();
        let mut next = sc["nextOffset"].as_u64();
        let id = sc["answerId"].as_str().map(String::from);
        let mut parts = 1;
        while let Some(offset) = next {
            let read = r.read(id.as_deref().unwrap(), offset as usize, None);
            assert!(size(&read) <= r.budget, "{} > {}", size(&read), r.budget);
            let sc = read.structured_content.unwrap();
            assert_eq!(sc["offset"], offset);
            text.push_str(sc["text"].as_str().unwrap());
            next = sc["next_offset"].as_u64();
            parts += 1;
        }
        (text, parts)
    }

    #[test]
    fn a_long_answer_is_read_to_its_last_character_within_the_budget() {
        let answers = Answers::default();
        let r = render(&answers, DEFAULT_BUDGET_BYTES);
        let answer: String = (0..200_000)
            .map(|i| {
                if i % 97 == 96 {
                    '\n'
                } else {
                    char::from(b'a' + (i % 26) as u8)
                }
            })
            .collect();
        let (read, parts) = read_all(&r, &answer);
        assert_eq!(read, answer);
        assert!(parts >= 10, "{parts} parts");
        // Text that costs more bytes per character (CJK, quotes that JSON escapes) fits too.
        let cjk: String = "漢字\"\\ かな\n".repeat(20_000);
        let (read, _) = read_all(&r, &cjk);
        assert_eq!(read, cjk);
    }

    #[test]
    fn a_cut_answer_says_how_to_read_on_at_its_start_and_its_end() {
        let answers = Answers::default();
        let r = render(&answers, 8_000);
        let first = r.answer(&"x".repeat(50_000), &facts(), None);
        let text = &first.content[0].as_text().unwrap().text;
        let sc = first.structured_content.unwrap();
        let call = format!(
            "gemini_read_answer answer_id={} offset=",
            sc["answerId"].as_str().unwrap()
        );
        assert!(
            text.starts_with("[This is characters 0–"),
            "{}",
            &text[..80]
        );
        assert!(text[..300].contains(&call));
        assert!(text[text.len() - 300..].contains(&call));
        let keys: Vec<&String> = sc.as_object().unwrap().keys().collect();
        assert_eq!(keys.first().map(|k| k.as_str()), Some("readOn"));
        assert_eq!(keys.last().map(|k| k.as_str()), Some("continued"));
    }

    #[test]
    fn an_unknown_answer_id_is_a_clear_error() {
        let answers = Answers::default();
        let r = render(&answers, DEFAULT_BUDGET_BYTES).read("nope", 0, None);
        assert_eq!(r.is_error, Some(true));
        let sc = r.structured_content.unwrap();
        assert_eq!(sc["errorKind"], "input_validation");
        assert!(sc["error"].as_str().unwrap().contains("oldest first out"));
    }

    #[test]
    fn a_structured_answer_is_never_cut() {
        let answers = Answers::default();
        let r = render(&answers, 8_000);
        let big = json!(["x".repeat(10_000)]);
        let text = big.to_string();
        let out = r.answer(&text, &facts(), Some(big));
        let sc = out.structured_content.unwrap();
        assert_eq!(sc["errorKind"], "result_too_large");
        assert!(sc["error"].as_str().unwrap().contains("answer_id="));
        let small = r.answer("[1]", &facts(), Some(json!([1])));
        assert_eq!(
            small.structured_content.unwrap(),
            json!({"json": [1], "sessionId": "s", "model": "m"})
        );
    }

    #[test]
    fn the_fix_names_a_stderr_tail_only_where_one_is_shown() {
        let answers = Answers::default();
        let fix_of = |tail: &str| {
            let f = Failure::with_exit(ErrorKind::Error, 1, "the Gemini ACP agent ended").with_run(
                RunFacts {
                    stderr_tail: tail.into(),
                    ..RunFacts::default()
                },
            );
            let r = render(&answers, DEFAULT_BUDGET_BYTES).failure(&f);
            r.structured_content.unwrap()["fix"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            fix_of("Ripgrep is not available. Falling back to GrepTool.\n"),
            "read the message; call again if it looks transient",
            "only notices: no tail shown"
        );
        assert_eq!(fix_of("Error: disk full\n"), ErrorKind::Error.fix());
    }

    #[test]
    fn the_telemetry_notice_the_server_provokes_is_not_shown() {
        let tail = "The 'metricReader' option is deprecated. Please use 'metricReaders' instead.\nRipgrep is not available. Falling back to GrepTool.\nError: settings.json is broken\n";
        assert_eq!(stderr_shown(tail), "Error: settings.json is broken");
    }

    #[test]
    fn a_failure_says_the_same_in_text_and_structure_without_the_clis_noise() {
        let answers = Answers::default();
        let stderr = "Warning: Basic terminal detected (TERM=dumb).\nYOLO mode is enabled. All tool calls will be automatically approved.\nRipgrep is not available. Falling back to GrepTool.\nError when talking to Gemini API Full report available at: /tmp/x/gemini-client-error-Turn.json TerminalQuotaError: You have exhausted your daily quota on this model.\n    at classifyGoogleError (file:///cli/bundle/chunk.js:1:2)\n    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)\n    at async Turn.run (file:///cli/bundle/chunk.js:3:4)\n";
        let f = Failure::with_exit(
            ErrorKind::QuotaExhausted,
            173,
            "You have exhausted your daily quota",
        )
        .with_run(RunFacts {
            stderr_tail: stderr.into(),
            ..RunFacts::default()
        })
        .with_retry_delay(Some(5000));
        let r = render(&answers, DEFAULT_BUDGET_BYTES).failure(&f);
        let text = &r.content[0].as_text().unwrap().text;
        let sc = r.structured_content.unwrap();
        assert!(text.starts_with("[error exit=173] quota_exhausted: "));
        assert_eq!(sc["error"], text.lines().next().unwrap());
        assert!(
            sc.get("stderrTail").is_none(),
            "the first line says it all: {sc:?}"
        );
        let unnamed = Failure::with_exit(ErrorKind::Error, 1, "the Gemini CLI exited with code 1")
            .with_run(RunFacts {
                stderr_tail: stderr.into(),
                ..RunFacts::default()
            });
        let r = render(&answers, DEFAULT_BUDGET_BYTES).failure(&unnamed);
        assert_eq!(
            r.structured_content.unwrap()["stderrTail"],
            "Error when talking to Gemini API TerminalQuotaError: You have exhausted your daily quota on this model."
        );
        assert!(
            !text.contains(" at ") && !text.contains("YOLO") && !text.contains("/tmp/"),
            "{text}"
        );
        assert_eq!(sc["retryDelayMs"], 5000);
        assert!(sc["fix"].is_string());
        assert!(text.len() < 1_500, "{}", text.len());
    }

    #[test]
    fn a_long_partial_answer_is_cut_once_and_readable_whole() {
        let answers = Answers::default();
        let partial = "p".repeat(PARTIAL_TEXT_CHARS + 10);
        let f = Failure::new(ErrorKind::Timeout, "the total deadline passed").with_run(RunFacts {
            partial_response: Some(std::sync::Arc::new(partial.clone())),
            ..RunFacts::default()
        });
        let r = render(&answers, DEFAULT_BUDGET_BYTES).failure(&f);
        let shown = r.structured_content.unwrap()["partialResponse"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(shown.contains("[… 10 more characters: gemini_read_answer answer_id="));
        let id = shown
            .split("answer_id=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert_eq!(answers.get(id).unwrap().as_str(), partial);
    }

    #[test]
    fn clients_without_structured_content_get_the_whole_budget_as_text() {
        let answers = Answers::default();
        let r = Render {
            structured: false,
            ..render(&answers, 8_000)
        };
        let first = r.answer(&"y".repeat(50_000), &facts(), None);
        assert!(first.structured_content.is_none());
        let shown = first.content[0].as_text().unwrap().text.len();
        assert!(shown > 7_000 && size(&first) <= 8_000, "{shown}");
    }
}
