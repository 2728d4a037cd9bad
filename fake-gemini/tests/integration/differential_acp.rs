//! The ACP part of the differential suite: the real `gemini --acp`, run against the scripted API
//! (`fake_gemini::api`) in a scratch HOME and cwd, and `fake-gemini --acp` get the same scripted
//! JSON-RPC conversation and must send the same messages, exit the same way and write the same
//! stderr, after masking (session ids, timestamps, paths, tool-call times, stack frames).
//!
//! A case is a script of client steps; each side's run becomes a transcript — every client
//! message (`>>>`), every agent message (`<<<`) in arrival order, the exit code at stdin EOF and
//! the stderr the agent flushed at exit — and the two transcripts are compared line by line.
//! The real CLI is the one `differential::real_cli` resolves (pinned in
//! `fake-gemini/differential/CLI_VERSION`). Runs are sequential: one real agent at a time.
//!
//! ```sh
//! cargo nextest run -p fake-gemini --run-ignored only -E 'test(=differential_acp::full)'
//! cargo nextest run -p fake-gemini --run-ignored only -E 'test(=differential_acp::smoke)'
//! FAKE_GEMINI_DIFF_FILTER=permission cargo nextest run -p fake-gemini --run-ignored only -E 'test(=differential_acp::full)'
//! ```
//!
//! `FAKE_GEMINI_DIFF_FILTER` takes comma-separated words of case names; `FAKE_GEMINI_DIFF_SHOW=1`
//! prints the real agent's transcript of every case, agreeing or not.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fake_gemini::api::{ApiServer, Config};
use serde_json::{json, Value};

use crate::differential::{line_diff, pinned_version, real_cli};
use crate::support::Sandbox;

/// How long a step waits for the agent before the run is declared stuck: a guard so a case
/// fails instead of hanging CI (the real agent starts in 2.5–9 s, more on a loaded machine).
const PATIENCE: Duration = Duration::from_secs(120);

/// One client step of a scripted conversation.
#[derive(Debug, Clone)]
pub enum Step {
    /// Send a message; the strings `$CWD` and `$SID` (the id of the last session the agent
    /// created) are substituted anywhere in it.
    Send(Value),
    /// Send one raw line (not JSON).
    Raw(&'static str),
    /// Read agent messages up to and including the response with this id.
    Response(u64),
    /// Read agent messages up to and including a `session/update` of this kind.
    Update(&'static str),
    /// Read agent messages up to and including an agent→client request.
    Request,
    /// Read exactly this many agent messages.
    Messages(usize),
    /// Answer the last agent→client request with this result.
    Answer(Value),
    /// Close stdin and wait for the exit; the transcript records the code and the stderr.
    Close,
    /// Start the agent again in the same HOME and cwd (after `Close`).
    Restart,
    /// Before the next start, move past the clock minute of the last one: the real CLI names a
    /// session's file after its minute, and a load in the same minute clobbers that file. The
    /// real agent's side waits for the next clock minute; fake-gemini's clock is scripted
    /// (`FAKE_GEMINI_NOW`), a minute on.
    NextMinute,
    /// Read agent messages, out of the transcript, until the response with this id, the
    /// `agent_message_chunk` whose text starts with the prefix (the replay's last update) and the
    /// `available_commands_update` have all come; the transcript says whether the response came
    /// before that update (the order of the rest depends on the pipe's timing).
    Overtakes(u64, &'static str),
    /// Wait for the next clock minute unless most of this one is left, so what follows (a
    /// session, a restart, its load) happens within one minute. fake-gemini's scripted clock
    /// stands at a minute's start already: its side does not wait.
    FreshMinute,
}

/// One ACP comparison: a name, the agent's flags after `--acp`, the script.
#[derive(Debug, Clone)]
pub struct AcpCase {
    /// A short name (also what `FAKE_GEMINI_DIFF_FILTER` matches).
    pub name: &'static str,
    /// Flags after `--acp`.
    pub args: &'static [&'static str],
    /// The client's script.
    pub steps: Vec<Step>,
    /// Part of the CI smoke subset.
    pub smoke: bool,
    /// Settings merged into both sides' `~/.gemini/settings.json`.
    pub settings: Option<&'static str>,
}

fn msg(id: u64, method: &str, params: Value) -> Step {
    Step::Send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// A request and its response.
fn call(id: u64, method: &str, params: Value) -> Vec<Step> {
    vec![msg(id, method, params), Step::Response(id)]
}

fn initialize() -> Vec<Step> {
    call(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}}}),
    )
}

