//! Where a call's path arguments may point: the operator's allowed roots and, when the client
//! advertises MCP roots, the client's — asked for at most once per call, and only when the call
//! names a path. Each path argument is checked here, before anything runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::service::{Peer, RoleServer};
use tokio::sync::OnceCell;

use crate::error::Failure;
use crate::gemini::command;
use crate::policy::{self, Expect, Policy};

/// How long a client that advertises MCP roots may take to list them.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(5);

/// The client's MCP roots as canonical local paths, when it advertises the capability. A client
/// that advertises roots but does not list them gets its path arguments refused: its roots are a
/// limit the server must not skip. (Roots are deprecated by SEP-2577 but still what clients of
/// 2025-06-18 send.)
#[allow(deprecated)]
async fn client_roots(peer: Option<&Peer<RoleServer>>) -> Result<Option<Vec<PathBuf>>, Failure> {
    let Some(peer) = peer else { return Ok(None) };
    let advertised = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.roots.is_some());
    if !advertised {
        return Ok(None);
    }
    let listed = tokio::time::timeout(ROOTS_TIMEOUT, peer.list_roots()).await;
    match listed {
        Ok(Ok(result)) => Ok(Some(
            result
                .roots
                .iter()
                .filter_map(|r| policy::file_uri_path(&r.uri))
                .filter_map(|p| policy::canonical(&p).ok())
                .collect(),
        )),
        Ok(Err(e)) => Err(Failure::invalid_input(format!(
            "the client advertises MCP roots but roots/list failed ({e}); path arguments need them"
        ))),
        Err(_) => Err(Failure::invalid_input(format!(
            "the client advertises MCP roots but did not answer roots/list within {} s; path arguments need them",
            ROOTS_TIMEOUT.as_secs()
        ))),
    }
}

/// The roots one call's paths are checked against.
pub(crate) struct Roots<'a> {
    policy: &'a Policy,
    /// The server's working directory: the default workspace and root.
    cwd: &'a Path,
    client: Option<Peer<RoleServer>>,
    asked: OnceCell<Option<Vec<PathBuf>>>,
}

impl<'a> Roots<'a> {
    /// The roots of a call from `client` (none: no client roots to honour).
    pub(crate) fn new(policy: &'a Policy, cwd: &'a Path, client: Option<Peer<RoleServer>>) -> Self {
        Roots {
            policy,
            cwd,
            client,
            asked: OnceCell::new(),
        }
    }

    /// The server's working directory.
    pub(crate) fn cwd(&self) -> &Path {
        self.cwd
    }

    /// Checks one path argument (see [`policy::check_path`]), asking the client for its roots
    /// on the call's first path.
    pub(crate) async fn check(
        &self,
        argument: &str,
        raw: &str,
        base: &Path,
        expect: Expect,
    ) -> Result<PathBuf, Failure> {
        let client = self.client_roots().await?;
        policy::check_path(
            argument,
            raw,
            base,
            expect,
            &self.policy.roots(self.cwd),
            client,
        )
    }

    /// Checks an image argument (`argument` names it in a failure): a file under the roots whose
    /// extension the Gemini CLI attaches. Both prompt surfaces take their images through it.
    pub(crate) async fn image(
        &self,
        argument: &str,
        raw: &str,
        base: &Path,
    ) -> Result<PathBuf, Failure> {
        let path = self.check(argument, raw, base, Expect::File).await?;
        if !policy::is_supported_image(&path) {
            return Err(Failure::invalid_input(format!(
                "{argument} {raw:?}: not an image type the Gemini CLI attaches ({})",
                policy::IMAGE_EXTENSIONS.join(", ")
            )));
        }
        Ok(path)
    }

    /// Checks `save_file` (see [`policy::check_save_path`]).
    pub(crate) async fn check_save(
        &self,
        raw: &str,
        base: &Path,
    ) -> Result<policy::SaveTarget, Failure> {
        let client = self.client_roots().await?;
        policy::check_save_path(raw, base, &self.policy.roots(self.cwd), client)
    }

    /// The workspace a call names (`None`: the server's working directory), checked.
    pub(crate) async fn workspace(
        &self,
        argument: &str,
        raw: Option<&str>,
    ) -> Result<PathBuf, Failure> {
        match raw {
            Some(raw) => self.check(argument, raw, self.cwd, Expect::Dir).await,
            None => Ok(self.cwd.to_path_buf()),
        }
    }

    async fn client_roots(&self) -> Result<Option<&[PathBuf]>, Failure> {
        let roots = self
            .asked
            .get_or_try_init(|| client_roots(self.client.as_ref()))
            .await?;
        Ok(roots.as_deref())
    }
}

/// The path arguments of a prompt call, as given.
#[derive(Debug, Default, Clone)]
pub(crate) struct PathArgs {
    /// `workspace`.
    pub workspace: Option<String>,
    /// `include_directories`.
    pub include_directories: Vec<String>,
    /// `image_paths`.
    pub image_paths: Vec<String>,
    /// `save_file`.
    pub save_file: Option<String>,
}

/// The path arguments of a prompt call, checked: canonical, existing, under the roots.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    /// The CLI's working directory.
    pub cwd: PathBuf,
    /// `--include-directories` entries.
    pub include_directories: Vec<PathBuf>,
    /// The images as the CLI's `@` references.
    pub image_refs: Vec<String>,
    /// The images, canonical (the warm backend sends them as file links).
    pub images: Vec<PathBuf>,
    /// Where the answer is also written.
    pub save: Option<policy::SaveTarget>,
}

/// Checks a prompt call's path arguments. The CLI inlines an `@` reference only when the file
/// exists inside its workspace and drops it silently otherwise: every image is checked here.
pub(crate) async fn resolve(roots: &Roots<'_>, args: &PathArgs) -> Result<Paths, Failure> {
    let cwd = roots
        .workspace("workspace", args.workspace.as_deref())
        .await?;
    let mut include = Vec::new();
    for d in &args.include_directories {
        include.push(
            roots
                .check("include_directories", d, &cwd, Expect::Dir)
                .await?,
        );
    }
    let mut images = Vec::new();
    let mut image_files = Vec::new();
    for raw in &args.image_paths {
        let path = roots.image("image_paths", raw, &cwd).await?;
        let reference = if let Ok(rel) = path.strip_prefix(&cwd) {
            rel.to_string_lossy().into_owned()
        } else if include.iter().any(|d| path.starts_with(d)) {
            path.to_string_lossy().into_owned()
        } else {
            return Err(Failure::invalid_input(format!(
                "image_paths {raw:?}: resolves to {}, outside the workspace and its include directories, where the Gemini CLI would drop it silently",
                path.display()
            )));
        };
        images.push(command::at_reference(&reference));
        image_files.push(path);
    }
    let save = match &args.save_file {
        Some(raw) => Some(roots.check_save(raw, &cwd).await?),
        None => None,
    };
    Ok(Paths {
        cwd,
        include_directories: include,
        image_refs: images,
        images: image_files,
        save,
    })
}
