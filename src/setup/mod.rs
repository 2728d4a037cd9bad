//! `geminicli-mcp setup`: writes or removes this server's entry in MCP clients' own configuration
//! files, editing each in place (other entries, comments and layout kept), backed up and replaced
//! atomically; and installs or removes the Agent Skills of [`skills`] for the clients that load
//! skills.

mod change;
mod clients;
mod edit;
mod json;
mod launch;
pub mod skills;
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
    /// Remove the server's entry and its skills instead; every other entry stays, and so does a
    /// skill of another name or one edited since setup wrote it.
    #[arg(long)]
    pub remove: bool,
    /// Print each change (the file, the entry before and after, each skill and its description)
    /// and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Leave the clients' skills folders alone: write or remove only the server's entry.
    #[arg(long)]
    pub no_skills: bool,
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
    if let Some(dir) = client.skills_dir(env).filter(|_| !args.no_skills) {
        let synced =
            skills::sync(&dir, args.remove, !args.dry_run).map_err(|source| FileError::Io {
                path: dir.clone(),
                what: "cannot install or remove the skills in it",
                source,
            })?;
        report_skills(name, &synced, args.dry_run, out);
    }
    Ok(())
}

/// One line per action taken on the skills (the names it applies to), then, in a dry run, each
/// skill to be written with its description, what the client puts in every request.
fn report_skills(client: &str, synced: &skills::Synced, dry_run: bool, out: &mut dyn Write) {
    let dir = synced.dir.display();
    let mut actions: Vec<skills::Action> = synced.actions.iter().map(|(_, a)| *a).collect();
    actions.sort_unstable();
    actions.dedup();
    for action in actions {
        let names: Vec<&str> = synced
            .actions
            .iter()
            .filter(|(_, a)| *a == action)
            .map(|(s, _)| s.name)
            .collect();
        let (done, would) = action.verbs();
        let verb = if dry_run { would } else { done };
        let _ = write!(
            out,
            "{client}: skills {verb}: {} in {dir}",
            names.join(", ")
        );
        let _ = match action {
            skills::Action::Keep => writeln!(
                out,
                " (edited since setup wrote them, or skills of your own of those names; to get \
                 setup's, move those folders away and run setup again)"
            ),
            _ if dry_run && action != skills::Action::Unchanged => {
                writeln!(out, " (dry run: nothing written)")
            }
            _ => writeln!(out),
        };
        if dry_run && matches!(action, skills::Action::Add | skills::Action::Update) {
            for name in &names {
                let skill = skills::SKILLS.iter().find(|s| s.name == *name);
                let description = skill.and_then(|s| s.field("description")).unwrap_or("");
                let _ = writeln!(out, "  + {name}/SKILL.md: {description}");
            }
        }
    }
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