/// `initialize`, `session/new` and the `available_commands_update` that follows it.
fn open() -> Vec<Step> {
    let mut s = initialize();
    s.extend(call(
        1,
        "session/new",
        json!({"cwd": "$CWD", "mcpServers": []}),
    ));
    s.push(Step::Update("available_commands_update"));
    s
}

fn prompt_msg(id: u64, text: &str) -> Step {
    msg(
        id,
        "session/prompt",
        json!({"sessionId": "$SID", "prompt": [{"type": "text", "text": text}]}),
    )
}

fn prompt(id: u64, text: &str) -> Vec<Step> {
    vec![prompt_msg(id, text), Step::Response(id)]
}

/// A prompt of these content blocks, and its response.
fn prompt_blocks(id: u64, blocks: Value) -> Vec<Step> {
    call(
        id,
        "session/prompt",
        json!({"sessionId": "$SID", "prompt": blocks}),
    )
}

fn select(option: &str) -> Step {
    Step::Answer(json!({"outcome": {"outcome": "selected", "optionId": option}}))
}

fn cancel() -> Step {
    Step::Send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "$SID"}}),
    )
}

/// A request that answers `{}` and logs nothing, sent after a notification: once its answer is
/// in, the notification was handled. (A request whose error is logged would not do: the SDK
/// logs a failed notification a few awaits later, and the two stderr dumps can come in either
/// order.)
fn sync(id: u64) -> Vec<Step> {
    call(id, "authenticate", json!({"methodId": "gemini-api-key"}))
}

fn script(parts: Vec<Vec<Step>>) -> Vec<Step> {
    parts.into_iter().flatten().collect()
}

/// A user's MCP server that never answers `initialize`, given 2 s.
const SILENT_MCP_SERVER: &str =
    r#"{"mcpServers":{"slow":{"command":"sleep","args":["100000"],"timeout":2000}}}"#;

