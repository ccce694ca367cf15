//! The providers a local state names, and which state file that is.
//!
//! `init` installs the providers the state needs as well as the configuration's
//! (terraform's `internal/command/init.go` `getProviders` merges
//! `states.State.ProviderRequirements`, every resource's provider config, unconstrained;
//! OpenTofu's is the same at `v1.12.x`): a resource deleted from the configuration but
//! still in the state must keep its provider, or the plan that destroys it fails.
//!
//! A state is hostile input that holds secrets and may be large. It is read streamed and
//! bounded ([`MAX_STATE_FILE`]); only each resource's `provider` string is kept, every
//! other value is skipped without being kept, and nothing from the state but a provider
//! address ever leaves this module (errors say what was wrong, never what was there).

use std::collections::BTreeSet;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::addr::ProviderAddr;

/// The largest state file read: states of thousands of resources are tens of megabytes;
/// past this, the providers it needs are not looked for, and init says so.
pub const MAX_STATE_FILE: u64 = 1 << 30;

/// The local state file of the default workspace.
pub const DEFAULT_STATE_FILE: &str = "terraform.tfstate";
/// The directory of the other workspaces' local state files.
pub const DEFAULT_WORKSPACE_DIR: &str = "terraform.tfstate.d";
/// The workspace `init` uses when none is selected.
pub const DEFAULT_WORKSPACE: &str = "default";

/// Where a configuration keeps its state, as its root module declares it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StateStorage {
    /// The local backend (no `backend` block, or `backend "local"`): its `path` and
    /// `workspace_dir` arguments when written as literals.
    #[default]
    Local,
    /// `backend "local"` with arguments.
    LocalAt {
        /// `path`: the default workspace's state file.
        path: Option<String>,
        /// `workspace_dir`: where the other workspaces' state files are.
        workspace_dir: Option<String>,
    },
    /// Anywhere else: a remote backend (`backend "s3"`), a `cloud` block or a
    /// `state_store`; named by its type.
    Remote(String),
}

