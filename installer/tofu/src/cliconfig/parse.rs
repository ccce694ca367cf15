//! Reading one CLI configuration file's HCL into a [`CliConfig`].

use hcl::edit::expr::{Expression, ObjectKey};
use hcl::edit::structure::{Attribute, Block, Structure};
use hcl::edit::Span;

use super::*;
use crate::span::line_at;

/// Replace quoted attribute names at the start of a line (`"a/b" = ...`)
/// with placeholder identifiers, returning the rewritten text and the names.
pub(super) fn unquote_keys(src: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(src.len());
    let mut names = Vec::new();
    for line in src.split_inclusive('\n') {
        let indent_len = line.len() - line.trim_start().len();
        let t = &line[indent_len..];
        let parsed = t.strip_prefix('"').and_then(|r| {
            let mut name = String::new();
            let mut chars = r.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => name.push(chars.next()?.1),
                    '"' => return Some((name, &r[i + 1..])),
                    c => name.push(c),
                }
            }
            None
        });
        match parsed {
            Some((name, after))
                if after.trim_start().starts_with('=') && !after.trim_start().starts_with("==") =>
            {
                out.push_str(&line[..indent_len]);
                out.push_str(&format!("tstore_quoted_{}", names.len()));
                out.push_str(after);
                names.push(name);
            }
            _ => out.push_str(line),
        }
    }
    (out, names)
}

pub(super) struct Parser<'a> {
    pub(super) src: &'a str,
    pub(super) filename: &'a str,
    pub(super) names: &'a [String],
    pub(super) env: &'a dyn Fn(&str) -> Option<String>,
}

