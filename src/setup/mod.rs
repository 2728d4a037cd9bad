//! `geminicli-mcp setup`: writes or removes this server's entry in MCP clients' own configuration
//! files, editing each in place (other entries, comments and layout kept), backed up and replaced
//! atomically.

mod change;
mod clients;
mod edit;
mod json;
mod launch;
mod toml;

#[cfg(test)]
mod tests;

use std::io::Write;

pub use change::{Edited, FormatError};
pub use clients::{Client, Entry, Env, Format};
pub use edit::{apply, Applied, FileError};
pub use launch::Launch;

/// Options of `geminicli-mcp setup`.
#[derive(Debug, Clone, clap::Args)]
pub struct SetupArgs {
    /// Clients to register the server in; none: every client found installed (its configuration
    /// folder, or its command on PATH).
    #[arg(value_name = "CLIENT", value_enum)]
    pub clients: Vec<Client>,
    /// Remove the server's entry instead; every other entry stays.
    #[arg(long)]
    pub remove: bool,
    /// Print each change (the file, the entry before and after) and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The entry's name in each client.
    #[arg(long, value_name = "NAME", default_value = "gemini", value_parser = parse_name)]
    pub name: String,
}

fn parse_name(s: &str) -> Result<String, String> {
    if s.is_empty()
        || s.chars()
            .any(|c| c.is_control() || c == '.' || c.is_whitespace())
    {
        return Err("a name is a non-empty word without dots, spaces or control characters".into());
    }
    Ok(s.to_owned())
}

/// Runs `setup` for `env`, reporting on `out` and failures on `err`; the exit code: 0, or 1 when
/// any client failed.
pub fn run(args: &SetupArgs, env: &Env, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let mut clients = args.clients.clone();
    clients.sort_unstable();
    clients.dedup();
    if clients.is_empty() {
        for client in Client::ALL {
            match client.installed(env) {
                Some(why) => {
                    let _ = writeln!(out, "{}: found ({why})", client.name());
                    clients.push(client);
                }
                None => {
                    let _ = writeln!(
                        out,
                        "{}: skipped, not installed ({})",
                        client.name(),
                        client.looked_for(env)
                    );
                }
            }
        }
        if clients.is_empty() {
            let _ = writeln!(
                out,
                "no client found: name one, e.g. `geminicli-mcp setup codex`"
            );
            return 0;
        }
    }
    let mut failed = false;
    for client in clients {
        if let Err(e) = one(client, args, env, out) {
            failed = true;
            let _ = writeln!(err, "error: {}: {e}", client.name());
        }
    }
    i32::from(failed)
}

fn one(client: Client, args: &SetupArgs, env: &Env, out: &mut dyn Write) -> Result<(), FileError> {
    let path = client.config_file(env);
    let entry = (!args.remove).then(|| client.entry(&env.launch));
    let applied = apply(
        &path,
        client.format(),
        &args.name,
        entry.as_ref(),
        !args.dry_run,
    )?;
    let e = &applied.edited;
    let (name, file, server) = (client.name(), path.display(), &args.name);
    let what = match (e.changed, &e.before, &e.after) {
        (false, None, None) => Err("nothing to remove"),
        (false, _, _) => Err("unchanged"),
        (true, None, _) => Ok(("add", "added")),
        (true, _, None) => Ok(("remove", "removed")),
        (true, Some(_), Some(_)) => Ok(("update", "updated")),
    };
    let _ = match what {
        Err(state) => writeln!(out, "{name}: {state}: `{server}` in {file}"),
        Ok((verb, _)) if args.dry_run => {
            let _ = writeln!(
                out,
                "{name}: would {verb} `{server}` in {file} (dry run: nothing written)"
            );
            diff(out, e.before.as_deref(), e.after.as_deref());
            Ok(())
        }
        Ok((_, done)) => match &applied.backup {
            Some(b) => writeln!(
                out,
                "{name}: {done} `{server}` in {file} (backup: {})",
                b.display()
            ),
            None => writeln!(out, "{name}: {done} `{server}` in {file} (new file)"),
        },
    };
    if !args.remove {
        if let Some(note) = client.note() {
            let _ = writeln!(out, "  note: {note}");
        }
    }
    Ok(())
}

/// The entry before (`-` lines) and after (`+` lines).
fn diff(out: &mut dyn Write, before: Option<&str>, after: Option<&str>) {
    for line in before.into_iter().flat_map(str::lines) {
        let _ = writeln!(out, "  - {line}");
    }
    for line in after.into_iter().flat_map(str::lines) {
        let _ = writeln!(out, "  + {line}");
    }
}
