use super::*;

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_process_starts_in_a_private_empty_directory_that_is_removed_after() {
    let shown = stdout(Command::new("sh").args(["-c", "pwd; ls -A; stat -c %a ."]));
    let mut lines = shown.lines();
    let dir = PathBuf::from(lines.next().unwrap());
    assert_ne!(Some(dir.clone()), std::env::current_dir().ok());
    assert!(
        dir.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("tstore-run-"),
        "{shown}"
    );
    // Nothing listed, and the directory is the owner's alone.
    assert_eq!(lines.collect::<Vec<_>>(), ["700"], "{shown}");
    assert!(!dir.exists(), "{} is left behind", dir.display());
}

#[test]
fn a_spawned_process_has_its_directory_until_it_is_let_go() {
    let mut child = Command::new("sh")
        .args([
            "-c",
            "pwd; read _; touch planted 2>/dev/null && echo made || echo refused",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
    let dir = PathBuf::from(line.trim());
    assert!(dir.is_dir(), "{line}");
    // Let go of it while it runs (as of a daemon): its directory is gone, and stays empty.
    let mut stdin = child.stdin.take().unwrap();
    let std_child = {
        let Child { child, _dir } = child;
        child
    };
    assert!(!dir.exists());
    std::io::Write::write_all(&mut stdin, b"go\n").unwrap();
    drop(stdin);
    let out = std_child.wait_with_output().unwrap();
    assert!(out.status.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest.trim(), "refused");
}

#[test]
fn relative_and_empty_path_entries_are_never_searched() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tool = bin.join("tool");
    std::fs::write(&tool, "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    // As PATH entries relative to the directory that holds `bin`: never found.
    let relative = OsString::from("bin::.:./bin");
    assert_eq!(find_on_path("tool", &relative), None);
    assert!(resolve(OsStr::new("tool"), Some(&relative)).is_err());
    // The same directory named absolutely is searched.
    let mut absolute = OsString::from("bin:");
    absolute.push(bin.as_os_str());
    assert_eq!(find_on_path("tool", &absolute), Some(tool.clone()));
    // A program named by a path is taken as it is.
    assert_eq!(resolve(tool.as_os_str(), None).unwrap(), tool);
}

#[test]
fn git_finds_no_repository_around_it_and_runs_no_hook() {
    let out = Command::git()
        .args(["rev-parse", "--git-dir"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{out:?}");
    let shown = stdout(Command::git().args(["config", "--get", "core.hooksPath"]));
    assert_eq!(shown.trim(), "/dev/null");
    let shown = stdout(Command::git().args(["config", "--get", "safe.bareRepository"]));
    assert_eq!(shown.trim(), "explicit");
}

#[test]
fn git_location_variables_of_the_parent_are_removed() {
    let cmd = Command::git();
    for name in GIT_LOCATION_VARIABLES {
        assert!(
            cmd.get_envs().any(|(k, v)| k == *name && v.is_none()),
            "{name} is not removed"
        );
    }
}
