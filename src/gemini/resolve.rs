//! Finding the program to execute for the Gemini CLI without a shell: `GEMINI_CLI_BIN` or `gemini`
//! on PATH, with npm's Windows shims (`.cmd`/`.ps1`) resolved to `node` plus the JS entry.
