//! The `fake-gemini` executable (install it on PATH as `gemini`).

fn main() {
    fake_gemini::main_entry()
}
