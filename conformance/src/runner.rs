//! Running one case against one target: a private temp tree (HOME, cwd, the fake's log, state and
//! scenario dir), the target spawned without a shell and with a clean environment, the handshake,
//! the steps, then the checks on the fake's log and on processes, and the cleanup of anything the
//! run left alive.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::case::{Action, Case, GeminiBinary, Level, Step};
use crate::checks::check_invocation;
use crate::client::{is_response, Client};
use crate::fakelog::FakeLog;
use crate::framing;
use crate::launcher;
use crate::matcher::{matches, MatchContext};
use crate::procs;
use crate::profile::{has_no_initialize, GeminiLocation, Profile, SPEED_SETTINGS};
use crate::report::{CaseResult, Outcome};
use crate::tracker::{self, Tracker};
use crate::values::{generate, Vars};

/// Default per-step timeout (before scaling): generous for a loaded two-core machine.
pub const DEFAULT_STEP_TIMEOUT_MS: u64 = 30_000;

/// How much of the target's stderr a result keeps (its end, where the failure usually is).
const STDERR_KEPT: usize = 64 * 1024;

/// The last `max` bytes of `s` (on a character boundary), marked when cut.
fn tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("[… {start} bytes omitted …]\n{}", &s[start..])
}

/// How long a process of the case may outlive the target before it counts as a leak (before
/// scaling): time for a wrapper's own kill grace.
const LEAK_GRACE_MS: u64 = 5_000;