/// Every ACP case. What the real agent cannot be driven into (or not in reasonable time) is in
/// fake-gemini's README ("ACP cases not compared").
#[expect(clippy::too_many_lines, reason = "the table of ACP differential cases")]
pub fn cases() -> Vec<AcpCase> {
    let case = |name, steps, smoke| AcpCase {
        name,
        args: &[],
        steps,
        smoke,
        settings: None,
    };
    vec![
        // The settings' MCP servers, in a trusted folder: the agent answers nothing before each
        // one answered `initialize` or its `timeout` passed (here 2 s; 10 minutes without one).
        AcpCase {
            settings: Some(SILENT_MCP_SERVER),
            args: &["--skip-trust"],
            ..case(
                "mcp-server-silent-until-its-timeout",
                script(vec![open(), vec![Step::Close]]),
                false,
            )
        },
        AcpCase {
            settings: Some(SILENT_MCP_SERVER),
            args: &[
                "--skip-trust",
                "--allowed-mcp-server-names=geminicli-mcp-none",
            ],
            ..case(
                "mcp-server-left-out-by-name",
                script(vec![open(), vec![Step::Close]]),
                false,
            )
        },
        // In an untrusted folder no MCP server starts.
        AcpCase {
            settings: Some(SILENT_MCP_SERVER),
            ..case(
                "mcp-server-untrusted-folder",
                script(vec![open(), vec![Step::Close]]),
                false,
            )
        },
        case(
            "initialize-new-session",
            script(vec![open(), vec![Step::Close]]),
            false,
        ),
        case(
            "authenticate",
            script(vec![
                initialize(),
                call(1, "authenticate", json!({"methodId": "gemini-api-key"})),
                call(2, "authenticate", json!({"methodId": "nope"})),
                call(3, "authenticate", json!({})),
                call(
                    5,
                    "authenticate",
                    json!({"methodId": "gemini-api-key", "_meta": {"api-key": "fake"}}),
                ),
                call(
                    6,
                    "authenticate",
                    json!({"methodId": "gateway", "_meta": {"gateway": {"baseUrl": 5}}}),
                ),
                call(4, "session/new", json!({"cwd": "$CWD", "mcpServers": []})),
                vec![Step::Update("available_commands_update"), Step::Close],
            ]),
            false,
        ),
        // A request sent right behind `session/new` is answered first: the agent keeps reading
        // while it makes the session (a new Config per session, 60-170 ms).
        case(
            "new-session-overtaken",
            script(vec![
                initialize(),
                vec![
                    msg(1, "session/new", json!({"cwd": "$CWD", "mcpServers": []})),
                    msg(2, "authenticate", json!({"methodId": "gemini-api-key"})),
                    Step::Messages(3),
                    Step::Close,
                ],
            ]),
            false,
        ),
        case(
            "prompt-plain",
            script(vec![
                open(),
                prompt(2, "[[fake-gemini:success]]"),
                prompt(3, r#"[[fake-gemini:success text="4"]]"#),
                vec![Step::Close],
            ]),
            false,
        ),
        case(
            "prompt-thoughts",
            script(vec![
                open(),
                prompt(2, "[[fake-gemini:thinking]]"),
                vec![Step::Close],
            ]),
            false,
        ),
        case(
            "tool-call",
            script(vec![
                open(),
                prompt(2, "[[fake-gemini:tool-call]]"),
                vec![Step::Close],
            ]),
            false,
        ),
        // The model repeats its call: the loop detection suppresses the 5th, nudges the model,
        // and ends the turn `max_turn_requests` when it repeats again.
        case(
            "loop-detected",
            script(vec![
                open(),
                prompt(2, "[[fake-gemini:loop-detected]]"),
                vec![Step::Close],
            ]),
            false,
        ),
        case(
            "permission-allow",
            script(vec![
                open(),
                vec![
                    prompt_msg(2, "[[fake-gemini:writer]]"),
                    Step::Request,
                    select("proceed_once"),
                    Step::Response(2),
                    Step::Close,
                ],
            ]),
            false,
        ),
        case(
            "permission-reject",
            script(vec![
                open(),
                vec![
                    prompt_msg(2, "[[fake-gemini:writer]]"),
                    Step::Request,
                    select("cancel"),
                    Step::Response(2),
                    Step::Close,
                ],
            ]),
            false,
        ),
        AcpCase {
            name: "trusted-allow-always",
            args: &["--skip-trust"],
            steps: script(vec![
                open(),
                // "Allow for this session" on an edit switches the trusted session to autoEdit:
                // the next write runs unasked.
                vec![
                    prompt_msg(2, "[[fake-gemini:writer]]"),
                    Step::Request,
                    select("proceed_always"),
                    Step::Response(2),
                ],
                prompt(3, "[[fake-gemini:writer]]"),
                call(
                    4,
                    "session/set_mode",
                    json!({"sessionId": "$SID", "modeId": "yolo"}),
                ),
                prompt(5, "[[fake-gemini:rm]]"),
                vec![Step::Close],
            ]),
            smoke: false,
            settings: None,
        },
        AcpCase {
            name: "yolo-untrusted",
            args: &["--yolo"],
            // --yolo does not trust the folder: the session is downgraded to default and a
            // shell command outside the safe list asks.
            steps: script(vec![
                open(),
                vec![
                    prompt_msg(2, "[[fake-gemini:rm]]"),
                    Step::Request,
                    select("proceed_once"),
                    Step::Response(2),
                    Step::Close,
                ],
            ]),
            smoke: false,
            settings: None,
        },
        case(
            "cancel-mid-turn",
            script(vec![
                open(),
                // Nothing pending yet: a stderr line only.
                vec![cancel()],
                sync(2),
                vec![
                    // Three chunks, then the stream stalls until the client cancels.
                    prompt_msg(3, "[[fake-gemini:trickle count=5 interval-ms=1 after=3]]"),
                    Step::Messages(3),
                    cancel(),
                    Step::Response(3),
                ],
                // The session still serves prompts; an answered prompt stays pending until a
                // cancel clears it, so only the second cancel after it is an error.
                prompt(4, "[[fake-gemini:success]]"),
                vec![cancel()],
                sync(5),
                vec![cancel()],
                sync(6),
                vec![Step::Close],
            ]),
            false,
        ),
        case(
            "modes-and-models",
            script(vec![
                open(),
                call(
                    2,
                    "session/set_mode",
                    json!({"sessionId": "$SID", "modeId": "bogus"}),
                ),
                call(
                    3,
                    "session/set_mode",
                    json!({"sessionId": "$SID", "modeId": "yolo"}),
                ),
                call(
                    4,
                    "session/set_mode",
                    json!({"sessionId": "$SID", "modeId": "plan"}),
                ),
                call(
                    5,
                    "session/set_mode",
                    json!({"sessionId": "$SID", "modeId": "plan"}),
                ),
                call(
                    6,
                    "session/set_model",
                    json!({"sessionId": "$SID", "modelId": "no-such-model"}),
                ),
                call(
                    7,
                    "session/set_model",
                    json!({"sessionId": "$SID", "modelId": "gemini-2.5-pro"}),
                ),
                prompt(8, "[[fake-gemini:success]]"),
                call(
                    9,
                    "session/set_mode",
                    json!({"sessionId": "nope", "modeId": "plan"}),
                ),
                vec![Step::Close],
            ]),
            false,
        ),
        case(
            "protocol-errors",
            script(vec![
                open(),
                call(2, "no/such_method", json!({})),
                call(3, "session/list", json!({})),
                call(4, "session/new", json!({"cwd": "$CWD"})),
                call(5, "session/prompt", json!({"sessionId": "$SID"})),
                call(6, "session/load", json!({})),
                call(7, "initialize", json!({})),
                call(8, "session/new", json!([])),
                call(
                    9,
                    "session/prompt",
                    json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}),
                ),
                // A notification sent as a request.
                call(10, "session/cancel", json!({"sessionId": "$SID"})),
                call(
                    11,
                    "session/prompt",
                    json!({"sessionId": "$SID", "prompt": []}),
                ),
                vec![Step::Close],
            ]),
            true,
        ),
        case(
            "api-errors",
            script(vec![
                open(),
                prompt(2, "[[fake-gemini:quota-daily]]"),
                prompt(3, "[[fake-gemini:api-400]]"),
                prompt(4, "[[fake-gemini:success]]"),
                vec![Step::Close],
            ]),
            false,
        ),
        case(
            "non-json-ignored",
            // Sent once the agent is up: a line read during the start-up is logged before the
            // start-up notices, an order only the timing decides.
            script(vec![
                initialize(),
                vec![Step::Raw("this is not json")],
                call(1, "session/list", json!({})),
                vec![Step::Raw("{\"half\": ")],
                call(2, "session/list", json!({})),
                vec![Step::Close],
            ]),
            false,
        ),
        case(
            "eof-mid-prompt",
            script(vec![
                open(),
                // stdin closes after the first of four chunks 300 ms apart: the prompt still
                // ends (its chunks and response arrive), then the exit.
                vec![
                    prompt_msg(2, "[[fake-gemini:trickle count=4 interval-ms=300]]"),
                    Step::Messages(1),
                    Step::Close,
                ],
            ]),
            false,
        ),
        case(
            "load-after-restart",
            script(vec![
                open(),
                prompt(2, "[[fake-gemini:tool-call]]"),
                prompt(3, "[[fake-gemini:thinking]]"),
                vec![Step::Close, Step::NextMinute, Step::Restart],
                initialize(),
                call(
                    1,
                    "session/load",
                    json!({"sessionId": "$SID", "cwd": "$CWD", "mcpServers": []}),
                ),
                vec![Step::Update("available_commands_update"), Step::Close],
            ]),
            false,
        ),
        // A replay of about 620 KB: the load is answered after its first update, and a request
        // sent right after the load's answer is answered before the replay's last update (the
        // agent's stdout pipe is full meanwhile).
        case(
            "load-large-history-overtaken",
            script(vec![
                open(),
                prompt(
                    2,
                    r#"[[fake-gemini:success text="```first-old-answer " repeat=16001]]"#,
                ),
                prompt(
                    3,
                    r#"[[fake-gemini:success text="```second-old-answer " repeat=15001]]"#,
                ),
                vec![Step::Close, Step::NextMinute, Step::Restart],
                initialize(),
                call(
                    1,
                    "session/load",
                    json!({"sessionId": "$SID", "cwd": "$CWD", "mcpServers": []}),
                ),
                vec![
                    msg(
                        2,
                        "session/set_mode",
                        json!({"sessionId": "$SID", "modeId": "default"}),
                    ),
                    Step::Overtakes(2, "```second-old-answer"),
                    Step::Close,
                ],
            ]),
            false,
        ),
        case(
            "load-same-minute",
            script(vec![
                vec![Step::FreshMinute],
                open(),
                prompt(2, "[[fake-gemini:success]]"),
                vec![Step::Close, Step::Restart],
                initialize(),
                // The load resets the session's file: not found, then or ever after.
                call(
                    1,
                    "session/load",
                    json!({"sessionId": "$SID", "cwd": "$CWD", "mcpServers": []}),
                ),
                call(
                    2,
                    "session/load",
                    json!({"sessionId": "$SID", "cwd": "$CWD", "mcpServers": []}),
                ),
                vec![Step::Close],
            ]),
            false,
        ),
        // The prompt texts the agent runs as its own commands (docs/acp.md, "Commands in a
        // prompt"): `/` or `$` first after JavaScript's trim (a space, an ideographic space, a
        // newline, the BOM, a tab, a no-break space), the command's word after it, spaces
        // allowed between; each answers from the CLI with no model call. Escaped with a
        // backslash, or cased otherwise, the text goes to the model.
        case(
            "commands",
            script(vec![
                open(),
                prompt(2, " /init"),
                prompt(3, "$ init"),
                prompt(4, "\n/memory show"),
                prompt(5, "\u{feff}/memory list"),
                prompt(6, "\t/about"),
                prompt(7, "\u{a0}/help"),
                prompt(8, "$help"),
                prompt(9, "\u{3000}/memory refresh"),
                prompt(10, "/memory inbox"),
                prompt(11, "/restore list"),
                prompt(12, "/extensions"),
                prompt(13, "/extensions explore"),
                prompt(14, "/extensions enable x"),
                // A missing source. An install or link of a source that exists asks a consent
                // on the agent's stdout and takes the next message for its answer: not compared.
                prompt(17, "/extensions install $CWD/ext"),
                prompt(18, "/extensions link $CWD/ext"),
                prompt(21, "/extensions install a;b"),
                prompt(15, " \\/init [[fake-gemini:success]]"),
                prompt(16, "/INIT [[fake-gemini:success]]"),
                vec![Step::Close],
            ]),
            true,
        ),
        // The agent's command text is the leading text blocks joined (a resource reads `@uri`
        // there) up to an image; a template `GEMINI.md` in a fresh directory.
        case(
            "commands-in-blocks",
            script(vec![
                open(),
                prompt_blocks(
                    2,
                    json!([{"type": "text", "text": " "}, {"type": "text", "text": "/init"}]),
                ),
                prompt_blocks(
                    3,
                    json!([{"type": "text", "text": "/memory list"},
                    {"type": "resource", "resource": {"uri": "x://c", "mimeType": "text/plain", "text": "ctx"}}]),
                ),
                prompt_blocks(
                    4,
                    json!([{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
                    {"type": "text", "text": "/about [[fake-gemini:success]]"}]),
                ),
                vec![Step::Close],
            ]),
            false,
        ),
    ]
}