/// Why a state's providers are not known.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The file cannot be read.
    #[error("cannot read the state file")]
    Read(#[source] io::Error),
    /// Larger than [`MAX_STATE_FILE`].
    #[error("the state file is larger than {} MiB", MAX_STATE_FILE >> 20)]
    TooLarge,
    /// Not a state tstore can read: not JSON, or a format version other than 4.
    #[error("the state file is not a version 4 state ({0})")]
    NotAState(&'static str),
    /// An OpenTofu state encrypted by its `encryption` block.
    #[error("the state file is encrypted")]
    Encrypted,
}

/// The local state file of `workspace` under `storage`, relative to the working directory,
/// as the local backend names it (`backend/local` `StatePaths`): the default workspace's
/// at `path`, any other's at `WORKSPACE_DIR/WORKSPACE/terraform.tfstate`. `None` for a
/// remote storage, and for a path or workspace name that would leave the working
/// directory (tstore reads no state outside it).
pub fn local_state_file(storage: &StateStorage, workspace: &str) -> Option<PathBuf> {
    let (path, workspace_dir) = match storage {
        StateStorage::Local => (None, None),
        StateStorage::LocalAt {
            path,
            workspace_dir,
        } => (path.as_deref(), workspace_dir.as_deref()),
        StateStorage::Remote(_) => return None,
    };
    let file = if workspace == DEFAULT_WORKSPACE {
        PathBuf::from(path.unwrap_or(DEFAULT_STATE_FILE))
    } else {
        if workspace.contains('/') || workspace.contains('\0') {
            return None;
        }
        Path::new(workspace_dir.unwrap_or(DEFAULT_WORKSPACE_DIR))
            .join(workspace)
            .join(DEFAULT_STATE_FILE)
    };
    let stays_inside = file.components().all(|c| {
        matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    stays_inside.then_some(file)
}

/// The providers the state in `reader` names, read streamed: at most
/// [`MAX_STATE_FILE`] bytes. Resources whose `provider` is not a provider configuration
/// address (`[module.NAME.]provider["HOST/NS/TYPE"][.ALIAS]`) are skipped, as are
/// built-in providers.
pub fn providers_in_state(reader: impl Read) -> Result<BTreeSet<ProviderAddr>, StateError> {
    providers_in_state_up_to(reader, MAX_STATE_FILE)
}

fn providers_in_state_up_to(
    reader: impl Read,
    max: u64,
) -> Result<BTreeSet<ProviderAddr>, StateError> {
    let mut bounded = io::BufReader::new(reader.take(max + 1));
    let mut de = serde_json::Deserializer::from_reader(&mut bounded);
    let parsed = StateDoc::deserialize_from(&mut de);
    if bounded.get_ref().limit() == 0 {
        return Err(StateError::TooLarge);
    }
    let doc = parsed.map_err(|e| match e.classify() {
        serde_json::error::Category::Io => StateError::Read(e.into()),
        _ => StateError::NotAState("not a JSON state document"),
    })?;
    if doc.encrypted {
        return Err(StateError::Encrypted);
    }
    match doc.version {
        Some(4) => Ok(doc.providers),
        Some(_) => Err(StateError::NotAState("another format version")),
        None => Err(StateError::NotAState("no format version")),
    }
}

/// The provider a resource's `provider` string names, e.g.
/// `module.a.provider["registry.terraform.io/hashicorp/aws"].west`.
fn provider_of(config_addr: &str) -> Option<ProviderAddr> {
    let start = config_addr.find("provider[\"")? + "provider[\"".len();
    let rest = &config_addr[start..];
    let end = rest.find("\"]")?;
    let addr = ProviderAddr::parse_normalized(&rest[..end]).ok()?;
    (!addr.is_builtin()).then_some(addr)
}

/// What is kept of a state document.
#[derive(Default)]
struct StateDoc {
    version: Option<u64>,
    encrypted: bool,
    providers: BTreeSet<ProviderAddr>,
}

impl StateDoc {
    fn deserialize_from<'de, D: de::Deserializer<'de>>(de: D) -> Result<StateDoc, D::Error> {
        de.deserialize_map(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = StateDoc;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a state document")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StateDoc, A::Error> {
        let mut doc = StateDoc::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Version => doc.version = map.next_value::<Option<u64>>()?,
                Key::Resources => map.next_value_seed(Resources(&mut doc.providers))?,
                Key::EncryptedData => {
                    doc.encrypted = true;
                    map.next_value::<IgnoredAny>()?;
                }
                Key::Provider | Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(doc)
    }
}

/// The keys looked at; any other is skipped with its value.
enum Key {
    Version,
    Resources,
    EncryptedData,
    Provider,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: de::Deserializer<'de>>(de: D) -> Result<Key, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(match s {
                    "version" => Key::Version,
                    "resources" => Key::Resources,
                    "encrypted_data" => Key::EncryptedData,
                    "provider" => Key::Provider,
                    _ => Key::Other,
                })
            }
        }
        de.deserialize_str(KeyVisitor)
    }
}

/// The `resources` array: each element's `provider`, into the set.
struct Resources<'a>(&'a mut BTreeSet<ProviderAddr>);

impl<'de> DeserializeSeed<'de> for Resources<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Resources<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of resources")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(provider) = seq.next_element_seed(ResourceProvider)? {
            if let Some(addr) = provider.as_deref().and_then(provider_of) {
                self.0.insert(addr);
            }
        }
        Ok(())
    }
}

/// One resource: its `provider` string, if it has one.
struct ResourceProvider;

impl<'de> DeserializeSeed<'de> for ResourceProvider {
    type Value = Option<String>;
    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Option<String>, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ResourceProvider {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a resource")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<String>, A::Error> {
        let mut provider = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                // A provider address is short: a longer value is not one and is not kept.
                Key::Provider => {
                    provider = map
                        .next_value::<Option<String>>()?
                        .filter(|p| p.len() <= 1024);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(provider)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<String>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<String>, E> {
        Ok(None)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<String>, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
