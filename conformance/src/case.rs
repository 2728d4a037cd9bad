//! The case file format (`cases/<area>/<behaviour>.toml`): what a case sends, what it expects, the
//! fake-gemini scenario behind it and the checks on the fake's log and on processes. Kebab-case
//! keys and `deny_unknown_fields` everywhere, so a typo is a loud error, never a silently skipped
//! check. The README's "Case format" section is the reference for authors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// How binding a case's failure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// A failure is a `fail`.
    Must,
    /// A failure is a `warn`.
    Should,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Must => "must",
            Level::Should => "should",
        })
    }
}

/// An operating system family a case can be limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Platform {
    /// Any Unix (Linux, macOS, BSDs).
    Unix,
    /// Linux only.
    Linux,
    /// macOS only.
    Macos,
    /// Windows only.
    Windows,
}

impl Platform {
    /// Whether the runner is on this platform.
    pub fn is_current(self) -> bool {
        match self {
            Platform::Unix => cfg!(unix),
            Platform::Linux => cfg!(target_os = "linux"),
            Platform::Macos => cfg!(target_os = "macos"),
            Platform::Windows => cfg!(windows),
        }
    }
}

/// How the target is given the gemini executable in a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GeminiBinary {
    /// fake-gemini (the default).
    #[default]
    Fake,
    /// A path where nothing exists.
    Missing,
    /// A file without execute permission (Unix).
    NotExecutable,
}

/// The `[fake]` table: the fake-gemini side of a case.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Fake {
    /// `FAKE_GEMINI_SCENARIO` for every run (a built-in name, or the name of one of `files`);
    /// prompts can still select another with a `[[fake-gemini:NAME …]]` marker.
    pub scenario: Option<String>,
    /// Scenario files (name → TOML text) placed in `FAKE_GEMINI_SCENARIO_DIR`, selected by a
    /// prompt marker `[[fake-gemini:NAME.toml]]` or by `scenario = "NAME.toml"`.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Extra `FAKE_GEMINI_*` variables (e.g. `FAKE_GEMINI_AUTH`, `FAKE_GEMINI_VERSION`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// What the target finds where the gemini executable should be.
    #[serde(default)]
    pub binary: GeminiBinary,
}

