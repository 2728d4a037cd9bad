//! fake-gemini: a faithful, scriptable stand-in for Google's Gemini CLI 0.61.
//!
//! The binary emulates the real CLI's command line, input rules, output formats, failure classes
//! and process model; scenarios (built-in or TOML files) script what the model does. The library
//! exposes the pieces so tests (and the committed JSON Schema) reach them.
#![warn(missing_docs)]

pub mod acp;
pub mod answer;
pub mod api;
pub mod checks;
pub mod cli;
pub mod clock;
pub mod ids;
pub mod input;
pub mod invocation;
pub mod launcher;
pub mod log;
pub mod mcp;
pub mod options;
pub mod output;
pub mod proc;
pub mod releases;
pub mod run;
pub mod scenario;
pub mod security;
pub mod session;
pub mod settings;
pub mod sys;
pub mod texts;
pub mod timing;
pub mod tree;

/// The binary's entry point: descendant role, launcher, or worker.
pub fn main_entry() -> ! {
    proc::holder_role();
    let argv: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    // fake-gemini's own command, never a Gemini CLI argument (the real CLI refuses it as unknown).
    if argv.first().map(String::as_str) == Some("--write-launcher") {
        sys::exit_now(launcher::command(&argv[1..]));
    }
    if proc::should_relaunch() {
        proc::launcher(&argv);
    }
    let code = run::worker(argv);
    sys::exit_now(code)
}
