//! Compiles `examples/session.c` with the system C compiler against the
//! library cargo built for this test run, and runs it: once linked to the
//! static library, once to the shared one, and once under AddressSanitizer
//! where the compiler and the machine support it. Does the same for
//! `tests/c/stale_handles.c` (double frees and uses after free). Skips
//! (with a message) when there is no C compiler. Also checks the header
//! compiles as C++.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where cargo put this run's `libtickpack_ffi.{a,so}`: beside the test
/// binary, in `target/<profile>/deps`.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().to_path_buf()
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let ok = Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(cc)
}

/// The system libraries a Rust static library needs on this platform.
fn system_libs() -> &'static [&'static str] {
    if cfg!(target_os = "linux") {
        &["-lpthread", "-ldl", "-lm"]
    } else {
        &[]
    }
}

fn out_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
}

const SESSION: &str = "examples/session.c";
const STALE: &str = "tests/c/stale_handles.c";

/// Compiles `source` (relative to the crate) with `flags` and links
/// `link`; panics with the compiler's output on failure.
fn build(cc: &str, source: &str, name: &str, flags: &[&str], link: &[String]) -> PathBuf {
    let exe = out_dir().join(name);
    let out = Command::new(cc)
        .args([
            "-std=c99",
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
        .arg(crate_dir().join(source))
        .args(link)
        .args(system_libs())
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{cc} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `exe` and checks it succeeded and printed `expected`.
fn run(exe: &Path, env: &[(&str, &str)], expected: &str) {
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
    assert!(stdout.contains(expected), "{stdout}");
    println!("{stdout}");
}

fn static_lib() -> String {
    lib_dir().join("libtickpack_ffi.a").display().to_string()
}

#[test]
fn example_runs_against_the_static_library() {
    let Some(cc) = compiler() else {
        eprintln!("skipped: no C compiler (set CC or install cc)");
        return;
    };
    let exe = build(&cc, SESSION, "session-static", &[], &[static_lib()]);
    run(&exe, &[], "ok: 4 clients in sync");
}

#[test]
fn example_runs_against_the_shared_library() {
    let Some(cc) = compiler() else {
        eprintln!("skipped: no C compiler (set CC or install cc)");
        return;
    };
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: the shared-library link line is written for Linux");
        return;
    }
    let dir = lib_dir().display().to_string();
    let link = [
        format!("-L{dir}"),
        format!("-Wl,-rpath,{dir}"),
        "-l:libtickpack_ffi.so".into(),
    ];
    let exe = build(&cc, SESSION, "session-shared", &[], &link);
    run(&exe, &[], "ok: 4 clients in sync");
}

/// Whether `cc` can build and run a program under AddressSanitizer here
/// (some compilers lack the runtime, some sandboxes forbid its mappings).
fn asan_works(cc: &str, name: &str) -> bool {
    // One probe per caller: the tests run in parallel.
    let dir = out_dir();
    let src = dir.join(format!("probe-{name}.c"));
    let exe = dir.join(format!("probe-{name}"));
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let built = Command::new(cc)
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

/// Builds `source` with AddressSanitizer and runs it with leak checking
/// (every handle the programs make they free); skips, saying why, when the
/// compiler or the machine cannot.
fn run_under_asan(source: &str, name: &str, expected: &str) {
    let Some(cc) = compiler() else {
        eprintln!("skipped: no C compiler (set CC or install cc)");
        return;
    };
    if !asan_works(&cc, name) {
        eprintln!("skipped: {cc} cannot build and run with -fsanitize=address here");
        return;
    }
    let exe = build(
        &cc,
        source,
        name,
        &["-fsanitize=address", "-fno-omit-frame-pointer"],
        &[static_lib()],
    );
    run(
        &exe,
        &[("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")],
        expected,
    );
}

#[test]
fn example_runs_under_address_sanitizer() {
    run_under_asan(SESSION, "session-asan", "ok: 4 clients in sync");
}

#[test]
fn stale_handles_are_refused_from_c() {
    let Some(cc) = compiler() else {
        eprintln!("skipped: no C compiler (set CC or install cc)");
        return;
    };
    let exe = build(&cc, STALE, "stale-static", &[], &[static_lib()]);
    run(&exe, &[], "ok: stale handles refused");
}

#[test]
fn stale_handles_are_refused_under_address_sanitizer() {
    run_under_asan(STALE, "stale-asan", "ok: stale handles refused");
}

#[test]
fn header_compiles_as_cpp() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let src = out_dir().join("header.cpp");
    std::fs::write(
        &src,
        "#include \"tickpack.h\"\nint main() { TpSchema *s = nullptr; return tp_schema_free(s); }\n",
    )
    .unwrap();
    let Ok(out) = Command::new(&cxx)
        .args(["-std=c++11", "-Wall", "-Werror", "-fsyntax-only", "-I"])
        .arg(crate_dir().join("include"))
        .arg(&src)
        .output()
    else {
        eprintln!("skipped: no C++ compiler (set CXX or install c++)");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
