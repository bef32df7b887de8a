//! The `rtx` command's own interface: `--version`, `help`, and a usage for every command
//! (`rtx <command> --help`, `-h`, `rtx help <command>`) on stdout with exit status 0; an unknown or
//! missing command fails with the overview on stderr.

use std::process::{Command, Output};

const COMMANDS: [&str; 6] = ["run", "bench", "check", "dump", "translate", "opt"];

fn rtx(arguments: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtx")).args(arguments).output().expect("rtx runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 stdout")
}

#[test]
fn version_is_the_package_version() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).expect("Cargo.toml");
    let version = text
        .lines()
        .find_map(|line| line.strip_prefix("version = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("a version line in Cargo.toml");
    let output = rtx(&["--version"]);
    assert!(output.status.success());
    assert_eq!(stdout(&output), format!("rtx {version}\n"));
}

#[test]
fn help_names_every_command() {
    let output = rtx(&["help"]);
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(text.starts_with("usage: rtx <command>"), "{text}");
    for command in COMMANDS {
        assert!(text.contains(&format!("\n  {command} ")), "`rtx help` does not list {command}:\n{text}");
    }
}

#[test]
fn every_command_has_a_usage_on_stdout_with_exit_status_0() {
    for command in COMMANDS {
        let usage = stdout(&rtx(&["help", command]));
        assert!(usage.starts_with(&format!("usage: rtx {command} ")), "rtx help {command}:\n{usage}");
        for asked in [vec![command, "--help"], vec![command, "-h"], vec![command, "--module=x.vmfb", "--help"]] {
            let output = rtx(&asked);
            assert!(output.status.success(), "rtx {asked:?} exited with {}", output.status);
            assert_eq!(stdout(&output), usage, "rtx {asked:?}");
            assert!(output.stderr.is_empty(), "rtx {asked:?} wrote to stderr");
        }
    }
}

/// Each `--flag` a usage names is one the command accepts (none is refused as unknown).
#[test]
fn every_flag_in_a_usage_is_accepted() {
    for command in COMMANDS {
        let usage = stdout(&rtx(&[command, "--help"]));
        let flags: Vec<&str> = usage
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .filter(|word| word.starts_with("--") && word.len() > 2)
            .collect();
        assert!(!flags.is_empty(), "the usage of {command} names no flags");
        for flag in flags {
            let output = rtx(&[command, &format!("{flag}=1"), "no-such-file"]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(!stderr.contains("unknown flag"), "rtx {command} refuses {flag}, which its usage names: {stderr}");
        }
    }
}

#[test]
fn an_unknown_or_missing_command_fails_with_the_overview_on_stderr() {
    for arguments in [&["frobnicate"][..], &[], &["help", "frobnicate"]] {
        let output = rtx(arguments);
        assert_eq!(output.status.code(), Some(1), "rtx {arguments:?}");
        assert!(output.stdout.is_empty(), "rtx {arguments:?} wrote to stdout");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("usage: rtx <command>"), "rtx {arguments:?}: {stderr}");
    }
}
