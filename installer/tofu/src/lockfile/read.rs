//! Reading one lock file's blocks: each provider block, its `version`, `constraints` and
//! `hashes`, validated as OpenTofu's `depsfile` validates them, in its words.

use std::collections::BTreeSet;

use hcl::edit::expr::Expression;
use hcl::edit::structure::{Attribute, Block, Body, Structure};
use hcl::edit::Span;

use super::{has_hash_scheme, LockErrorKind, LockFileError, LockedProvider};
use crate::addr::{AddrError, ProviderAddr};
use crate::span::line_at;
use crate::version::{Version, VersionConstraints};

/// One lock file being read: its source and name, for the line and file of every error.
pub(super) struct Ctx<'a> {
    pub(super) src: &'a str,
    pub(super) filename: &'a str,
}

impl Ctx<'_> {
    pub(super) fn line(&self, node: &impl Span) -> usize {
        node.span().map_or(0, |r| line_at(self.src, r.start))
    }

    pub(super) fn err(
        &self,
        kind: LockErrorKind,
        line: usize,
        summary: &'static str,
        detail: String,
    ) -> LockFileError {
        LockFileError::Invalid {
            kind,
            file: self.filename.to_owned(),
            line,
            summary,
            detail,
        }
    }

    pub(super) fn unsupported_argument(&self, attr: &Attribute) -> LockFileError {
        self.err(
            LockErrorKind::UnsupportedArgument,
            self.line(attr),
            "Unsupported argument",
            format!(
                "An argument named {:?} is not expected here.",
                attr.key.as_str()
            ),
        )
    }

    pub(super) fn expect_one_label<'b>(&self, block: &'b Block) -> Result<&'b str, LockFileError> {
        match block.labels.as_slice() {
            [one] => Ok(one.as_str()),
            [] => Err(self.err(
                LockErrorKind::InvalidLabels,
                self.line(block),
                "Missing name for block",
                format!("All {:?} blocks must have 1 labels.", block.ident.as_str()),
            )),
            _ => Err(self.err(
                LockErrorKind::InvalidLabels,
                self.line(block),
                "Extraneous label for block",
                format!(
                    "Only 1 labels are expected for {:?} blocks.",
                    block.ident.as_str()
                ),
            )),
        }
    }

    pub(super) fn string_value<'b>(&self, attr: &'b Attribute) -> Result<&'b str, LockFileError> {
        match &attr.value {
            Expression::String(s) => Ok(s.as_str()),
            _ => Err(self.err(
                LockErrorKind::InvalidValue,
                self.line(attr),
                "Incorrect attribute value type",
                format!(
                    "Inappropriate value for attribute {:?}: string required.",
                    attr.key.as_str()
                ),
            )),
        }
    }

    pub(super) fn provider_block(
        &self,
        block: &Block,
    ) -> Result<(ProviderAddr, LockedProvider), LockFileError> {
        let raw_addr = self.expect_one_label(block)?;
        let line = self.line(block);
        let addr = match ProviderAddr::parse_normalized(raw_addr) {
            Ok(a) => a,
            Err(AddrError::NotNormalized { normalized, .. }) => {
                // Check lockability first, as tofu does, so a spelled-differently
                // built-in still gets the built-in message.
                if let Ok(a) = ProviderAddr::parse_normalized(&normalized) {
                    if a.is_builtin() {
                        return Err(self.builtin(line, &a));
                    }
                }
                return Err(self.err(
                    LockErrorKind::NonNormalizedAddress,
                    line,
                    "Non-normalized provider source address",
                    format!("The provider source address for this provider lock must be written as {normalized:?}, the fully-qualified and normalized form."),
                ));
            }
            Err(_) => {
                return Err(self.err(
                    LockErrorKind::InvalidSourceAddress,
                    line,
                    "Invalid provider source address",
                    "The provider source address for a provider lock must be a valid, fully-qualified address of the form \"hostname/namespace/type\".".to_owned(),
                ))
            }
        };
        if addr.is_builtin() {
            return Err(self.builtin(line, &addr));
        }

        let body: &Body = &block.body;
        let mut version = None;
        let mut constraints = None;
        let mut hashes = BTreeSet::new();
        let mut seen_attrs: Vec<&str> = Vec::new();
        for structure in body.iter() {
            let attr = match structure {
                Structure::Attribute(a) => a,
                Structure::Block(b) => {
                    return Err(self.err(
                        LockErrorKind::UnsupportedBlockType,
                        self.line(b),
                        "Unsupported block type",
                        format!(
                            "Blocks of type {:?} are not expected here.",
                            b.ident.as_str()
                        ),
                    ))
                }
            };
            let key = attr.key.as_str();
            if seen_attrs.contains(&key) {
                return Err(self.err(
                    LockErrorKind::DuplicateArgument,
                    self.line(attr),
                    "Attribute redefined",
                    format!("The argument {key:?} was already set."),
                ));
            }
            seen_attrs.push(key);
            match key {
                "version" => {
                    let raw = self.string_value(attr)?;
                    version = Some(self.version(attr, raw, &addr)?);
                }
                "constraints" => {
                    let raw = self.string_value(attr)?;
                    constraints = Some(self.constraints(attr, raw, &addr)?);
                }
                "hashes" => hashes = self.hashes(attr)?,
                _ => return Err(self.unsupported_argument(attr)),
            }
        }
        let Some(version) = version else {
            return Err(self.err(
                LockErrorKind::MissingArgument,
                line,
                "Missing required argument",
                "The argument \"version\" is required, but no definition was found.".to_owned(),
            ));
        };
        Ok((
            addr,
            LockedProvider {
                version,
                constraints,
                hashes,
            },
        ))
    }

    pub(super) fn builtin(&self, line: usize, addr: &ProviderAddr) -> LockFileError {
        self.err(
            LockErrorKind::BuiltinProvider,
            line,
            "Invalid provider source address",
            format!("Cannot lock a version for built-in provider {addr}. Built-in providers are bundled inside the CLI itself, so you can't select a version for them independently of the release you are currently running."),
        )
    }

    pub(super) fn version(
        &self,
        attr: &Attribute,
        raw: &str,
        addr: &ProviderAddr,
    ) -> Result<Version, LockFileError> {
        let line = self.line(attr);
        let v = Version::parse(raw).map_err(|e| {
            self.err(
                LockErrorKind::InvalidVersion,
                line,
                "Invalid provider version number",
                format!(
                    "The selected version number for provider {addr} is invalid: {}.",
                    e.reason()
                ),
            )
        })?;
        let canon = v.to_string();
        if canon != raw {
            return Err(self.err(
                LockErrorKind::InvalidVersion,
                line,
                "Invalid provider version number",
                format!("The selected version number for provider {addr} must be written in normalized form: {canon:?}."),
            ));
        }
        Ok(v)
    }

    pub(super) fn constraints(
        &self,
        attr: &Attribute,
        raw: &str,
        addr: &ProviderAddr,
    ) -> Result<String, LockFileError> {
        let line = self.line(attr);
        let c = VersionConstraints::parse(raw).map_err(|e| {
            self.err(
                LockErrorKind::InvalidConstraints,
                line,
                "Invalid provider version constraints",
                format!(
                    "The recorded version constraints for provider {addr} are invalid: {}.",
                    e.reason()
                ),
            )
        })?;
        let canon = c.to_lock_string();
        if canon != raw {
            return Err(self.err(
                LockErrorKind::InvalidConstraints,
                line,
                "Invalid provider version constraints",
                format!("The recorded version constraints for provider {addr} must be written in normalized form: {canon:?}."),
            ));
        }
        Ok(canon)
    }

    pub(super) fn hashes(&self, attr: &Attribute) -> Result<BTreeSet<String>, LockFileError> {
        let line = self.line(attr);
        let Expression::Array(items) = &attr.value else {
            return Err(self.err(
                LockErrorKind::InvalidValue,
                line,
                "Invalid expression",
                "A static list expression is required.".to_owned(),
            ));
        };
        if items.is_empty() {
            return Err(self.err(
                LockErrorKind::InvalidHashSet,
                line,
                "Invalid provider hash set",
                "The \"hashes\" argument must either be omitted or contain at least one hash value.".to_owned(),
            ));
        }
        let mut out = BTreeSet::new();
        for item in items.iter() {
            let item_line = item.span().map_or(line, |r| line_at(self.src, r.start));
            let Expression::String(s) = item else {
                return Err(self.err(
                    LockErrorKind::InvalidValue,
                    item_line,
                    "Incorrect value type",
                    "Each hash must be a string.".to_owned(),
                ));
            };
            let s = s.as_str();
            if !has_hash_scheme(s) {
                return Err(self.err(
                    LockErrorKind::InvalidHash,
                    item_line,
                    "Invalid provider hash string",
                    format!("Cannot interpret {s:?} as a provider hash: hash string must start with a scheme keyword followed by a colon."),
                ));
            }
            out.insert(s.to_owned());
        }
        Ok(out)
    }
}