impl Parser<'_> {
    pub(super) fn invalid(&self, node: &impl Span, message: String) -> CliConfigError {
        CliConfigError::Invalid {
            file: self.filename.to_owned(),
            line: node.span().map_or(0, |r| line_at(self.src, r.start)),
            message,
        }
    }

    /// An identifier, with placeholders for quoted names mapped back.
    pub(super) fn name(&self, ident: &str) -> String {
        ident
            .strip_prefix("tstore_quoted_")
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|i| self.names.get(i))
            .cloned()
            .unwrap_or_else(|| ident.to_owned())
    }

    pub(super) fn key(&self, a: &Attribute) -> String {
        self.name(a.key.as_str())
    }

    pub(super) fn object_key(&self, k: &ObjectKey) -> String {
        match k {
            ObjectKey::Ident(i) => self.name(i.as_str()),
            ObjectKey::Expression(Expression::String(s)) => s.as_str().to_owned(),
            ObjectKey::Expression(e) => e.to_string(),
        }
    }

    pub(super) fn string<'b>(&self, a: &'b Attribute) -> Result<&'b str, CliConfigError> {
        match &a.value {
            Expression::String(s) => Ok(s.as_str()),
            _ => Err(self.invalid(a, format!("{:?} must be a string", self.key(a)))),
        }
    }

    /// A string whose `${…}` sequences are kept as written: the CLI configuration is HCL 1,
    /// where they are not interpolations (`repository_template = "…/${namespace}/${type}"`).
    pub(super) fn literal_string(&self, a: &Attribute) -> Result<String, CliConfigError> {
        match &a.value {
            Expression::String(s) => Ok(s.as_str().to_owned()),
            Expression::StringTemplate(t) => {
                let raw = t
                    .span()
                    .and_then(|span| self.src.get(span))
                    .and_then(|text| text.strip_prefix('"'))
                    .and_then(|text| text.strip_suffix('"'));
                match raw {
                    Some(raw) if !raw.contains('\\') => Ok(raw.to_owned()),
                    _ => Err(self.invalid(a, format!("{:?} must be a string", self.key(a)))),
                }
            }
            _ => Err(self.invalid(a, format!("{:?} must be a string", self.key(a)))),
        }
    }

    /// The body of an `oci_credentials` block: `username` and `password`, or
    /// `docker_credentials_helper`.
    pub(super) fn oci_credentials(
        &self,
        b: &Block,
    ) -> Result<super::OciCredentialsBlock, CliConfigError> {
        let (mut username, mut password, mut helper) = (None, None, None);
        for item in b.body.iter() {
            let Structure::Attribute(a) = item else {
                return Err(self.invalid(
                    item,
                    "Invalid oci_credentials block: nested blocks are not expected here.".into(),
                ));
            };
            match self.key(a).as_str() {
                "username" => username = Some(self.string(a)?.to_owned()),
                "password" => password = Some(self.string(a)?.to_owned()),
                "docker_credentials_helper" => helper = Some(self.string(a)?.to_owned()),
                other => {
                    return Err(self.invalid(
                        a,
                        format!("Invalid oci_credentials block: tstore does not support the argument {other:?} (it reads username and password, or docker_credentials_helper)."),
                    ))
                }
            }
        }
        match (username, password, helper) {
            (Some(username), Some(password), None) => {
                Ok(super::OciCredentialsBlock::Login { username, password })
            }
            (None, None, Some(helper)) => Ok(super::OciCredentialsBlock::Helper(helper)),
            _ => Err(self.invalid(
                b,
                "Invalid oci_credentials block: set username and password together, or docker_credentials_helper alone.".into(),
            )),
        }
    }

    /// The body of the `oci_default_credentials` block, as tofu reads it.
    pub(super) fn oci_default_credentials(
        &self,
        b: &Block,
    ) -> Result<super::OciDefaultCredentials, CliConfigError> {
        const INVALID: &str = "Invalid oci_default_credentials block";
        if !b.labels.is_empty() {
            return Err(self.invalid(b, format!("{INVALID}: it takes no labels.")));
        }
        let mut out = super::OciDefaultCredentials::default();
        for item in b.body.iter() {
            let Structure::Attribute(a) = item else {
                return Err(self.invalid(
                    item,
                    format!("{INVALID}: nested blocks are not expected here."),
                ));
            };
            match self.key(a).as_str() {
                "discover_ambient_credentials" => match &a.value {
                    Expression::Bool(v) => out.discover_ambient_credentials = *v.value(),
                    _ => {
                        return Err(self.invalid(
                            a,
                            format!("{INVALID}: discover_ambient_credentials must be true or false."),
                        ))
                    }
                },
                "docker_style_config_files" => {
                    // Relative names are taken from the directory of this file, as tofu does.
                    let base = Path::new(self.filename).parent().unwrap_or(Path::new(""));
                    let files = self.strings(a)?;
                    out.docker_style_config_files = Some(
                        files
                            .iter()
                            .map(|f| std::path::absolute(base.join(f)))
                            .collect::<Result<_, _>>()
                            .map_err(|e| self.invalid(a, format!("{INVALID}: {e}")))?,
                    );
                }
                "docker_credentials_helper" => {
                    let helper = self.string(a)?;
                    let valid = !helper.is_empty()
                        && helper.bytes().all(|c| {
                            c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.'
                        });
                    if !valid {
                        return Err(self.invalid(
                            a,
                            format!("{INVALID}: the docker credential helper name {helper:?} is invalid; it must be a non-empty name that can be part of an executable's file name (docker-credential-NAME)."),
                        ));
                    }
                    out.docker_credentials_helper = Some(helper.to_owned());
                }
                other => {
                    return Err(self.invalid(
                        a,
                        format!("{INVALID}: unknown argument {other:?} (expected discover_ambient_credentials, docker_style_config_files or docker_credentials_helper)."),
                    ))
                }
            }
        }
        if !out.discover_ambient_credentials && out.docker_style_config_files.is_some() {
            return Err(self.invalid(
                b,
                format!("{INVALID}: it disables discovery of ambient credentials, but also sets docker_style_config_files, which is relevant only when that discovery is enabled."),
            ));
        }
        Ok(out)
    }

    pub(super) fn strings(&self, a: &Attribute) -> Result<Vec<String>, CliConfigError> {
        let Expression::Array(items) = &a.value else {
            return Err(self.invalid(a, format!("{:?} must be a list of strings", self.key(a))));
        };
        items
            .iter()
            .map(|e| match e {
                Expression::String(s) => Ok(s.as_str().to_owned()),
                _ => Err(self.invalid(a, format!("{:?} must be a list of strings", self.key(a)))),
            })
            .collect()
    }

    pub(super) fn expand_path(&self, s: &str) -> PathBuf {
        let home = (self.env)("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        expand_tilde(&expand_vars(s, self.env), home.as_deref())
    }

    pub(super) fn host_label(&self, b: &Block, what: &str) -> Result<String, CliConfigError> {
        let [label] = b.labels.as_slice() else {
            return Err(self.invalid(
                b,
                format!("a {what} block must have exactly one label, the host name"),
            ));
        };
        normalize_host(label.as_str()).map_err(|e| {
            self.invalid(
                b,
                format!(
                    "The {what} {:?} block has an invalid hostname: {e}",
                    label.as_str()
                ),
            )
        })
    }

    pub(super) fn methods(&self, block: &Block) -> Result<Vec<InstallMethod>, CliConfigError> {
        let mut methods: Vec<InstallMethod> = Vec::new();
        for s in block.body.iter() {
            let Structure::Block(m) = s else {
                return Err(self.invalid(
                    s,
                    "The items inside the provider_installation block must all be blocks.".into(),
                ));
            };
            if !m.labels.is_empty() {
                return Err(self.invalid(
                    m,
                    "The blocks inside the provider_installation block may not have any labels."
                        .into(),
                ));
            }
            let kind = m.ident.as_str();
            if kind == "dev_overrides" {
                if !methods.is_empty() {
                    return Err(self.invalid(m, "The dev_overrides block must appear before all other installation methods, because development overrides always have the highest priority.".into()));
                }
                let mut overrides = BTreeMap::new();
                for item in m.body.iter() {
                    let Structure::Attribute(a) = item else {
                        return Err(self.invalid(
                            item,
                            "dev_overrides may contain only \"NAMESPACE/TYPE\" = \"DIR\" entries"
                                .into(),
                        ));
                    };
                    let addr = self.key(a);
                    if let Err(e) =
                        ProviderAddr::parse_source(&addr, Flavor::Tofu.default_registry_host())
                    {
                        return Err(self.invalid(a, format!("The entry {addr:?} in dev_overrides is not a valid provider source string: {e}")));
                    }
                    overrides.insert(addr, self.expand_path(self.string(a)?));
                }
                methods.push(InstallMethod::new(InstallMethodKind::DevOverrides(
                    overrides,
                )));
                continue;
            }
            let mut include = Vec::new();
            let mut exclude = Vec::new();
            let mut path = None;
            let mut url = None;
            let mut repository_template = None;
            let mut trust_all_hashes = false;
            for item in m.body.iter() {
                let Structure::Attribute(a) = item else {
                    return Err(self.invalid(
                        item,
                        format!("Invalid {kind} block: nested blocks are not expected here."),
                    ));
                };
                match (kind, self.key(a).as_str()) {
                    (_, "include") => include = self.strings(a)?,
                    (_, "exclude") => exclude = self.strings(a)?,
                    ("filesystem_mirror", "path") => path = Some(self.string(a)?),
                    ("network_mirror", "url") => url = Some(self.string(a)?),
                    ("oci_mirror", "repository_template") => {
                        repository_template = Some(self.literal_string(a)?)
                    }
                    // Retry counts do not change what is installed.
                    ("direct" | "network_mirror", "download_retry_count") => {}
                    ("network_mirror", "trust_all_hashes") => {
                        trust_all_hashes = match &a.value {
                            Expression::Bool(b) => *b.value(),
                            _ => {
                                return Err(self.invalid(
                                    a,
                                    "\"trust_all_hashes\" must be true or false".into(),
                                ))
                            }
                        }
                    }
                    ("direct" | "filesystem_mirror" | "network_mirror" | "oci_mirror", other) => {
                        return Err(self.invalid(
                            a,
                            format!("Invalid {kind} block: unsupported argument {other:?}."),
                        ))
                    }
                    _ => {}
                }
            }
            for p in include.iter().chain(&exclude) {
                parse_pattern(p, Flavor::Tofu.default_registry_host()).map_err(|e| {
                    self.invalid(
                        m,
                        format!("CLI config specifies invalid provider matching patterns: {e}."),
                    )
                })?;
            }
            let kind = match kind {
                "direct" => InstallMethodKind::Direct,
                "filesystem_mirror" => match path.filter(|p| !p.is_empty()) {
                    Some(p) => InstallMethodKind::FilesystemMirror {
                        path: self.expand_path(p),
                    },
                    None => {
                        return Err(self.invalid(
                            m,
                            "Invalid filesystem_mirror block: \"path\" argument is required."
                                .into(),
                        ))
                    }
                },
                "network_mirror" => match url.filter(|u| !u.is_empty()) {
                    Some(u) => InstallMethodKind::NetworkMirror {
                        url: u.to_owned(),
                        trust_all_hashes,
                    },
                    None => {
                        return Err(self.invalid(
                            m,
                            "Invalid network_mirror block: \"url\" argument is required.".into(),
                        ))
                    }
                },
                "oci_mirror" => match repository_template.filter(|t| !t.is_empty()) {
                    Some(t) => {
                        check_repository_template(&t, &include).map_err(|e| {
                            self.invalid(m, format!("Invalid oci_mirror block: {e}"))
                        })?;
                        InstallMethodKind::OciMirror {
                            repository_template: t,
                        }
                    }
                    None => return Err(self.invalid(
                        m,
                        "Invalid oci_mirror block: \"repository_template\" argument is required."
                            .into(),
                    )),
                },
                other => {
                    return Err(self.invalid(
                        m,
                        format!("Unknown provider installation method {other:?}."),
                    ))
                }
            };
            methods.push(InstallMethod {
                kind,
                include,
                exclude,
            });
        }
        Ok(methods)
    }
}
