//! What both backends share about the Gemini CLI: finding and starting it (`resolve`,
//! `environment`, `launch`), what is handed to it (`inputs`, `command`), supervising the process
//! tree (`process`), reading what it printed (`outcome`: a run's success, the stderr both backends read), its logins (`auth`) and
//! settings (`settings`, `telemetry`), and its sessions on disk (`session`, `retention`). The one-shot backend
//! is `crate::oneshot`, the warm one `crate::acp`; neither imports the other.

pub(crate) mod auth;
pub(crate) mod command;
pub(crate) mod environment;
pub(crate) mod gate;
pub(crate) mod history;
pub mod inputs;
pub(crate) mod launch;
pub(crate) mod mcp_probe;
pub(crate) mod mcp_servers;
pub(crate) mod outcome;
pub mod process;
pub(crate) mod resolve;
pub(crate) mod retention;
pub(crate) mod session;
pub(crate) mod settings;
pub(crate) mod telemetry;