/// The `[target]` table: how the target is started for this case.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TargetSetup {
    /// Abstract settings (see the profile), e.g. `max-output-bytes = "65536"`; a setting the
    /// profile does not map skips the case.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Raw environment variables (e.g. `GEMINI_API_KEY`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// One step of a case. Exactly one action key is set; the others modify it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Step {
    // --- actions ---
    /// `tools/call` of an abstract tool (`prompt`, `prompt_with_context`, `prompt_structured`).
    pub call: Option<String>,
    /// A request `{ method, params }` (the runner assigns the id).
    pub request: Option<Value>,
    /// A notification `{ method, params }`.
    pub notify: Option<Value>,
    /// A raw line written to stdin as is (a newline is appended), for malformed input: a string,
    /// or a generator (`$concat`, `$repeat`) that builds one.
    pub send_raw: Option<Value>,
    /// Sends `notifications/cancelled` for the request labelled so.
    pub cancel: Option<String>,
    /// Waits for the response to the request labelled so (sent earlier with `no-wait`).
    pub await_response: Option<String>,
    /// Waits for any message matching this subset (e.g. an error with `id = null`).
    pub expect_message: Option<Value>,
    /// Waits for a notification matching this subset.
    pub expect_notification: Option<Value>,
    /// Fails if a notification matching this subset arrived since the case started or arrives
    /// within `within-ms`.
    pub expect_no_notification: Option<Value>,
    /// Fails if the request labelled so gets any response within `within-ms`.
    pub expect_no_response: Option<String>,
    /// Waits until the fake has logged at least this many invocations.
    pub wait_invocations: Option<usize>,
    /// Fails if any of these paths (placeholders allowed) exists.
    pub expect_files_absent: Option<Vec<String>>,
    /// Fails unless each path (placeholders allowed) is a file holding exactly this text.
    pub expect_files: Option<std::collections::BTreeMap<String, String>>,
    /// Creates these directories (placeholders allowed), with their parents: the file system a
    /// later step works on.
    pub make_dirs: Option<Vec<String>>,
    /// Writes each file (path and text, placeholders allowed in both), its directory made first:
    /// settings the target's CLI reads, files a call works on.
    /// A file's text is a string or a generator (`$repeat`, `$concat`) that builds one.
    pub write_files: Option<std::collections::BTreeMap<String, Value>>,
    /// Moves `path` aside (to `path.replaced`) and puts a symlink to `target` in its place (Unix):
    /// what a hostile process does to a path the target checked, while a call runs.
    pub replace_with_symlink: Option<SymlinkSwap>,
    /// Fails if the target's stderr so far contains this text.
    pub expect_stderr_excludes: Option<String>,
    /// Fails unless the fake has logged exactly this many invocations now.
    pub expect_invocations: Option<usize>,
    /// Sleeps (scaled by the timeout scale).
    pub sleep_ms: Option<u64>,
    /// Closes the target's stdin.
    #[serde(default)]
    pub close_stdin: bool,
    /// Acts as a client that vanished: closes stdin and stops reading stdout.
    #[serde(default)]
    pub disconnect: bool,
    /// Kills the target alone with SIGKILL (Unix): a server that dies without cleaning up.
    #[serde(default)]
    pub kill_target: bool,
    /// Waits for the target to exit (optionally with `exit-code`).
    #[serde(default)]
    pub expect_exit: bool,
    /// Waits until none of the processes the fake logged is alive.
    #[serde(default)]
    pub expect_processes_gone: bool,

    // --- modifiers ---
    /// Arguments of a `call`, keyed by abstract argument names.
    pub arguments: Option<Value>,
    /// A label to refer to this request later (`await-response`, `cancel`, …).
    pub label: Option<String>,
    /// Adds `_meta.progressToken` to the request.
    pub progress_token: Option<Value>,
    /// Adds these keys to the request's `_meta` (a client's own keys, such as Claude Code's
    /// `claudecode/toolUseId`).
    pub meta: Option<serde_json::Map<String, Value>>,
    /// Repeats the request (a new id each time) every this many ms (scaled) until its response
    /// matches `expect`, up to the step's timeout: polling (`tasks/get`).
    pub poll_every_ms: Option<u64>,
    /// Sends the request without waiting for its response now.
    #[serde(default)]
    pub no_wait: bool,
    /// A subset the response (or awaited message) must match.
    pub expect: Option<Value>,
    /// Saves parts of the response for later steps: NAME = a JSON pointer into the response
    /// message (`/result/structuredContent/sessionId`); later strings use `{saved.NAME}`.
    pub save: Option<std::collections::BTreeMap<String, String>>,
    /// The window of `expect-no-*` checks, or the bound of a wait, in ms (scaled).
    pub within_ms: Option<u64>,
    /// With `expect-no-notification`: only notifications arriving during this step's window count
    /// (not those since the case started).
    #[serde(default)]
    pub only_new: bool,
    /// The exit code `expect-exit` requires.
    pub exit_code: Option<i32>,
    /// This step's timeout in ms (scaled), instead of the case's.
    pub timeout_ms: Option<u64>,
    /// `should`: a failure of this step only warns (the case level still applies to the others).
    pub level: Option<Level>,
}

/// The `replace-with-symlink` step.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SymlinkSwap {
    /// The path replaced (placeholders allowed).
    pub path: String,
    /// Where the symlink points (placeholders allowed).
    pub target: String,
}

