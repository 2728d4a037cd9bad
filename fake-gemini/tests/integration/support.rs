//! Test helpers: an isolated HOME + project directory, running the binary with a clean env,
//! the mock-API scenario of the captures, and the masking that makes outputs comparable.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::LazyLock;

use fake_gemini::scenario::{self, Scenario, UnknownModel};
use regex::Regex;

/// The binary under test: where nextest says it is (an archive of the tests extracts it
/// elsewhere than the build put it), else where the build put it.
pub fn bin() -> &'static str {
    static BIN: LazyLock<String> = LazyLock::new(|| {
        ["NEXTEST_BIN_EXE_fake-gemini", "NEXTEST_BIN_EXE_fake_gemini"]
            .iter()
            .find_map(|k| std::env::var(k).ok())
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_fake-gemini").to_owned())
    });
    &BIN
}

/// A throw-away HOME and project directory.
pub struct Sandbox {
    /// Keeps the directory alive.
    pub dir: tempfile::TempDir,
    /// `$HOME`
    pub home: PathBuf,
    /// The cwd of runs.
    pub cwd: PathBuf,
    /// Env vars of every run (on top of PATH and HOME).
    pub env: Vec<(String, String)>,
}

impl Sandbox {
    /// A sandbox whose project directory is called `project`, with TERM=dumb and an API key.
    pub fn new(project: &str) -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let cwd = dir.path().join(project);
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        Sandbox {
            dir,
            home,
            cwd,
            env: vec![
                ("TERM".into(), "dumb".into()),
                ("GEMINI_API_KEY".into(), "fake".into()),
            ],
        }
    }

    /// Sets (or, with `None`, removes) an env var for later runs.
    pub fn set(&mut self, k: &str, v: Option<&str>) -> &mut Self {
        self.env.retain(|(n, _)| n != k);
        if let Some(v) = v {
            self.env.push((k.into(), v.into()));
        }
        self
    }

    /// A command with a clean environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args).current_dir(&self.cwd).env_clear();
        c.env("PATH", std::env::var_os("PATH").unwrap_or_default());
        c.env("HOME", &self.home);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    /// Runs to completion; `stdin` None = /dev/null.
    pub fn run(&self, args: &[&str], stdin: Option<&[u8]>) -> Output {
        let mut c = self.cmd(args);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = c.spawn().expect("spawn fake-gemini");
        if let Some(data) = stdin {
            let mut w = child.stdin.take().unwrap();
            let data = data.to_vec();
            std::thread::spawn(move || {
                let _ = w.write_all(&data);
            });
        }
        child.wait_with_output().expect("wait")
    }

    /// Writes a scenario file and points FAKE_GEMINI_SCENARIO at it.
    pub fn use_scenario(&mut self, s: &Scenario) -> PathBuf {
        let path = self
            .dir
            .path()
            .join(format!("scenario-{}.toml", self.env.len()));
        std::fs::write(&path, toml::to_string(s).expect("toml")).unwrap();
        self.set("FAKE_GEMINI_SCENARIO", Some(path.to_str().unwrap()));
        path
    }

    /// Masks this sandbox's paths, then everything run-specific (see [`mask_common`]).
    pub fn mask(&self, bytes: &[u8]) -> String {
        let s = String::from_utf8_lossy(bytes)
            .replace(self.cwd.to_str().unwrap(), "<CWD>")
            .replace(self.home.to_str().unwrap(), "<HOME>")
            .replace("/tmp", "<TMPDIR>");
        mask_common(&s)
    }
}

/// A built-in scenario as the captures' mock API played it: gemini-2.5-flash(-lite) reported as
/// the model versions and any model name accepted.
pub fn mock(builtin: &str) -> Scenario {
    let (_, mut s) = scenario::load(builtin, None).expect("builtin");
    s.model.version = Some("gemini-2.5-flash".into());
    s.model.router_version = Some("gemini-2.5-flash-lite".into());
    s.model.unknown_model = UnknownModel::Accept;
    s
}

static MASKS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (r"(?m)^    at .*\n", ""),
        (r"(?m)^\[STARTUP\] .*\n", ""),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<UUID>",
        ),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "<TS>"),
        (r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z", "<TS>"),
        (r#""duration_ms":\d+"#, r#""duration_ms":<N>"#),
        (
            r#""(totalLatencyMs|totalDurationMs|durationMs)": \d+"#,
            r#""$1": <N>"#,
        ),
        (r"_\d{13}_", "_<MS>_"),
        (r#""content":"00000000 [^"]*""#, r#""content":"<STDIN>""#),
    ]
    .into_iter()
    .map(|(r, w)| (Regex::new(r).unwrap(), w))
    .collect()
});

/// Masks stack frames, `[STARTUP]` noise, UUIDs, timestamps, durations, tool-call times and
/// the capturer-elided stdin echoes.
pub fn mask_common(s: &str) -> String {
    let mut s = s.to_string();
    for (re, with) in MASKS.iter() {
        s = re.replace_all(&s, *with).into_owned();
    }
    s
}

/// This package's directory: the run's `CARGO_MANIFEST_DIR` (nextest points it at the copy of the
/// workspace an archive of the tests runs against), else the one the tests were built in.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// A capture file's text, masked.
pub fn capture(name: &str) -> String {
    let path = manifest_dir().join("tests/captures").join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    mask_common(&String::from_utf8_lossy(&bytes))
}

/// Reads the JSON lines of a FAKE_GEMINI_LOG file.
pub fn log_records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("log line is JSON"))
        .collect()
}

/// Kills every pid the log says the fake spawned (test cleanup for descendants).
#[cfg(unix)]
pub fn kill_spawned(path: &Path) {
    for r in log_records(path) {
        if r["event"] == "spawned" {
            if let Some(pid) = r["pid"].as_i64() {
                // Guard against pid reuse: only a process that still is fake-gemini.
                let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                if !String::from_utf8_lossy(&cmd).contains("fake-gemini") {
                    continue;
                }
                // SAFETY: kill(2) on a pid this test's fake spawned.
                unsafe {
                    libc::kill(pid as i32, libc::SIGKILL);
                }
            }
        }
    }
}

/// Whether a pid is alive (Unix).
#[cfg(unix)]
pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks existence.
    let r = unsafe { libc::kill(pid, 0) };
    if r != 0 {
        return false;
    }
    // A zombie still answers kill(0); /proc tells.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
        .unwrap_or(true)
}

/// Writes the ACP tests' permission scenarios into `root/scenarios` and returns that directory
/// (for `FAKE_GEMINI_SCENARIO_DIR`): `writer` writes notes.txt (a tool that asks for permission in
/// `default` mode), `rm` runs `touch made.txt` (named as in the captures) (a shell command outside the safe list), as in
/// the `acp_perm_*` / `acp_plan_write` captures.
pub fn permission_scenarios(root: &Path) -> PathBuf {
    let dir = root.join("scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("writer.toml"),
        r#"requirement = "The model writes notes.txt, then answers."
[[model.turns]]
text = "Writing."
[[model.turns.tool-calls]]
name = "write_file"
args = { file_path = "notes.txt", content = "hi" }
[[model.turns]]
chunks = ["Done."]
"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("rm.toml"),
        "requirement = \"The model runs a shell command outside the safe list, then answers.\"\n[[model.turns]]\n[[model.turns.tool-calls]]\nname = \"run_shell_command\"\nargs = { command = \"touch made.txt\" }\n[[model.turns]]\ntext = \"ok\"\n",
    )
    .unwrap();
    dir
}
