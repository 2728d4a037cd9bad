//! Structured output: schema limits and compilation, the instruction appended to the prompt, JSON
//! extraction from the model's prose, validation, and the canonical text of the result.
