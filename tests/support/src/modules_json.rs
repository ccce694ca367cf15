//! [`ModuleRecord`]: the records of the module manifest `modules.json` that `init` writes
//! under `.terraform/modules/` (terraform's `modsdir` manifest: `Key`, `Source`, `Version`
//! when the module has one, `Dir`).

use std::path::Path;

/// One record of `modules.json`. The root module's is `Key` `""`, `Dir` `"."`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ModuleRecord {
    /// `Key`: the call path (`a.b`), `""` for the root module.
    pub key: String,
    /// `Source`: the source address as the call wrote it.
    pub source: String,
    /// `Version`: the selected version (registry modules), absent for the others.
    pub version: Option<String>,
    /// `Dir`: the module's directory, relative to the working directory.
    pub dir: String,
}

impl ModuleRecord {
    /// A record of `key`, `source`, `version` and `dir`.
    pub fn new(key: &str, source: &str, version: Option<&str>, dir: &str) -> ModuleRecord {
        ModuleRecord {
            key: key.to_owned(),
            source: source.to_owned(),
            version: version.map(str::to_owned),
            dir: dir.to_owned(),
        }
    }
}

/// The path of the module manifest of the working directory `dir`:
/// `DIR/.terraform/modules/modules.json`.
pub fn modules_json_path(dir: &Path) -> std::path::PathBuf {
    dir.join(".terraform/modules/modules.json")
}

/// The records of `DIR/.terraform/modules/modules.json`, sorted (by key first).
#[track_caller]
pub fn module_records(dir: &Path) -> Vec<ModuleRecord> {
    read_modules_json(&modules_json_path(dir))
}

/// The records of the module manifest at `path` (a `TF_DATA_DIR` moves it), sorted.
#[track_caller]
pub fn read_modules_json(path: &Path) -> Vec<ModuleRecord> {
    let text = fs_err::read_to_string(path).expect("read modules.json");
    parse_modules_json(&text)
}

/// The records of a module manifest's text, sorted. Strict: panics unless the text is an
/// object whose `Modules` is an array of records with string `Key`, `Source` and `Dir`, a
/// string `Version` or none, and no other field; two manifests with the same records are
/// the same manifest.
#[track_caller]
pub fn parse_modules_json(text: &str) -> Vec<ModuleRecord> {
    let json: serde_json::Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("modules.json is not JSON ({e}):\n{text}"));
    let modules = json["Modules"]
        .as_array()
        .unwrap_or_else(|| panic!("modules.json has no Modules array:\n{text}"));
    let mut records: Vec<ModuleRecord> = modules
        .iter()
        .map(|m| {
            let object = m
                .as_object()
                .unwrap_or_else(|| panic!("a modules.json record is not an object: {m}"));
            if let Some(other) = object
                .keys()
                .find(|k| !matches!(k.as_str(), "Key" | "Source" | "Version" | "Dir"))
            {
                panic!("a modules.json record has a field {other:?}: {m}");
            }
            let string = |field: &str| {
                m[field]
                    .as_str()
                    .unwrap_or_else(|| panic!("a modules.json record has no string {field}: {m}"))
                    .to_owned()
            };
            let version = match object.get("Version") {
                None => None,
                Some(serde_json::Value::String(v)) => Some(v.clone()),
                Some(v) => panic!("a modules.json record has a Version that is no string: {v}"),
            };
            ModuleRecord {
                key: string("Key"),
                source: string("Source"),
                version,
                dir: string("Dir"),
            }
        })
        .collect();
    records.sort();
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_parsed_and_sorted() {
        let text = r#"{"Modules":[{"Key":"b","Source":"x","Version":"1.0.0","Dir":".terraform/modules/b"},{"Key":"","Source":"","Dir":"."}]}"#;
        assert_eq!(
            parse_modules_json(text),
            [
                ModuleRecord::new("", "", None, "."),
                ModuleRecord::new("b", "x", Some("1.0.0"), ".terraform/modules/b"),
            ]
        );
    }

    #[test]
    #[should_panic(expected = "has a field \"Extra\"")]
    fn an_unknown_field_is_refused() {
        parse_modules_json(r#"{"Modules":[{"Key":"","Source":"","Dir":".","Extra":1}]}"#);
    }

    #[test]
    #[should_panic(expected = "Version that is no string")]
    fn a_null_version_is_refused() {
        parse_modules_json(r#"{"Modules":[{"Key":"","Source":"","Dir":".","Version":null}]}"#);
    }
}