/// Which agent a run drives.
#[derive(Debug, Clone)]
pub enum Side {
    /// The real CLI at this path.
    Real(PathBuf),
    /// fake-gemini.
    Fake,
}

/// A running agent: its stdout split into lines by a reader thread.
struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<String>,
    stderr: PathBuf,
}

/// The clock fake-gemini is given in a case that moves across minutes (`FAKE_GEMINI_NOW`, in ms
/// since the epoch): the start of the current minute, a second in, so that a case's
/// `FreshMinute` needs no wait; `NextMinute` moves it a minute on. `None` for the real agent,
/// which runs on the system clock, and in cases that do not move across minutes.
fn scripted_clock(side: &Side, case: &AcpCase) -> Option<i64> {
    let moves = case
        .steps
        .iter()
        .any(|s| matches!(s, Step::NextMinute | Step::FreshMinute));
    if !moves || !matches!(side, Side::Fake) {
        return None;
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    Some(((secs - secs % 60 + 1) * 1000) as i64)
}

impl Agent {
    /// Starts the agent of `side`; `now` scripts fake-gemini's clock ([`scripted_clock`]).
    fn start(side: &Side, sb: &Sandbox, args: &[&str], n: usize, now: Option<i64>) -> Agent {
        let mut cmd = match side {
            Side::Real(gemini) => {
                let mut c = Command::new(gemini);
                c.current_dir(&sb.cwd)
                    .env_clear()
                    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                    .env("HOME", &sb.home);
                for (k, v) in &sb.env {
                    if !k.starts_with("FAKE_GEMINI_") {
                        c.env(k, v);
                    }
                }
                c
            }
            Side::Fake => sb.cmd(&[]),
        };
        if let Some(ms) = now {
            cmd.env("FAKE_GEMINI_NOW", ms.to_string());
        }
        cmd.arg("--acp").args(args);
        let stderr = sb.dir.path().join(format!("stderr-{n}"));
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        // Its own process group: the launcher and its worker are killed together at the end.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().expect("spawn the agent");
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(l) = line else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Agent {
            stdin: child.stdin.take(),
            child,
            rx,
            stderr,
        }
    }

    fn write(&mut self, line: &str) {
        if let Some(w) = self.stdin.as_mut() {
            // A dead agent shows up in the transcript, not as a panic here.
            let _ = w.write_all(format!("{line}\n").as_bytes());
            let _ = w.flush();
        }
    }

    fn recv(&self) -> Option<String> {
        self.rx.recv_timeout(PATIENCE).ok()
    }

    /// Closes stdin and waits for the exit: (code, or None when it did not exit in time).
    fn close(&mut self) -> Option<i32> {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st.code().unwrap_or(-1));
            }
            if start.elapsed() > PATIENCE {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        #[cfg(unix)]
        // SAFETY: kill(2) on the process group this run created.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sandbox both sides get: the real CLI's offline setup (API key, `selectedType`, base
/// URL), TERM=dumb and NO_COLOR, and the cases' scenario directory for the fake.
fn sandbox(base_url: &str, scenarios: &Path) -> Sandbox {
    let mut sb = Sandbox::new("proj");
    sb.set("NO_COLOR", Some("1"))
        .set("GOOGLE_GEMINI_BASE_URL", Some(base_url))
        .set("FAKE_GEMINI_AUTH", Some("env"))
        // The real CLI has the bug this switch reproduces (a load in the session's minute).
        .set("FAKE_GEMINI_SESSION_LOSS", Some("1"))
        .set(
            "FAKE_GEMINI_SCENARIO_DIR",
            Some(scenarios.to_str().unwrap()),
        );
    std::fs::create_dir_all(sb.home.join(".gemini")).unwrap();
    std::fs::write(
        sb.home.join(".gemini/settings.json"),
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}}}).to_string(),
    )
    .unwrap();
    sb
}

