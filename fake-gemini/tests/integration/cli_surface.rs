//! cli_surface
