//! The Agent Skills `setup` installs beside the server's entry: embedded in the binary (so every
//! package ships them), written into the user skills folder of each client that loads skills, and
//! taken out again only where they are still the ones `setup` wrote.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// One skill: its folder's name and its `SKILL.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skill {
    /// The folder's name, which is also the front matter's `name`.
    pub name: &'static str,
    /// The whole `SKILL.md`, front matter first.
    pub text: &'static str,
}

macro_rules! skill {
    ($name:literal) => {
        Skill {
            name: $name,
            text: include_str!(concat!(
                "../../plugins/geminicli-mcp/skills/",
                $name,
                "/SKILL.md"
            )),
        }
    };
}

/// The skills, one a workflow and one on when to delegate at all; the plugin ships the same files.
pub const SKILLS: [Skill; 4] = [
    skill!("gemini-review"),
    skill!("gemini-second-opinion"),
    skill!("gemini-large-read"),
    skill!("gemini-delegate"),
];

impl Skill {
    /// A front matter field's value (`name`, `description`): what the clients put in every request.
    pub fn field(&self, key: &str) -> Option<&'static str> {
        let text: &'static str = self.text;
        let front = text.strip_prefix("---\n")?;
        let end = front.find("\n---")?;
        front[..end]
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
            .map(str::trim)
    }
}

/// The file in a skills folder that records what `setup` wrote there: each skill's name and a
/// fingerprint of its `SKILL.md`, so that an update replaces only an unedited copy and `--remove`
/// takes out only what is still ours. Clients load folders with a `SKILL.md`; a file beside them
/// is not a skill.
pub const RECORD: &str = ".geminicli-mcp-skills.json";

/// What happens, or would happen, to one skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Not there: written.
    Add,
    /// An earlier version `setup` wrote, unedited: replaced.
    Update,
    /// Already this version.
    Unchanged,
    /// Ours, taken out (`--remove`).
    Remove,
    /// Not there, nothing to take out (`--remove`).
    Absent,
    /// Not ours to touch: a `SKILL.md` edited since `setup` wrote it, or a skill of the user's own
    /// of that name (or a symlink, or not a regular file). Left as it is, both ways.
    Keep,
}

impl Action {
    /// The report's verb, done and to be done (dry run).
    pub fn verbs(self) -> (&'static str, &'static str) {
        match self {
            Action::Add => ("added", "would add"),
            Action::Update => ("updated", "would update"),
            Action::Unchanged => ("unchanged", "unchanged"),
            Action::Remove => ("removed", "would remove"),
            Action::Absent => ("nothing to remove", "nothing to remove"),
            Action::Keep => ("left alone", "would leave alone"),
        }
    }
}

/// What `sync` did, or would do, in one skills folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synced {
    /// The folder.
    pub dir: PathBuf,
    /// Each skill and its action, in [`SKILLS`] order.
    pub actions: Vec<(Skill, Action)>,
}

/// A stable 64-bit fingerprint (FNV-1a) of a `SKILL.md`: it tells an edited copy from the one
/// written, nothing more (the folder is the user's own; this guards against mistakes, not foes).
pub fn fingerprint(text: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// Installs (`remove` false) or removes every skill in `dir`; writes only when `write`.
pub fn sync(dir: &Path, remove: bool, write: bool) -> io::Result<Synced> {
    let mut record = read_record(dir)?;
    let before = record.clone();
    let mut actions = Vec::with_capacity(SKILLS.len());
    for skill in SKILLS {
        let action = decide(dir, skill, record.get(skill.name), remove)?;
        if write {
            apply(dir, skill, action)?;
        }
        match action {
            Action::Add | Action::Update | Action::Unchanged => {
                record.insert(skill.name.to_owned(), fingerprint(skill.text.as_bytes()));
            }
            Action::Remove | Action::Absent => {
                record.remove(skill.name);
            }
            Action::Keep => {}
        }
        actions.push((skill, action));
    }
    if write && record != before {
        write_record(dir, &record)?;
    }
    Ok(Synced {
        dir: dir.to_path_buf(),
        actions,
    })
}

/// What to do with `skill` in `dir`, given the fingerprint recorded for it.
fn decide(dir: &Path, skill: Skill, recorded: Option<&String>, remove: bool) -> io::Result<Action> {
    let folder = dir.join(skill.name);
    let file = folder.join("SKILL.md");
    let missing = if remove { Action::Absent } else { Action::Add };
    // A folder or file that is a symlink is the user's arrangement (a skill linked from a
    // checkout): never written through, never removed. So is anything but a folder and a file.
    for (path, want_dir) in [(&folder, true), (&file, false)] {
        match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() || m.is_dir() != want_dir => {
                return Ok(Action::Keep)
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(missing),
            Err(e) => return Err(e),
        }
    }
    let text = fs::read(&file)?;
    let current = text == skill.text.as_bytes();
    let ours = current || recorded.is_some_and(|r| *r == fingerprint(&text));
    Ok(match (remove, current, ours) {
        (_, _, false) => Action::Keep,
        (true, _, true) => Action::Remove,
        (false, true, _) => Action::Unchanged,
        (false, false, true) => Action::Update,
    })
}

/// Carries out `action` for `skill` in `dir`.
fn apply(dir: &Path, skill: Skill, action: Action) -> io::Result<()> {
    let folder = dir.join(skill.name);
    match action {
        Action::Add | Action::Update => {
            if !folder.is_dir() {
                super::edit::create_private_dirs(&folder)?;
            }
            replace(&folder.join("SKILL.md"), skill.text.as_bytes())
        }
        Action::Remove => {
            fs::remove_file(folder.join("SKILL.md"))?;
            // Files the user added beside it keep the folder.
            match fs::remove_dir(&folder) {
                Err(e) if e.kind() != io::ErrorKind::NotFound && folder.is_dir() => Ok(()),
                other => other,
            }
        }
        Action::Unchanged | Action::Absent | Action::Keep => Ok(()),
    }
}

/// The record of `dir`; none (or one that is not ours to read) is empty.
fn read_record(dir: &Path) -> io::Result<BTreeMap<String, String>> {
    match fs::read(dir.join(RECORD)) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes).unwrap_or_default()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => Err(e),
    }
}

/// Writes the record, or removes it when nothing of ours is left.
fn write_record(dir: &Path, record: &BTreeMap<String, String>) -> io::Result<()> {
    let path = dir.join(RECORD);
    if record.is_empty() {
        return match fs::remove_file(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        };
    }
    let mut text = serde_json::to_string_pretty(record).map_err(io::Error::other)?;
    text.push('\n');
    replace(&path, text.as_bytes())
}

/// Writes `bytes` to a temporary file beside `path`, then renames it over `path`: a client
/// loading skills meanwhile reads the old file or the new one, never half of one.
fn replace(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    if !dir.is_dir() {
        super::edit::create_private_dirs(dir)?;
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".geminicli-mcp-setup")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    // A skill is instructions, not a secret: readable like the user's other files.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests;
