//! The server's integration tests: one test binary, a module per area.

mod adversarial;
mod architecture;
mod clients;
mod packaging;
mod process;
mod server;
mod setup;
