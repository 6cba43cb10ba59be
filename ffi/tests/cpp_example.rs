//! Compiles `examples/net_lobby.cpp` (a server and two clients over UDP
//! on 127.0.0.1 through the network endpoints) with the system C++
//! compiler as C++17 against the static library cargo built for this test
//! run, and runs it; once more under AddressSanitizer with leak checking
//! where the compiler and the machine support it. Skips (with a message)
//! when there is no C++ compiler or the platform has no POSIX sockets.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const LOBBY: &str = "examples/net_lobby.cpp";
const EXPECTED: &str = "ok: 2 clients applied what the server sent them";

/// Where cargo put this run's `libtickpack_ffi.a`: beside the test binary.
fn static_lib() -> String {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .join("libtickpack_ffi.a")
        .display()
        .to_string()
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn out_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

/// The C++ compiler (`$CXX`, else `c++`), or why the test is skipped.
fn compiler() -> Result<String, &'static str> {
    if !cfg!(unix) {
        return Err("the example uses POSIX sockets");
    }
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let ok = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Ok(cxx)
    } else {
        Err("no C++ compiler (set CXX or install c++)")
    }
}

fn system_libs() -> &'static [&'static str] {
    if cfg!(target_os = "linux") {
        &["-lpthread", "-ldl", "-lm"]
    } else {
        &[]
    }
}

/// Compiles the example with `flags`; panics with the compiler's output
/// on failure.
fn build(cxx: &str, name: &str, flags: &[&str]) -> PathBuf {
    let exe = out_dir().join(name);
    let out = Command::new(cxx)
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-O1",
            "-g",
        ])
        .args(flags)
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg("-I")
        .arg(crate_dir().join("examples"))
        .arg(crate_dir().join(LOBBY))
        .arg(static_lib())
        .args(system_libs())
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cxx} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run(exe: &Path, env: &[(&str, &str)]) {
    let out = Command::new(exe)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} failed ({}):\n{stdout}{stderr}",
        exe.display(),
        out.status
    );
    assert!(stdout.contains(EXPECTED), "{stdout}");
    println!("{stdout}");
}

#[test]
fn lobby_runs_against_the_static_library() {
    let cxx = match compiler() {
        Ok(c) => c,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    let exe = build(&cxx, "net-lobby", &[]);
    run(&exe, &[]);
}

/// Whether `cxx` can build and run a program under AddressSanitizer here.
fn asan_works(cxx: &str) -> bool {
    let dir = out_dir();
    let src = dir.join("probe-lobby-asan.cpp");
    let exe = dir.join("probe-lobby-asan");
    std::fs::write(&src, "int main() { return 0; }\n").unwrap();
    let built = Command::new(cxx)
        .args(["-fsanitize=address", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .is_ok_and(|o| o.status.success());
    built
        && Command::new(&exe)
            .output()
            .is_ok_and(|o| o.status.success())
}

#[test]
fn lobby_runs_under_address_sanitizer() {
    let cxx = match compiler() {
        Ok(c) => c,
        Err(why) => return eprintln!("skipped: {why}"),
    };
    if !asan_works(&cxx) {
        return eprintln!("skipped: {cxx} cannot build and run with -fsanitize=address here");
    }
    let exe = build(
        &cxx,
        "net-lobby-asan",
        &["-fsanitize=address", "-fno-omit-frame-pointer"],
    );
    run(&exe, &[("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")]);
}
