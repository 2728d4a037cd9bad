//! `fake-gemini-api`: the scripted Gemini API on 127.0.0.1, for running the real Gemini CLI
//! against fake-gemini's scenarios (`GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT`).
//!
//! Prints `http://127.0.0.1:PORT` on its first stdout line, then serves until killed.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use fake_gemini::api::{describe, ApiServer, Config};

const USAGE: &str = "usage: fake-gemini-api [--port N] [--scenario NAME|PATH] [--scenario-dir DIR] [--max-stall-ms N] [--verbose]

Answers the Gemini CLI's REST calls from fake-gemini scenarios; a [[fake-gemini:NAME key=value]]
marker in the conversation selects the scenario per request (default: --scenario, else success).
Binds 127.0.0.1 only. --port 0 (the default) picks a free port; the base URL is printed first.
--verbose prints one JSON line per request on stderr.";

fn main() {
    let mut port = 0u16;
    let mut config = Config::default();
    let mut verbose = false;
    let mut args = std::env::args().skip(1);
    let fail = |msg: &str| -> ! {
        eprintln!("fake-gemini-api: {msg}\n\n{USAGE}");
        std::process::exit(2)
    };
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| fail(&format!("{name} needs a value")))
        };
        match a.as_str() {
            "--port" => {
                port = value("--port")
                    .parse()
                    .unwrap_or_else(|_| fail("bad --port"))
            }
            "--scenario" => config.default_scenario = value("--scenario"),
            "--scenario-dir" => config.scenario_dir = Some(PathBuf::from(value("--scenario-dir"))),
            "--max-stall-ms" => {
                let ms = value("--max-stall-ms")
                    .parse()
                    .unwrap_or_else(|_| fail("bad --max-stall-ms"));
                config.max_stall = Duration::from_millis(ms);
            }
            "--verbose" => verbose = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => fail(&format!("unknown argument `{other}`")),
        }
    }
    // Check the default scenario now rather than on the first request.
    if let Err(e) =
        fake_gemini::scenario::load(&config.default_scenario, config.scenario_dir.as_deref())
    {
        fail(&e.to_string());
    }
    let server =
        ApiServer::start(port, config).unwrap_or_else(|e| fail(&format!("cannot bind: {e}")));
    println!("{}", server.base_url());
    let _ = std::io::stdout().flush();
    let mut reported = 0;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if verbose {
            let seen = server.seen();
            for s in &seen[reported..] {
                eprintln!("{}", describe(s));
            }
            reported = seen.len();
        }
    }
}
