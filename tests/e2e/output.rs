//! What a person reads: the human output of `init` (first, warm, failing), `store du`,
//! `store ls` and `gc` as reviewed snapshots (`tests/e2e/snapshots/`). Paths of the test's
//! temp dir, durations, tree ids and the pid are replaced by placeholders; everything else,
//! sizes included (the real null provider has fixed bytes), is compared as written.

use std::path::Path;

use tstore_test_support::{stderr, stdout, Layout, NullMirror, TestEnv};

use crate::common::TstoreEnv as _;
use crate::common::NULL_CONFIG;

/// `text` with the test environment's paths and the run's variable parts replaced.
fn redact(env: &TestEnv, text: &str) -> String {
    let root = env.root.path().to_string_lossy().into_owned();
    let mut out = text.replace(&root, "[ROOT]");
    // Tree ids (64 hex digits) and timings.
    let hex64 = |w: &str| w.len() == 64 && w.bytes().all(|b| b.is_ascii_hexdigit());
    out = out
        .lines()
        .map(|line| {
            line.split(' ')
                .map(|w| if hex64(w) { "[TREE]" } else { w })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut lines = Vec::new();
    for line in out.lines() {
        let line = match line.find("took ") {
            Some(i) if line.trim_start().starts_with("took ") => {
                format!("{}took [MS] ms", &line[..i])
            }
            _ => line.to_owned(),
        };
        let line = match line.find("daemon pid ") {
            Some(i) => format!("{}daemon pid [PID])", &line[..i]),
            None => line,
        };
        lines.push(line);
    }
    lines.join("\n")
}

fn both(env: &TestEnv, out: &std::process::Output) -> String {
    redact(
        env,
        &format!("--- stdout\n{}\n--- stderr\n{}", stdout(out), stderr(out)),
    )
}

#[test]
fn human_output_of_init_du_ls_and_gc() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Packed);
    let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let first = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&a)
        .ok();
    insta::assert_snapshot!("init-first", both(&env, &first));

    let lock = fs_err::read_to_string(a.join(".terraform.lock.hcl")).unwrap();
    let b = env.checkout(
        "b",
        &[("main.tf", NULL_CONFIG), (".terraform.lock.hcl", &lock)],
    );
    let warm = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&b)
        .ok();
    insta::assert_snapshot!("init-warm", both(&env, &warm));

    let bad = env.checkout(
        "bad",
        &[(
            "main.tf",
            "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\", version = \">= 9.0\" }\n  }\n}\n",
        )],
    );
    let failing = env
        .tstore()
        .cli_config(&cfg)
        .no_fuse()
        .arg("init")
        .arg(&bad)
        .fails();
    insta::assert_snapshot!("init-failing", both(&env, &failing));

    let du = env.tstore().no_fuse().args(["store", "du"]).ok();
    insta::assert_snapshot!("store-du", both(&env, &du));
    let ls = env.tstore().no_fuse().args(["store", "ls"]).ok();
    insta::assert_snapshot!("store-ls", both(&env, &ls));

    fs_err::remove_dir_all(&b).unwrap();
    let gc = env
        .tstore()
        .no_fuse()
        .args(["gc", "--min-age", "0", "--dry-run"])
        .ok();
    insta::assert_snapshot!("gc-dry-run", both(&env, &gc));
    assert!(Path::new(&a).exists());
}

/// The shape of a JSON document: objects keep their keys, arrays their first element, and
/// every scalar becomes its type, so a snapshot catches a renamed, removed or retyped field
/// and nothing that varies between runs.
fn shape(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(fields) => {
            Value::Object(fields.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => Value::Array(items.first().map(shape).into_iter().collect()),
        Value::String(_) => Value::String("string".into()),
        Value::Number(_) => Value::String("number".into()),
        Value::Bool(_) => Value::String("bool".into()),
        Value::Null => Value::String("null".into()),
    }
}

#[test]
fn json_shapes_of_every_command() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Packed);
    let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let documents: Vec<(&str, std::process::Output)> = vec![
        (
            "init",
            env.tstore()
                .cli_config(&cfg)
                .no_fuse()
                .args(["init", "--json"])
                .arg(&a)
                .ok(),
        ),
        (
            "store-ls",
            env.tstore().no_fuse().args(["store", "ls", "--json"]).ok(),
        ),
        (
            "store-du",
            env.tstore().no_fuse().args(["store", "du", "--json"]).ok(),
        ),
        (
            "store-verify",
            env.tstore()
                .no_fuse()
                .args(["store", "verify", "--json"])
                .ok(),
        ),
        (
            "roots-ls",
            env.tstore().no_fuse().args(["roots", "ls", "--json"]).ok(),
        ),
        (
            "gc",
            env.tstore()
                .no_fuse()
                .args(["gc", "--dry-run", "--json"])
                .ok(),
        ),
    ];
    for (name, out) in documents {
        let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let pretty = serde_json::to_string_pretty(&shape(&value)).unwrap();
        insta::assert_snapshot!(format!("json-{name}"), pretty);
    }
}

/// On a terminal (a pty from `script`), headings are bold and `Error:` red, as tofu prints
/// them; `NO_COLOR` and `-no-color` turn that off, and a pipe never gets colour (the other
/// snapshots here have no escape codes).
#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let NullMirror { env, cfg, .. } = TestEnv::with_null_mirror(Layout::Packed);
    let a = env.checkout("a", &[("main.tf", NULL_CONFIG)]);
    let bad = env.checkout(
        "bad",
        &[(
            "main.tf",
            "terraform {\n  required_providers {\n    null = { source = \"hashicorp/null\", version = \">= 9.0\" }\n  }\n}\n",
        )],
    );
    let on_a_terminal = |args: &str, extra_env: &[(&str, &str)]| -> String {
        let cmd = env
            .tstore()
            .cli_config(&cfg)
            .no_fuse()
            .envs(extra_env.iter().copied())
            .command();
        // `script` runs the command on a pseudo-terminal and copies what it printed.
        let line = format!("{} {args}", crate::common::tstore_bin().display());
        let out = std::process::Command::new("script")
            .env_clear()
            .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .args(["-qec", &line, "/dev/null"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let ok = on_a_terminal(&format!("init {}", a.display()), &[]);
    assert!(
        ok.contains("\x1b[1mInitializing provider plugins...\x1b[0m"),
        "{ok:?}"
    );
    let failed = on_a_terminal(&format!("init {}", bad.display()), &[]);
    assert!(failed.contains("\x1b[1;31mError: \x1b[0m"), "{failed:?}");
    let no_color = on_a_terminal(&format!("init {}", bad.display()), &[("NO_COLOR", "1")]);
    assert!(!no_color.contains('\x1b'), "{no_color:?}");
    assert!(no_color.contains("Error: "), "{no_color:?}");
    let flag = on_a_terminal(&format!("-no-color init {}", a.display()), &[]);
    assert!(!flag.contains('\x1b'), "{flag:?}");
    assert!(
        flag.contains("Initializing provider plugins..."),
        "{flag:?}"
    );
}
