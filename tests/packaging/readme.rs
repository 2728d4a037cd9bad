//! The packages' READMEs (npm's page and PyPI's show them) send readers to the repository's
//! documentation by full links: each must name the repository of the crate and a file or folder
//! that exists in this workspace.

use super::workspace;

/// The package READMEs that npm and PyPI show.
const READMES: [&str; 4] = [
    "packaging/npm/geminicli-mcp/README.md",
    "packaging/npm/fake-gemini/README.md",
    "packaging/pypi/README-geminicli-mcp.md",
    "packaging/pypi/README-fake-gemini.md",
];

#[test]
fn package_readmes_link_to_documents_of_this_repository() {
    let repo = env!("CARGO_PKG_REPOSITORY");
    let link = regex::Regex::new(r"\]\((https://github\.com/[^)\s]+)\)").unwrap();
    for readme in READMES {
        let text = std::fs::read_to_string(workspace().join(readme)).unwrap();
        let links: Vec<&str> = link
            .captures_iter(&text)
            .map(|c| c.get(1).unwrap().as_str())
            .collect();
        assert!(!links.is_empty(), "{readme} links to no document");
        for url in links {
            let within = url
                .strip_prefix(&format!("{repo}/blob/main/"))
                .or_else(|| url.strip_prefix(&format!("{repo}/tree/main/")));
            let Some(within) = within else {
                panic!("{readme}: {url} is not a document of {repo}'s main branch");
            };
            let path = within.split('#').next().unwrap();
            assert!(
                workspace().join(path).exists(),
                "{readme}: {url} names {path}, which this workspace lacks"
            );
        }
    }
}
