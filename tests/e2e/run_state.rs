//! A run is a value: no `static` holds what a run learns (a remote's answer, a registry's
//! listing, a record read, a thing said once), so a served request believes nothing an
//! earlier one found. The statics the code has are process facts, each listed here with
//! why; a new one fails this test until it is either moved into the run
//! (`tstore_installer::Run`, the binary's `Settings::run`) or listed with its reason.

use std::path::{Path, PathBuf};

/// The statics that are process facts: (file, name, why).
const PROCESS_FACTS: &[(&str, &str, &str)] = &[
    (
        "store/src/decoded_trees.rs",
        "DECODED",
        "trees kept by the hash of their encoding: an id names the same files for every run",
    ),
    (
        "installer/src/facts.rs",
        "KEPT",
        "files' facts kept by the BLAKE3 of their bytes and the rules: a fact is true of that \
         content for every run",
    ),
    (
        "installer/src/bin/tstore/cli/command_line.rs",
        "COMMAND",
        "the command-line grammar, built once: the same for every run of this executable",
    ),
    (
        "store/src/durability.rs",
        "CURRENT",
        "the boot the machine is in, which no run changes",
    ),
    (
        "installer/src/workdir/interrupt.rs",
        "WRITING",
        "the changes this process has in progress, which Ctrl-C waits for",
    ),
    (
        "installer/src/modules/apply/slot.rs",
        "NEXT",
        "a counter that makes this process's temporary names unique",
    ),
    (
        "installer/src/bin/tstore/cli/variables.rs",
        "NEXT",
        "the order clap parses values in, within one parse",
    ),
    (
        "installer/src/bin/tstore/serve/client.rs",
        "INTERRUPTED",
        "Ctrl-C of the client process (a client runs one command)",
    ),
    (
        "installer/src/bin/tstore/style.rs",
        "STDOUT",
        "whether the streams in place are coloured: set at every run's start",
    ),
    (
        "installer/src/bin/tstore/style.rs",
        "STDERR",
        "whether the streams in place are coloured: set at every run's start",
    ),
    (
        "installer/src/bin/tstore/json.rs",
        "CAPTURED",
        "thread-local, for the length of one json::capture call (ended on unwind too)",
    ),
    (
        "installer/tofu/src/config/parsed.rs",
        "PARSED",
        "a memo of a pure function of a file's bytes, kept only for files that had settled \
         before they were read (a later change misses it)",
    ),
    (
        "installer/tofu/src/config/parsed.rs",
        "BY_CONTENT",
        "a memo of a pure function of content, by the content's hash",
    ),
    (
        "installer/tofu/src/config/facts.rs",
        "CACHE",
        "the facts cache a run installs for its length (FactsKept's guard removes it)",
    ),
    (
        "installer/tofu/src/span.rs",
        "DECODING",
        "thread-local, the file one decode is decoding",
    ),
];

/// The crates whose sources are read.
const SOURCES: &[&str] = &[
    "installer/src",
    "installer/tofu/src",
    "store/src",
    "process/src",
    "fsmount/src",
    "diagnostic/src",
];

/// The statics declared in `text` outside its test module: their names.
fn statics_in(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let line = line.trim_start();
        // A file's unit tests come last; statics of tests hold no run.
        if line == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|l| l.trim_start().starts_with("mod "))
        {
            break;
        }
        let declaration = line
            .strip_prefix("pub(crate) ")
            .or_else(|| line.strip_prefix("pub(super) "))
            .or_else(|| line.strip_prefix("pub "))
            .unwrap_or(line);
        if let Some(rest) = declaration.strip_prefix("static ") {
            let rest = rest.strip_prefix("mut ").unwrap_or(rest);
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
    }
    names
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "rs"))
        // Whole files of tests (`tests.rs`, `tests/`) hold no run.
        .filter(|e| {
            !e.path()
                .components()
                .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "tests.rs")
        })
        .map(|e| e.into_path())
        .collect()
}

#[test]
fn no_static_holds_a_runs_state() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut found = Vec::new();
    for dir in SOURCES {
        for file in rust_files(&root.join(dir)) {
            let text = fs_err::read_to_string(&file).unwrap();
            let shown = file.strip_prefix(root).unwrap().display().to_string();
            for name in statics_in(&text) {
                found.push((shown.clone(), name));
            }
        }
    }
    let unlisted: Vec<_> = found
        .iter()
        .filter(|(file, name)| !PROCESS_FACTS.iter().any(|(f, n, _)| f == file && n == name))
        .collect();
    assert!(
        unlisted.is_empty(),
        "statics that may hold a run's state (move them into the run, or list them in \
         PROCESS_FACTS with why they are process facts): {unlisted:?}"
    );
    // Every listed static still exists: the list says what the code has.
    for (file, name, _) in PROCESS_FACTS {
        assert!(
            found.iter().any(|(f, n)| f == file && n == name),
            "{file}: {name} is listed but gone"
        );
    }
}

#[test]
fn the_scan_sees_statics_and_thread_locals_outside_tests() {
    let text = "static A: u8 = 0;\npub(crate) static B: Mutex<()> = Mutex::new(());\n\
                fn f() {\n    static C: AtomicU64 = AtomicU64::new(0);\n}\n\
                thread_local! {\n    static D: RefCell<u8> = RefCell::new(0);\n}\n\
                fn g(x: &'static str) {}\n#[cfg(test)]\nmod tests {\n    static E: u8 = 0;\n}\n";
    assert_eq!(statics_in(text), ["A", "B", "C", "D"]);
}