/// Masks what legitimately differs between the two runs of a case.
fn mask(sb: &Sandbox, s: &str) -> String {
    let s = sb.mask(s.as_bytes());
    // The router's fallback prompt id is a clock value and a random suffix.
    let fallback = regex::Regex::new(r"classifier-router-fallback-\d+-[0-9a-f]+").unwrap();
    let s = fallback.replace_all(&s, "classifier-router-fallback-<ID>");
    // Not compared: the router's own failure report. fake-gemini's ACP mode follows the captures,
    // whose mock API failed every call of a failing prompt, the router's classifier call too
    // (`[Routing] NumericalClassifierStrategy failed`); the scripted API answers the router and
    // fails only the main call, so the real CLI has nothing to report there. The main call's
    // report and the JSON-RPC error are compared.
    let router = regex::Regex::new(
        r"(?ms)^Error generating content via API\. Full report available at: \S*generateJson-api\S* .*?^\}\n|^\[Routing\] NumericalClassifierStrategy failed: .*?\n",
    )
    .unwrap();
    router.replace_all(&s, "").into_owned()
}

/// Runs a case's script against one side; returns the masked transcript.
#[expect(
    clippy::too_many_lines,
    reason = "one ACP conversation driven step by step on one side"
)]
pub fn run(side: &Side, base_url: &str, scenarios: &Path, case: &AcpCase) -> String {
    let sb = sandbox(base_url, scenarios);
    if let Some(extra) = case.settings {
        let path = sb.home.join(".gemini/settings.json");
        let mut settings: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (k, v) in serde_json::from_str::<Value>(extra)
            .unwrap()
            .as_object()
            .unwrap()
        {
            settings[k] = v.clone();
        }
        std::fs::write(&path, settings.to_string()).unwrap();
    }
    let mut starts = 0;
    let mut now = scripted_clock(side, case);
    let mut agent = Some(Agent::start(side, &sb, case.args, starts, now));
    let mut t = String::new();
    let mut sid = String::new();
    let mut last_request: Option<Value> = None;
    let mut next_minute = false;
    let cwd = sb.cwd.to_str().unwrap().to_string();
    // Reads one message into the transcript; false when the agent is gone or silent.
    let read = |a: &Agent, t: &mut String, sid: &mut String| -> Option<Value> {
        let Some(line) = a.recv() else {
            let _ = writeln!(t, "!!! no message within {} s", PATIENCE.as_secs());
            return None;
        };
        let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        if let Some(s) = v["result"]["sessionId"].as_str() {
            *sid = s.to_string();
        }
        let _ = writeln!(t, "<<< {}", mask(&sb, &line));
        Some(v)
    };
    for step in &case.steps {
        let Some(a) = agent.as_mut() else {
            if let Step::Restart = step {
                if next_minute {
                    // Past the minute the previous agent started in: the scripted clock a
                    // minute on, else a sleep.
                    if let Some(ms) = now.as_mut() {
                        *ms += 60_000;
                    } else {
                        let wall = std::time::SystemTime::now()
                            .duration_since(std::time::UNIX_EPOCH)
                            .unwrap();
                        std::thread::sleep(Duration::from_secs(61 - wall.as_secs() % 60));
                    }
                    next_minute = false;
                }
                starts += 1;
                agent = Some(Agent::start(side, &sb, case.args, starts, now));
                let _ = writeln!(t, "--- restart");
            } else if let Step::NextMinute = step {
                next_minute = true;
            }
            continue;
        };
        match step {
            Step::Send(m) => {
                let line = m.to_string().replace("$CWD", &cwd).replace("$SID", &sid);
                let _ = writeln!(t, ">>> {}", mask(&sb, &line));
                a.write(&line);
            }
            Step::Raw(line) => {
                let _ = writeln!(t, ">>> {line}");
                a.write(line);
            }
            Step::Response(id) => loop {
                let Some(v) = read(a, &mut t, &mut sid) else {
                    break;
                };
                if v["id"] == json!(id) && v.get("method").is_none() {
                    break;
                }
            },
            Step::Update(kind) => loop {
                let Some(v) = read(a, &mut t, &mut sid) else {
                    break;
                };
                if v["params"]["update"]["sessionUpdate"] == *kind {
                    break;
                }
            },
            Step::Overtakes(id, last) => {
                let (mut answered, mut replayed, mut commands) = (None, false, false);
                while answered.is_none() || !replayed || !commands {
                    let Some(line) = a.recv() else {
                        let _ = writeln!(t, "!!! no message within {} s", PATIENCE.as_secs());
                        break;
                    };
                    let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                    let update = &v["params"]["update"];
                    if v["id"] == json!(id) && v.get("method").is_none() {
                        answered = Some(!replayed);
                    } else if update["sessionUpdate"] == "available_commands_update" {
                        commands = true;
                    } else if update["sessionUpdate"] == "agent_message_chunk"
                        && update["content"]["text"]
                            .as_str()
                            .is_some_and(|t| t.starts_with(last))
                    {
                        replayed = true;
                    }
                }
                let _ = writeln!(
                    t,
                    "=== response {id} {} the replay's last update",
                    if answered == Some(true) {
                        "before"
                    } else {
                        "after"
                    }
                );
            }
            Step::Request => loop {
                let Some(v) = read(a, &mut t, &mut sid) else {
                    break;
                };
                if v.get("method").is_some() && v.get("id").is_some() {
                    last_request = Some(v);
                    break;
                }
            },
            Step::Messages(n) => {
                for _ in 0..*n {
                    if read(a, &mut t, &mut sid).is_none() {
                        break;
                    }
                }
            }
            Step::Answer(result) => {
                let id = last_request
                    .as_ref()
                    .map_or(Value::Null, |r| r["id"].clone());
                let line = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
                let _ = writeln!(t, ">>> {}", mask(&sb, &line));
                a.write(&line);
            }
            Step::Close => {
                let code = a.close();
                // Whatever the agent sent after the last awaited message, up to its stdout's end
                // (once it exited; a live agent's pipe is only drained of what is there).
                loop {
                    let line = if code.is_some() {
                        a.rx.recv_timeout(PATIENCE).ok()
                    } else {
                        a.rx.try_recv().ok()
                    };
                    let Some(line) = line else { break };
                    let _ = writeln!(t, "<<< {}", mask(&sb, &line));
                }
                match code {
                    Some(c) => {
                        let _ = writeln!(t, "=== exit {c}");
                    }
                    None => {
                        let _ = writeln!(
                            t,
                            "=== still running {} s after stdin closed",
                            PATIENCE.as_secs()
                        );
                    }
                }
                let stderr = std::fs::read(&a.stderr).unwrap_or_default();
                let _ = writeln!(t, "=== stderr");
                t.push_str(&mask(&sb, &String::from_utf8_lossy(&stderr)));
                agent = None;
            }
            Step::FreshMinute if now.is_some() => {}
            Step::FreshMinute => {
                let into = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_secs()
                    % 60;
                if into > 20 {
                    std::thread::sleep(Duration::from_secs(61 - into));
                }
            }
            Step::Restart | Step::NextMinute => {
                let _ = writeln!(t, "!!! {step:?} while the agent runs");
            }
        }
    }
    drop(agent);
    t
}

