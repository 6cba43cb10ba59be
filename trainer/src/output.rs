//! Writing outputs without ever losing a file.
//!
//! - A capture is written to a temporary file in the output's directory and
//!   renamed over the output only once it is complete; a failure removes
//!   the temporary file and leaves any old output untouched.
//! - An output that is the same file as an input (same path, a link, a
//!   symlink) is refused before anything is opened for writing.
//! - An existing output is refused unless the caller forces it; without
//!   force the final rename also refuses to replace a file that appeared
//!   meanwhile.
//! - A dictionary set is written to a new directory beside its target,
//!   loaded back, and then swapped in: the old set is moved aside and
//!   removed only after the new one is in place, so a directory never holds
//!   a mix of old dictionaries and a new manifest. Without force a set that
//!   appeared there meanwhile is refused, not replaced. Force replaces only
//!   a directory that holds nothing but a set (its manifest and the files it
//!   names): one that also holds other files (notes, captures) is refused,
//!   since replacing the directory would delete them.

#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{BufWriter, Read};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;
use tickpack_sets::dictset::{DictionarySet, Manifest, SetLimits, MANIFEST_FILE};

use crate::TrainerError;

fn refuse(msg: String) -> TrainerError {
    TrainerError::Output(msg)
}

/// The directory `path` lives in (`.` for a bare file name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Refuses `output` if it is one of `inputs` (by file identity, so links
/// and different spellings of one path count), if it is a directory, or if
/// it exists and `force` is off.
pub fn check_output(inputs: &[&Path], output: &Path, force: bool) -> Result<(), TrainerError> {
    let meta = match std::fs::metadata(output) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(TrainerError::io(output, e)),
    };
    for input in inputs {
        if same_file::is_same_file(input, output).unwrap_or(false) {
            return Err(refuse(format!(
                "{} is the input {}: write the output to another file",
                output.display(),
                input.display()
            )));
        }
    }
    if meta.is_dir() {
        return Err(refuse(format!("{} is a directory", output.display())));
    }
    if !force {
        return Err(refuse(format!(
            "{} exists: add --force to replace it",
            output.display()
        )));
    }
    Ok(())
}

/// A file being written: a temporary file beside its destination, moved
/// there by [`Pending::commit`]. Dropped without commit, it is removed.
#[derive(Debug)]
pub struct Pending {
    dest: PathBuf,
    force: bool,
    file: NamedTempFile,
}

impl Pending {
    /// Starts writing `dest` (already checked with [`check_output`]).
    pub fn new(dest: &Path, force: bool) -> Result<Self, TrainerError> {
        let dir = parent_of(dest);
        // The output gets the permissions of the file it replaces, or
        // those of any new file (the umask applied).
        let old = std::fs::metadata(dest).ok().map(|m| m.permissions());
        let file = ordinary(old.is_none(), false)
            .prefix(".tickpack-")
            .suffix(".part")
            .tempfile_in(dir)
            .map_err(|e| TrainerError::io(dir, e))?;
        if let Some(perms) = old {
            std::fs::set_permissions(file.path(), perms).map_err(|e| TrainerError::io(dest, e))?;
        }
        Ok(Self {
            dest: dest.to_owned(),
            force,
            file,
        })
    }

    /// A buffered writer on the temporary file.
    pub fn writer(&self) -> Result<BufWriter<File>, TrainerError> {
        let f = self
            .file
            .as_file()
            .try_clone()
            .map_err(|e| TrainerError::io(self.file.path(), e))?;
        Ok(BufWriter::new(f))
    }

