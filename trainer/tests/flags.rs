//! The command line: help on every command, version, usage errors with exit
//! code 2, and every number range-checked with a message naming its flag.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use tickpack_trainer::{run, TrainerError};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tickpack-trainer"))
}

fn usage(args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    match run(&args, &mut Vec::new()) {
        Err(TrainerError::Usage(m)) => m,
        other => panic!("{args:?}: {other:?}"),
    }
}

#[test]
fn the_command_line_is_consistent() {
    use clap::CommandFactory;
    tickpack_trainer::cli::Cli::command().debug_assert();
}

#[test]
fn export_takes_the_scenarios_the_docs_list() {
    use clap::CommandFactory;
    let names = tickpack_trainer::export::scenario_names();
    let cmd = tickpack_trainer::cli::Cli::command();
    let export = cmd.find_subcommand("export").unwrap();
    let scenario = export
        .get_arguments()
        .find(|a| a.get_id() == "scenario")
        .unwrap();
    let offered: Vec<String> = scenario
        .get_possible_values()
        .iter()
        .map(|v| v.get_name().to_owned())
        .collect();
    assert_eq!(offered, names, "export --help");
    // The crate docs' list (lib.rs), in the same order.
    let lib = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"),
    )
    .unwrap();
    let docs: String = lib
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join(" ");
    let list = &docs[docs.find("`SCENARIO` is one of").unwrap()..];
    let list = &list[list.find(": ").unwrap() + 2..list.find('.').unwrap()];
    let listed: Vec<&str> = list.split(',').map(str::trim).collect();
    assert_eq!(listed, names, "lib.rs docs");
    for name in names {
        let s = tickpack_trainer::export::scenario(name, 1, 1);
        assert!(s.is_ok(), "{name}");
    }
}

#[test]
fn every_command_has_help() {
    for cmd in [
        vec![],
        vec!["import"],
        vec!["import", "fiedler"],
        vec!["import", "jsonl"],
        vec!["export"],
        vec!["train"],
        vec!["eval"],
        vec!["inspect"],
    ] {
        let o = bin().args(&cmd).arg("--help").output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{cmd:?}");
        assert!(text.contains("Usage: tickpack-trainer"), "{cmd:?}: {text}");
    }
    let o = bin().args(["help", "train"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("--keyframe-every"));
    let o = bin().arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && v.contains("wire format"), "{v}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["train", "--help-me"],
        vec!["eval"],
        vec!["export", "racing"],
        vec!["frobnicate"],
        vec!["import", "jsonl", "a", "b", "--game", "x"],
        vec!["eval", "a", "--baseline-distance", "6", "--rtt-ms", "50"],
    ] {
        let o = bin().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("Usage:"), "{args:?}: {e}");
    }
}