/// What a step does: its one action key, read out of the [`Step`] (the other keys modify it).
#[derive(Debug, Clone, Copy)]
pub enum Action<'a> {
    /// `call`: a `tools/call` of an abstract tool.
    Call(&'a str),
    /// `request`.
    Request(&'a Value),
    /// `notify`.
    Notify(&'a Value),
    /// `send-raw`.
    SendRaw(&'a Value),
    /// `cancel`.
    Cancel(&'a str),
    /// `await-response`.
    AwaitResponse(&'a str),
    /// `expect-message`.
    ExpectMessage(&'a Value),
    /// `expect-notification`.
    ExpectNotification(&'a Value),
    /// `expect-no-notification`.
    ExpectNoNotification(&'a Value),
    /// `expect-no-response`.
    ExpectNoResponse(&'a str),
    /// `wait-invocations`.
    WaitInvocations(usize),
    /// `expect-invocations`.
    ExpectInvocations(usize),
    /// `expect-files-absent`.
    ExpectFilesAbsent(&'a [String]),
    /// `expect-files`.
    ExpectFiles(&'a BTreeMap<String, String>),
    /// `expect-stderr-excludes`.
    ExpectStderrExcludes(&'a str),
    /// `make-dirs`.
    MakeDirs(&'a [String]),
    /// `write-files`.
    WriteFiles(&'a BTreeMap<String, Value>),
    /// `replace-with-symlink`.
    ReplaceWithSymlink(&'a SymlinkSwap),
    /// `sleep-ms`.
    Sleep(u64),
    /// `close-stdin`.
    CloseStdin,
    /// `disconnect`.
    Disconnect,
    /// `kill-target`.
    KillTarget,
    /// `expect-exit`.
    ExpectExit,
    /// `expect-processes-gone`.
    ExpectProcessesGone,
}

impl Step {
    /// The step's action; an error when it has none or more than one.
    pub fn action(&self) -> Result<Action<'_>, String> {
        let flag = |on: bool, a: Action<'static>| on.then_some(a);
        let found: Vec<Action<'_>> = [
            self.call.as_deref().map(Action::Call),
            self.request.as_ref().map(Action::Request),
            self.notify.as_ref().map(Action::Notify),
            self.send_raw.as_ref().map(Action::SendRaw),
            self.cancel.as_deref().map(Action::Cancel),
            self.await_response.as_deref().map(Action::AwaitResponse),
            self.expect_message.as_ref().map(Action::ExpectMessage),
            self.expect_notification
                .as_ref()
                .map(Action::ExpectNotification),
            self.expect_no_notification
                .as_ref()
                .map(Action::ExpectNoNotification),
            self.expect_no_response
                .as_deref()
                .map(Action::ExpectNoResponse),
            self.wait_invocations.map(Action::WaitInvocations),
            self.expect_invocations.map(Action::ExpectInvocations),
            self.expect_files_absent
                .as_deref()
                .map(Action::ExpectFilesAbsent),
            self.expect_files.as_ref().map(Action::ExpectFiles),
            self.expect_stderr_excludes
                .as_deref()
                .map(Action::ExpectStderrExcludes),
            self.make_dirs.as_deref().map(Action::MakeDirs),
            self.write_files.as_ref().map(Action::WriteFiles),
            self.replace_with_symlink
                .as_ref()
                .map(Action::ReplaceWithSymlink),
            self.sleep_ms.map(Action::Sleep),
            flag(self.close_stdin, Action::CloseStdin),
            flag(self.disconnect, Action::Disconnect),
            flag(self.kill_target, Action::KillTarget),
            flag(self.expect_exit, Action::ExpectExit),
            flag(self.expect_processes_gone, Action::ExpectProcessesGone),
        ]
        .into_iter()
        .flatten()
        .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            _ => Err(format!(
                "it has {} actions; exactly one is required",
                found.len()
            )),
        }
    }
}

/// One `[[log.invocation]]` check on the fake's invocation records.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct InvocationCheck {
    /// Which record (0-based); unset: every record.
    pub index: Option<usize>,
    /// argv elements that must be present, each exactly.
    #[serde(default)]
    pub argv_contains: Vec<String>,
    /// argv elements that must be absent.
    #[serde(default)]
    pub argv_not_contains: Vec<String>,
    /// Flags that must be given, as `--flag=value` or `--flag value` (value `true`: present at
    /// all, in either form).
    #[serde(default)]
    pub argv_flags: BTreeMap<String, Value>,
    /// Regexes no argv element may match.
    #[serde(default)]
    pub argv_none_match: Vec<String>,
    /// The exact stdin the fake read.
    pub stdin_equals: Option<String>,
    /// Substrings of stdin.
    #[serde(default)]
    pub stdin_contains: Vec<String>,
    /// Substrings stdin must not contain.
    #[serde(default)]
    pub stdin_not_contains: Vec<String>,
    /// A lower bound on the bytes the fake read from stdin.
    pub stdin_bytes_at_least: Option<u64>,
    /// A lower bound on the size of the assembled prompt, in bytes.
    pub prompt_bytes_at_least: Option<u64>,
    /// The exact prompt the fake assembled (stdin and `-p` combined, as the CLI does).
    pub prompt_equals: Option<String>,
    /// Substrings of the assembled prompt.
    #[serde(default)]
    pub prompt_contains: Vec<String>,
    /// Substrings the assembled prompt must not contain.
    #[serde(default)]
    pub prompt_not_contains: Vec<String>,
    /// Regexes the assembled prompt must match (`(?s)` to let `.` cross lines).
    #[serde(default)]
    pub prompt_matches: Vec<String>,
    /// Substring → how many times exactly it occurs in the assembled prompt.
    #[serde(default)]
    pub prompt_occurrences: BTreeMap<String, usize>,
    /// With no `index`: holds vacuously when the fake was never invoked (for "refuse, or send it
    /// safely" requirements).
    #[serde(default)]
    pub if_invoked: bool,
    /// Variables that must be set.
    #[serde(default)]
    pub env_present: Vec<String>,
    /// Variables that must not be set.
    #[serde(default)]
    pub env_absent: Vec<String>,
    /// Variables whose logged value must be exactly this.
    #[serde(default)]
    pub env_value: BTreeMap<String, String>,
    /// Variables whose logged SHA-256 must be that of this value (for secrets).
    #[serde(default)]
    pub env_sha256_of: BTreeMap<String, String>,
    /// The working directory (`{cwd}` is the case's directory).
    pub cwd: Option<String>,
}

/// The `[log]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LogChecks {
    /// The exact number of invocation records at the end of the case.
    pub count: Option<usize>,
    /// Checks on the records.
    #[serde(default)]
    pub invocation: Vec<InvocationCheck>,
    /// The exact number of `session/prompt` requests the ACP agents received.
    pub acp_prompts: Option<usize>,
    /// Checks on the `session/prompt` requests an ACP agent (`fake-gemini --acp`) received.
    #[serde(default)]
    pub acp_prompt: Vec<AcpPromptCheck>,
}

/// One `[[log.acp-prompt]]` check: the fake's record of a `session/prompt` it received (`prompt`,
/// the text it assembled; `blocks`, the content blocks as sent, an image's data by its length).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct AcpPromptCheck {
    /// Which prompt (0-based, in the order the agents logged them); unset: every one, and at
    /// least one must have been sent.
    pub index: Option<usize>,
    /// A JSON subset the record must match (the expectation operators apply).
    pub expect: Value,
}

/// The `[processes]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ProcessChecks {
    /// After the target has gone, none of the processes the fake logged may be alive.
    #[serde(default)]
    pub none_left: bool,
    /// How long they may take to go, in ms (scaled; default 10000).
    pub within_ms: Option<u64>,
}

/// A case file as written (before `[[row]]` expansion).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct CaseSpec {
    /// What the case does, in a sentence.
    pub description: String,
    /// Why the case needs fake-gemini (a fault or fact only the fake can make: a crash, an old
    /// version, a login state): the real-CLI lane (`--real-cli`) skips it, saying so.
    pub fake_only: Option<String>,
    /// The requirement it checks ("The server MUST …"), ideally quoting the spec.
    pub requirement: String,
    /// `must` or `should`.
    pub level: Level,
    /// Limits the case to some systems; elsewhere it is skipped.
    #[serde(default)]
    pub platforms: Vec<Platform>,
    /// Profile features the case needs; without them it is skipped.
    #[serde(default)]
    pub requires: Vec<String>,
    /// Profile features the case does not apply to, each with why (e.g. `warm-backend`: the case
    /// counts one CLI process per call); a profile claiming one skips it, saying why.
    #[serde(default)]
    pub not_for: BTreeMap<String, String>,
    /// The protocol version of the handshake (default: the profile's newest); a version the
    /// profile does not list skips the case.
    pub protocol_version: Option<String>,
    /// Whether the runner performs `initialize` + `notifications/initialized` first (default true).
    pub handshake: Option<bool>,
    /// MCP roots the client advertises in its handshake and lists when the target asks
    /// (`roots/list`): local paths, placeholders allowed, sent as `file://` URIs. Unset: the
    /// client advertises no roots.
    pub client_roots: Option<Vec<String>>,
    /// More client capabilities (e.g. `{ elicitation = { form = {} } }`): in the `initialize`
    /// capabilities, or in every 2026-07-28 request's `clientCapabilities`, merged with the
    /// roots capability `client-roots` brings.
    pub client_capabilities: Option<Value>,
    /// What the client answers the target's `elicitation/create` requests, in order: each an
    /// `ElicitResult` (`{ action = "accept", content = { … } }`, `{ action = "decline" }`), or the
    /// string `"no-answer"` to leave that request unanswered. Past the list: `cancel`.
    #[serde(default)]
    pub elicitation_answers: Vec<Value>,
    /// The default timeout of each step in ms (scaled; default 30000).
    pub timeout_ms: Option<u64>,
    /// The fake-gemini side.
    #[serde(default)]
    pub fake: Fake,
    /// Target setup.
    #[serde(default)]
    pub target: TargetSetup,
    /// The MCP steps, in order.
    #[serde(default, rename = "step")]
    pub steps: Vec<Step>,
    /// Checks on the fake's log, made after the steps.
    #[serde(default)]
    pub log: LogChecks,
    /// Checks on processes, made after the target has gone.
    #[serde(default)]
    pub processes: ProcessChecks,
}

/// A loaded case, ready to run.
#[derive(Debug, Clone)]
pub struct Case {
    /// `area/behaviour` (plus `/row` for a table row): the name used by `--run`, baselines and
    /// reports.
    pub id: String,
    /// The file it came from.
    pub path: PathBuf,
    /// The case itself.
    pub spec: CaseSpec,
}

/// Errors loading cases: always a harness/fixture problem, reported as `bug`.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// Unreadable file or directory.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Invalid TOML or an unknown key.
    #[error("{path}: {message}")]
    Invalid {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A case, or the id of a case file that did not load and why.
pub type LoadedCase = Result<Case, (String, CaseError)>;

/// The case directory shipped with this package.
pub fn default_cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")
}

/// Every `*.toml` under `cases/` when the suite was compiled (`build.rs`): its path under `cases/`
/// with `/` between components, and its text, in [`load_dir`]'s order.
const EMBEDDED: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/embedded_cases.rs"));

/// Loads the cases compiled into this suite, as [`load_dir`] loads them from the case directory;
/// a copied runner binary needs no checkout. A case's `path` is its path in the suite's source
/// (`cases/area/behaviour.toml`).
pub fn load_embedded() -> Vec<LoadedCase> {
    let root = Path::new("cases");
    let mut out = Vec::new();
    for (rel, text) in EMBEDDED {
        let path = root.join(rel);
        let id = case_id(root, &path);
        match parse_case(text, &path, &id) {
            Ok(cases) => out.extend(cases.into_iter().map(Ok)),
            Err(e) => out.push(Err((id, e))),
        }
    }
    out
}

/// Loads every `*.toml` under `dir` (recursively), sorted by id. Each file yields its case, or one
/// case per `[[row]]`. A file that does not parse is returned as an error in its slot, so the
/// runner can report it as `bug` under its id instead of dropping it.
pub fn load_dir(dir: &Path) -> Result<Vec<LoadedCase>, CaseError> {
    let mut files = Vec::new();
    collect(dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let id = case_id(dir, &f);
        match load_file(&f, &id) {
            Ok(cases) => out.extend(cases.into_iter().map(Ok)),
            Err(e) => out.push(Err((id, e))),
        }
    }
    Ok(out)
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), CaseError> {
    let rd = std::fs::read_dir(dir).map_err(|source| CaseError::Io {
        path: dir.into(),
        source,
    })?;
    for entry in rd {
        let entry = entry.map_err(|source| CaseError::Io {
            path: dir.into(),
            source,
        })?;
        let p = entry.path();
        if p.is_dir() {
            collect(&p, files)?;
        } else if p.extension().is_some_and(|e| e == "toml") {
            files.push(p);
        }
    }
    Ok(())
}

fn case_id(root: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(root).unwrap_or(file).with_extension("");
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Loads one case file: its case, or one case per `[[row]]` (each row's keys are substituted
/// for `{row.KEY}` in every string of the file, keys included; `name` names the row).
pub fn load_file(path: &Path, id: &str) -> Result<Vec<Case>, CaseError> {
    let text = std::fs::read_to_string(path).map_err(|source| CaseError::Io {
        path: path.into(),
        source,
    })?;
    parse_case(&text, path, id)
}

/// Parses case text as if it were the file `path` with id `id` (for cases built in code, such as
/// the self-test's).
pub fn parse_case(text: &str, path: &Path, id: &str) -> Result<Vec<Case>, CaseError> {
    let invalid = |message: String| CaseError::Invalid {
        path: path.into(),
        message,
    };
    let mut table: toml::Table = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
    let rows = match table.remove("row") {
        None => None,
        Some(toml::Value::Array(rows)) => Some(rows),
        Some(_) => return Err(invalid("`row` must be an array of tables ([[row]])".into())),
    };
    let parse = |t: toml::Table, id: String| -> Result<Case, CaseError> {
        let spec: CaseSpec = toml::Value::Table(t)
            .try_into()
            .map_err(|e: toml::de::Error| invalid(e.to_string()))?;
        validate(&spec).map_err(invalid)?;
        Ok(Case {
            id,
            path: path.into(),
            spec,
        })
    };
    let Some(rows) = rows else {
        return Ok(vec![parse(table, id.to_string())?]);
    };
    let mut cases = Vec::new();
    for (n, row) in rows.into_iter().enumerate() {
        let toml::Value::Table(row) = row else {
            return Err(invalid(format!("row {n} is not a table")));
        };
        let mut vars = BTreeMap::new();
        for (k, v) in &row {
            let s = match v {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            vars.insert(format!("{{row.{k}}}"), s);
        }
        let name = vars
            .get("{row.name}")
            .cloned()
            .ok_or_else(|| invalid(format!("row {n} has no `name`")))?;
        let substituted = substitute_toml(toml::Value::Table(table.clone()), &vars);
        let toml::Value::Table(t) = substituted else {
            unreachable!("a table stays a table")
        };
        let case = parse(t, format!("{id}/{name}"))?;
        cases.push(case);
    }
    Ok(cases)
}

fn substitute_toml(v: toml::Value, vars: &BTreeMap<String, String>) -> toml::Value {
    let sub = |s: &str| {
        vars.iter()
            .fold(s.to_string(), |acc, (k, v)| acc.replace(k, v))
    };
    match v {
        toml::Value::String(s) => toml::Value::String(sub(&s)),
        toml::Value::Array(a) => {
            toml::Value::Array(a.into_iter().map(|x| substitute_toml(x, vars)).collect())
        }
        toml::Value::Table(t) => toml::Value::Table(
            t.into_iter()
                .map(|(k, x)| (sub(&k), substitute_toml(x, vars)))
                .collect(),
        ),
        other => other,
    }
}

/// Checks what serde cannot: each step has exactly one action, and modifiers fit it.
pub fn validate(spec: &CaseSpec) -> Result<(), String> {
    for (n, s) in spec.steps.iter().enumerate() {
        if let Err(e) = s.action() {
            return Err(format!("step {}: {e}", n + 1));
        }
        if s.arguments.is_some() && s.call.is_none() {
            return Err(format!("step {}: `arguments` belongs to `call`", n + 1));
        }
        let is_request = s.call.is_some() || s.request.is_some();
        if (s.no_wait || s.progress_token.is_some() || s.meta.is_some()) && !is_request {
            return Err(format!(
                "step {}: `no-wait`/`progress-token`/`meta` belong to a request",
                n + 1
            ));
        }
        if s.no_wait && s.expect.is_some() {
            return Err(format!(
                "step {}: a `no-wait` request cannot `expect`; use `await-response`",
                n + 1
            ));
        }
        if s.no_wait && s.label.is_none() {
            return Err(format!(
                "step {}: a `no-wait` request needs a `label`",
                n + 1
            ));
        }
        if let Some(every) = s.poll_every_ms {
            if !is_request || s.no_wait || s.expect.is_none() || every == 0 {
                return Err(format!(
                    "step {}: `poll-every-ms` (above 0) belongs to a waited-for request with an `expect`",
                    n + 1
                ));
            }
        }
        if s.only_new && s.expect_no_notification.is_none() {
            return Err(format!(
                "step {}: `only-new` belongs to `expect-no-notification`",
                n + 1
            ));
        }
        if s.exit_code.is_some() && !s.expect_exit {
            return Err(format!(
                "step {}: `exit-code` belongs to `expect-exit`",
                n + 1
            ));
        }
    }
    if spec
        .client_capabilities
        .as_ref()
        .is_some_and(|c| !c.is_object())
    {
        return Err("`client-capabilities` must be a table".into());
    }
    // geminicli-mcp's own variables mean nothing to another wrapper: a case setting one says so,
    // so a profile without the feature skips it rather than failing on a setting never read.
    let reference_env = spec
        .target
        .env
        .keys()
        .find(|k| k.starts_with("GEMINICLI_MCP_"));
    if let Some(k) = reference_env {
        if !spec.requires.iter().any(|f| f == "geminicli-mcp-env") {
            return Err(format!(
                "[target] env sets {k}, so the case needs requires = [\"geminicli-mcp-env\"]"
            ));
        }
    }
    if spec.steps.iter().any(|s| s.cancel.is_some())
        && !spec.requires.iter().any(|f| f == "cancellation")
    {
        return Err("a case that cancels needs requires = [\"cancellation\"]".into());
    }
    for (n, c) in spec.log.invocation.iter().enumerate() {
        for r in c.argv_none_match.iter().chain(&c.prompt_matches) {
            regex::Regex::new(r).map_err(|e| format!("log.invocation[{n}]: bad regex: {e}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_case_loads() {
        let cases = load_dir(&default_cases_dir()).expect("cases dir");
        let bad: Vec<String> = cases
            .iter()
            .filter_map(|c| c.as_ref().err().map(|(id, e)| format!("{id}: {e}")))
            .collect();
        assert!(bad.is_empty(), "invalid case files:\n{}", bad.join("\n"));
    }

    #[test]
    fn embedded_cases_are_the_case_directory() {
        let ids = |cases: Vec<LoadedCase>| -> Vec<(String, String)> {
            cases
                .into_iter()
                .map(|c| match c {
                    Ok(c) => (c.id, c.spec.requirement),
                    Err((id, e)) => (id, e.to_string()),
                })
                .collect()
        };
        let embedded = ids(load_embedded());
        assert!(!embedded.is_empty(), "no case is embedded");
        assert_eq!(embedded, ids(load_dir(&default_cases_dir()).unwrap()));
    }

    #[test]
    fn rows_expand_and_unknown_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.toml");
        std::fs::write(
            &f,
            "description = \"d {row.v}\"\nrequirement = \"r\"\nlevel = \"must\"\n[[row]]\nname = \"a\"\nv = \"1\"\n[[row]]\nname = \"b\"\nv = \"2\"\n",
        )
        .unwrap();
        let cases = load_file(&f, "area/x").unwrap();
        assert_eq!(cases.len(), 2);
        assert_eq!(cases[1].id, "area/x/b");
        assert_eq!(cases[1].spec.description, "d 2");
        std::fs::write(
            &f,
            "description = \"d\"\nrequirement = \"r\"\nlevel = \"must\"\ntypo = 1\n",
        )
        .unwrap();
        assert!(load_file(&f, "area/x").is_err());
    }

    #[test]
    fn reference_settings_and_cancels_need_their_features() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.toml");
        let head = "description = \"d\"\nrequirement = \"r\"\nlevel = \"must\"\n";
        let env = "[target]\nenv = { GEMINICLI_MCP_DEBUG = \"1\" }\n";
        let cancel = "[[step]]\ncall = \"prompt\"\nlabel = \"c\"\nno-wait = true\n[[step]]\ncancel = \"c\"\n";
        for (body, feature) in [(env, "geminicli-mcp-env"), (cancel, "cancellation")] {
            std::fs::write(&f, format!("{head}{body}")).unwrap();
            let e = load_file(&f, "area/x").unwrap_err();
            assert!(format!("{e:?}").contains(feature), "{e:?}");
            let claimed = format!("{head}requires = [\"{feature}\"]\n{body}");
            std::fs::write(&f, claimed).unwrap();
            assert!(load_file(&f, "area/x").is_ok());
        }
    }
}