/// The pids with their command names, for a message.
fn describe_all(pids: &[u32]) -> String {
    pids.iter()
        .map(|p| procs::describe(*p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How long the target gets to exit after its stdin closes at the end of a case (before scaling).
const TEARDOWN_MS: u64 = 10_000;

/// Environment variables passed through from the runner to the target; everything else is
/// cleared so the runner's own environment (a real `GEMINI_API_KEY`, `RUST_LOG`, …) cannot leak
/// into a case.
const PASSTHROUGH_ENV: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SYSTEMROOT",
    "SystemRoot",
    "WINDIR",
    "LANG",
    "LC_ALL",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
    "LLVM_PROFILE_FILE",
];

/// The program under test.
#[derive(Debug, Clone)]
pub struct Target {
    /// The command line (program and arguments; no shell is involved).
    pub command: Vec<String>,
    /// Its profile.
    pub profile: Profile,
}

/// Everything a run needs besides the cases.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The target.
    pub target: Target,
    /// The fake-gemini executable.
    pub fake_gemini: PathBuf,
    /// Multiplies every timeout and window (for slow machines).
    pub timeout_scale: f64,
    /// Keeps each case's temp dir (its path is printed in the result message).
    pub keep_dirs: bool,
    /// The protocol version of every case that pins none of its own, instead of the profile's
    /// default (`2026-07-28`: every such case runs without the handshake).
    pub era_override: Option<String>,
    /// The Gemini CLI version fake-gemini reports (`FAKE_GEMINI_VERSION`) in every case that
    /// sets none of its own: a release after 0.61 plays the changes its notes name.
    pub cli_version: Option<String>,
    /// The real Gemini CLI to run instead of fake-gemini (the real-CLI lane): each case gets a
    /// scripted API of its own (`fake_gemini::api`) playing the case's scenario and prompt
    /// markers, and the CLI is pointed at it with a fake key. Cases marked `fake-only` are
    /// skipped, and the checks of the fake's invocation log are not made.
    pub real_cli: Option<PathBuf>,
}

impl RunConfig {
    /// The protocol version `case` runs at: its own, else the override, else the profile's
    /// default.
    pub fn protocol_version(&self, case: &Case) -> String {
        case.spec
            .protocol_version
            .clone()
            .or_else(|| self.era_override.clone())
            .unwrap_or_else(|| self.target.profile.default_protocol_version().to_string())
    }

    fn scaled(&self, ms: u64) -> Duration {
        Duration::from_millis((ms as f64 * self.timeout_scale.max(0.01)) as u64)
    }

    fn raise_hint(&self) -> String {
        let next = (self.timeout_scale * 3.0).max(2.0);
        format!(
            "if the target is only slow on this machine, raise the bounds with --timeout-scale {next} \
             (cargo test: GEMINI_MCP_CONFORMANCE_TIMEOUT_SCALE={next})"
        )
    }
}

/// Why a case cannot run against this target or on this system, if it cannot.
pub fn skip_reason(cfg: &RunConfig, case: &Case) -> Option<String> {
    let spec = &case.spec;
    let profile = &cfg.target.profile;
    if cfg.real_cli.is_some() {
        if let Some(why) = &spec.fake_only {
            return Some(format!("fake-only (the real-CLI lane skips it): {why}"));
        }
    }
    if !spec.platforms.is_empty() && !spec.platforms.iter().any(|p| p.is_current()) {
        return Some(format!("only on {:?}", spec.platforms));
    }
    if let Some(f) = spec.requires.iter().find(|f| !profile.features.contains(f)) {
        return Some(format!("profile {} lacks feature {f:?}", profile.name));
    }
    if let Some((f, why)) = spec
        .not_for
        .iter()
        .find(|(f, _)| profile.features.contains(f))
    {
        return Some(format!(
            "profile {} claims feature {f:?}, which this case is not for: {why}",
            profile.name
        ));
    }
    let version = cfg.protocol_version(case);
    if !profile.protocol_versions.contains(&version) {
        return Some(format!(
            "profile {} does not list protocol version {version}",
            profile.name
        ));
    }
    if let Some(s) = spec
        .target
        .settings
        .keys()
        .find(|s| !profile.settings.contains_key(*s) && !SPEED_SETTINGS.contains(&s.as_str()))
    {
        return Some(format!(
            "profile {} maps no env var for setting {s:?}",
            profile.name
        ));
    }
    for step in &spec.steps {
        if let Some(t) = &step.call {
            if profile.tool(t).is_none() {
                return Some(format!("profile {} maps no tool for {t:?}", profile.name));
            }
            let keys = step.arguments.as_ref().and_then(Value::as_object);
            if let Some(a) = keys
                .into_iter()
                .flatten()
                .find(|(a, _)| !profile.has_argument(a))
            {
                return Some(format!(
                    "profile {} maps no argument for {:?} (an argument the target may not have)",
                    profile.name, a.0
                ));
            }
        }
    }
    if let Some(a) = unmapped_raw_argument(case, profile) {
        return Some(format!(
            "profile {} maps no argument for {a:?} (an argument the target may not have)",
            profile.name
        ));
    }
    if let Some(t) = unmapped_tool_placeholder(case, profile) {
        return Some(format!(
            "profile {} maps no tool for {t:?}, which the case names as {{tool.{t}}}",
            profile.name
        ));
    }
    if spec.fake.binary == GeminiBinary::NotExecutable && !cfg!(unix) {
        return Some("execute permission is a Unix notion".into());
    }
    None
}

/// An argument the profile does not map that a case passes to an abstract tool (`{tool.X}`) in a
/// `tools/call` it writes itself (`request`, or a `send-raw` line that is JSON).
fn unmapped_raw_argument(case: &Case, profile: &Profile) -> Option<String> {
    let requests = case
        .spec
        .steps
        .iter()
        .filter_map(|s| match (&s.request, &s.send_raw) {
            (Some(r), _) => Some(r.clone()),
            (None, Some(Value::String(raw))) => serde_json::from_str::<Value>(raw).ok(),
            _ => None,
        });
    requests
        // Only calls of the suite's abstract tools: a tool named as it is (an opt-in tool of
        // geminicli-mcp's) belongs to a case a feature gates, and has arguments of its own.
        .filter(|r| {
            r.get("method").and_then(Value::as_str) == Some("tools/call")
                && r.pointer("/params/name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.starts_with("{tool."))
        })
        .find_map(|r| {
            let args = r.pointer("/params/arguments")?.as_object()?;
            args.keys()
                .find(|a| !a.starts_with('{') && !profile.has_argument(a))
                .cloned()
        })
}

/// An abstract tool a case names through a `{tool.X}` placeholder that the profile does not map
/// (the placeholder would otherwise be sent, or expected, literally).
fn unmapped_tool_placeholder(case: &Case, profile: &Profile) -> Option<String> {
    let values = case.spec.steps.iter().flat_map(|s| {
        [
            &s.request,
            &s.notify,
            &s.send_raw,
            &s.expect,
            &s.expect_message,
            &s.expect_notification,
            &s.expect_no_notification,
        ]
        .into_iter()
        .flatten()
    });
    values.map(Value::to_string).find_map(|text| {
        text.match_indices("{tool.").find_map(|(i, _)| {
            let name = text[i + 6..].split('}').next()?;
            profile.tool(name).is_none().then(|| name.to_string())
        })
    })
}

/// The temp tree of one case.
struct Dirs {
    _tmp: Option<tempfile::TempDir>,
    root: PathBuf,
    home: PathBuf,
    work: PathBuf,
    log: PathBuf,
}

/// What went wrong in a case, by severity.
#[derive(Default)]
struct Findings {
    must: Vec<String>,
    should: Vec<String>,
    bugs: Vec<String>,
    unchecked: Vec<String>,
    notes: Vec<String>,
    /// A process left behind fails the case whatever its level: it is the runner's own rule.
    leaked: bool,
}

impl Findings {
    fn add(&mut self, level: Level, msg: String) {
        match level {
            Level::Must => self.must.push(msg),
            Level::Should => self.should.push(msg),
        }
    }
}

/// A step stopped the case (a `must` failure, or a bug).
struct Stop;

/// Runs one case and returns its result; never panics on a target's misbehaviour.
pub fn run_case(cfg: &RunConfig, case: &Case) -> CaseResult {
    let started = Instant::now();
    let mut result = CaseResult {
        id: case.id.clone(),
        level: case.spec.level,
        requirement: case.spec.requirement.clone(),
        outcome: Outcome::Pass,
        message: String::new(),
        stderr: None,
        duration_ms: 0,
    };
    if let Some(reason) = skip_reason(cfg, case) {
        result.outcome = Outcome::Skip;
        result.message = reason;
        return result;
    }
    let mut findings = Findings::default();
    let stderr = match prepare_and_run(cfg, case, &mut findings) {
        Ok(s) => s,
        Err(bug) => {
            findings.bugs.push(bug);
            None
        }
    };
    result.duration_ms = started.elapsed().as_millis() as u64;
    let (outcome, message) = if !findings.bugs.is_empty() {
        (
            Outcome::Bug,
            format!(
                "BUG (a fixture or harness problem, not a verdict on the target):\n{}",
                findings.bugs.join("\n")
            ),
        )
    } else if !findings.must.is_empty() {
        let o = if case.spec.level == Level::Should && !findings.leaked {
            Outcome::Warn
        } else {
            Outcome::Fail
        };
        let mut all = findings.must.clone();
        all.extend(findings.should.iter().map(|s| format!("(should) {s}")));
        (o, all.join("\n"))
    } else if !findings.should.is_empty() {
        (
            Outcome::Warn,
            findings
                .should
                .iter()
                .map(|s| format!("(should) {s}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    } else if !findings.unchecked.is_empty() {
        (Outcome::Skip, findings.unchecked.join("\n"))
    } else {
        (Outcome::Pass, String::new())
    };
    result.outcome = outcome;
    result.message = message;
    for note in &findings.notes {
        result
            .message
            .push_str(if result.message.is_empty() { "" } else { "\n" });
        result.message.push_str(note);
    }
    if !matches!(outcome, Outcome::Pass | Outcome::Skip) {
        result.stderr = stderr.map(|s| tail(&s, STDERR_KEPT));
    }
    result
}

fn make_dirs(cfg: &RunConfig) -> Result<Dirs, String> {
    let tmp = tempfile::Builder::new()
        .prefix("gmc-")
        .tempdir()
        .map_err(|e| format!("cannot create a temp dir: {e}"))?;
    // Canonical paths: macOS hands out /var/… whose real path is /private/var/…, and the fake
    // logs the real one.
    let root = tmp
        .path()
        .canonicalize()
        .unwrap_or_else(|_| tmp.path().to_path_buf());
    let home = root.join("home");
    let work = root.join("work");
    for d in [
        &home,
        &work,
        &root.join("state"),
        &root.join("scenarios"),
        &root.join("tmp"),
        &root.join("bin"),
    ] {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    let log = root.join("fake-gemini.log");
    let tmp = if cfg.keep_dirs {
        let _ = tmp.keep();
        None
    } else {
        Some(tmp)
    };
    Ok(Dirs {
        _tmp: tmp,
        root,
        home,
        work,
        log,
    })
}

/// Where the target will find "gemini" for this case.
fn gemini_path(cfg: &RunConfig, case: &Case, dirs: &Dirs) -> Result<PathBuf, String> {
    let name = format!("gemini{}", std::env::consts::EXE_SUFFIX);
    match case.spec.fake.binary {
        GeminiBinary::Fake => {
            if !cfg.fake_gemini.is_file() {
                return Err(format!(
                    "fake-gemini not found at {}",
                    cfg.fake_gemini.display()
                ));
            }
            if cfg.target.profile.gemini == GeminiLocation::Path {
                let link = dirs.root.join("bin").join(&name);
                place_executable(&cfg.fake_gemini, &link)?;
                Ok(link)
            } else {
                Ok(cfg.fake_gemini.clone())
            }
        }
        GeminiBinary::Missing => Ok(dirs.root.join("bin").join(&name)),
        GeminiBinary::NotExecutable => {
            let p = dirs.root.join("bin").join(&name);
            std::fs::write(&p, "not a program\n")
                .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644))
                    .map_err(|e| e.to_string())?;
            }
            Ok(p)
        }
    }
}

/// The scripted API of a case in the real-CLI lane: the case's scenario (else `success`) for
/// requests without a marker, its scenario files beside the built-in ones; and the settings that
/// keep the CLI offline and quiet (no update check, no telemetry), unless the case brings its own.
fn real_api(
    cfg: &RunConfig,
    case: &Case,
    dirs: &Dirs,
) -> Result<Option<fake_gemini::api::ApiServer>, String> {
    if cfg.real_cli.is_none() || case.spec.fake.binary != GeminiBinary::Fake {
        return Ok(None);
    }
    let scenarios = dirs.root.join("scenarios");
    let default_scenario = match &case.spec.fake.scenario {
        Some(s) if case.spec.fake.files.contains_key(s) => {
            scenarios.join(s).to_string_lossy().into_owned()
        }
        Some(s) => s.clone(),
        None => "success".into(),
    };
    let config = fake_gemini::api::Config {
        default_scenario,
        scenario_dir: Some(scenarios),
        max_stall: Duration::from_secs(120),
    };
    let api = fake_gemini::api::ApiServer::start(0, config)
        .map_err(|e| format!("cannot start the scripted API: {e}"))?;
    let settings = dirs.home.join(".gemini").join("settings.json");
    if !settings.exists() {
        std::fs::create_dir_all(dirs.home.join(".gemini")).map_err(|e| e.to_string())?;
        std::fs::write(&settings, lane_settings().to_string())
            .map_err(|e| format!("cannot write {}: {e}", settings.display()))?;
    }
    Ok(Some(api))
}

/// The settings of the real-CLI lane's CLI: its auth (an API key, for the scripted API's base
/// URL) and no update check or telemetry.
fn lane_settings() -> Value {
    json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
    })
}

/// A case's own `~/.gemini/settings.json` with the lane's auth added: without it the real CLI
/// refuses the scripted API's base URL.
fn with_lane_auth(text: &str) -> Result<String, String> {
    let mut settings: Value = serde_json::from_str(text)
        .map_err(|e| format!("not JSON the lane can add its auth to: {e}"))?;
    let object = settings.as_object_mut().ok_or("not a JSON object")?;
    let security = object.entry("security").or_insert_with(|| json!({}));
    security["auth"]["selectedType"] = json!("gemini-api-key");
    Ok(settings.to_string())
}

fn place_executable(from: &Path, to: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(from, to)
            .map_err(|e| format!("cannot link {}: {e}", to.display()))
    }
    #[cfg(not(unix))]
    {
        std::fs::copy(from, to)
            .map(|_| ())
            .map_err(|e| format!("cannot copy {}: {e}", to.display()))
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "the target's environment in the order it is layered: cleared, the suite's, the profile's, the case's"
)]
fn build_command(
    cfg: &RunConfig,
    case: &Case,
    dirs: &Dirs,
    gemini: &Path,
    api: Option<&fake_gemini::api::ApiServer>,
) -> Result<Command, String> {
    let profile = &cfg.target.profile;
    let (program, args) = cfg
        .target
        .command
        .split_first()
        .ok_or("the target command line is empty")?;
    // A relative program path means relative to where the runner was started, not to the case's
    // cwd the child runs in.
    let program = if Path::new(program).components().count() > 1 {
        std::fs::canonicalize(program).map_err(|e| format!("target {program}: {e}"))?
    } else {
        PathBuf::from(program)
    };
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(&dirs.work)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for k in PASSTHROUGH_ENV {
        if let Ok(v) = std::env::var(k) {
            env.insert(k.to_string(), v);
        }
    }
    let home = dirs.home.to_string_lossy().into_owned();
    env.insert("HOME".into(), home.clone());
    env.insert("USERPROFILE".into(), home);
    let tmp = dirs.root.join("tmp").to_string_lossy().into_owned();
    for k in ["TMPDIR", "TEMP", "TMP"] {
        env.insert(k.into(), tmp.clone());
    }
    env.insert(
        "FAKE_GEMINI_LOG".into(),
        dirs.log.to_string_lossy().into_owned(),
    );
    env.insert(
        "FAKE_GEMINI_STATE".into(),
        dirs.root.join("state").to_string_lossy().into_owned(),
    );
    env.insert(
        "FAKE_GEMINI_SCENARIO_DIR".into(),
        dirs.root.join("scenarios").to_string_lossy().into_owned(),
    );
    let fake = &case.spec.fake;
    if let Some(s) = &fake.scenario {
        let path = dirs.root.join("scenarios").join(s);
        let value = if fake.files.contains_key(s) {
            path.to_string_lossy().into_owned()
        } else {
            s.clone()
        };
        env.insert("FAKE_GEMINI_SCENARIO".into(), value);
    }
    // `{home}` and `{cwd}` in env values: a case can point the fake's state at `$HOME/.gemini`,
    // where the real CLI keeps it and a target looks for it.
    let dir_vars = Vars::new(profile, &dirs.work, &dirs.home);
    env.extend(fake.env.iter().map(|(k, v)| (k.clone(), dir_vars.str(v))));
    if let Some(v) = &cfg.cli_version {
        env.entry("FAKE_GEMINI_VERSION".into())
            .or_insert_with(|| v.clone());
    }
    let gemini = match (&cfg.real_cli, api) {
        (Some(real), Some(api)) if fake.binary == GeminiBinary::Fake => {
            // The real CLI, offline: a fake key and the case's own scripted API.
            env.insert("GEMINI_API_KEY".into(), "conformance-fake-key".into());
            env.insert("GOOGLE_GEMINI_BASE_URL".into(), api.base_url());
            real.clone()
        }
        _ => launcher::prepare(&cfg.fake_gemini, fake.binary, &dirs.root, &env, gemini)?,
    };
    match &profile.gemini {
        GeminiLocation::Env(var) => {
            env.insert(var.clone(), gemini.to_string_lossy().into_owned());
        }
        GeminiLocation::Path => {
            let dir = gemini
                .parent()
                .expect("the gemini path has a parent")
                .to_path_buf();
            let mut paths = vec![dir];
            if let Some(p) = env.get("PATH") {
                paths.extend(std::env::split_paths(p));
            }
            if case.spec.fake.binary == GeminiBinary::Missing {
                let name = format!("gemini{}", std::env::consts::EXE_SUFFIX);
                if let Some(found) = paths.iter().map(|d| d.join(&name)).find(|p| p.is_file()) {
                    return Err(format!(
                        "SKIP: a gemini executable is on PATH ({}), so \"not found\" cannot be arranged",
                        found.display()
                    ));
                }
            }
            let joined = std::env::join_paths(paths).map_err(|e| e.to_string())?;
            env.insert("PATH".into(), joined.to_string_lossy().into_owned());
        }
    }
    env.extend(profile.env.clone());
    for (setting, value) in &case.spec.target.settings {
        // An unmapped setting here is a speed setting (skip_reason checked the others).
        if let Some(var) = profile.settings.get(setting) {
            env.insert(var.clone(), value.clone());
        }
    }
    env.extend(
        case.spec
            .target
            .env
            .iter()
            .map(|(k, v)| (k.clone(), dir_vars.str(v))),
    );
    cmd.envs(env);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group, so the cleanup can kill whatever the target started in it.
        cmd.process_group(0);
    }
    Ok(cmd)
}

