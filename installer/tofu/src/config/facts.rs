//! A file's facts kept between processes: what [`parse_file`](super::parsed::parse_file)
//! derives from a configuration file's bytes (its `FileContent`: required providers and
//! versions, provider configurations, resources' providers, module calls, variables,
//! declarations, backends, block types), recorded by content in a cache the caller gives
//! ([`set_facts_cache`]; the installer's is the store's index), so that a file another
//! process already parsed is not parsed again.
//!
//! Rules:
//! - facts are a function of the bytes, the flavor (which decides the block types a file
//!   may have) and this parser: the cache's key is the content with the flavor and
//!   [`FACTS_FORMAT`]; the cache adds tstore's build to it. A change to what a file
//!   contributes, or to how it is read, changes [`FACTS_FORMAT`];
//! - positions are recorded without their file: a file's facts name it as it is shown
//!   where it is read this time (`.terraform/modules/KEY/main.tf:12`), whatever name it had
//!   when its facts were recorded;
//! - only what can be recorded exactly is: a file whose module call writes its `source` or
//!   `version` as an expression (OpenTofu's early evaluation reads the expression with the
//!   caller's inputs) is parsed every time; so is a file that fails to parse (its error is
//!   said where it is read);
//! - facts that do not decode (another format, a damaged row) are not believed: the file is
//!   parsed;
//! - a module directory's self-writes (`writes::detect_self_writes`, which follows locals
//!   across its files) are recorded the same way, keyed by its files' names and bytes in
//!   order.

use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use super::FileContent;
use crate::flavor::Flavor;

/// The version of the facts' form and of the rules that derive them.
pub const FACTS_FORMAT: u32 = 2;

/// A content's name in the cache: its BLAKE3 (as the store names blobs).
pub type ContentId = [u8; 32];

/// Where facts are kept between processes.
pub trait FactsCache: Send + Sync {
    /// The name of `content`.
    fn id_of(&self, content: &[u8]) -> ContentId;
    /// The name of the content of the file at `path` when it is known without reading the
    /// file (a file of a package the store holds, by the package's tree); `None`: read it.
    fn content_id(&self, path: &Path) -> Option<ContentId>;
    /// The names of the files directly in `dir` when they are known without reading the
    /// directory (a directory of a package the store holds with no symlink in it); `None`:
    /// list it.
    fn dir_files(&self, dir: &Path) -> Option<Vec<String>>;
    /// The facts recorded for the content `id` under `rules` (the flavor, the syntax and
    /// [`FACTS_FORMAT`], e.g. `tofu hcl 1`).
    fn get(&self, rules: &str, id: &ContentId) -> Option<Vec<u8>>;
    /// Record them.
    fn put(&self, rules: &str, id: &ContentId, facts: &[u8]);
}

/// The rules a file's facts are derived under: `flavor`, its syntax (`json`: JSON, else
/// HCL) and [`FACTS_FORMAT`].
pub(super) fn rules(flavor: Flavor, json: bool) -> String {
    format!(
        "{flavor} {} {FACTS_FORMAT}",
        if json { "json" } else { "hcl" }
    )
}

static CACHE: RwLock<Option<Arc<dyn FactsCache>>> = RwLock::new(None);

/// Keep facts in `cache` from now on (`None`: no more).
pub fn set_facts_cache(cache: Option<Arc<dyn FactsCache>>) {
    *CACHE.write().unwrap_or_else(PoisonError::into_inner) = cache;
}

fn cache() -> Option<Arc<dyn FactsCache>> {
    CACHE.read().unwrap_or_else(PoisonError::into_inner).clone()
}

/// The content of the file at `path` when it is known without reading the file
/// ([`FactsCache::content_id`]).
pub(crate) fn content_id(path: &Path) -> Option<ContentId> {
    cache()?.content_id(path)
}

/// The names of the files directly in `dir`, when known without listing it
/// ([`FactsCache::dir_files`]).
pub(crate) fn dir_files(dir: &Path) -> Option<Vec<String>> {
    cache()?.dir_files(dir)
}

/// The name of `content`, when facts are kept.
pub(crate) fn id_of(content: &[u8]) -> Option<ContentId> {
    Some(cache()?.id_of(content))
}

/// The facts recorded under `rules` for the content `id`, their positions in `shown`.
pub(super) fn recorded_by_id(rules: &str, id: &ContentId, shown: &Path) -> Option<FileContent> {
    let bytes = cache()?.get(rules, id)?;
    decode(&bytes, shown)
}

/// The facts recorded for `content` under `rules`, their positions in `shown`.
pub(super) fn recorded(rules: &str, content: &[u8], shown: &Path) -> Option<FileContent> {
    let cache = cache()?;
    let bytes = cache.get(rules, &cache.id_of(content))?;
    decode(&bytes, shown)
}

/// Record the facts of `content` under `rules`, when they can be recorded exactly.
pub(super) fn record(rules: &str, content: &[u8], facts: &FileContent) {
    let Some(cache) = cache() else { return };
    if let Some(bytes) = encode(facts) {
        cache.put(rules, &cache.id_of(content), &bytes);
    }
}

/// Facts of another kind (a module directory's self-writes), recorded by `key` (named by
/// the cache, as a content is) under `rules` as opaque bytes.
pub(crate) fn recorded_as(rules: &str, key: &[u8]) -> Option<Vec<u8>> {
    let cache = cache()?;
    cache.get(rules, &cache.id_of(key))
}

