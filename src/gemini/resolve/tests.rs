use super::*;
use rstest::rstest;
use tempfile::TempDir;

const NPM_CMD: &str = include_str!("../../../tests/fixtures/shims/gemini.cmd");
const NPM6_CMD: &str = include_str!("../../../tests/fixtures/shims/gemini-npm6.cmd");
const NPM_PS1: &str = include_str!("../../../tests/fixtures/shims/gemini.ps1");
const HANDWRITTEN_CMD: &str = include_str!("../../../tests/fixtures/shims/handwritten.cmd");
/// Where npm's shims say the CLI lives, relative to the shim.
const ENTRY: &[&str] = &[
    "node_modules",
    "@google",
    "gemini-cli",
    "bundle",
    "gemini.js",
];

/// A scratch tree of directories and files standing in for PATH entries.
struct Tree(TempDir);

impl Tree {
    /// An empty tree.
    fn new() -> Self {
        Tree(tempfile::tempdir().expect("temp dir"))
    }

    /// Writes `contents` at `relative`, creating directories; returns the absolute path.
    fn file(&self, relative: &str, contents: &str) -> PathBuf {
        let path = self.0.path().join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, contents).unwrap();
        path
    }

    /// Creates and returns the directory at `relative`.
    fn dir(&self, relative: &str) -> PathBuf {
        let path = self.0.path().join(relative);
        fs::create_dir_all(&path).unwrap();
        path
    }

    /// `dirs` joined as `platform` joins PATH.
    fn path(&self, platform: Platform, dirs: &[&str]) -> OsString {
        let separator = if platform == Platform::Windows {
            ";"
        } else {
            ":"
        };
        let joined: Vec<String> = dirs
            .iter()
            .map(|d| self.dir(d).to_string_lossy().into_owned())
            .collect();
        OsString::from(joined.join(separator))
    }

    /// An npm global prefix on Windows: the shims and the entry they point at.
    fn npm_prefix(&self, dir: &str) -> PathBuf {
        self.file(&format!("{dir}/gemini.cmd"), NPM_CMD);
        self.file(&format!("{dir}/gemini.ps1"), NPM_PS1);
        self.file(
            &format!("{dir}/gemini"),
            "#!/bin/sh\n# the shim for Git Bash\n",
        );
        self.file(&format!("{dir}/{}", ENTRY.join("/")), "// the CLI\n")
    }
}

fn win(bin: Option<&OsStr>, path: &OsStr) -> Result<Resolved, ResolveError> {
    resolve(bin, Some(path), None, Platform::Windows)
}

#[test]
fn unix_finds_gemini_on_path_in_order() {
    let tree = Tree::new();
    let second = tree.file("b/gemini", "");
    tree.dir("a");
    let path = tree.path(Platform::Unix, &["a", "b"]);
    let resolved = resolve(None, Some(&path), None, Platform::Unix).unwrap();
    assert_eq!(resolved.program, second);
    assert!(resolved.prefix_args.is_empty());
    assert!(resolved.via.starts_with("PATH"), "{}", resolved.via);

    let first = tree.file("a/gemini", "");
    assert_eq!(
        resolve(None, Some(&path), None, Platform::Unix)
            .unwrap()
            .program,
        first
    );
}

#[test]
fn unix_skips_directories_named_gemini_and_empty_entries() {
    let tree = Tree::new();
    tree.dir("a/gemini");
    let real = tree.file("b/gemini", "");
    let path = format!("::{}::{}", tree.dir("a").display(), tree.dir("b").display());
    let resolved = resolve(None, Some(OsStr::new(&path)), None, Platform::Unix).unwrap();
    assert_eq!(resolved.program, real);
}

#[rstest]
#[case(None)]
#[case(Some(""))]
fn unset_or_empty_bin_means_gemini_on_path(#[case] bin: Option<&str>) {
    let tree = Tree::new();
    let gemini = tree.file("bin/gemini", "");
    let path = tree.path(Platform::Unix, &["bin"]);
    let resolved = resolve(bin.map(OsStr::new), Some(&path), None, Platform::Unix).unwrap();
    assert_eq!(resolved.program, gemini);
}