/// `Ok` when the transcripts agree, else a readable report with the line diff.
pub fn compare(label: &str, real: &str, fake: &str) -> Result<(), String> {
    if real == fake {
        Ok(())
    } else {
        Err(format!(
            "== {label}\ntranscript differs (- real, + fake):\n{}",
            line_diff(real, fake)
        ))
    }
}

/// Runs the cases one after the other (never two real agents at once) and fails with every diff.
fn differential(cases: &[AcpCase]) {
    let gemini = real_cli();
    let root = tempfile::tempdir().unwrap();
    let scenarios = crate::support::permission_scenarios(root.path());
    let api = ApiServer::start(
        0,
        Config {
            scenario_dir: Some(scenarios.clone()),
            // A cancelled stall is abandoned by the client; this bounds the server's side.
            max_stall: Duration::from_secs(60),
            ..Config::default()
        },
    )
    .expect("start the scripted API");
    let url = api.base_url();
    let mut failures = Vec::new();
    for c in cases {
        let t = Instant::now();
        let real = run(&Side::Real(gemini.clone()), &url, &scenarios, c);
        let fake = run(&Side::Fake, &url, &scenarios, c);
        if std::env::var_os("FAKE_GEMINI_DIFF_SHOW").is_some() {
            eprintln!("== {} (the real agent's transcript)\n{real}", c.name);
        }
        let verdict = compare(c.name, &real, &fake);
        eprintln!(
            "{} acp {} ({:.1} s)",
            if verdict.is_ok() {
                "agree  "
            } else {
                "DIFFER "
            },
            c.name,
            t.elapsed().as_secs_f64()
        );
        if let Err(e) = verdict {
            // At once, so a run cut short still shows what differed.
            eprintln!("{e}");
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} ACP cases differ from the real CLI {}:\n\n{}",
        failures.len(),
        cases.len(),
        pinned_version(),
        failures.join("\n")
    );
}