/// Record them.
pub(crate) fn record_as(rules: &str, key: &[u8], bytes: &[u8]) {
    if let Some(cache) = cache() {
        cache.put(rules, &cache.id_of(key), bytes);
    }
}

/// The recorded form (`None`: not recordable exactly).
pub(super) fn encode(facts: &FileContent) -> Option<Vec<u8>> {
    serde_json::to_vec(facts).ok()
}

/// `bytes` decoded, every position in `shown`.
pub(super) fn decode(bytes: &[u8], shown: &Path) -> Option<FileContent> {
    crate::span::decoding_in(shown, || serde_json::from_slice(bytes).ok())
}

/// A call's argument is recorded only as a literal: an expression is evaluated with the
/// caller's inputs, so its file is not recorded (the serializer refuses it).
impl serde::Serialize for super::CallArg {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self {
            super::CallArg::Literal(s) => ser.serialize_str(s),
            super::CallArg::Expr { .. } => Err(serde::ser::Error::custom("an expression")),
        }
    }
}

impl<'de> serde::Deserialize<'de> for super::CallArg {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        String::deserialize(de).map(super::CallArg::Literal)
    }
}

/// The facts a fresh parse of `content` gives under `rules` (as [`FactsCache::get`] is
/// asked: `FLAVOR SYNTAX FORMAT`, anything after ignored), in their recorded form: what a
/// recorded fact must equal. `None` when `rules` are not this parser's (another format, an
/// unknown flavor or syntax) or the content has no recordable facts (it does not parse, a
/// call's argument is an expression).
pub fn derive(rules: &str, content: &[u8]) -> Option<Vec<u8>> {
    let mut words = rules.split(' ');
    let flavor = match words.next()? {
        "tofu" => Flavor::Tofu,
        "terraform" => Flavor::Terraform,
        _ => return None,
    };
    let json = match words.next()? {
        "json" => true,
        "hcl" => false,
        _ => return None,
    };
    if words.next()? != FACTS_FORMAT.to_string() {
        return None;
    }
    let text = std::str::from_utf8(content).ok()?;
    let shown = Path::new("");
    let parsed = if json {
        super::json::parse_json(text, shown, flavor)
    } else {
        super::hcl::parse_hcl(text, shown, flavor)
    };
    encode(&parsed.ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of fact a file holds, in HCL.
    const EVERY_FACT: &str = r#"
terraform {
  required_version = ">= 1.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
  }
  backend "local" {
    path = "state/terraform.tfstate"
  }
}

provider "aws" {
  alias  = "east"
  region = "us-east-1"
}

variable "names" {
  type     = list(string)
  default  = ["a"]
  nullable = false
}

locals {
  x = 1
}

resource "aws_s3_bucket" "b" {
  provider   = aws.east
  depends_on = [null_resource.n]
}

resource "null_resource" "n" {}

data "http" "h" {}

module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "5.5.3"
  count   = 2
}

output "o" {
  value = local.x
}

moved {
  from = aws_s3_bucket.a
  to   = aws_s3_bucket.b
}

import {
  to       = aws_s3_bucket.b
  id       = "b"
  provider = aws.east
}

check "c" {
  data "dns_a_record_set" "d" {
    host = "example.com"
  }
}
"#;

    #[test]
    fn facts_decode_to_what_they_encode_with_their_positions_in_the_file_read() {
        for flavor in [Flavor::Tofu, Flavor::Terraform] {
            let parsed = super::super::hcl::parse_hcl(EVERY_FACT, Path::new("a/main.tf"), flavor)
                .expect("parses");
            let bytes = encode(&parsed).expect("recordable");
            let shown = Path::new(".terraform/modules/vpc/main.tf");
            let decoded = decode(&bytes, shown).expect("decodes");
            assert_eq!(encode(&decoded).as_deref(), Some(&bytes[..]));
            assert_eq!(
                derive(&rules(flavor, false), EVERY_FACT.as_bytes()),
                Some(bytes)
            );
            let at = &decoded.module_calls[0].at;
            assert_eq!(at.file, shown);
            assert!(at.line.is_some());
            assert_eq!(at.line, parsed.module_calls[0].at.line);
            assert_eq!(decoded.variables[0].at.file, shown);
            assert!(!decoded.declarations.is_empty() && !decoded.imports.is_empty());
            assert_eq!(
                decoded.module_calls[0].repeated_by.map(|n| n.0),
                Some("count")
            );
        }
    }

    #[test]
    fn a_call_whose_source_is_an_expression_is_not_recorded() {
        let src = "variable \"v\" {}\nmodule \"m\" {\n  source = \"./${var.v}\"\n}\n";
        let parsed =
            super::super::hcl::parse_hcl(src, Path::new("main.tf"), Flavor::Tofu).expect("parses");
        assert_eq!(encode(&parsed), None);
        assert_eq!(derive(&rules(Flavor::Tofu, false), src.as_bytes()), None);
    }

    #[test]
    fn facts_of_another_format_or_damaged_ones_are_not_believed() {
        assert_eq!(decode(b"{not json", Path::new("x.tf")).map(|_| ()), None);
        assert_eq!(derive("tofu hcl 0", b"locals {}\n"), None);
        assert_eq!(derive("opentofu hcl 1", b"locals {}\n"), None);
        let recorded = derive(&rules(Flavor::Tofu, true), br#"{"locals": {"a": 1}}"#);
        assert!(recorded.is_some());
    }
}