#[rstest]
#[case(Platform::Unix)]
#[case(Platform::Windows)]
fn not_found_is_127_and_names_the_fix(#[case] platform: Platform) {
    let tree = Tree::new();
    let path = tree.path(platform, &["empty"]);
    let err = resolve(None, Some(&path), None, platform).unwrap_err();
    assert!(matches!(err, ResolveError::NotFound { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 127);
    assert!(err.to_string().contains("set GEMINI_CLI_BIN"), "{err}");
    let err = resolve(None, None, None, platform).unwrap_err();
    assert!(err.to_string().contains("PATH is empty or unset"), "{err}");
}

#[test]
fn gemini_cli_bin_as_an_absolute_path_wins_over_path() {
    let tree = Tree::new();
    tree.file("bin/gemini", "");
    let chosen = tree.file("custom/my-gemini", "");
    let path = tree.path(Platform::Unix, &["bin"]);
    let resolved = resolve(Some(chosen.as_os_str()), Some(&path), None, Platform::Unix).unwrap();
    assert_eq!(resolved.program, chosen);
    assert!(
        resolved.via.starts_with("GEMINI_CLI_BIN="),
        "{}",
        resolved.via
    );
}

#[test]
fn gemini_cli_bin_relative_path_is_made_absolute() {
    let tree = Tree::new();
    let file = tree.file("rel/gemini", "");
    let cwd = std::env::current_dir().unwrap();
    // A relative spelling of the same file, from the test's working directory.
    let up = cwd.components().count() - 1;
    let relative = PathBuf::from("../".repeat(up)).join(file.strip_prefix("/").unwrap());
    let resolved = resolve(Some(relative.as_os_str()), None, None, Platform::Unix).unwrap();
    assert!(resolved.program.is_absolute());
    assert_eq!(
        fs::canonicalize(&resolved.program).unwrap(),
        fs::canonicalize(&file).unwrap()
    );
}

#[test]
fn gemini_cli_bin_missing_file_is_not_found() {
    let tree = Tree::new();
    let missing = tree.dir("x").join("gemini");
    let err = resolve(Some(missing.as_os_str()), None, None, Platform::Unix).unwrap_err();
    assert_eq!(err.exit_code(), 127);
    assert!(err.to_string().contains("is not an existing file"), "{err}");
}

#[rstest]
#[case("~/bin/gemini")]
#[case("$HOME/bin/gemini")]
#[case("%APPDATA%/npm/gemini.cmd")]
fn shell_syntax_in_gemini_cli_bin_gets_a_hint(#[case] bin: &str) {
    let err = resolve(Some(OsStr::new(bin)), None, None, Platform::Unix).unwrap_err();
    assert!(err.to_string().contains("not expanded"), "{err}");
}

#[test]
fn gemini_cli_bin_bare_name_is_looked_up_on_path() {
    let tree = Tree::new();
    let other = tree.file("bin/gemini-nightly", "");
    let path = tree.path(Platform::Unix, &["bin"]);
    let name = OsStr::new("gemini-nightly");
    let resolved = resolve(Some(name), Some(&path), None, Platform::Unix).unwrap();
    assert_eq!(resolved.program, other);
    let err = resolve(Some(OsStr::new("nope")), Some(&path), None, Platform::Unix).unwrap_err();
    assert!(
        err.to_string()
            .contains("GEMINI_CLI_BIN=nope is not on PATH"),
        "{err}"
    );
}

#[rstest]
#[case(Platform::Unix, "gemini.js", "node")]
#[case(Platform::Unix, "gemini.mjs", "node")]
#[case(Platform::Unix, "gemini.cjs", "node")]
#[case(Platform::Windows, "gemini.js", "node.exe")]
#[case(Platform::Windows, "GEMINI.MJS", "node.exe")]
fn a_javascript_entry_runs_with_node_from_path(
    #[case] platform: Platform,
    #[case] entry_name: &str,
    #[case] node_name: &str,
) {
    let tree = Tree::new();
    let entry = tree.file(&format!("cli/{entry_name}"), "");
    let node = tree.file(&format!("nodejs/{node_name}"), "");
    let path = tree.path(platform, &["nodejs"]);
    let resolved = resolve(Some(entry.as_os_str()), Some(&path), None, platform).unwrap();
    assert_eq!(resolved.program, node);
    assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
}

#[rstest]
#[case(Platform::Unix)]
#[case(Platform::Windows)]
fn a_javascript_entry_without_node_says_so(#[case] platform: Platform) {
    let tree = Tree::new();
    let entry = tree.file("cli/gemini.js", "");
    let path = tree.path(platform, &["empty"]);
    let err = resolve(Some(entry.as_os_str()), Some(&path), None, platform).unwrap_err();
    assert_eq!(err, ResolveError::NodeNotFound { entry });
    assert_eq!(err.exit_code(), 127);
    assert!(err.to_string().contains("Node.js"), "{err}");
}

#[test]
fn windows_never_takes_a_node_cmd_for_node() {
    let tree = Tree::new();
    let entry = tree.file("cli/gemini.js", "");
    tree.file("shims/node.cmd", "@node.exe %*\r\n");
    let real = tree.file("nodejs/node.exe", "");
    let path = tree.path(Platform::Windows, &["shims", "nodejs"]);
    let resolved = win(Some(entry.as_os_str()), &path).unwrap();
    assert_eq!(resolved.program, real);
}

#[test]
fn windows_resolves_the_npm_cmd_shim_to_node_and_the_entry() {
    let tree = Tree::new();
    let entry = tree.npm_prefix("npm");
    let node = tree.file("nodejs/node.exe", "");
    let path = tree.path(Platform::Windows, &["nodejs", "npm"]);
    let resolved = win(None, &path).unwrap();
    assert_eq!(resolved.program, node);
    assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
    assert!(resolved.via.contains("npm .cmd shim"), "{}", resolved.via);
}

#[test]
fn windows_prefers_the_node_exe_next_to_the_shim_as_the_shim_does() {
    let tree = Tree::new();
    let entry = tree.npm_prefix("npm");
    let adjacent = tree.file("npm/node.exe", "");
    tree.file("nodejs/node.exe", "");
    let path = tree.path(Platform::Windows, &["nodejs", "npm"]);
    let resolved = win(None, &path).unwrap();
    // nodejs/ comes first on PATH, but holds no gemini; npm/ holds both.
    assert_eq!(resolved.program, adjacent);
    assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
}

#[test]
fn windows_uses_the_ps1_shim_when_there_is_no_cmd() {
    let tree = Tree::new();
    let entry = tree.npm_prefix("npm");
    fs::remove_file(tree.0.path().join("npm/gemini.cmd")).unwrap();
    let node = tree.file("nodejs/node.exe", "");
    let path = tree.path(Platform::Windows, &["npm", "nodejs"]);
    let resolved = win(None, &path).unwrap();
    assert_eq!(resolved.program, node);
    assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
    assert!(resolved.via.contains("npm .ps1 shim"), "{}", resolved.via);
}

#[test]
fn windows_follows_pathext_order_and_path_order() {
    let tree = Tree::new();
    tree.npm_prefix("npm");
    tree.file("nodejs/node.exe", "");
    let exe = tree.file("tools/gemini.exe", "");
    // .EXE comes before .CMD in PATHEXT, but PATH order comes first.
    let path = tree.path(Platform::Windows, &["npm", "tools", "nodejs"]);
    assert!(win(None, &path).unwrap().via.contains(".cmd shim"));
    let path = tree.path(Platform::Windows, &["tools", "npm", "nodejs"]);
    assert_eq!(win(None, &path).unwrap().program, exe);
    // Within one directory PATHEXT decides.
    let both = tree.file("npm/gemini.exe", "");
    let path = tree.path(Platform::Windows, &["npm", "nodejs"]);
    assert_eq!(win(None, &path).unwrap().program, both);
    let cmd_first = OsStr::new(".CMD;.EXE");
    let resolved = resolve(None, Some(&path), Some(cmd_first), Platform::Windows).unwrap();
    assert!(resolved.via.contains(".cmd shim"), "{}", resolved.via);
}

#[test]
fn windows_never_runs_the_extensionless_sh_shim() {
    let tree = Tree::new();
    tree.file("npm/gemini", "#!/bin/sh\n");
    let path = tree.path(Platform::Windows, &["npm"]);
    assert!(matches!(
        win(None, &path),
        Err(ResolveError::NotFound { .. })
    ));
}

#[test]
fn windows_handles_quoted_and_empty_path_entries() {
    let tree = Tree::new();
    let exe = tree.file("Program Files/Gemini/gemini.exe", "");
    let path = format!(";\"{}\";", exe.parent().unwrap().display());
    assert_eq!(win(None, OsStr::new(&path)).unwrap().program, exe);
}

#[test]
fn windows_gemini_cli_bin_without_extension_gets_pathext() {
    let tree = Tree::new();
    let entry = tree.npm_prefix("npm");
    tree.file("nodejs/node.exe", "");
    fs::remove_file(tree.0.path().join("npm/gemini")).unwrap();
    let path = tree.path(Platform::Windows, &["nodejs"]);
    let bin = tree.0.path().join("npm").join("gemini");
    let resolved = win(Some(bin.as_os_str()), &path).unwrap();
    assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
}

#[test]
fn windows_gemini_cli_bin_pointing_at_the_cmd_shim_is_seen_through() {
    let tree = Tree::new();
    let entry = tree.npm_prefix("npm");
    let node = tree.file("nodejs/node.exe", "");
    let path = tree.path(Platform::Windows, &["nodejs"]);
    let shim = tree.0.path().join("npm/gemini.cmd");
    let resolved = win(Some(shim.as_os_str()), &path).unwrap();
    assert_eq!(resolved.program, node);
    assert_eq!(resolved.prefix_args, vec![entry.into_os_string()]);
}

#[rstest]
#[case("gemini.cmd", HANDWRITTEN_CMD)]
#[case("gemini.bat", "@echo off\r\ngemini-real.exe %*\r\n")]
#[case("gemini.ps1", "Write-Host hello\n")]
#[case("gemini.vbs", "WScript.Echo 1\n")]
fn windows_refuses_files_that_need_a_shell(#[case] name: &str, #[case] text: &str) {
    let tree = Tree::new();
    tree.file(&format!("bin/{name}"), text);
    tree.file("nodejs/node.exe", "");
    let path = tree.path(Platform::Windows, &["bin", "nodejs"]);
    let err = win(None, &path).unwrap_err();
    assert!(matches!(err, ResolveError::NeedsShell { .. }), "{err:?}");
    assert_eq!(err.exit_code(), 126);
    assert!(err.to_string().contains("GEMINI_CLI_BIN"), "{err}");
}

#[test]
fn windows_reports_a_shim_whose_entry_is_missing() {
    let tree = Tree::new();
    tree.file("npm/gemini.cmd", NPM_CMD);
    tree.file("nodejs/node.exe", "");
    let path = tree.path(Platform::Windows, &["npm", "nodejs"]);
    let err = win(None, &path).unwrap_err();
    assert!(matches!(err, ResolveError::NotFound { .. }), "{err:?}");
    assert!(
        err.to_string().contains("broken or partial install"),
        "{err}"
    );
}

#[test]
fn unix_runs_a_cmd_file_like_any_other_file() {
    // Not a Windows shim there; running it directly gives the honest exec error.
    let tree = Tree::new();
    let file = tree.file("bin/gemini.cmd", NPM_CMD);
    let resolved = resolve(Some(file.as_os_str()), None, None, Platform::Unix).unwrap();
    assert_eq!(resolved.program, file);
}

#[rstest]
#[case::npm7(NPM_CMD)]
#[case::npm6(NPM6_CMD)]
#[case::lf_endings(&NPM_CMD.replace("\r\n", "\n"))]
fn cmd_shims_name_their_entry(#[case] text: &str) {
    assert_eq!(parse_cmd_shim(text).unwrap().entry, ENTRY);
}

#[test]
fn ps1_shim_names_its_entry() {
    assert_eq!(parse_ps1_shim(NPM_PS1).unwrap().entry, ENTRY);
}

#[rstest]
#[case(HANDWRITTEN_CMD, "not an npm shim")]
#[case("", "not an npm shim")]
#[case(&NPM_CMD.replace("_prog=node", "_prog=sh").replace("node.exe", "sh.exe"), "runs `sh`")]
fn other_batch_files_are_not_shims(#[case] text: &str, #[case] reason: &str) {
    let err = parse_cmd_shim(text).unwrap_err();
    assert!(err.contains(reason), "{err}");
}

#[test]
fn a_ps1_shim_for_another_interpreter_is_refused() {
    let text = NPM_PS1.replace("node$exe", "deno$exe");
    assert!(parse_ps1_shim(&text).unwrap_err().contains("runs `deno`"));
}

#[test]
fn an_oversized_shim_is_not_read_whole() {
    let tree = Tree::new();
    let big = tree.file("bin/gemini.cmd", &"REM padding\r\n".repeat(10_000));
    assert!(read_small(&big)
        .unwrap_err()
        .contains("larger than an npm shim"));
}

#[test]
fn resolve_on_host_uses_this_process() {
    // Whatever the host has, the call must not panic and errors must carry the fix.
    if let Err(err) = resolve_on_host(std::env::var_os("GEMINI_CLI_BIN").as_deref()) {
        assert!(err.to_string().contains("GEMINI_CLI_BIN"), "{err}");
    }
}

#[test]
fn current_platform_matches_the_build() {
    assert_eq!(Platform::current() == Platform::Windows, cfg!(windows));
}
