//! The JSON reference (`docs/reference/json.md`) is the one home of every `--json`
//! document's fields: each document a command prints names only fields its row names.

use std::collections::BTreeSet;

use tstore_test_support::{json, mirror, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

/// The rows of the reference's table: the command (the first cell's code, `init`,
/// `store ls`, …) and the text naming its fields.
fn rows() -> Vec<(String, String)> {
    let doc = fs_err::read_to_string(
        tstore_test_support::workspace_root().join("docs/reference/json.md"),
    )
    .unwrap();
    doc.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.strip_prefix("| `")?.splitn(2, "` | ").collect();
            let [command, fields] = cells[..] else {
                return None;
            };
            let command = command.split("`, `").next().unwrap_or(command);
            Some((command.to_owned(), fields.to_owned()))
        })
        .collect()
}

/// Every field name in `value`, at any depth; the keys of an object that is a map (a
/// provider address, a file name) are values, not field names, and are left out.
fn field_names(value: &serde_json::Value, out: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                if k.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    out.insert(k.clone());
                }
                field_names(v, out);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| field_names(v, out)),
        _ => {}
    }
}

#[test]
fn every_json_field_a_command_prints_is_in_the_reference() {
    let env = TestEnv::new();
    let mirror_dir = env.root.path().join("mirror");
    mirror::null_unpacked(&mirror_dir);
    let cfg = env.cli_config_fs_mirror(&mirror_dir);
    let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let b = env.checkout("b", &[("main.tf", NULL_CONFIG)]);
    let run = |args: &[&str]| {
        json(
            &env.tstore()
                .cli_config(&cfg)
                .current_dir(&a)
                .args(args)
                .ok(),
        )
    };
    let documents = [
        ("init", run(&["init", "--json"])),
        (
            "init DIR...",
            json(
                &env.tstore()
                    .cli_config(&cfg)
                    .args(["init", "--json"])
                    .arg(&a)
                    .arg(&b)
                    .ok(),
            ),
        ),
        ("fetch", run(&["fetch", "--json"])),
        (
            "providers outdated",
            run(&["providers", "outdated", "--json"]),
        ),
        ("store ls", run(&["store", "ls", "--json"])),
        ("store du", run(&["store", "du", "--json"])),
        ("store verify", run(&["store", "verify", "--json"])),
        ("store facts", run(&["store", "facts", "--json"])),
        ("roots ls", run(&["roots", "ls", "--json"])),
        ("gc", run(&["gc", "--dry-run", "--json"])),
        ("mount --status", run(&["mount", "--status", "--json"])),
        ("version", run(&["version", "-json"])),
        (
            "providers lock",
            json(
                &env.tstore()
                    .cli_config(&cfg)
                    .current_dir(&a)
                    .args(["providers", "lock", "--json", "--fs-mirror"])
                    .arg(&mirror_dir)
                    .ok(),
            ),
        ),
        // Last: without --yes it reports, removes nothing and exits 1.
        (
            "store rm",
            json(
                &env.tstore()
                    .cli_config(&cfg)
                    .current_dir(&a)
                    .args(["store", "rm", "--json"])
                    .fails(),
            ),
        ),
    ];
    assert_eq!(documents[13].1["removed"], serde_json::Value::Null);
    let rows = rows();
    let mut undocumented = Vec::new();
    // `init DIR...`'s `report` is the lone init's document, checked against its row.
    let mut documents = documents.to_vec();
    let mut many = documents[1].1.clone();
    for root in many["roots"].as_array_mut().unwrap() {
        documents.push(("init", root["report"].take()));
    }
    documents[1].1 = many;
    for (command, document) in &documents {
        let (_, fields) = rows
            .iter()
            .find(|(c, _)| c == command)
            .unwrap_or_else(|| panic!("json.md has no row for `{command}`"));
        let mut names = BTreeSet::new();
        field_names(document, &mut names);
        assert!(names.len() > 1, "{command}: {document}");
        for name in names {
            // The first field of every document, said once above the table.
            if name != "format_version" && !fields.contains(&format!("`{name}`")) {
                undocumented.push(format!("{command}: {name}"));
            }
        }
    }
    assert!(
        undocumented.is_empty(),
        "fields printed but not in docs/reference/json.md: {undocumented:#?}"
    );
}
