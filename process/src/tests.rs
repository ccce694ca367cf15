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
fn a_spawned_process_keeps_a_deleted_directory_where_nothing_can_be_created() {
    let child = Command::new("sh")
        .args([
            "-c",
            "sleep 0.2; touch planted 2>/dev/null && echo made || echo refused",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "refused");
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