/// The client's name and version, as `initialize` and the era without a handshake send them.
fn client_info() -> Value {
    json!({"name": "gemini-mcp-conformance", "version": env!("CARGO_PKG_VERSION")})
}

fn json_of(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 2000 {
        let mut cut = 2000;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}… ({} bytes)", &s[..cut], s.len())
    } else {
        s
    }
}

/// Why a step did not pass: the target failed its check, or the case or its fixture is broken
/// (which must never look like a verdict on the target).
enum StepError {
    /// A check failed; the message says what was expected and what came.
    Fail(String),
    /// A fixture or harness problem.
    Bug(String),
}

fn fail(message: String) -> StepError {
    StepError::Fail(message)
}

/// Where a step stands: its number, its deadline and its timeout as written.
#[derive(Clone, Copy)]
struct At {
    n: usize,
    deadline: Instant,
    ms: u64,
}

struct Run<'a> {
    cfg: &'a RunConfig,
    case: &'a Case,
    client: Client,
    dirs: Dirs,
    vars: Vars,
    ctx: MatchContext,
    labels: BTreeMap<String, Value>,
    /// (progress token, request id) of every request sent with a token.
    tokens: Vec<(Value, Value)>,
    processes_unchecked: bool,
    /// Every process the case started (Linux: the whole tree, escaped descendants included).
    tracker: Option<Tracker>,
    /// The case's protocol version.
    version: String,
    /// The client's capabilities: in `initialize`, or in every request's `_meta` on the era
    /// without a handshake.
    capabilities: Value,
    /// The case's scripted API, in the real-CLI lane.
    api: Option<&'a fake_gemini::api::ApiServer>,
}

