//! `.terraform/modules/modules.json` exactly as terraform writes it (tofu's writer:
//! <https://github.com/opentofu/opentofu/blob/main/internal/modsdir/manifest.go>): one line of compact JSON without a trailing newline, `{"Modules":[…]}`, each record's keys
//! in the order `Key`, `Source`, `Version` (registry modules only), `Dir`; Go's `json.Marshal`
//! escapes `<`, `>` and `&`. Records are sorted by key (as current OpenTofu writes them).

use serde::{Deserialize, Serialize};

/// One record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// Module key (`a.b`, `""` for the root).
    #[serde(rename = "Key")]
    pub key: String,
    /// The source exactly as written in the configuration.
    #[serde(rename = "Source")]
    pub source: String,
    /// Selected registry version.
    #[serde(rename = "Version", skip_serializing_if = "Option::is_none", default)]
    pub version: Option<String>,
    /// Directory relative to the working directory, `/`-separated.
    #[serde(rename = "Dir")]
    pub dir: String,
}

#[derive(Serialize, Deserialize)]
struct Manifest {
    #[serde(rename = "Modules")]
    modules: Vec<Record>,
}

/// The manifest text for `records` (the root record is added; sorted by key).
pub(crate) fn render(records: &[Record]) -> String {
    let mut all: Vec<Record> = records
        .iter()
        .filter(|r| !r.key.is_empty())
        .cloned()
        .collect();
    all.push(Record {
        key: String::new(),
        source: String::new(),
        version: None,
        dir: ".".into(),
    });
    all.sort_by(|a, b| a.key.cmp(&b.key));
    let json = serde_json::to_string(&Manifest { modules: all }).expect("records serialize");
    // `<`, `>`, `&` only occur inside strings, so escaping them everywhere is safe.
    json.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_like_terraform() {
        let text = render(&[
            Record {
                key: "reg".into(),
                source: "127.0.0.1:8443/acme/gitpkg/null".into(),
                version: Some("1.1.0".into()),
                dir: ".terraform/modules/reg".into(),
            },
            Record {
                key: "gitb".into(),
                source: "git::file:///tmp/exp/repo.git?ref=v1.0.0&depth=1".into(),
                version: None,
                dir: ".terraform/modules/gitb".into(),
            },
        ]);
        assert_eq!(
            text,
            r#"{"Modules":[{"Key":"","Source":"","Dir":"."},{"Key":"gitb","Source":"git::file:///tmp/exp/repo.git?ref=v1.0.0\u0026depth=1","Dir":".terraform/modules/gitb"},{"Key":"reg","Source":"127.0.0.1:8443/acme/gitpkg/null","Version":"1.1.0","Dir":".terraform/modules/reg"}]}"#
        );
        let back: Manifest = serde_json::from_str(&text).unwrap();
        assert_eq!(back.modules.len(), 3);
    }
}
