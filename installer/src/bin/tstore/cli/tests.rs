//! The command line's definitions and tofu's flag forms, parsed.

use std::ffi::OsString;
use std::time::Duration;

use clap::CommandFactory as _;

use super::command_line::{parse_from, with_double_dashes};
use super::values::*;
use super::*;

#[test]
fn durations() {
    assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
    assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
    assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
    assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
    assert_eq!(parse_duration("2d").unwrap(), Duration::from_secs(172_800));
    for bad in ["1w", "h", "", "99999999999999999999d"] {
        assert!(parse_duration(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn typed_values() {
    let cli = Cli::try_parse_from([
        "tstore",
        "--flavor",
        "terraform",
        "init",
        "--lockfile",
        "readonly",
    ])
    .unwrap();
    assert_eq!(cli.flavor, Some(Flavor::Terraform));
    let Command::Init(init) = cli.command else {
        panic!("not init")
    };
    assert_eq!(init.lockfile, Some(LockfileMode::Readonly));
    assert!(Cli::try_parse_from(["tstore", "--flavor", "opentofu", "gc"]).is_err());
    assert!(Cli::try_parse_from(["tstore", "init", "--lockfile", "frozen"]).is_err());
    assert!(Cli::try_parse_from(["tstore", "gc", "--min-age", "1y"]).is_err());
    let lock = Cli::try_parse_from(["tstore", "providers", "lock", "--platform", "linux"]);
    assert!(lock.is_err());
}

fn parse(args: &[&str]) -> Cli {
    Cli::try_parse_from(with_double_dashes(
        &Cli::command(),
        args.iter().map(OsString::from),
    ))
    .unwrap()
}

#[test]
fn single_dash_long_flags_are_accepted() {
    let cli = parse(&["tstore", "init", "-upgrade", "-lockfile=readonly", "-json"]);
    let Command::Init(args) = cli.command else {
        panic!("expected init")
    };
    assert!(args.upgrade && args.json);
    assert_eq!(args.lockfile, Some(LockfileMode::Readonly));
    let cli = parse(&["tstore", "-flavor=terraform", "init", "--upgrade"]);
    assert_eq!(cli.flavor, Some(Flavor::Terraform));
}

/// `--flavor` before or after the subcommand is the flag, not the environment.
#[test]
fn the_flavor_flag_is_told_from_the_environment() {
    for args in [
        &["tstore", "--flavor", "terraform", "init"][..],
        &["tstore", "init", "--flavor", "terraform"][..],
    ] {
        let cli = parse_from(args.iter().map(OsString::from).collect()).unwrap();
        assert_eq!(cli.flavor, Some(Flavor::Terraform), "{args:?}");
        assert!(!cli.flavor_from_env, "{args:?}");
    }
}

/// What CI scripts written for `tofu init` pass is accepted.
#[test]
fn tofu_init_flags_are_accepted() {
    let cli = parse(&[
        "tstore",
        "-chdir=stacks/a",
        "init",
        "-input=false",
        "-no-color",
        "-backend=false",
        "-backend-config=bucket=x",
        "-backend-config",
        "cfg.hcl",
        "-reconfigure",
        "-get=true",
        "-lock=false",
        "-lock-timeout=30s",
    ]);
    assert_eq!(cli.chdir.as_deref(), Some(std::path::Path::new("stacks/a")));
    assert!(cli.no_color);
    let Command::Init(args) = cli.command else {
        panic!("expected init")
    };
    assert!(args.get);
    assert_eq!(args.tofu_compat.input, Some(false));
    assert_eq!(args.tofu_compat.backend_config, ["bucket=x", "cfg.hcl"]);
    let Command::Init(args) = parse(&["tstore", "init", "-get=false"]).command else {
        panic!("expected init")
    };
    assert!(!args.get);
    let cli = parse(&[
        "tstore",
        "providers",
        "lock",
        "-chdir=x",
        "-platform=linux_amd64",
    ]);
    assert_eq!(cli.chdir.as_deref(), Some(std::path::Path::new("x")));
}

fn usage_error(args: &[&str]) -> UsageError {
    parse_from(args.iter().map(OsString::from).collect()).unwrap_err()
}

#[test]
fn unknown_flags_are_named_as_typed_with_their_command() {
    let err = usage_error(&["tstore", "init", "-foo"]);
    assert_eq!(err.command, ["init"]);
    assert_eq!(err.detail, "flag provided but not defined: -foo");
    assert_eq!(err.help_command(), "tstore init --help");
    assert!(!err.json);
    let err = usage_error(&["tstore", "init", "-json", "-foo=bar", "dir"]);
    assert_eq!(err.detail, "flag provided but not defined: -foo");
    assert!(err.json);
    let err = usage_error(&["tstore", "init", "-json=false", "--nope"]);
    assert_eq!(err.detail, "flag provided but not defined: --nope");
    assert!(!err.json);
    let err = usage_error(&["tstore", "store", "verify", "--bogus"]);
    assert_eq!(err.command, ["store", "verify"]);
    assert_eq!(err.help_command(), "tstore store verify --help");
    let err = usage_error(&["tstore", "modules", "lock", "a", "b"]);
    assert!(err.detail.contains("\"b\""), "{}", err.detail);
    let err = usage_error(&["tstore", "--flavor", "opentofu", "gc"]);
    assert!(err.detail.contains("opentofu"), "{}", err.detail);
    assert!(!err.detail.contains("Usage:"), "{}", err.detail);
}

#[test]
fn boolean_flags_take_go_values() {
    let init = |args: &[&str]| {
        let mut all = vec!["tstore", "init"];
        all.extend(args);
        match parse(&all).command {
            Command::Init(a) => a,
            _ => panic!("expected init"),
        }
    };
    assert!(init(&["-upgrade"]).upgrade);
    assert!(init(&["-upgrade=true"]).upgrade);
    assert!(init(&["--upgrade=T"]).upgrade);
    assert!(!init(&["-upgrade=false"]).upgrade);
    assert!(!init(&["-upgrade=0"]).upgrade);
    assert!(!init(&[]).upgrade);
    // A value needs `=`: the next word stays the directory.
    let args = init(&["-upgrade", "stacks/app"]);
    assert!(args.upgrade);
    assert_eq!(args.dirs, [std::path::PathBuf::from("stacks/app")]);
    let many = init(&["a", "b", "--recursive", "--exclude", "x/*"]);
    assert_eq!(many.dirs.len(), 2);
    assert!(many.recursive && many.exclude == ["x/*"]);
    assert!(init(&["-json=1"]).json && !init(&["-json=f"]).json);
    assert!(!init(&["-get=FALSE"]).get);
    assert_eq!(
        init(&["-reconfigure=false"]).tofu_compat.reconfigure,
        Some(false)
    );
    assert_eq!(init(&["-cloud=true"]).tofu_compat.cloud, Some(true));
    assert!(usage_error(&["tstore", "init", "-upgrade=yes"])
        .detail
        .contains("\"yes\" is not a boolean"));
}

#[test]
fn plugin_dirs_repeat_in_order() {
    let cli = parse(&[
        "tstore",
        "init",
        "-plugin-dir=a",
        "--plugin-dir",
        "b",
        "-plugin-dir=",
    ]);
    let Command::Init(args) = cli.command else {
        panic!("expected init")
    };
    assert_eq!(args.plugin_dir, ["a", "b", ""]);
}

#[test]
fn unknown_single_dash_words_are_left_alone() {
    let args = with_double_dashes(
        &Cli::command(),
        ["tstore", "init", "-x", "--", "-upgrade"].map(OsString::from),
    );
    assert_eq!(args[2], "-x");
    assert_eq!(args[4], "-upgrade");
}

#[test]
fn sizes_read_as_powers_of_1024() {
    use super::values::parse_size;
    assert_eq!(parse_size("1048576"), Ok(1 << 20));
    for (text, bytes) in [
        ("512K", 512u64 << 10),
        ("500M", 500 << 20),
        ("20G", 20 << 30),
        ("20GiB", 20 << 30),
        ("1t", 1 << 40),
        ("2 GB", 2 << 30),
    ] {
        assert_eq!(parse_size(text), Ok(bytes), "{text}");
    }
    for bad in ["", "G", "1.5G", "20X", "-1G", "99999999999T"] {
        assert!(parse_size(bad).is_err(), "{bad}");
    }
}