/// Sets up, runs and tears down a case; returns the target's stderr, or a bug.
fn prepare_and_run(
    cfg: &RunConfig,
    case: &Case,
    findings: &mut Findings,
) -> Result<Option<String>, String> {
    let dirs = make_dirs(cfg)?;
    for (name, text) in &case.spec.fake.files {
        let p = dirs.root.join("scenarios").join(name);
        std::fs::write(&p, text)
            .map_err(|e| format!("cannot write scenario {}: {e}", p.display()))?;
    }
    let gemini = gemini_path(cfg, case, &dirs)?;
    let api = real_api(cfg, case, &dirs)?;
    let mut cmd = match build_command(cfg, case, &dirs, &gemini, api.as_ref()) {
        Ok(c) => c,
        Err(e) if e.starts_with("SKIP: ") => {
            findings
                .unchecked
                .push(e.trim_start_matches("SKIP: ").to_string());
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let (child, tracker) = tracker::spawn_tracked(&mut cmd, &dirs.root)
        .map_err(|e| format!("cannot start the target {:?}: {e}", cfg.target.command))?;
    let vars = Vars::new(&cfg.target.profile, &dirs.work, &dirs.home);
    let mut run = Run {
        cfg,
        case,
        client: Client::new(child),
        dirs,
        vars,
        ctx: MatchContext {
            protocol_versions: cfg.target.profile.protocol_versions.clone(),
        },
        labels: BTreeMap::new(),
        tokens: Vec::new(),
        processes_unchecked: false,
        tracker: Some(tracker),
        version: cfg.protocol_version(case),
        capabilities: client_capabilities(case),
        api: api.as_ref(),
    };
    run.client.elicitation_answers = case
        .spec
        .elicitation_answers
        .iter()
        .map(|a| run.vars.value(a))
        .collect();
    for path in case.spec.client_roots.iter().flatten() {
        let path = run.vars.str(path);
        run.client
            .roots
            .push(json!({"uri": format!("file://{path}"), "name": path}));
    }
    let outcome = run.steps(findings);
    run.teardown(findings, outcome.is_ok());
    if run.processes_unchecked {
        if let Some(r) = procs::unsupported_reason() {
            findings.unchecked.push(r.to_string());
        }
    }
    if cfg.keep_dirs {
        findings
            .notes
            .push(format!("temp dir kept: {}", run.dirs.root.display()));
    }
    Ok(Some(run.client.stderr()))
}

/// The capabilities the client claims in a case: roots when it has `client-roots`, merged with
/// the case's `client-capabilities`.
fn client_capabilities(case: &Case) -> Value {
    let mut caps = match &case.spec.client_roots {
        Some(_) => json!({"roots": {"listChanged": false}}),
        None => json!({}),
    };
    if let Some(extra) = &case.spec.client_capabilities {
        merge(&mut caps, extra);
    }
    caps
}

/// Merges `extra` into `base`, table by table (`extra` wins where both have a value that is not
/// a table).
fn merge(base: &mut Value, extra: &Value) {
    match (base, extra) {
        (Value::Object(b), Value::Object(e)) => {
            for (k, v) in e {
                match b.get_mut(k) {
                    Some(old) => merge(old, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, e) => *b = e.clone(),
    }
}

impl Run<'_> {
    /// Whether the case runs in the era without a handshake.
    fn stateless(&self) -> bool {
        has_no_initialize(&self.version)
    }

    fn timeout(&self, step: Option<&Step>) -> (Duration, u64) {
        let ms = step
            .and_then(|s| s.timeout_ms)
            .or(self.case.spec.timeout_ms)
            .unwrap_or(DEFAULT_STEP_TIMEOUT_MS);
        (self.cfg.scaled(ms), ms)
    }

    fn timed_out(&self, n: usize, what: &str, ms: u64) -> String {
        format!(
            "step {n} ({what}): nothing within {} ms ({ms} ms × scale {}); {}",
            (ms as f64 * self.cfg.timeout_scale) as u64,
            self.cfg.timeout_scale,
            self.cfg.raise_hint()
        )
    }

    fn steps(&mut self, findings: &mut Findings) -> Result<(), Stop> {
        if self.case.spec.handshake.unwrap_or(true) && !self.stateless() {
            self.handshake(findings)?;
        }
        for (i, step) in self.case.spec.steps.iter().enumerate() {
            let level = step.level.unwrap_or(Level::Must);
            match self.step(i + 1, step) {
                Ok(()) => {}
                Err(StepError::Bug(bug)) => {
                    findings.bugs.push(format!("step {}: {bug}", i + 1));
                    return Err(Stop);
                }
                Err(StepError::Fail(msg)) => {
                    findings.add(level, msg);
                    if level == Level::Must {
                        return Err(Stop);
                    }
                }
            }
        }
        Ok(())
    }

    fn handshake(&mut self, findings: &mut Findings) -> Result<(), Stop> {
        let version = self.version.clone();
        let (deadline, ms) = self.timeout(None);
        let capabilities = self.capabilities.clone();
        let id = self
            .client
            .request(
                "initialize",
                Some(json!({
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "clientInfo": client_info()
                })),
            )
            .map_err(|e| {
                findings
                    .must
                    .push(format!("handshake: cannot write initialize: {e}"));
                Stop
            })?;
        match self.client.response(&id, Instant::now() + deadline) {
            Some(r) if r.get("result").is_some() => {}
            Some(r) => {
                findings
                    .must
                    .push(format!("handshake: initialize failed: {}", json_of(&r)));
                return Err(Stop);
            }
            None => {
                findings.must.push(self.timed_out(0, "initialize", ms));
                return Err(Stop);
            }
        }
        let _ = self.client.notify("notifications/initialized", None);
        Ok(())
    }

    fn label_id(&self, label: &str) -> Result<Value, StepError> {
        self.labels
            .get(label)
            .cloned()
            .ok_or_else(|| StepError::Bug(format!("no earlier request is labelled {label:?}")))
    }

    fn expect_subset(
        &self,
        n: usize,
        what: &str,
        expected: &Value,
        actual: &Value,
    ) -> Result<(), String> {
        let expected = framing::adapt(&self.vars.value(expected), &self.cfg.target.profile);
        matches(&expected, actual, &self.ctx)
            .map_err(|e| format!("step {n} ({what}): {e}\n  message: {}", json_of(actual)))
    }

    fn step(&mut self, n: usize, s: &Step) -> Result<(), StepError> {
        let (timeout, ms) = self.timeout(Some(s));
        let at = At {
            n,
            deadline: Instant::now() + timeout,
            ms,
        };
        let within = |d: u64| self.cfg.scaled(s.within_ms.unwrap_or(d));
        let action = s.action().map_err(StepError::Bug)?;
        match action {
            Action::Call(tool) => self.call(at, s, tool),
            Action::Request(r) => self.request(at, s, r),
            Action::Notify(nf) => self.notify(n, nf),
            Action::SendRaw(raw) => {
                let raw = match crate::values::generate(raw).map_err(StepError::Bug)? {
                    Value::String(text) => text,
                    _ => return Err(StepError::Bug("send-raw must be a string".into())),
                };
                let mut bytes = self.vars.str(&raw).into_bytes();
                bytes.push(b'\n');
                self.client
                    .send_raw(bytes)
                    .map_err(|e| fail(format!("step {n} (send-raw): {e}")))
            }
            Action::Cancel(label) => self.cancel(n, label),
            Action::AwaitResponse(label) => {
                let id = self.label_id(label)?;
                let what = format!("await-response {label}");
                match self.client.response(&id, at.deadline) {
                    Some(r) => self.check_response(n, &what, s, &r),
                    None => Err(fail(self.no_answer(n, &what, ms))),
                }
            }
            Action::ExpectMessage(pattern) => self.expect_message(at, pattern),
            Action::ExpectNotification(pattern) => self.expect_notification(at, pattern),
            Action::ExpectNoNotification(pattern) => {
                self.expect_no_notification(n, pattern, s.only_new, within(0))
            }
            Action::ExpectNoResponse(label) => self.expect_no_response(n, label, within(1000)),
            Action::WaitInvocations(want) => self.wait_invocations(at, want),
            Action::ExpectInvocations(want) => self.expect_invocations(n, want),
            Action::ExpectFilesAbsent(paths) => self.expect_files_absent(n, paths),
            Action::ExpectFiles(files) => self.expect_files(n, files),
            Action::ExpectStderrExcludes(text) => {
                let text = self.vars.str(text);
                if self.client.stderr().contains(&text) {
                    Err(fail(format!(
                        "step {n} (expect-stderr-excludes): the target's stderr contains {text:?}"
                    )))
                } else {
                    Ok(())
                }
            }
            Action::Sleep(ms) => self.sleep(ms),
            Action::MakeDirs(dirs) => self.make_dirs(n, dirs),
            Action::WriteFiles(files) => self.write_files(n, files),
            Action::ReplaceWithSymlink(swap) => self.replace_with_symlink(n, swap),
            Action::CloseStdin | Action::Disconnect | Action::KillTarget => {
                match action {
                    Action::CloseStdin => self.client.close_stdin(),
                    Action::Disconnect => self.client.disconnect(),
                    _ => self.client.kill_target_only(),
                }
                Ok(())
            }
            Action::ExpectExit => {
                let bound = s.within_ms.map(|w| self.cfg.scaled(w)).unwrap_or(timeout);
                self.expect_exit(n, bound, s.exit_code)
            }
            Action::ExpectProcessesGone => self.expect_processes_gone(n, within(10_000)),
        }
    }

    /// `request`: a JSON-RPC request the case writes, placeholders filled.
    fn request(&mut self, at: At, s: &Step, r: &Value) -> Result<(), StepError> {
        let method = r
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| StepError::Bug("a `request` needs a string `method`".into()))?
            .to_string();
        let params = self.generated(r.get("params"))?;
        let what = format!("request {method}");
        self.send_request(at, s, &method, params, &what)
    }

    /// `notify`: a notification the case writes.
    fn notify(&mut self, n: usize, nf: &Value) -> Result<(), StepError> {
        let method = nf
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| StepError::Bug("`notify` needs a `method`".into()))?;
        let params = self.generated(nf.get("params"))?;
        self.client
            .notify(method, params)
            .map_err(|e| fail(format!("step {n} (notify {method}): {e}")))
    }

    /// `cancel`: `notifications/cancelled` for a labelled request.
    fn cancel(&mut self, n: usize, label: &str) -> Result<(), StepError> {
        let id = self.label_id(label)?;
        self.client
            .notify(
                "notifications/cancelled",
                Some(json!({"requestId": id, "reason": "cancelled by the conformance case"})),
            )
            .map_err(|e| fail(format!("step {n} (cancel {label}): {e}")))
    }

    fn expect_no_response(
        &mut self,
        n: usize,
        label: &str,
        within: Duration,
    ) -> Result<(), StepError> {
        let id = self.label_id(label)?;
        self.client.listen_until(Instant::now() + within);
        let hit = self
            .client
            .received
            .iter()
            .find(|r| is_response(&r.message) && r.message.get("id") == Some(&id));
        match hit {
            Some(r) => Err(fail(format!(
                "step {n} (expect-no-response {label}): the request was answered: {}",
                json_of(&r.message)
            ))),
            None => Ok(()),
        }
    }

    fn expect_invocations(&self, n: usize, want: usize) -> Result<(), StepError> {
        let have = self.invocations();
        if have == want {
            return Ok(());
        }
        Err(fail(format!(
            "step {n} (expect-invocations): the fake logged {have} invocation(s), expected {want}"
        )))
    }

    fn expect_files_absent(&self, n: usize, paths: &[String]) -> Result<(), StepError> {
        let present: Vec<String> = paths
            .iter()
            .map(|p| self.vars.str(p))
            .filter(|p| Path::new(p).exists())
            .collect();
        if present.is_empty() {
            return Ok(());
        }
        Err(fail(format!(
            "step {n} (expect-files-absent): these exist: {present:?}"
        )))
    }

    fn make_dirs(&self, n: usize, dirs: &[String]) -> Result<(), StepError> {
        for d in dirs {
            let d = self.vars.str(d);
            std::fs::create_dir_all(&d)
                .map_err(|e| StepError::Bug(format!("step {n} (make-dirs): {d}: {e}")))?;
        }
        Ok(())
    }

    fn write_files(
        &self,
        n: usize,
        files: &std::collections::BTreeMap<String, Value>,
    ) -> Result<(), StepError> {
        for (path, text) in files {
            let path = self.vars.str(path);
            let mut text = match text {
                Value::String(text) => self.vars.str(text),
                generator => match self.generated(Some(generator))? {
                    Some(Value::String(text)) => text,
                    _ => {
                        return Err(StepError::Bug(format!(
                            "step {n} (write-files): {path}: a file's text must be a string or build one"
                        )));
                    }
                },
            };
            if self.api.is_some()
                && Path::new(&path) == self.dirs.home.join(".gemini/settings.json")
            {
                text = with_lane_auth(&text)
                    .map_err(|e| StepError::Bug(format!("step {n} (write-files): {path}: {e}")))?;
            }
            let written = Path::new(&path)
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, text));
            written.map_err(|e| StepError::Bug(format!("step {n} (write-files): {path}: {e}")))?;
        }
        Ok(())
    }

    #[cfg(unix)]
    fn replace_with_symlink(
        &self,
        n: usize,
        swap: &crate::case::SymlinkSwap,
    ) -> Result<(), StepError> {
        let path = self.vars.str(&swap.path);
        let target = self.vars.str(&swap.target);
        let aside = format!("{path}.replaced");
        std::fs::rename(&path, &aside)
            .and_then(|()| std::os::unix::fs::symlink(&target, &path))
            .map_err(|e| StepError::Bug(format!("step {n} (replace-with-symlink): {path}: {e}")))
    }

    #[cfg(not(unix))]
    fn replace_with_symlink(
        &self,
        n: usize,
        _swap: &crate::case::SymlinkSwap,
    ) -> Result<(), StepError> {
        Err(StepError::Bug(format!(
            "step {n} (replace-with-symlink): Unix only; give the case platforms = [\"unix\"]"
        )))
    }

    /// Sleeps `ms` (scaled), reading meanwhile: a target must never block on a full stdout pipe.
    fn sleep(&mut self, ms: u64) -> Result<(), StepError> {
        let until = Instant::now() + self.cfg.scaled(ms);
        self.client.listen_until(until);
        if let Some(rest) = until.checked_duration_since(Instant::now()) {
            std::thread::sleep(rest);
        }
        Ok(())
    }

    /// A case value with its placeholders filled and its generators run.
    fn generated(&self, params: Option<&Value>) -> Result<Option<Value>, StepError> {
        params
            .map(|p| generate(&self.vars.value(p)).map_err(StepError::Bug))
            .transpose()
    }

    /// `call`: the abstract tool and arguments mapped through the profile.
    fn call(&mut self, at: At, s: &Step, tool: &str) -> Result<(), StepError> {
        let name = self
            .cfg
            .target
            .profile
            .tool(tool)
            .expect("checked by skip_reason")
            .to_string();
        let arguments = match &s.arguments {
            Some(Value::Object(a)) => {
                let mut args = Map::new();
                for (k, v) in a {
                    args.insert(self.cfg.target.profile.argument(k).to_string(), v.clone());
                }
                for (k, v) in &self.cfg.target.profile.call_arguments {
                    args.entry(k.clone()).or_insert_with(|| v.clone());
                }
                Value::Object(args)
            }
            // Deliberately malformed arguments (not an object) are sent as written.
            Some(other) => {
                let params = json!({"name": name, "arguments": other});
                return self.send_request(at, s, "tools/call", Some(params), "call");
            }
            None => Value::Object(
                self.cfg
                    .target
                    .profile
                    .call_arguments
                    .clone()
                    .into_iter()
                    .collect(),
            ),
        };
        let params = self.generated(Some(&json!({"name": name, "arguments": arguments})))?;
        self.send_request(at, s, "tools/call", params, &format!("call {tool}"))
    }

    fn expect_message(&mut self, at: At, pattern: &Value) -> Result<(), StepError> {
        let pattern = framing::adapt(&self.vars.value(pattern), &self.cfg.target.profile);
        let ctx = self.ctx.clone();
        let id = pattern.get("id").filter(|id| !id.is_object()).cloned();
        loop {
            let slice = (Instant::now() + Duration::from_millis(100)).min(at.deadline);
            if self
                .client
                .wait_for(slice, |m| matches(&pattern, m, &ctx).is_ok())
                .is_some()
            {
                return Ok(());
            }
            // The response the pattern names has come in another shape: waiting longer cannot
            // change it.
            let answered = id.as_ref().and_then(|id| {
                self.client.received.iter().find(|r| {
                    !r.consumed && is_response(&r.message) && r.message.get("id") == Some(id)
                })
            });
            if let Some(r) = answered {
                let why = matches(&pattern, &r.message, &ctx)
                    .err()
                    .unwrap_or_default();
                return Err(fail(format!(
                    "step {} (expect-message): the response came in another shape: {why}\n  message: {}",
                    at.n,
                    json_of(&r.message)
                )));
            }
            if Instant::now() >= at.deadline || self.client.stdout_ended() {
                break;
            }
        }
        Err(fail(format!(
            "{}\n  wanted: {}\n  unclaimed messages: {}",
            self.no_answer(at.n, "expect-message", at.ms),
            json_of(&pattern),
            self.unclaimed()
        )))
    }

    fn expect_notification(&mut self, at: At, pattern: &Value) -> Result<(), StepError> {
        let n = at.n;
        let pattern = self.vars.value(pattern);
        let ctx = self.ctx.clone();
        // Progress for a request that has been answered can never come (the MCP spec forbids
        // it), so waiting for it would only burn the whole timeout.
        let token_request = pattern
            .pointer("/params/progressToken")
            .and_then(|t| self.tokens.iter().find(|(tok, _)| tok == t))
            .map(|(_, id)| id.clone());
        let mut found = None;
        while found.is_none() && Instant::now() < at.deadline {
            let slice = (Instant::now() + Duration::from_millis(100)).min(at.deadline);
            found = self.client.wait_for(slice, |m| {
                m.get("method").is_some()
                    && m.get("id").is_none()
                    && matches(&pattern, m, &ctx).is_ok()
            });
            if found.is_some() || self.client.stdout_ended() {
                break;
            }
            if let Some(id) = &token_request {
                if self
                    .client
                    .received
                    .iter()
                    .any(|r| is_response(&r.message) && r.message.get("id") == Some(id))
                {
                    return Err(fail(format!(
                        "step {n} (expect-notification): the request with that progress token was answered without it\n  wanted: {}\n  notifications seen: {}",
                        json_of(&pattern),
                        self.notifications_seen()
                    )));
                }
            }
        }
        match found {
            Some(_) => Ok(()),
            None => Err(fail(format!(
                "{}\n  wanted: {}\n  notifications seen: {}",
                self.no_answer(n, "expect-notification", at.ms),
                json_of(&pattern),
                self.notifications_seen()
            ))),
        }
    }

    fn expect_no_notification(
        &mut self,
        n: usize,
        pattern: &Value,
        only_new: bool,
        within: Duration,
    ) -> Result<(), StepError> {
        self.client.drain();
        let from = if only_new {
            self.client.received.len()
        } else {
            0
        };
        self.client.listen_until(Instant::now() + within);
        let pattern = self.vars.value(pattern);
        let hit = self.client.received[from..].iter().find(|r| {
            r.message.get("method").is_some()
                && r.message.get("id").is_none()
                && matches(&pattern, &r.message, &self.ctx).is_ok()
        });
        match hit {
            Some(r) => Err(fail(format!(
                "step {n} (expect-no-notification): got {}",
                json_of(&r.message)
            ))),
            None => Ok(()),
        }
    }

    /// The runs of the CLI so far: those the fake logged, or, in the real-CLI lane, the
    /// conversation requests (`:streamGenerateContent`) that reached the scripted API, answered
    /// or held (one per run of a turn without tools).
    fn invocations(&self) -> usize {
        match self.api {
            Some(api) => api.conversation_requests(),
            None => FakeLog::read(&self.dirs.log).invocations.len(),
        }
    }

    /// Waits until [`Run::invocations`] reaches `want`.
    fn wait_invocations(&mut self, at: At, want: usize) -> Result<(), StepError> {
        loop {
            let have = self.invocations();
            if have >= want {
                return Ok(());
            }
            if Instant::now() >= at.deadline {
                return Err(fail(format!(
                    "step {} (wait-invocations {want}): the fake logged {have} invocation(s) within {} ms × scale {}; {}\n  unclaimed messages: {}",
                    at.n,
                    at.ms,
                    self.cfg.timeout_scale,
                    self.cfg.raise_hint(),
                    self.unclaimed()
                )));
            }
            self.client.drain();
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn expect_files(&self, n: usize, files: &BTreeMap<String, String>) -> Result<(), StepError> {
        for (path, want) in files {
            let path = self.vars.str(path);
            match std::fs::read_to_string(&path) {
                Ok(got) if got == self.vars.str(want) => {}
                Ok(got) => {
                    return Err(fail(format!(
                        "step {n} (expect-files): {path} holds {:?}, expected {want:?}",
                        got.chars().take(300).collect::<String>()
                    )))
                }
                Err(e) => return Err(fail(format!("step {n} (expect-files): {path}: {e}"))),
            }
        }
        Ok(())
    }

    fn expect_exit(
        &mut self,
        n: usize,
        bound: Duration,
        code: Option<i32>,
    ) -> Result<(), StepError> {
        match self.client.wait_exit(Instant::now() + bound) {
            None => Err(fail(format!(
                "step {n} (expect-exit): the target is still running after {} ms; {}",
                bound.as_millis(),
                self.cfg.raise_hint()
            ))),
            Some(status) => match (code, status.code()) {
                (Some(want), Some(got)) if want != got => Err(fail(format!(
                    "step {n} (expect-exit): exit code {got}, expected {want}"
                ))),
                (Some(want), None) => Err(fail(format!("step {n} (expect-exit): killed by a signal ({status}), expected exit code {want}"))),
                _ => Ok(()),
            },
        }
    }

    fn expect_processes_gone(&mut self, n: usize, within: Duration) -> Result<(), StepError> {
        if procs::unsupported_reason().is_some() {
            self.processes_unchecked = true;
            return Ok(());
        }
        let log = FakeLog::read(&self.dirs.log);
        let left = procs::wait_gone(&log.pids(), within);
        if left.is_empty() {
            return Ok(());
        }
        Err(fail(format!(
            "step {n} (expect-processes-gone): still alive after {} ms: {}",
            within.as_millis(),
            left.iter()
                .map(|p| procs::describe(*p))
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }

    fn no_answer(&self, n: usize, what: &str, ms: u64) -> String {
        if self.client.stdout_ended() {
            format!("step {n} ({what}): the target closed its stdout (exited?) before answering")
        } else {
            self.timed_out(n, what, ms)
        }
    }

    fn unclaimed(&self) -> String {
        let v: Vec<String> = self
            .client
            .received
            .iter()
            .filter(|r| !r.consumed)
            .map(|r| json_of(&r.message))
            .take(5)
            .collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join("\n    ")
        }
    }

    fn notifications_seen(&self) -> String {
        let v: Vec<String> = self
            .client
            .received
            .iter()
            .filter(|r| r.message.get("id").is_none())
            .map(|r| json_of(&r.message))
            .take(8)
            .collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join("\n    ")
        }
    }

    /// A request's params with its `_meta`: the client's context on the era without a handshake
    /// (a key the step's own `_meta` gives wins) and the step's progress token.
    fn with_meta(&self, s: &Step, params: Option<Value>) -> Option<Value> {
        let mut meta = Map::new();
        if self.stateless() {
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".into(),
                json!(self.version),
            );
            meta.insert("io.modelcontextprotocol/clientInfo".into(), client_info());
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".into(),
                self.capabilities.clone(),
            );
        }
        for (k, v) in s.meta.iter().flatten() {
            meta.insert(k.clone(), v.clone());
        }
        if meta.is_empty() && s.progress_token.is_none() {
            return params;
        }
        let mut params = params;
        let p = params.get_or_insert_with(|| json!({}));
        if let Some(o) = p.as_object_mut() {
            let m = o.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = m.as_object_mut() {
                for (k, v) in meta {
                    m.entry(k).or_insert(v);
                }
                if let Some(tok) = &s.progress_token {
                    m.insert("progressToken".into(), tok.clone());
                }
            }
        }
        params
    }

    /// Sends a request and checks its response; with `poll-every-ms`, sends it again (a new id
    /// each time) until a response matches `expect` or the step's timeout is near.
    fn send_request(
        &mut self,
        at: At,
        s: &Step,
        method: &str,
        params: Option<Value>,
        what: &str,
    ) -> Result<(), StepError> {
        let params = self.with_meta(s, params);
        loop {
            let id = self
                .client
                .request(method, params.clone())
                .map_err(|e| fail(format!("step {} ({what}): {e}", at.n)))?;
            if let Some(l) = &s.label {
                self.labels.insert(l.clone(), id.clone());
            }
            if let Some(tok) = &s.progress_token {
                self.tokens.push((tok.clone(), id.clone()));
            }
            if s.no_wait {
                return Ok(());
            }
            let Some(r) = self.client.response(&id, at.deadline) else {
                return Err(fail(self.no_answer(at.n, what, at.ms)));
            };
            let (Some(every), Some(expect)) = (s.poll_every_ms, &s.expect) else {
                return self.check_response(at.n, what, s, &r);
            };
            let mismatch = match self.expect_subset(at.n, what, expect, &r) {
                Ok(()) => return self.check_response(at.n, what, s, &r),
                Err(e) => e,
            };
            let next = Instant::now() + self.cfg.scaled(every);
            if next >= at.deadline {
                return Err(fail(format!(
                    "{mismatch}\n  (the last response of a poll every {every} ms for {} ms × scale {}; {})",
                    at.ms,
                    self.cfg.timeout_scale,
                    self.cfg.raise_hint()
                )));
            }
            self.client.listen_until(next);
        }
    }

    fn check_response(&self, n: usize, what: &str, s: &Step, r: &Value) -> Result<(), StepError> {
        if let Some(e) = &s.expect {
            self.expect_subset(n, what, e, r).map_err(fail)?;
        }
        for (name, pointer) in s.save.iter().flatten() {
            let value = match r.pointer(pointer) {
                Some(Value::Null) | None => {
                    return Err(fail(format!(
                        "step {n} ({what}): nothing to save as {name} at {pointer}\n  message: {}",
                        json_of(r)
                    )))
                }
                Some(v) => v.clone(),
            };
            self.vars.save(name, value);
        }
        Ok(())
    }

    fn teardown(&mut self, findings: &mut Findings, completed: bool) {
        self.client.close_stdin();
        let exited = self
            .client
            .wait_exit(Instant::now() + self.cfg.scaled(TEARDOWN_MS))
            .is_some();
        if !exited {
            self.client.kill();
        }
        self.client.drain();
        let log = FakeLog::read(&self.dirs.log);
        let pids = log.pids();
        let how = if exited {
            "after the target exited"
        } else {
            "after the target was killed at teardown"
        };
        // Checks after a failed step still run: a wrapper author sees every check that failed.
        let late = if completed {
            ""
        } else {
            " (checked after an earlier step failed)"
        };
        let mut reported = Vec::new();
        if self.case.spec.processes.none_left {
            if procs::unsupported_reason().is_some() {
                self.processes_unchecked = true;
            } else {
                let ms = self.case.spec.processes.within_ms.unwrap_or(10_000);
                let within = self.cfg.scaled(ms);
                reported = procs::wait_gone(&pids, within);
                if !reported.is_empty() {
                    findings.must.push(format!(
                        "processes{late}: still alive {} ms {how}: {}",
                        within.as_millis(),
                        describe_all(&reported)
                    ));
                }
            }
        }
        if self.cfg.real_cli.is_none() {
            self.check_log(&log, findings, late);
        }
        self.check_leaks(findings, &reported, how);
        procs::kill_all(&pids);
        self.check_era(findings);
        if !self.client.violations.is_empty() {
            findings.must.push(format!(
                "stdout: the target wrote lines that are not JSON-RPC messages (stdout is the protocol channel): {}",
                self.client.violations.join("; ")
            ));
        }
        // The fake's own failure makes the whole case meaningless: report it as a bug.
        for f in &log.fixture_failures {
            findings
                .bugs
                .push(format!("fake-gemini failed (exit 99): {}", json_of(f)));
        }
        for l in log.unparsed.iter().take(3) {
            findings.bugs.push(format!(
                "fake-gemini's log has a line that is not JSON: {l:?}"
            ));
        }
        let marker = "fake-gemini: ";
        if log.fixture_failures.is_empty() {
            if let Some(r) = self
                .client
                .received
                .iter()
                .find(|r| r.message.to_string().contains(marker))
            {
                findings.bugs.push(format!(
                    "fake-gemini reported its own failure (\"fake-gemini: …\", exit 99) in: {}",
                    json_of(&r.message)
                ));
            }
        }
    }

    /// The era without a handshake has no requests from the server to the client: each one the
    /// target sent (`roots/list`, `elicitation/create`, …) is a `must` finding.
    fn check_era(&self, findings: &mut Findings) {
        if !self.stateless() {
            return;
        }
        let mut methods = self.client.target_requests.clone();
        methods.dedup();
        for m in methods {
            findings.must.push(format!(
                "server→client request {m} on a {} connection (this protocol revision has no requests from the server)",
                self.version
            ));
        }
    }

    /// Every process the case started that is still alive once the target has gone (Linux: the
    /// whole tree, double-forked and `setsid` descendants included) is a leak: reported as a
    /// failure of this case, then killed by pid so it cannot disturb the next case.
    fn check_leaks(&mut self, findings: &mut Findings, reported: &[u32], how: &str) {
        let Some(tracker) = self.tracker.take() else {
            return;
        };
        let target = self.client.pid();
        let pids: Vec<u32> = tracker
            .alive()
            .iter()
            .map(|s| s.pid)
            .filter(|p| *p != target && !reported.contains(p))
            .collect();
        let grace = self.cfg.scaled(LEAK_GRACE_MS);
        let left = procs::wait_gone(&pids, grace);
        let named = describe_all(&left);
        tracker.finish();
        if !left.is_empty() {
            findings.leaked = true;
            findings.must.push(format!(
                "leak: {} process(es) the run started were still alive {} ms {how}, so the \
                 target leaves processes behind (the runner killed them): {named}",
                left.len(),
                grace.as_millis(),
            ));
        }
    }

    fn check_log(&self, log: &FakeLog, findings: &mut Findings, late: &str) {
        let spec = &self.case.spec;
        if let Some(want) = spec.log.count {
            if log.invocations.len() != want {
                findings.must.push(format!(
                    "log{late}: the fake was invoked {} time(s), expected {want}",
                    log.invocations.len()
                ));
            }
        }
        for (ci, check) in spec.log.invocation.iter().enumerate() {
            let records: Vec<(usize, &Value)> = match check.index {
                Some(i) => match log.invocations.get(i) {
                    Some(r) => vec![(i, r)],
                    None => {
                        findings.must.push(format!(
                            "log.invocation[{ci}]{late}: no invocation #{i} (the fake logged {})",
                            log.invocations.len()
                        ));
                        continue;
                    }
                },
                None => {
                    if log.invocations.is_empty() && !check.if_invoked {
                        findings.must.push(format!(
                            "log.invocation[{ci}]{late}: the fake was never invoked"
                        ));
                    }
                    log.invocations.iter().enumerate().collect()
                }
            };
            for (i, rec) in records {
                for problem in check_invocation(rec, check, &self.vars) {
                    findings
                        .must
                        .push(format!("log{late}: invocation #{i}: {problem}"));
                }
            }
        }
        if let Some(want) = spec.log.acp_prompts {
            if log.acp_prompts.len() != want {
                findings.must.push(format!(
                    "log{late}: the agents received {} session/prompt request(s), expected {want}",
                    log.acp_prompts.len()
                ));
            }
        }
        for (ci, check) in spec.log.acp_prompt.iter().enumerate() {
            let records: Vec<(usize, &Value)> = match check.index {
                Some(i) => log.acp_prompts.get(i).map(|r| (i, r)).into_iter().collect(),
                None => log.acp_prompts.iter().enumerate().collect(),
            };
            if records.is_empty() {
                findings.must.push(format!(
                    "log.acp-prompt[{ci}]{late}: no such session/prompt (the agents logged {})",
                    log.acp_prompts.len()
                ));
            }
            let expected = self.vars.value(&check.expect);
            for (i, rec) in records {
                if let Err(e) = matches(&expected, rec, &self.ctx) {
                    findings
                        .must
                        .push(format!("log{late}: session/prompt #{i}: {e}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(real_cli: Option<PathBuf>) -> RunConfig {
        RunConfig {
            target: Target {
                command: vec!["geminicli-mcp".into()],
                profile: Profile::geminicli_mcp(),
            },
            fake_gemini: PathBuf::from("fake-gemini"),
            timeout_scale: 1.0,
            keep_dirs: false,
            era_override: None,
            cli_version: None,
            real_cli,
        }
    }

    #[test]
    fn a_fake_only_case_is_skipped_in_the_real_cli_lane_only_saying_why() {
        let text = r#"
description = "d"
requirement = "r"
level = "must"
fake-only = "scripts a crash"
"#;
        let case = &crate::case::parse_case(text, Path::new("x.toml"), "area/x").unwrap()[0];
        assert_eq!(skip_reason(&config(None), case), None);
        let lane = config(Some(PathBuf::from("/opt/gemini")));
        let why = skip_reason(&lane, case).expect("skipped in the lane");
        assert!(
            why.contains("fake-only") && why.contains("scripts a crash"),
            "{why}"
        );
        let plain = &crate::case::parse_case(
            &text.replace("fake-only", "#"),
            Path::new("x.toml"),
            "area/x",
        )
        .unwrap()[0];
        assert_eq!(skip_reason(&lane, plain), None, "other cases run");
    }

    #[test]
    fn the_lane_adds_its_auth_to_settings_a_case_writes() {
        let text =
            with_lane_auth(r#"{"general": {"sessionRetention": {"enabled": true}}}"#).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["general"]["sessionRetention"]["enabled"], true, "kept");
        assert_eq!(v["security"]["auth"]["selectedType"], "gemini-api-key");
        assert!(with_lane_auth("[1]").is_err());
        assert!(with_lane_auth("{oops").is_err());
    }
}
