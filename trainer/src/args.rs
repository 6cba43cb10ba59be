//! A small command-line parser: positionals, `--flag value`, `--flag=value`
//! and switches, each command declaring which flags it takes.

#![forbid(unsafe_code)]

use std::str::FromStr;

use crate::TrainerError;

/// Parsed arguments of one command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    /// Arguments that are not flags, in order.
    pub positional: Vec<String>,
    values: Vec<(String, String)>,
    switches: Vec<String>,
}

impl Args {
    /// Parses `args`: `valued` flags take a value, `switches` do not;
    /// anything else starting with `--` is an error. `--` ends the flags.
    pub fn parse(
        args: &[String],
        valued: &[&str],
        switches: &[&str],
    ) -> Result<Self, TrainerError> {
        let mut out = Self::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if a == "--" {
                out.positional.extend(it.by_ref().cloned());
                break;
            }
            let Some(flag) = a.strip_prefix("--") else {
                out.positional.push(a.clone());
                continue;
            };
            let (name, inline) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (flag, None),
            };
            if valued.contains(&name) {
                let v = match inline {
                    Some(v) => v,
                    None => it
                        .next()
                        .cloned()
                        .ok_or_else(|| TrainerError::Usage(format!("--{name} needs a value")))?,
                };
                out.values.push((name.to_owned(), v));
            } else if switches.contains(&name) && inline.is_none() {
                out.switches.push(name.to_owned());
            } else {
                return Err(TrainerError::Usage(format!("unknown option --{name}")));
            }
        }
        Ok(out)
    }

    /// The last value given for `--name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `--name` parsed as `T`.
    pub fn parsed<T: FromStr>(&self, name: &str) -> Result<Option<T>, TrainerError> {
        self.value(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| TrainerError::Usage(format!("--{name}: cannot use {v:?}")))
            })
            .transpose()
    }

    /// Whether switch `--name` was given.
    pub fn switch(&self, name: &str) -> bool {
        self.switches.iter().any(|s| s == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_values_and_positionals() {
        let a = Args::parse(
            &v(&["a.tpcap", "--out", "d", "--level=5", "b.tpcap", "--json"]),
            &["out", "level"],
            &["json"],
        )
        .unwrap();
        assert_eq!(a.positional, v(&["a.tpcap", "b.tpcap"]));
        assert_eq!(a.value("out"), Some("d"));
        assert_eq!(a.parsed::<i32>("level").unwrap(), Some(5));
        assert!(a.switch("json"));
        assert!(Args::parse(&v(&["--nope"]), &[], &[]).is_err());
        assert!(Args::parse(&v(&["--out"]), &["out"], &[]).is_err());
        assert!(Args::parse(&v(&["--json=1"]), &[], &["json"]).is_err());
        assert!(a.parsed::<u8>("out").is_err());
    }
}
