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

/// A tool `name` (`#!/bin/sh`, `mode`) in `dir`, created with its parents.
fn tool_in(dir: &Path, name: &str, mode: u32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).unwrap();
    let tool = dir.join(name);
    std::fs::write(&tool, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(mode)).unwrap();
    tool
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `nobody`: a user other than root, to own what root must not run.
const OTHER_UID: u32 = 65534;

/// PATH of `dirs`, in order.
fn path_of(dirs: &[&Path]) -> OsString {
    std::env::join_paths(dirs).unwrap()
}

/// The root rule needs root to give files away (`chown`); as another user there is
/// nothing to check it with, and the test fails saying so rather than pass unchecked.
fn require_root() {
    assert!(
        root_trust::running_as_root(),
        "the root PATH rule needs the tests to run as root (to chown a directory to another \
         user); run the suite as root, as CI does"
    );
}

#[test]
fn root_skips_a_path_directory_another_user_owns_and_others_do_not() {
    require_root();
    let tmp = tempfile::tempdir().unwrap();
    let theirs = tmp.path().join("theirs");
    let ours = tmp.path().join("ours");
    let planted = tool_in(&theirs, "tool", 0o755);
    let real = tool_in(&ours, "tool", 0o755);
    std::os::unix::fs::chown(&theirs, Some(OTHER_UID), None).unwrap();
    let path = path_of(&[&theirs, &ours]);
    // Root: the other user's directory is skipped, the search goes on.
    assert_eq!(find_on_path_as("tool", &path, true), Some(real.clone()));
    assert_eq!(find_on_path("tool", &path), Some(real.clone()));
    assert_eq!(
        root_trust::check(&planted),
        Err(root_trust::Untrusted {
            entry: theirs.clone(),
            why: root_trust::Why::Owner(OTHER_UID),
        })
    );
    // Not root: searched as before.
    assert_eq!(find_on_path_as("tool", &path, false), Some(planted.clone()));
    // Their file in root's directory: skipped too.
    std::os::unix::fs::chown(&theirs, Some(0), None).unwrap();
    std::os::unix::fs::chown(&planted, Some(OTHER_UID), None).unwrap();
    assert_eq!(find_on_path_as("tool", &path, true), Some(real.clone()));
    // Root's own file, and only then, is taken from the first directory.
    std::os::unix::fs::chown(&planted, Some(0), None).unwrap();
    assert_eq!(find_on_path_as("tool", &path, true), Some(planted));
}

#[test]
fn root_takes_only_root_files_from_a_sticky_directory_and_nothing_from_a_writable_one() {
    require_root();
    let tmp = tempfile::tempdir().unwrap();
    let shared = tmp.path().join("shared");
    let ours = tmp.path().join("ours");
    let in_shared = tool_in(&shared, "tool", 0o755);
    let real = tool_in(&ours, "tool", 0o755);
    let path = path_of(&[&shared, &ours]);
    // 1777, as /tmp: root's file is root's alone (others may remove only their own).
    chmod(&shared, 0o1777);
    assert_eq!(
        find_on_path_as("tool", &path, true),
        Some(in_shared.clone())
    );
    std::os::unix::fs::chown(&in_shared, Some(OTHER_UID), None).unwrap();
    assert_eq!(find_on_path_as("tool", &path, true), Some(real.clone()));
    std::os::unix::fs::chown(&in_shared, Some(0), None).unwrap();
    // Group- or world-writable without the sticky bit: anyone who can write it can swap
    // root's file for theirs after the check, so nothing there is run.
    for mode in [0o777, 0o775] {
        chmod(&shared, mode);
        assert_eq!(find_on_path_as("tool", &path, true), Some(real.clone()));
        assert_eq!(
            root_trust::check(&in_shared).unwrap_err().why,
            root_trust::Why::WritableDir
        );
    }
    // A root file that others may write.
    chmod(&shared, 0o755);
    chmod(&in_shared, 0o757);
    assert_eq!(
        root_trust::check(&in_shared).unwrap_err().why,
        root_trust::Why::WritableFile
    );
    assert_eq!(find_on_path_as("tool", &path, true), Some(real));
}

#[test]
fn root_checks_the_whole_way_to_a_tool_links_included() {
    require_root();
    let tmp = tempfile::tempdir().unwrap();
    // A root-owned bin inside another user's directory: they can rename it away.
    let their_parent = tmp.path().join("home-of-other");
    let nested = tool_in(&their_parent.join("bin"), "tool", 0o755);
    std::os::unix::fs::chown(&their_parent, Some(OTHER_UID), None).unwrap();
    assert_eq!(root_trust::check(&nested).unwrap_err().entry, their_parent);
    // A link in root's directory to a tool in theirs, by a relative target with `..`.
    let ours = tmp.path().join("ours");
    std::fs::create_dir(&ours).unwrap();
    let link = ours.join("tool");
    std::os::unix::fs::symlink("../home-of-other/bin/tool", &link).unwrap();
    assert_eq!(root_trust::check(&link).unwrap_err().entry, their_parent);
    assert_eq!(find_on_path_as("tool", &path_of(&[&ours]), true), None);
    // Once the way is root's, the same link is followed to it.
    std::os::unix::fs::chown(&their_parent, Some(0), None).unwrap();
    assert_eq!(root_trust::check(&link), Ok(()));
    assert_eq!(
        find_on_path_as("tool", &path_of(&[&ours]), true),
        Some(link.clone())
    );
    // A PATH directory that is a link another user owns: they can point it elsewhere.
    let dir_link = tmp.path().join("bin-link");
    std::os::unix::fs::symlink(&ours, &dir_link).unwrap();
    std::os::unix::fs::lchown(&dir_link, Some(OTHER_UID), None).unwrap();
    assert_eq!(
        root_trust::check(&dir_link.join("tool")).unwrap_err().entry,
        dir_link
    );
    // A loop of links ends the walk.
    let looped = tmp.path().join("loop");
    std::os::unix::fs::symlink(&looped, &looped).unwrap();
    assert_eq!(
        root_trust::check(&looped.join("tool")).unwrap_err().why,
        root_trust::Why::TooManyLinks
    );
}