    /// Flushes the data to disk and moves the file to its destination
    /// (replacing an existing one only when forced); returns its size.
    pub fn commit(self) -> Result<u64, TrainerError> {
        let f = self.file.as_file();
        f.sync_all()
            .map_err(|e| TrainerError::io(self.file.path(), e))?;
        let len = f
            .metadata()
            .map_err(|e| TrainerError::io(self.file.path(), e))?
            .len();
        let dest = self.dest;
        let done = if self.force {
            self.file.persist(&dest).map(drop)
        } else {
            self.file.persist_noclobber(&dest).map(drop)
        };
        done.map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                refuse(format!(
                    "{} appeared while it was being written: add --force to replace it",
                    dest.display()
                ))
            } else {
                TrainerError::io(&dest, e.error)
            }
        })?;
        Ok(len)
    }
}

/// A builder of temporary files (or directories, `dir`) that, when `new`,
/// are created as any new file is: on Unix with mode `rw-rw-rw-`
/// (`rwxrwxrwx`) less the umask, which the system applies, rather than a
/// temporary's private `rw-------`. Not `new`, they stay private until
/// they take the permissions of what they replace.
fn ordinary<'a, 'b>(new: bool, dir: bool) -> tempfile::Builder<'a, 'b> {
    #[allow(unused_mut)]
    let mut b = tempfile::Builder::new();
    #[cfg(unix)]
    if new {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(if dir {
            0o777
        } else {
            0o666
        }));
    }
    #[cfg(not(unix))]
    let _ = (new, dir);
    b
}

/// What is at a dictionary set's target directory.
enum Target {
    Absent,
    EmptyDir,
    /// A set, and the names of the entries its manifest does not name.
    Set {
        others: Vec<String>,
    },
}

/// The entries of set directory `dir` that are neither its manifest nor a
/// file `manifest` names.
fn other_entries(dir: &Path, manifest: &Manifest) -> Result<Vec<String>, TrainerError> {
    let mut own = vec![MANIFEST_FILE];
    for d in &manifest.dictionaries {
        own.push(&d.file);
        own.extend(d.model.as_ref().map(|m| m.file.as_str()));
    }
    let mut others = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| TrainerError::io(dir, e))? {
        let name = entry.map_err(|e| TrainerError::io(dir, e))?.file_name();
        if !own.iter().any(|f| std::ffi::OsStr::new(f) == name) {
            others.push(name.to_string_lossy().into_owned());
        }
    }
    others.sort();
    Ok(others)
}

/// Refuses to replace a set directory that holds files of someone else's:
/// the swap would delete them.
fn refuse_others(out: &Path, others: &[String]) -> Result<(), TrainerError> {
    if others.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 5;
    let mut names = others[..others.len().min(SHOWN)].join(", ");
    if others.len() > SHOWN {
        names += &format!(" and {} more", others.len() - SHOWN);
    }
    Err(refuse(format!(
        "{} holds files that are not its dictionary set's ({names}): \
         --force replaces a directory that holds only a set, so move them \
         elsewhere or give another directory",
        out.display()
    )))
}

fn set_target(out: &Path) -> Result<Target, TrainerError> {
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Absent),
        Err(e) => return Err(TrainerError::io(out, e)),
    };
    if !meta.is_dir() {
        return Err(refuse(format!(
            "{} exists and is not a directory",
            out.display()
        )));
    }
    let manifest = out.join(MANIFEST_FILE);
    if manifest.is_file() {
        // Only a dictionary set's manifest makes the directory a set
        // (`--force` replaces it whole); another program's manifest.json
        // (a web app's, say) leaves it a directory that is not ours.
        let limit = SetLimits::default().max_manifest_bytes;
        let mut text = Vec::new();
        File::open(&manifest)
            .and_then(|f| f.take(limit as u64 + 1).read_to_end(&mut text))
            .map_err(|e| TrainerError::io(&manifest, e))?;
        if text.len() <= limit {
            if let Ok(m) = serde_json::from_slice::<Manifest>(&text) {
                let others = other_entries(out, &m)?;
                return Ok(Target::Set { others });
            }
        }
        return Err(refuse(format!(
            "{} holds a {MANIFEST_FILE} that is not a dictionary set's: \
             give a new directory, an empty one, or an existing set",
            out.display()
        )));
    }
    let mut entries = std::fs::read_dir(out).map_err(|e| TrainerError::io(out, e))?;
    if entries.next().is_none() {
        Ok(Target::EmptyDir)
    } else {
        Err(refuse(format!(
            "{} is a non-empty directory without a {MANIFEST_FILE}: \
             give a new directory, an empty one, or an existing set",
            out.display()
        )))
    }
}