/// The CI subset: the fast ACP cases (`.ci/run`, when node and npm exist).
#[test]
#[ignore = "runs the real Gemini CLI (node, npm); see the module docs"]
fn smoke() {
    let cases: Vec<AcpCase> = cases().into_iter().filter(|c| c.smoke).collect();
    differential(&cases);
}

/// The ACP cases the server's inventory of CLI inputs names (`acp/…`).
#[test]
#[ignore = "runs the real Gemini CLI (node, npm); see the module docs"]
fn inputs() {
    let named: Vec<&str> = crate::inputs::INVENTORY
        .iter()
        .flat_map(|i| i.cases.iter())
        .filter_map(|c| c.strip_prefix("acp/"))
        .collect();
    let cases: Vec<AcpCase> = cases()
        .into_iter()
        .filter(|c| named.contains(&c.name))
        .collect();
    assert!(!cases.is_empty());
    differential(&cases);
}

/// Every ACP case (or those whose name contains one of the comma-separated
/// `FAKE_GEMINI_DIFF_FILTER` words).
#[test]
#[ignore = "runs the real Gemini CLI (node, npm) for a few minutes; see the module docs"]
fn full() {
    let filter = std::env::var("FAKE_GEMINI_DIFF_FILTER").unwrap_or_default();
    let cases: Vec<AcpCase> = cases()
        .into_iter()
        .filter(|c| filter.split(',').any(|f| c.name.contains(f)))
        .collect();
    assert!(!cases.is_empty(), "no ACP case matches `{filter}`");
    differential(&cases);
}

