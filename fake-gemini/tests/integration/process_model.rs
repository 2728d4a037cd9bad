//! process_model
