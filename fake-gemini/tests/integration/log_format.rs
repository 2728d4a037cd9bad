//! log_format
