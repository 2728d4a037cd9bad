//! fake-gemini's integration tests: one binary, a module per area.

#[path = "integration/support.rs"]
mod support;

#[path = "integration/acp.rs"]
mod acp;
#[path = "integration/captures.rs"]
mod captures;
#[path = "integration/cli_surface.rs"]
mod cli_surface;
#[path = "integration/differential.rs"]
mod differential;
#[path = "integration/differential_acp.rs"]
mod differential_acp;
/// The inventory of what geminicli-mcp hands the CLI, compiled from the server's own file.
#[path = "../../src/gemini/inputs.rs"]
#[allow(dead_code)]
mod inputs;
#[path = "integration/launcher.rs"]
mod launcher;
#[path = "integration/log_format.rs"]
mod log_format;
#[path = "integration/process_model.rs"]
mod process_model;
#[path = "integration/scenarios.rs"]
mod scenarios;
#[path = "integration/schema.rs"]
mod schema;
#[path = "integration/sessions.rs"]
mod sessions;
