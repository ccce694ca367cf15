//! A CLI configuration written back: the store's view (a filesystem mirror) first, then the
//! user's installation methods with the store's providers excluded from the network ones,
//! then the rest of the user's files as written, each part as the flavor's tool reads it.
//! Every string is quoted so that it reads back as the same value ([`quote_for_cli_config`]).

use std::path::{Path, PathBuf};

use super::{InstallMethod, InstallMethodKind};
use crate::flavor::Flavor;
use crate::string_literal::quote_for_cli_config;

/// The configuration: `header`, a `provider_installation` block holding a filesystem mirror
/// at `view` and then `methods` (network ones excluding `providers`), then the rest of the
/// user's `source_files` as written, less what the flavor's tool does not read.
pub fn with_store_view(
    header: &str,
    view: &Path,
    methods: &[InstallMethod],
    source_files: &[PathBuf],
    flavor: Flavor,
    providers: &[String],
) -> Rendered {
    let mut text = header.to_owned();
    text.push_str("provider_installation {\n");
    text.push_str(&format!(
        "  filesystem_mirror {{\n    path = {}\n  }}\n",
        quote_for_cli_config(&view.to_string_lossy())
    ));
    let mut left_out = Vec::new();
    for m in methods {
        let (method, not_read) = for_the_tool(m, flavor);
        if let Some(what) = not_read {
            text.push_str(&format!(
                "  # Left out: {what}, which {flavor} does not read.\n"
            ));
            left_out.push(what);
        }
        if let Some(method) = method {
            text.push_str(&render_method(&method, providers));
        }
    }
    text.push_str("}\n");
    // The rest of the user's configuration (hosts, credentials, …) as written.
    for file in source_files {
        let Ok(src) = std::fs::read_to_string(file) else {
            continue;
        };
        let Ok(mut body) = hcl::edit::parser::parse_body(&src) else {
            // A JSON configuration: its methods are above; the rest is not carried over.
            continue;
        };
        body.remove_blocks("provider_installation");
        if flavor == Flavor::Terraform {
            for block in TOFU_ONLY_BLOCKS {
                if !body.remove_blocks(block).is_empty() {
                    let what = format!("the `{block}` blocks of {}", file.display());
                    text.push_str(&format!(
                        "# Left out: {}, which terraform does not read.\n",
                        comment_text(&what)
                    ));
                    left_out.push(what);
                }
            }
        }
        let rest = body.to_string();
        if !rest.trim().is_empty() {
            text.push_str(&format!(
                "\n# From {}:\n",
                comment_text(&file.display().to_string())
            ));
            text.push_str(rest.trim_start_matches('\n'));
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    Rendered { text, left_out }
}

/// A generated configuration, and what of the user's it left out because the flavor's tool
/// does not read it.
pub struct Rendered {
    /// The configuration.
    pub text: String,
    /// What of the user's was left out, each said in a few words.
    pub left_out: Vec<String>,
}

/// Top-level blocks of a CLI configuration that only OpenTofu reads (its OCI credentials);
/// terraform ignores them.
const TOFU_ONLY_BLOCKS: [&str; 2] = ["oci_default_credentials", "oci_credentials"];

/// `m` as the flavor's tool reads it: terraform has no `oci_mirror` method (it refuses the
/// whole file: "Unknown provider installation method") and no `trust_all_hashes`. Returns
/// the method to write, if any, and what of it was left out.
fn for_the_tool(m: &InstallMethod, flavor: Flavor) -> (Option<InstallMethod>, Option<String>) {
    if flavor == Flavor::Tofu {
        return (Some(m.clone()), None);
    }
    match &m.kind {
        InstallMethodKind::OciMirror {
            repository_template,
        } => (
            None,
            Some(format!(
                "oci_mirror {{ repository_template = {} }}",
                comment_text(repository_template)
            )),
        ),
        InstallMethodKind::NetworkMirror {
            url,
            trust_all_hashes: true,
        } => {
            let mut kept = m.clone();
            kept.kind = InstallMethodKind::NetworkMirror {
                url: url.clone(),
                trust_all_hashes: false,
            };
            (
                Some(kept),
                Some(format!(
                    "trust_all_hashes of network_mirror {}",
                    comment_text(url)
                )),
            )
        }
        _ => (Some(m.clone()), None),
    }
}

/// One installation method as HCL; network methods exclude `providers`.
fn render_method(m: &InstallMethod, providers: &[String]) -> String {
    let network = matches!(
        m.kind,
        InstallMethodKind::Direct
            | InstallMethodKind::NetworkMirror { .. }
            | InstallMethodKind::OciMirror { .. }
    );
    let mut exclude = m.exclude.clone();
    if network {
        for p in providers {
            if !exclude.contains(p) {
                exclude.push(p.clone());
            }
        }
    }
    let list = |name: &str, items: &[String]| -> String {
        if items.is_empty() {
            return String::new();
        }
        let mut s = format!("    {name} = [\n");
        for i in items {
            s.push_str(&format!("      {},\n", quote_for_cli_config(i)));
        }
        s.push_str("    ]\n");
        s
    };
    let (block, attrs) = match &m.kind {
        InstallMethodKind::FilesystemMirror { path } => (
            "filesystem_mirror",
            format!(
                "    path = {}\n",
                quote_for_cli_config(&path.to_string_lossy())
            ),
        ),
        InstallMethodKind::NetworkMirror {
            url,
            trust_all_hashes,
        } => (
            "network_mirror",
            format!(
                "    url = {}\n{}",
                quote_for_cli_config(url),
                if *trust_all_hashes {
                    "    trust_all_hashes = true\n"
                } else {
                    ""
                }
            ),
        ),
        InstallMethodKind::OciMirror {
            repository_template,
        } => (
            "oci_mirror",
            format!(
                "    repository_template = {}\n",
                quote_for_cli_config(repository_template)
            ),
        ),
        InstallMethodKind::Direct => ("direct", String::new()),
        InstallMethodKind::DevOverrides(overrides) => {
            let mut s = String::from("  dev_overrides {\n");
            for (addr, dir) in overrides {
                s.push_str(&format!(
                    "    {} = {}\n",
                    quote_for_cli_config(addr),
                    quote_for_cli_config(&dir.to_string_lossy())
                ));
            }
            s.push_str("  }\n");
            return s;
        }
    };
    format!(
        "  {block} {{\n{attrs}{}{}  }}\n",
        list("include", &m.include),
        list("exclude", &exclude)
    )
}

/// `s` for a comment line: its control characters escaped, so that a path with a newline
/// cannot end the comment.
pub fn comment_text(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            c if c.is_control() => c.escape_default().to_string(),
            c => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cliconfig::CliConfig;

    /// Every string of a rendered method, however hostile, reads back unchanged: the quoting
    /// escapes newlines, quotes, backslashes, other control characters and the starts of
    /// template sequences. (No `$` in the paths: the reader expands `$VAR` there.)
    #[test]
    fn rendered_methods_read_back_as_the_same_values() {
        let method = |kind| InstallMethod {
            kind,
            include: Vec::new(),
            exclude: Vec::new(),
        };
        let odd_path = "/dir/line\nbreak/\"quoted\"/back\\slash/%{ if x }/\u{1}\t";
        let methods = vec![
            method(InstallMethodKind::DevOverrides(BTreeMap::from([(
                "example.com/acme/thing".to_owned(),
                PathBuf::from(odd_path),
            )]))),
            method(InstallMethodKind::FilesystemMirror {
                path: PathBuf::from(odd_path),
            }),
            method(InstallMethodKind::NetworkMirror {
                url: "https://mirror.example/${x}/%{y}/line\nbreak/\"q\"/b\\s/".to_owned(),
                trust_all_hashes: true,
            }),
            method(InstallMethodKind::OciMirror {
                repository_template: "r.example/${hostname}/${namespace}/${type}%{x}\n\"\\"
                    .to_owned(),
            }),
            InstallMethod {
                include: vec!["example.com/acme/*".to_owned()],
                ..method(InstallMethodKind::Direct)
            },
        ];
        let mut text = String::from("provider_installation {\n");
        for m in &methods {
            text.push_str(&render_method(m, &[]));
        }
        text.push_str("}\n");
        let read = CliConfig::parse_with_env(&text, "rendered.tfrc", &|_| None)
            .unwrap_or_else(|e| panic!("{text}\n{e}"));
        assert_eq!(read.provider_installation, Some(methods), "{text}");
    }

    #[test]
    fn comment_text_keeps_a_path_on_one_line() {
        assert_eq!(comment_text("/a/b.tfrc"), "/a/b.tfrc");
        assert_eq!(
            comment_text("/a\nprovider_installation {\r"),
            "/a\\nprovider_installation {\\r"
        );
    }
}
