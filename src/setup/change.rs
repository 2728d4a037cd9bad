//! What editing one file's text made of it, and why an edit can fail: shared by the formats.

/// What a format's edit made of a file's text.
#[derive(Debug, Clone, PartialEq)]
pub struct Edited {
    /// The whole new text.
    pub text: String,
    /// Whether `text` differs from the file.
    pub changed: bool,
    /// The server's entry before, as the format writes it.
    pub before: Option<String>,
    /// The server's entry after.
    pub after: Option<String>,
}

/// Why a file's text could not be edited; the file is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Not valid JSON, JSONC or TOML; the message names the line and column.
    #[error("cannot parse it: {0}")]
    Parse(String),
    /// Valid, but not shaped as the client's configuration.
    #[error("{0}")]
    Shape(String),
}