/// The comparison is not vacuous: a deliberately altered fake message fails an ACP case with a
/// diff that names the changed line and keeps the agreeing ones as context.
#[test]
fn an_acp_difference_fails_with_a_readable_diff() {
    let root = tempfile::tempdir().unwrap();
    let scenarios = crate::support::permission_scenarios(root.path());
    let api = ApiServer::start(0, Config::default()).expect("start the scripted API");
    let case = cases().into_iter().find(|c| c.name == "tool-call").unwrap();
    let expected = run(&Side::Fake, &api.base_url(), &scenarios, &case);
    assert_eq!(
        compare(
            "same",
            &expected,
            &run(&Side::Fake, &api.base_url(), &scenarios, &case)
        ),
        Ok(())
    );
    assert!(expected.contains("=== exit 0"), "{expected}");
    let altered = expected.replace(
        r#""text":" there! How can I help?""#,
        r#""text":" there! How may I help?""#,
    );
    assert_ne!(altered, expected, "the alteration applies");
    let report = compare("tool-call", &expected, &altered).expect_err("a difference");
    assert!(
        report.starts_with("== tool-call\ntranscript differs (- real, + fake):\n"),
        "{report}"
    );
    let changed: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("- ") || l.starts_with("+ "))
        .collect();
    assert_eq!(changed.len(), 2, "{report}");
    assert!(
        changed
            .iter()
            .any(|l| l.starts_with("- <<< ") && l.contains("How can I help?")),
        "{report}"
    );
    assert!(
        changed
            .iter()
            .any(|l| l.starts_with("+ <<< ") && l.contains("How may I help?")),
        "{report}"
    );
    assert!(report.contains(r#"  <<< {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"<UUID>","update":{"sessionUpdate":"tool_call","#), "{report}");
}