/// Refuses a set directory `out` that holds anything but a dictionary set
/// (or nothing), that holds a set and `force` is off, that holds a set and
/// files its manifest does not name, or that holds one of `inputs`
/// (replacing the set would delete it).
pub fn check_set_output(inputs: &[&Path], out: &Path, force: bool) -> Result<(), TrainerError> {
    let others = match set_target(out)? {
        Target::Absent => return Ok(()),
        Target::Set { .. } if !force => {
            return Err(refuse(format!(
                "{} holds a dictionary set: add --force to replace it",
                out.display()
            )))
        }
        Target::Set { others } => others,
        Target::EmptyDir => Vec::new(),
    };
    let dir = out.canonicalize().map_err(|e| TrainerError::io(out, e))?;
    for input in inputs {
        if let Ok(p) = input.canonicalize() {
            if p.starts_with(&dir) {
                return Err(refuse(format!(
                    "the input {} is inside {}, which the new set replaces",
                    input.display(),
                    out.display()
                )));
            }
        }
    }
    refuse_others(out, &others)
}

/// Writes `set` to `out` as a whole: into a new directory beside `out`,
/// loaded back and verified there, then swapped in for whatever set `out`
/// held. A set at `out` is replaced only when `force` is on, even one that
/// appeared after [`check_set_output`] (while training), and only when
/// `out` holds nothing but that set. Returns the set as loaded from `out`.
pub fn save_set(
    set: &DictionarySet,
    out: &Path,
    force: bool,
) -> Result<DictionarySet, TrainerError> {
    let target = set_target(out)?;
    if let Target::Set { others } = &target {
        if !force {
            return Err(refuse(format!(
                "{} holds a dictionary set (it appeared while training): \
                 add --force to replace it",
                out.display()
            )));
        }
        refuse_others(out, others)?;
    }
    let parent = parent_of(out);
    std::fs::create_dir_all(parent).map_err(|e| TrainerError::io(parent, e))?;
    let old = std::fs::metadata(out).ok().map(|m| m.permissions());
    let staging = ordinary(old.is_none(), true)
        .prefix(".tickpack-set-")
        .tempdir_in(parent)
        .map_err(|e| TrainerError::io(parent, e))?;
    set.save(staging.path())?;
    DictionarySet::load(staging.path())?;
    if let Some(perms) = old {
        std::fs::set_permissions(staging.path(), perms)
            .map_err(|e| TrainerError::io(staging.path(), e))?;
    }
    let old = match target {
        Target::Absent => None,
        Target::EmptyDir => {
            std::fs::remove_dir(out).map_err(|e| TrainerError::io(out, e))?;
            None
        }
        Target::Set { .. } => {
            let holder = tempfile::Builder::new()
                .prefix(".tickpack-old-set-")
                .tempdir_in(parent)
                .map_err(|e| TrainerError::io(parent, e))?
                .keep();
            let aside = holder.join("set");
            std::fs::rename(out, &aside).map_err(|e| TrainerError::io(out, e))?;
            Some(aside)
        }
    };
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, out) {
        // Put the old set back; the new one stays in `staged` for the user.
        if let Some(old) = &old {
            let _ = std::fs::rename(old, out);
        }
        return Err(refuse(format!(
            "could not move the new set from {} to {}: {e}",
            staged.display(),
            out.display()
        )));
    }
    if let Some(old) = old {
        if let Some(holder) = old.parent() {
            let _ = std::fs::remove_dir_all(holder);
        }
    }
    Ok(DictionarySet::load(out)?)
}
