//! The rules of [`super`] on a real filesystem: a victim directory outside the anchor must
//! come out of every operation byte-identical.

use std::os::unix::fs::{symlink, PermissionsExt};

use tstore_test_support::snapshot;

use super::*;

fn rel(s: &str) -> RelPath {
    RelPath::new(s).unwrap()
}

/// `(tempdir, anchor = tmp/work (with .terraform/providers and .terraform/modules), victim)`.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    fs_err::create_dir_all(work.join(".terraform/providers")).unwrap();
    fs_err::create_dir_all(work.join(".terraform/modules")).unwrap();
    let victim = tmp.path().join("victim");
    fs_err::create_dir_all(victim.join("nested/deeper")).unwrap();
    fs_err::create_dir_all(victim.join("h/x")).unwrap();
    fs_err::write(victim.join("precious"), "keep\n").unwrap();
    fs_err::write(victim.join("nested/deeper/f"), "inner\n").unwrap();
    fs_err::write(victim.join("h/x/f"), "x\n").unwrap();
    fs_err::write(victim.join("secret"), "0600\n").unwrap();
    fs_err::set_permissions(
        victim.join("secret"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    fs_err::set_permissions(
        victim.join("nested"),
        std::fs::Permissions::from_mode(0o500),
    )
    .unwrap();
    (tmp, work, victim)
}

#[test]
fn plain_relative_paths_only() {
    for ok in ["a", "a/b", ".x", "a.b.c", "..a", "a..", "x/.y/z"] {
        assert_eq!(rel(ok).to_string(), ok);
    }
    for bad in [
        "", "/", "/a", "a//b", "a/", "./a", "a/.", "a/../b", "..", ".", "a\0b",
    ] {
        assert!(
            matches!(RelPath::new(bad), Err(SafeFsError::NotPlain { .. })),
            "{bad:?}"
        );
    }
    assert!(rel("a").join("../b").is_err());
    assert!(rel("a").join("b/c").is_ok());
    assert_eq!(rel("a/b/c").parent(), Some(rel("a/b")));
    assert_eq!(rel("a").parent(), None);
    assert_eq!(rel("a/b").file_name(), "b");
}

#[test]
fn removal_removes_the_entry_never_what_it_points_at() {
    let (_tmp, work, victim) = setup();
    let before = snapshot(&victim);
    let dir = SafeDir::open_trusted(&work).unwrap();
    let modules = work.join(".terraform/modules");
    symlink(&victim, modules.join("link")).unwrap();
    symlink(victim.join("precious"), modules.join("file-link")).unwrap();
    // A tree with links out, a hard link to a victim file and unwritable directories.
    let tree = modules.join("tree");
    fs_err::create_dir_all(tree.join("ro/deeper/none")).unwrap();
    symlink(&victim, tree.join("ro/out")).unwrap();
    symlink(victim.join("nested"), tree.join("ro/deeper/nested")).unwrap();
    fs_err::hard_link(victim.join("secret"), tree.join("hard")).unwrap();
    fs_err::write(tree.join("ro/deeper/own"), "own").unwrap();
    for (d, mode) in [
        ("ro/deeper/none", 0o000),
        ("ro/deeper", 0o500),
        ("ro", 0o555),
    ] {
        fs_err::set_permissions(tree.join(d), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    for name in ["link", "file-link", "tree"] {
        let r = rel(&format!(".terraform/modules/{name}"));
        assert!(dir.remove(&r).unwrap(), "{name}");
        assert!(
            fs_err::symlink_metadata(modules.join(name)).is_err(),
            "{name}"
        );
        assert_eq!(dir.kind(&r).unwrap(), None);
    }
    assert!(!dir.remove(&rel(".terraform/modules/absent")).unwrap());
    assert!(!dir.remove(&rel(".terraform/nothing/here")).unwrap());
    assert_eq!(snapshot(&victim), before);
}

#[test]
fn a_symlinked_directory_on_the_way_is_refused_by_every_operation() {
    let (_tmp, work, victim) = setup();
    let before = snapshot(&victim);
    let dir = SafeDir::open_trusted(&work).unwrap();
    symlink(&victim, work.join(".terraform/providers/h")).unwrap();
    let inside = rel(".terraform/providers/h/x/f");
    let ok_name = rel(".terraform/providers/ok");
    fs_err::write(work.join(".terraform/providers/ok"), "ok").unwrap();
    let results: Vec<(&str, Result<()>)> = vec![
        ("remove", dir.remove(&inside).map(drop)),
        ("rename from", dir.rename(&inside, &ok_name)),
        ("rename to", dir.rename(&ok_name, &inside)),
        ("symlink", dir.symlink(Path::new("/x"), &inside)),
        (
            "write",
            dir.write_atomic(&inside, b"x", Durability::Process),
        ),
        ("create_dir_all", dir.create_dir_all(&inside).map(drop)),
        ("create_dir_new", dir.create_dir_new(&inside).map(drop)),
        ("create_file", dir.create_file(&inside, 0o644).map(drop)),
        ("kind", dir.kind(&inside).map(drop)),
        ("read_link", dir.read_link(&inside).map(drop)),
        ("read_file", dir.read_file(&inside, 10).map(drop)),
        (
            "open_dir",
            dir.open_dir(&rel(".terraform/providers/h")).map(drop),
        ),
    ];
    for (op, result) in results {
        match result {
            Err(e @ SafeFsError::SymlinkedDir { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("providers/h is a symlink"), "{op}: {msg}");
                assert!(
                    msg.contains("run init again") && e.is_refusal(),
                    "{op}: {msg}"
                );
            }
            other => panic!("{op}: {other:?}"),
        }
    }
    assert!(work.join(".terraform/providers/ok").is_file());
    assert_eq!(snapshot(&victim), before);
}

#[test]
fn a_symlinked_data_directory_is_refused_from_the_working_directory() {
    let (tmp, work, victim) = setup();
    let before = snapshot(&victim);
    let other = tmp.path().join("other");
    fs_err::create_dir_all(&other).unwrap();
    symlink(&victim, other.join(".terraform")).unwrap();
    let dir = SafeDir::open_trusted(&other).unwrap();
    let err = dir.create_dir_all(&rel(".terraform/modules")).unwrap_err();
    assert!(matches!(err, SafeFsError::SymlinkedDir { .. }), "{err}");
    // The anchor itself is the caller's choice: a symlink to it is followed.
    symlink(&work, tmp.path().join("work-link")).unwrap();
    let dir = SafeDir::open_trusted(&tmp.path().join("work-link")).unwrap();
    dir.write_atomic(&rel(".terraform/f"), b"x", Durability::Process)
        .unwrap();
    assert!(work.join(".terraform/f").is_file());
    assert_eq!(snapshot(&victim), before);
}

#[test]
fn the_last_component_is_replaced_never_written_through() {
    let (_tmp, work, victim) = setup();
    let before = snapshot(&victim);
    let dir = SafeDir::open_trusted(&work).unwrap();
    let state = work.join(".terraform/modules/state.json");
    symlink(victim.join("precious"), &state).unwrap();
    let r = rel(".terraform/modules/state.json");
    assert!(matches!(
        dir.read_file(&r, 100),
        Err(SafeFsError::SymlinkedFile { .. })
    ));
    dir.write_atomic(&r, b"{}", Durability::PowerLoss).unwrap();
    let meta = fs_err::symlink_metadata(&state).unwrap();
    assert!(meta.is_file() && meta.permissions().mode() & 0o777 == 0o644);
    assert_eq!(dir.read_file(&r, 100).unwrap().unwrap(), b"{}");
    assert_eq!(dir.read_file(&r, 1).unwrap().unwrap(), b"{", "capped");
    // A rename over a symlink replaces the link.
    let link = work.join(".terraform/modules/m");
    symlink(&victim, &link).unwrap();
    dir.write_atomic(&rel(".terraform/modules/new"), b"n", Durability::Process)
        .unwrap();
    dir.rename(&rel(".terraform/modules/new"), &rel(".terraform/modules/m"))
        .unwrap();
    assert_eq!(fs_err::read(&link).unwrap(), b"n");
    // Creating where something exists is refused, whatever it is.
    symlink(victim.join("absent"), work.join(".terraform/dangling")).unwrap();
    assert!(dir.create_file(&rel(".terraform/dangling"), 0o644).is_err());
    assert!(dir
        .symlink(Path::new("/x"), &rel(".terraform/dangling"))
        .is_err());
    assert!(dir.create_dir_new(&rel(".terraform/dangling")).is_err());
    assert!(!victim.join("absent").exists());
    // No temporary file is left behind.
    let leftovers: Vec<_> = fs_err::read_dir(work.join(".terraform/modules"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("tstore-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!(snapshot(&victim), before);
}

/// Time of check is time of use: a directory opened once stays the directory changed,
/// even when its path is swapped for a symlink to the victim afterwards.
#[test]
fn an_opened_directory_is_not_redirected_by_swapping_its_path() {
    let (_tmp, work, victim) = setup();
    let before = snapshot(&victim);
    let dir = SafeDir::open_trusted(&work).unwrap();
    let h = dir.create_dir_all(&rel(".terraform/providers/h")).unwrap();
    fs_err::create_dir_all(work.join(".terraform/providers/h/x")).unwrap();
    fs_err::write(work.join(".terraform/providers/h/x/f"), "mine").unwrap();
    let providers = work.join(".terraform/providers");
    fs_err::rename(&providers, work.join(".terraform/moved")).unwrap();
    symlink(&victim, &providers).unwrap();
    assert!(h.remove(&rel("x")).unwrap());
    h.write_atomic(&rel("f"), b"new", Durability::PowerLoss)
        .unwrap();
    h.symlink(Path::new("/target"), &rel("l")).unwrap();
    assert!(work.join(".terraform/moved/h/f").is_file());
    assert!(work.join(".terraform/moved/h/l").is_symlink());
    assert!(!work.join(".terraform/moved/h/x").exists());
    assert!(matches!(
        dir.remove(&rel(".terraform/providers/h/x")),
        Err(SafeFsError::SymlinkedDir { .. })
    ));
    assert_eq!(snapshot(&victim), before);
}

#[test]
fn directories_are_created_and_listed_without_following() {
    let (_tmp, work, victim) = setup();
    let dir = SafeDir::open_trusted(&work).unwrap();
    let d = dir.create_dir_all(&rel(".terraform/a/b/c")).unwrap();
    assert_eq!(d.path(), work.join(".terraform/a/b/c"));
    assert!(dir.open_dir(&rel(".terraform/a/b")).unwrap().is_some());
    assert!(dir.open_dir(&rel(".terraform/a/none")).unwrap().is_none());
    let a = dir.open_dir(&rel(".terraform/a")).unwrap().unwrap();
    symlink(&victim, work.join(".terraform/a/v")).unwrap();
    fs_err::write(work.join(".terraform/a/f"), "").unwrap();
    let listed: Vec<(String, Kind)> = a
        .entries()
        .unwrap()
        .into_iter()
        .map(|(n, k)| (n.to_string_lossy().into_owned(), k))
        .collect();
    let want = [("b", Kind::Dir), ("f", Kind::File), ("v", Kind::Symlink)];
    let want: Vec<(String, Kind)> = want.iter().map(|(n, k)| ((*n).into(), *k)).collect();
    assert_eq!(listed, want);
    assert_eq!(a.read_link(&rel("v")).unwrap(), Some(victim.clone()));
    assert_eq!(a.read_link(&rel("f")).unwrap(), None);
    assert!(matches!(
        dir.open_dir(&rel(".terraform/a/f")),
        Err(SafeFsError::NotADirectory { .. })
    ));
    let made = dir.create_dir_new(&rel(".terraform/a/new")).unwrap();
    made.create_file(&rel("x"), 0o755).unwrap();
    let mode = fs_err::metadata(work.join(".terraform/a/new/x"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    assert!(
        dir.create_dir_new(&rel(".terraform/a/new")).is_err(),
        "exists"
    );
}

#[test]
fn trees_of_any_depth_are_removed_within_the_entry_s_directory() {
    let (_tmp, work, victim) = setup();
    let dir = SafeDir::open_trusted(&work).unwrap();
    let mut deep = work.join(".terraform/deep");
    for _ in 0..(2 * super::remove::MAX_DEPTH + 10) {
        deep.push("d");
    }
    fs_err::create_dir_all(&deep).unwrap();
    fs_err::write(deep.join("leaf"), "x").unwrap();
    // A link to the victim at the bottom is unlinked, never followed.
    std::os::unix::fs::symlink(&victim, deep.join("out")).unwrap();
    assert!(dir.remove(&rel(".terraform/deep")).unwrap());
    let left: Vec<_> = fs_err::read_dir(work.join(".terraform"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "modules" && n != "providers")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(victim.join("precious").is_file() && victim.join("nested/deeper/f").is_file());
}

#[test]
fn several_files_are_all_replaced_or_none_is() {
    let (_tmp, work, _victim) = setup();
    let dir = SafeDir::open_trusted(&work).unwrap();
    let (a, b) = (
        rel(".terraform/modules/a.json"),
        rel(".terraform/modules/b.json"),
    );
    dir.write_atomic_all(&[(&a, b"a1"), (&b, b"b1")], Durability::PowerLoss)
        .unwrap();
    assert_eq!(dir.read_file(&a, 10).unwrap().unwrap(), b"a1");
    assert_eq!(dir.read_file(&b, 10).unwrap().unwrap(), b"b1");

    // The second file cannot be made (its parent is a file): the first keeps its content
    // and no temporary file is left.
    fs_err::write(work.join(".terraform/blocker"), b"").unwrap();
    let blocked = rel(".terraform/blocker/b.json");
    assert!(dir
        .write_atomic_all(&[(&a, b"a2"), (&blocked, b"b2")], Durability::Process)
        .is_err());
    assert_eq!(dir.read_file(&a, 10).unwrap().unwrap(), b"a1");
    let names: Vec<String> = fs_err::read_dir(work.join(".terraform/modules"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}
