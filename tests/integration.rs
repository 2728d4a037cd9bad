//! The server's integration tests: one test binary, a module per area.

mod architecture;
mod process;
mod server;
