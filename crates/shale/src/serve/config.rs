//! `shale serve --config FILE`: options from a my.cnf-style file, under the same names as the
//! command line (`max_connections` or `max-connections`), in `[shale]` or `[mysqld]` sections.
//!
//! The file's options become command-line arguments placed before the real ones, and the
//! serve command lets a later occurrence override an earlier one, so the command line wins.
//! Lines: `name = value`, `name` alone for a flag (or `name = ON|OFF|1|0|TRUE|FALSE`), `#` and
//! `;` comments, other sections ignored. An unknown name is an error in `[shale]` and skipped
//! with a warning in `[mysqld]` (a MySQL config names InnoDB options Shale does not have).

use std::ffi::OsString;
use std::path::Path;

use clap::{Args as _, Command};

use super::ServeArgs;
use crate::output::Failure;

/// `args` (the whole command line) with the config file's options spliced in after `serve`,
/// when `serve` has a `--config FILE`, and the data directory's persisted settings
/// (`SET PERSIST`, `shale-auto.cnf`) appended last, so that they win as MySQL's
/// `mysqld-auto.cnf` does; otherwise `args` unchanged.
pub fn expand(args: Vec<OsString>) -> Result<Vec<OsString>, Failure> {
    if args.get(1).is_none_or(|a| a != "serve") {
        return Ok(args);
    }
    let mut args = with_config_file(args)?;
    let persisted = datadir(&args).join(shale_sql::PERSIST_FILE);
    if let Ok(text) = std::fs::read_to_string(&persisted) {
        let shown = persisted.display().to_string();
        args.extend(options(&text, &shown)?.into_iter().map(OsString::from));
    }
    Ok(args)
}

/// The data directory the arguments name (the last `--datadir` wins), or the default.
fn datadir(args: &[OsString]) -> std::path::PathBuf {
    let mut dir = std::path::PathBuf::from("shale-data");
    for (i, arg) in args.iter().enumerate().skip(2) {
        let Some(text) = arg.to_str() else { continue };
        if text == "--datadir" {
            if let Some(next) = args.get(i + 1) {
                dir = next.into();
            }
        } else if let Some(path) = text.strip_prefix("--datadir=") {
            dir = path.into();
        }
    }
    dir
}

/// `args` with the `--config FILE` options spliced in after `serve`.
fn with_config_file(args: Vec<OsString>) -> Result<Vec<OsString>, Failure> {
    let mut file = None;
    for (i, arg) in args.iter().enumerate().skip(2) {
        let Some(text) = arg.to_str() else { continue };
        if text == "--config" {
            file = args.get(i + 1).cloned();
        } else if let Some(path) = text.strip_prefix("--config=") {
            file = Some(path.into());
        }
    }
    let Some(file) = file else {
        return Ok(args);
    };
    let path = Path::new(&file);
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::error(format!("cannot read --config {}: {e}", path.display())))?;
    let from_file = options(&text, &path.display().to_string())?;
    let mut out = args[..2].to_vec();
    out.extend(from_file.into_iter().map(OsString::from));
    out.extend_from_slice(&args[2..]);
    Ok(out)
}

/// The file's options as `--name=value` / `--name` arguments.
fn options(text: &str, file: &str) -> Result<Vec<String>, Failure> {
    let command = ServeArgs::augment_args(Command::new("serve"));
    let mut out = Vec::new();
    let mut section = String::new();
    for (n, raw) in text.lines().enumerate() {
        let at = || format!("{file}:{}", n + 1);
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[') {
            let Some(name) = name.strip_suffix(']') else {
                return Err(Failure::error(format!("{}: unclosed section header", at())));
            };
            section = name.trim().to_ascii_lowercase();
            continue;
        }
        if section != "shale" && section != "mysqld" {
            continue;
        }
        let (name, value) = match line.split_once('=') {
            Some((name, value)) => (name.trim(), Some(unquote(value.trim()))),
            None => (line, None),
        };
        let name = name.replace('_', "-");
        if name == "config" {
            return Err(Failure::error(format!(
                "{}: config files do not nest",
                at()
            )));
        }
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_long() == Some(name.as_str()))
        else {
            if section == "shale" {
                return Err(Failure::error(format!(
                    "{}: unknown option '{name}' (see shale serve --help)",
                    at()
                )));
            }
            eprintln!(
                "shale serve: {}: ignoring '{name}', which Shale does not have",
                at()
            );
            continue;
        };
        if arg.get_action().takes_values() {
            let Some(value) = value else {
                return Err(Failure::error(format!("{}: '{name}' needs a value", at())));
            };
            out.push(format!("--{name}={value}"));
        } else {
            match value.map(str::to_ascii_uppercase).as_deref() {
                None | Some("ON" | "1" | "TRUE") => out.push(format!("--{name}")),
                Some("OFF" | "0" | "FALSE") => {}
                Some(other) => {
                    return Err(Failure::error(format!(
                        "{}: '{name}' is on or off, not '{other}'",
                        at()
                    )))
                }
            }
        }
    }
    Ok(out)
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_names_flags_and_comments() {
        let text = "# a comment\n[client]\nport = 1\n[mysqld]\nmax_connections = 20\n\
                    innodb_buffer_pool_size = 1G\n; another\n[shale]\nrequire-secure-transport\n\
                    initialize_insecure = OFF\ndatadir = \"/var/lib/shale\"\n";
        assert_eq!(
            options(text, "my.cnf").unwrap(),
            [
                "--max-connections=20",
                "--require-secure-transport",
                "--datadir=/var/lib/shale"
            ]
        );
    }

    #[test]
    fn mistakes_name_the_file_and_line() {
        let err = |text: &str| match options(text, "f.cnf") {
            Err(Failure::Error(message)) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            err("[shale]\nbogus = 1\n"),
            "f.cnf:2: unknown option 'bogus' (see shale serve --help)"
        );
        assert_eq!(err("[mysqld]\nport\n"), "f.cnf:2: 'port' needs a value");
        assert_eq!(
            err("[shale]\nrequire_secure_transport = maybe\n"),
            "f.cnf:2: 'require-secure-transport' is on or off, not 'MAYBE'"
        );
        assert_eq!(err("[shale\n"), "f.cnf:1: unclosed section header");
    }

    #[test]
    fn the_command_line_comes_after_the_file() {
        let args: Vec<OsString> = ["shale", "serve", "--port", "0", "--config", "/nonexistent"]
            .iter()
            .map(OsString::from)
            .collect();
        assert!(expand(args).is_err());
        let other: Vec<OsString> = ["shale", "sql", "--config", "x"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(expand(other.clone()).unwrap(), other);
    }
}
