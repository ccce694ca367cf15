//! Reading a module lock file: the HCL parsed, every rule of the format checked, each
//! error placed at the construct that breaks it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use hcl::edit::expr::Expression;
use hcl::edit::structure::{Attribute, Block, Structure};
use hcl::edit::Span;

use super::{Field, ModuleLock, ModuleLockEntry, ModuleLockError, ModuleLockProblem as Problem};
use crate::lockfile::has_hash_scheme;
use crate::span::line_column_at;

pub(super) fn parse(text: &str, path: &Path) -> Result<ModuleLock, ModuleLockError> {
    let reader = Reader { src: text, path };
    let body = hcl::edit::parser::parse_body(text).map_err(|e| {
        // The parser's message says what it expected; its `line()` is the file's text and
        // stays out of the error.
        reader.error(
            e.location().line(),
            e.location().column(),
            Problem::Syntax(e.message().to_owned()),
        )
    })?;
    let mut lock = ModuleLock::default();
    // Where each call path's block starts (a byte offset), for the duplicate's message:
    // turned into a line only on that error, so that reading N blocks stays linear.
    let mut first_offsets: BTreeMap<String, usize> = BTreeMap::new();
    for structure in body.iter() {
        let block = match structure {
            Structure::Attribute(attr) => {
                return Err(reader.at(
                    attr,
                    Problem::TopLevelArgument(attr.key.as_str().to_owned()),
                ))
            }
            Structure::Block(block) if block.ident.as_str() == "module" => block,
            Structure::Block(block) => return Err(reader.unsupported_block(block)),
        };
        let key = reader.call_path(block)?;
        if let Some(&first_offset) = first_offsets.get(&key) {
            let first_line = line_column_at(text, first_offset).0;
            return Err(reader.at(
                &block.labels[0],
                Problem::DuplicateCallPath { key, first_line },
            ));
        }
        let entry = reader.entry(block)?;
        first_offsets.insert(key.clone(), block.span().map_or(0, |r| r.start));
        lock.entries.insert(key, entry);
    }
    Ok(lock)
}

struct Reader<'a> {
    src: &'a str,
    path: &'a Path,
}

impl Reader<'_> {
    /// The line and column where `node` starts (1:1 when the parser kept no span).
    fn position(&self, node: &impl Span) -> (usize, usize) {
        node.span()
            .map_or((1, 1), |r| line_column_at(self.src, r.start))
    }

    fn error(&self, line: usize, column: usize, problem: Problem) -> ModuleLockError {
        ModuleLockError::Invalid {
            path: self.path.to_owned(),
            line,
            column,
            problem,
        }
    }

    fn at(&self, node: &impl Span, problem: Problem) -> ModuleLockError {
        let (line, column) = self.position(node);
        self.error(line, column, problem)
    }

    fn unsupported_block(&self, block: &Block) -> ModuleLockError {
        self.at(
            block,
            Problem::UnsupportedBlock(block.ident.as_str().to_owned()),
        )
    }

    /// The block's one label, which must be a call path ([`super::is_call_path`]).
    fn call_path(&self, block: &Block) -> Result<String, ModuleLockError> {
        let [label] = block.labels.as_slice() else {
            return Err(self.at(block, Problem::LabelCount(block.labels.len())));
        };
        let key = label.as_str();
        if !super::is_call_path(key) {
            return Err(self.at(label, Problem::InvalidCallPath));
        }
        Ok(key.to_owned())
    }

    fn entry(&self, block: &Block) -> Result<ModuleLockEntry, ModuleLockError> {
        let mut source = None;
        let mut version = None;
        let mut constraints = None;
        let mut commit = None;
        let mut hashes = BTreeSet::new();
        // An argument set twice is the parser's error already ("redefined attribute").
        for structure in block.body.iter() {
            let attr = match structure {
                Structure::Attribute(attr) => attr,
                Structure::Block(inner) => return Err(self.unsupported_block(inner)),
            };
            let name = attr.key.as_str();
            match name {
                "source" => {
                    let value = self.string(attr, Field::Source)?;
                    if value.is_empty() {
                        return Err(self.at(&attr.value, Problem::EmptySource));
                    }
                    source = Some(value);
                }
                "version" => version = Some(self.string(attr, Field::Version)?),
                "constraints" => constraints = Some(self.string(attr, Field::Constraints)?),
                "commit" => {
                    let value = self.string(attr, Field::Commit)?;
                    if !is_commit_id(&value) {
                        return Err(self.at(&attr.value, Problem::InvalidCommit));
                    }
                    commit = Some(value);
                }
                "hashes" => hashes = self.hashes(attr)?,
                _ => return Err(self.at(attr, Problem::UnknownArgument(name.to_owned()))),
            }
        }
        let Some(source) = source else {
            return Err(self.at(block, Problem::MissingSource));
        };
        Ok(ModuleLockEntry {
            source,
            version,
            constraints,
            commit,
            hashes,
        })
    }

    /// The value of `attr`, which must be a string literal (no template, no heredoc).
    fn string(&self, attr: &Attribute, field: Field) -> Result<String, ModuleLockError> {
        match &attr.value {
            Expression::String(s) => Ok(s.as_str().to_owned()),
            other => Err(self.at(other, Problem::NotAString(field.name()))),
        }
    }

    fn hashes(&self, attr: &Attribute) -> Result<BTreeSet<String>, ModuleLockError> {
        let Expression::Array(items) = &attr.value else {
            return Err(self.at(&attr.value, Problem::HashesNotAList));
        };
        if items.is_empty() {
            return Err(self.at(&attr.value, Problem::EmptyHashes));
        }
        let mut hashes = BTreeSet::new();
        for item in items.iter() {
            let Expression::String(s) = item else {
                return Err(self.at(item, Problem::HashNotAString));
            };
            check_hash(s.as_str()).map_err(|problem| self.at(item, problem))?;
            // A hash listed twice is one hash, as in the provider lock file.
            hashes.insert(s.as_str().to_owned());
        }
        Ok(hashes)
    }
}

/// The hash rules: `h1:` and `zh:` well formed; any other scheme kept as long as there is
/// one, as the provider lock file keeps it.
fn check_hash(hash: &str) -> Result<(), Problem> {
    match hash.split_once(':') {
        Some(("h1", value)) if !is_sha256_base64(value) => Err(Problem::InvalidH1),
        Some(("zh", value)) if !is_lower_hex(value, 64) => Err(Problem::InvalidZh),
        _ if !has_hash_scheme(hash) => Err(Problem::HashWithoutScheme),
        _ => Ok(()),
    }
}

/// A full commit id as git prints it: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
fn is_commit_id(s: &str) -> bool {
    is_lower_hex(s, 40) || is_lower_hex(s, 64)
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The standard, padded base64 of 32 bytes, as Go's `base64.StdEncoding` writes a sha256:
/// 43 characters of the alphabet, the last carrying only 4 bits (its low 2 bits zero, as a
/// canonical encoding has them), then one `=`.
fn is_sha256_base64(s: &str) -> bool {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let index = |b: &u8| ALPHABET.iter().position(|a| a == b);
    let bytes = s.as_bytes();
    bytes.len() == 44
        && bytes[43] == b'='
        && bytes[..43].iter().all(|b| index(b).is_some())
        && index(&bytes[42]).is_some_and(|i| i % 4 == 0)
}
