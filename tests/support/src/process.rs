//! Running commands and reporting failures with everything needed to debug them.

use std::fmt::Write as _;
use std::process::{Command, Output};

/// Run a command and capture its output; panic with the full command line, its status,
/// stdout and stderr if it cannot be started or exits non-zero. Returns the output.
#[track_caller]
pub fn run_ok(cmd: &mut Command) -> Output {
    let output = spawn(cmd);
    if !output.status.success() {
        panic!("{}", report("command failed", cmd, &output));
    }
    output
}

/// Run a command expecting it to fail with a non-zero exit code; panic with its output if it
/// succeeded, or if it was killed by a signal (a crash is not the failure a test expects).
/// Returns the output.
#[track_caller]
pub fn run_fail(cmd: &mut Command) -> Output {
    let output = spawn(cmd);
    if output.status.success() {
        panic!(
            "{}",
            report("command succeeded but was expected to fail", cmd, &output)
        );
    }
    if output.status.code().is_none() {
        panic!("{}", report("command was killed by a signal", cmd, &output));
    }
    output
}

/// The command's stdout as text (invalid UTF-8 replaced).
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The command's stderr as text (invalid UTF-8 replaced).
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A shell-like rendering of a command: `cd DIR && VAR=value ... program args...`, listing
/// the environment variables the command sets (not the inherited ones, and not `PATH`).
pub fn command_line(cmd: &Command) -> String {
    let mut line = String::new();
    if let Some(dir) = cmd.get_current_dir() {
        let _ = write!(line, "cd {} && ", quote(&dir.to_string_lossy()));
    }
    for (key, value) in cmd.get_envs() {
        if key == "PATH" {
            continue;
        }
        if let Some(value) = value {
            let _ = write!(
                line,
                "{}={} ",
                key.to_string_lossy(),
                quote(&value.to_string_lossy())
            );
        }
    }
    line.push_str(&quote(&cmd.get_program().to_string_lossy()));
    for arg in cmd.get_args() {
        line.push(' ');
        line.push_str(&quote(&arg.to_string_lossy()));
    }
    line
}

#[track_caller]
fn spawn(cmd: &mut Command) -> Output {
    match cmd.output() {
        Ok(output) => output,
        Err(err) => panic!("could not run `{}`: {err}", command_line(cmd)),
    }
}

fn report(what: &str, cmd: &Command, output: &Output) -> String {
    format!(
        "\n{what}: {status}\ncommand: {line}\n--- stdout ---\n{out}\n--- stderr ---\n{err}\n--- end ---\n",
        status = output.status,
        line = command_line(cmd),
        out = stdout(output),
        err = stderr(output),
    )
}

fn quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:@+,%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ok_returns_output() {
        let out = run_ok(Command::new("sh").args(["-c", "echo hi; echo err >&2"]));
        assert_eq!(stdout(&out), "hi\n");
        assert_eq!(stderr(&out), "err\n");
    }

    #[test]
    #[should_panic(expected = "command failed")]
    fn run_ok_panics_on_failure() {
        run_ok(Command::new("sh").args(["-c", "exit 3"]));
    }

    #[test]
    fn run_fail_returns_output() {
        let out = run_fail(Command::new("sh").args(["-c", "echo nope >&2; exit 1"]));
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(stderr(&out), "nope\n");
    }

    #[test]
    #[should_panic(expected = "expected to fail")]
    fn run_fail_panics_on_success() {
        run_fail(&mut Command::new("true"));
    }

    #[test]
    fn command_line_quotes() {
        let mut cmd = Command::new("tstore");
        cmd.current_dir("/tmp/a b")
            .env("X", "1")
            .args(["init", "it's"]);
        assert_eq!(
            command_line(&cmd),
            r"cd '/tmp/a b' && X=1 tstore init 'it'\''s'"
        );
    }
}