#[test]
fn usage_errors_print_one_message() {
    let dir = std::env::temp_dir().join(format!("tickpack-trainer-{}-once", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("x.tpcap").display().to_string();
    let unknown = dir.join("unknown.bin");
    std::fs::write(&unknown, b"neither").unwrap();
    let unknown = unknown.display().to_string();
    let sizes = vec!["512"; tickpack_trainer::cli::MAX_SIZES + 1].join(",");
    let steps = vec!["0.5"; tickpack_trainer::suggest::MAX_STEPS + 1].join(",");
    for (args, says) in [
        // clap's own errors: values out of range, unknown names.
        (vec!["eval", "a", "--level", "99"], "--level"),
        (vec!["export", "nope", &out], "nope"),
        (vec!["export", "racing", &out, "--ticks", "0"], "--ticks"),
        (
            vec!["train", "a", "--out", "d", "--held-out", "2"],
            "--held-out",
        ),
        (vec!["train", "--help-me"], "--help-me"),
        (vec!["eval"], "<CAPTURE>"),
        // The commands' own checks, after parsing.
        (
            vec!["export", "cubes", &out, "--ticks", "900000"],
            "--ticks",
        ),
        (
            vec!["train", "a", "--out", "d", "--sizes", &sizes],
            "--sizes",
        ),
        (vec!["inspect", &unknown], "not a capture"),
        (
            vec!["suggest", &unknown, "--steps", &steps],
            "at most 32 steps",
        ),
    ] {
        let o = bin().args(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.starts_with("error: "), "{args:?}: {e}");
        assert_eq!(e.matches("error:").count(), 1, "{args:?}: {e}");
        let hint = "For more information, try '--help'.";
        assert_eq!(e.matches(hint).count(), 1, "{args:?}: {e}");
        assert!(e.contains(says), "{args:?}: {e}");
    }
    assert!(!std::path::Path::new(&out).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn level_takes_a_negative_number_as_its_own_argument() {
    use tickpack_trainer::cli::Command as Cmd;
    for (args, want) in [
        (vec!["eval", "a", "--level", "-1"], -1),
        (vec!["eval", "a", "--held-out", "--level", "-7"], -7),
        (vec!["train", "a", "--out", "d", "--level", "-1"], -1),
    ] {
        let argv: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let cli = tickpack_trainer::parse(&argv).unwrap().unwrap();
        let level = match cli.command {
            Cmd::Eval(a) => a.level,
            Cmd::Train(a) => a.level,
            other => panic!("{args:?}: {other:?}"),
        };
        assert_eq!(level, want, "{args:?}");
    }
}

#[test]
fn numbers_are_range_checked_naming_the_flag() {
    for (args, flag) in [
        (vec!["train", "a", "--out", "d", "--sizes", "0"], "--sizes"),
        (
            vec!["train", "a", "--out", "d", "--sizes", "1024,x"],
            "--sizes",
        ),
        (
            vec!["train", "a", "--out", "d", "--sizes", "4294967296000"],
            "--sizes",
        ),
        (vec!["train", "a", "--out", "d", "--level", "99"], "--level"),
        (vec!["eval", "a", "--level", "-99999999"], "--level"),
        (
            vec!["train", "a", "--out", "d", "--keyframe-every", "0"],
            "--keyframe-every",
        ),
        (
            vec!["train", "a", "--out", "d", "--held-out", "1"],
            "--held-out",
        ),
        (
            vec!["train", "a", "--out", "d", "--held-out", "NaN"],
            "--held-out",
        ),
        (vec!["eval", "a", "--held-out=0"], "--held-out"),
        (vec!["eval", "a", "--held-out=1.5"], "--held-out"),
        (vec!["eval", "a", "--held-out=x"], "--held-out"),
        (
            vec!["eval", "a", "--baseline-distance", "0"],
            "--baseline-distance",
        ),
        (
            vec!["eval", "a", "--baseline-distance", "32768"],
            "--baseline-distance",
        ),
        (vec!["eval", "a", "--rtt-ms=-1"], "--rtt-ms"),
        (vec!["eval", "a", "--jitter", "99999999"], "--jitter"),
        (
            vec!["export", "racing", "x.tpcap", "--ticks", "99999999999"],
            "--ticks",
        ),
        (
            vec!["export", "racing", "x.tpcap", "--ticks", "0"],
            "--ticks",
        ),
        (vec!["export", "racing", "x.tpcap", "--seed=-1"], "--seed"),
        // A negative number as its own argument is the flag's value.
        (
            vec!["export", "racing", "x.tpcap", "--seed", "-1"],
            "--seed",
        ),
        (
            vec!["export", "racing", "x.tpcap", "--ticks", "-1"],
            "--ticks",
        ),
        (vec!["eval", "a", "--rtt-ms", "-1"], "--rtt-ms"),
        (vec!["eval", "a", "--jitter", "-1"], "--jitter"),
        (
            vec!["eval", "a", "--baseline-distance", "-1"],
            "--baseline-distance",
        ),
        (vec!["eval", "a", "--held-out=-0.5"], "--held-out"),
        (
            vec!["train", "a", "--out", "d", "--held-out", "-0.5"],
            "--held-out",
        ),
        (
            vec!["train", "a", "--out", "d", "--keyframe-every", "-5"],
            "--keyframe-every",
        ),
        (
            vec!["train", "a", "--out", "d", "--sizes", "-512"],
            "--sizes",
        ),
        (vec!["suggest", "a", "--steps", "-0.5"], "--steps"),
    ] {
        let m = usage(&args);
        assert!(m.contains(flag), "{args:?}: {m}");
    }
    // Under the flag's own cap but over the export memory budget.
    let m = usage(&["export", "cubes", "x.tpcap", "--ticks", "900000"]);
    assert!(m.contains("--ticks") && m.contains("budget"), "{m}");
    assert!(!std::path::Path::new("x.tpcap").exists());
}

/// `suggest` takes at most `MAX_STEPS` candidate steps, refused with a
/// typed error before the capture is read (they were unbounded: each is a
/// column and a pass over every field's samples).
#[test]
fn suggest_refuses_more_steps_than_its_limit() {
    use tickpack_trainer::suggest::{suggest, MAX_STEPS};
    let steps = vec![0.5; MAX_STEPS + 1];
    match suggest(std::path::Path::new("no-such.tpcap"), &steps) {
        Err(TrainerError::TooManySteps { given, max }) => {
            assert_eq!((given, max), (MAX_STEPS + 1, 32));
        }
        other => panic!("{other:?}"),
    }
    let many = vec![0.5; 100_000];
    assert!(matches!(
        suggest(std::path::Path::new("no-such.tpcap"), &many),
        Err(TrainerError::TooManySteps { given: 100_000, .. })
    ));
}
