//! The trainer never loses a file: the same file as input and output is
//! refused, existing outputs need `--force`, a failed write leaves the old
//! output as it was, and a dictionary set is replaced as a whole.
#![forbid(unsafe_code)]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use tickpack_trainer::{run, TrainerError};

fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("tickpack-files-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn cmd(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Result<String, TrainerError> {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect();
    let mut out = Vec::new();
    run(&args, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

const HEAD: &str = r#"{"game":"g","version":"1","schema":{"entities":[{"name":"e","fields":[{"name":"x","type":"u8"}]}]}}"#;

fn jsonl(ticks: usize) -> String {
    let mut s = format!("{HEAD}\n");
    for t in 0..ticks {
        s += &format!("{{\"tick\":{t},\"sections\":{{\"e\":[{{\"id\":1,\"x\":{t}}}]}}}}\n");
    }
    s
}

/// Files in `dir`, sorted, temporary files included.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn same_file_as_input_and_output_is_refused_and_the_input_kept() {
    let dir = tmp("same");
    let input = dir.join("m.jsonl");
    let text = jsonl(3);
    std::fs::write(&input, &text).unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    #[allow(unused_mut)]
    let mut spellings = vec![
        input.clone(),
        dir.join(".").join("m.jsonl"),
        dir.join("sub").join("..").join("m.jsonl"),
    ];
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&input, dir.join("link.tpcap")).unwrap();
        std::fs::hard_link(&input, dir.join("hard.tpcap")).unwrap();
        spellings.push(dir.join("link.tpcap"));
        spellings.push(dir.join("hard.tpcap"));
    }
    for out in &spellings {
        for force in [false, true] {
            let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"import", &"jsonl", &input, out];
            if force {
                args.push(&"--force");
            }
            let e = cmd(&args).unwrap_err();
            assert!(
                matches!(&e, TrainerError::Output(m) if m.contains("is the input")),
                "{out:?}: {e}"
            );
            assert_eq!(std::fs::read_to_string(&input).unwrap(), text);
        }
    }
    // The fiedler importer too.
    std::fs::write(dir.join("d.bin"), [0u8; 16]).unwrap();
    let e = cmd(&[
        &"import",
        &"fiedler",
        &dir.join("d.bin"),
        &dir.join("d.bin"),
        &"--force",
    ])
    .unwrap_err();
    assert!(matches!(e, TrainerError::Output(_)), "{e}");
    assert_eq!(std::fs::read(dir.join("d.bin")).unwrap(), [0u8; 16]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn existing_outputs_need_force_and_failures_keep_them() {
    let dir = tmp("force");
    let good = dir.join("good.jsonl");
    std::fs::write(&good, jsonl(4)).unwrap();
    let out = dir.join("o.tpcap");
    std::fs::write(&out, b"precious").unwrap();

    // Without --force nothing is touched.
    let e = cmd(&[&"import", &"jsonl", &good, &out]).unwrap_err();
    assert!(
        matches!(&e, TrainerError::Output(m) if m.contains("--force")),
        "{e}"
    );
    let e = cmd(&[&"export", &"idle", &out, &"--ticks", &"2"]).unwrap_err();
    assert!(
        matches!(&e, TrainerError::Output(m) if m.contains("--force")),
        "{e}"
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");

    // A bad input half-way through, with --force: the old output stays whole
    // and no temporary file is left behind.
    let bad = dir.join("bad.jsonl");
    let mut text = jsonl(50);
    text += "{\"tick\":50,\"sections\":{\"e\":[{\"id\":1,\"x\":999}]}}\n";
    std::fs::write(&bad, text).unwrap();
    let before = listing(&dir);
    let e = cmd(&[&"import", &"jsonl", &bad, &out, &"--force"]).unwrap_err();
    assert!(matches!(e, TrainerError::Import { .. }), "{e}");
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    assert_eq!(listing(&dir), before, "no temporary file left");

    // With --force and a good input, the output is replaced.
    cmd(&[&"import", &"jsonl", &good, &out, &"--force"]).unwrap();
    assert!(std::fs::read(&out)
        .unwrap()
        .starts_with(&tickpack_sets::capture::MAGIC));
    let i = cmd(&[&"inspect", &out]).unwrap();
    assert!(i.contains("ticks: 4"), "{i}");
    assert_eq!(listing(&dir), before);

    // A directory is never an output.
    let e = cmd(&[&"export", &"idle", &dir, &"--force", &"--ticks", &"2"]).unwrap_err();
    assert!(matches!(e, TrainerError::Output(_)), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn train_replaces_a_set_as_a_whole() {
    let dir = tmp("set");
    let cap = dir.join("c.tpcap");
    cmd(&[
        &"export", &"cubes", &cap, &"--ticks", &"60", &"--seed", &"2",
    ])
    .unwrap();
    let set = dir.join("sets/cube-pile/1");
    let train = |extra: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"train", &cap, &"--out", &set, &"--sizes", &"1024", &"--quiet",
        ];
        args.extend_from_slice(extra);
        cmd(&args)
    };
    train(&[]).unwrap();
    let first = listing(&set);
    assert!(first.contains(&"manifest.json".to_owned()), "{first:?}");

    // An existing set is kept unless --force.
    let e = train(&[]).unwrap_err().to_string();
    assert!(e.contains("--force"), "{e}");
    assert_eq!(listing(&set), first);

    // A retrain replaces the set's files, and nothing is left beside it.
    train(&[&"--keyframe-every", &"7", &"--force"]).unwrap();
    assert_eq!(listing(&set), first, "exactly the new set's files");
    assert_eq!(listing(&dir.join("sets/cube-pile")), vec!["1".to_owned()]);
    let i = cmd(&[&"inspect", &set]).unwrap();
    assert!(i.contains("verified: yes"), "{i}");

    // A non-empty directory that is not a set is refused, untouched.
    let other = dir.join("notes");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("todo.txt"), b"keep me").unwrap();
    let e = cmd(&[&"train", &cap, &"--out", &other, &"--quiet"]).unwrap_err();
    assert!(
        matches!(&e, TrainerError::Output(m) if m.contains("not")),
        "{e}"
    );
    assert_eq!(std::fs::read(other.join("todo.txt")).unwrap(), b"keep me");

    // A capture inside the set it would replace is refused.
    let inside = set.join("c.tpcap");
    std::fs::copy(&cap, &inside).unwrap();
    let e = cmd(&[&"train", &inside, &"--out", &set, &"--quiet", &"--force"]).unwrap_err();
    assert!(
        matches!(&e, TrainerError::Output(m) if m.contains("inside")),
        "{e}"
    );
    assert!(inside.is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_set_that_appears_while_training_is_not_replaced_without_force() {
    use tickpack_trainer::output::{check_set_output, save_set};
    use tickpack_trainer::train::{train, TrainOptions};
    let dir = tmp("appeared");
    let cap = dir.join("c.tpcap");
    cmd(&[&"export", &"cubes", &cap, &"--ticks", &"60"]).unwrap();
    let (set, _) = train(&TrainOptions {
        captures: vec![cap.clone()],
        out: dir.join("first"),
        sizes: vec![1024],
        progress: false,
        ..TrainOptions::default()
    })
    .unwrap();

    // `train` checks its --out when it starts: nothing there yet.
    let out = dir.join("second");
    check_set_output(&[&cap], &out, false).unwrap();
    // While it trains, another run (or the user) puts a set there.
    std::fs::create_dir_all(&out).unwrap();
    for f in listing(&dir.join("first")) {
        std::fs::copy(dir.join("first").join(&f), out.join(&f)).unwrap();
    }
    std::fs::write(out.join("notes.txt"), b"keep me").unwrap();
    let before = listing(&out);

    // Without --force the finished set does not replace it.
    let e = save_set(&set, &out, false).unwrap_err();
    assert!(
        matches!(&e, TrainerError::Output(m) if m.contains("--force")),
        "{e}"
    );
    assert_eq!(listing(&out), before);
    assert_eq!(std::fs::read(out.join("notes.txt")).unwrap(), b"keep me");
    assert_eq!(
        listing(&dir),
        ["c.tpcap", "first", "second"],
        "nothing left beside"
    );

    // With --force it is still kept: it holds a file that is not the set's.
    let e = save_set(&set, &out, true).unwrap_err();
    assert!(
        matches!(&e, TrainerError::Output(m) if m.contains("notes.txt")),
        "{e}"
    );
    assert_eq!(listing(&out), before);
    // Once only the set is there, --force replaces it as a whole.
    std::fs::remove_file(out.join("notes.txt")).unwrap();
    save_set(&set, &out, true).unwrap();
    assert_eq!(listing(&out), listing(&dir.join("first")));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn force_replaces_only_a_dictionary_set_not_any_directory_with_a_manifest() {
    let dir = tmp("pwa");
    let cap = dir.join("c.tpcap");
    cmd(&[&"export", &"cubes", &cap, &"--ticks", &"60"]).unwrap();
    // A web app: its own manifest.json, and files beside it.
    let app = dir.join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(
        app.join("manifest.json"),
        br#"{"name":"My app","icons":[]}"#,
    )
    .unwrap();
    std::fs::write(app.join("index.html"), b"<h1>keep me</h1>").unwrap();
    let before = listing(&app);
    for force in [true, false] {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            vec![&"train", &cap, &"--out", &app, &"--quiet"];
        if force {
            args.push(&"--force");
        }
        let e = cmd(&args).unwrap_err();
        assert!(
            matches!(&e, TrainerError::Output(m) if m.contains("not a dictionary set")),
            "--force {force}: {e}"
        );
        assert_eq!(listing(&app), before);
        assert_eq!(
            std::fs::read(app.join("index.html")).unwrap(),
            b"<h1>keep me</h1>"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `train --force` never deletes a file the set's manifest does not name
/// (a notes file, a capture, a stale dictionary): it refuses the directory
/// and leaves everything in it as it was.
#[test]
fn force_never_deletes_files_that_are_not_the_sets() {
    let dir = tmp("strays");
    let cap = dir.join("c.tpcap");
    cmd(&[&"export", &"cubes", &cap, &"--ticks", &"60"]).unwrap();
    let set = dir.join("set");
    let train = || cmd(&[&"train", &cap, &"--out", &set, &"--quiet", &"--force"]);
    train().unwrap();
    let own = listing(&set);
    std::fs::write(set.join("notes.txt"), b"keep me").unwrap();
    std::fs::copy(&cap, set.join("other.tpcap")).unwrap();
    std::fs::write(set.join("keyframe-old.dict"), b"mine").unwrap();
    let before = listing(&set);
    let manifest = std::fs::read(set.join("manifest.json")).unwrap();
    let e = train().unwrap_err();
    assert!(
        matches!(&e, TrainerError::Output(m)
            if m.contains("keyframe-old.dict, notes.txt, other.tpcap")),
        "{e}"
    );
    assert_eq!(listing(&set), before);
    assert_eq!(std::fs::read(set.join("notes.txt")).unwrap(), b"keep me");
    assert_eq!(
        std::fs::read(set.join("keyframe-old.dict")).unwrap(),
        b"mine"
    );
    assert_eq!(std::fs::read(set.join("manifest.json")).unwrap(), manifest);
    assert_eq!(listing(&dir), ["c.tpcap", "set"], "nothing left beside");
    // Without them, --force replaces the set.
    for f in ["notes.txt", "other.tpcap", "keyframe-old.dict"] {
        std::fs::remove_file(set.join(f)).unwrap();
    }
    train().unwrap();
    assert_eq!(listing(&set), own);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs the trainer binary under `umask` (a child process: the umask is
/// the whole process's, and tests run in parallel).
#[cfg(unix)]
fn under_umask(umask: &str, args: &[&dyn AsRef<std::ffi::OsStr>]) {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_tickpack-trainer"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// New outputs are created as any new file is, the umask applied (they
/// were 0o644 and 0o755 whatever the umask); a replaced output keeps the
/// permissions of the file it replaces.
#[cfg(unix)]
#[test]
fn new_outputs_honour_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tmp("umask");
    for (umask, file, folder) in [("077", 0o600, 0o700), ("002", 0o664, 0o775)] {
        let cap = dir.join(format!("c{umask}.tpcap"));
        under_umask(umask, &[&"export", &"cubes", &cap, &"--ticks", &"60"]);
        assert_eq!(mode(&cap), file, "capture under umask {umask}");
        let set = dir.join(format!("set{umask}"));
        under_umask(umask, &[&"train", &cap, &"--out", &set, &"--quiet"]);
        assert_eq!(mode(&set), folder, "set under umask {umask}");
        for f in listing(&set) {
            assert_eq!(mode(&set.join(&f)), file, "{f} under umask {umask}");
        }
    }
    // Replacing keeps the old output's permissions, whatever the umask.
    let cap = dir.join("c077.tpcap");
    std::fs::set_permissions(&cap, std::fs::Permissions::from_mode(0o640)).unwrap();
    under_umask(
        "022",
        &[&"export", &"idle", &cap, &"--ticks", &"2", &"--force"],
    );
    assert_eq!(mode(&cap), 0o640);
    std::fs::remove_dir_all(&dir).unwrap();
}
