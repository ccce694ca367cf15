//! Which packages a push takes, and the target check: no registry needed.

use tstore_tofu::cliconfig::RepositoryTemplateError;

use super::{TestStore, HOST};
use crate::publish::{
    check_push_target, packages_without_source_zip, ProviderSelection, PushError,
};

fn selections(texts: &[&str]) -> Vec<ProviderSelection> {
    texts
        .iter()
        .map(|t| ProviderSelection::parse(t, HOST).unwrap())
        .collect()
}

/// `[HOST/]NAMESPACE/TYPE[@VERSION]`: a short address takes the default host; anything
/// else is a typed error naming the selection as written.
#[test]
fn selections_parse() {
    for (text, addr, version) in [
        (
            "hashicorp/null",
            "registry.opentofu.org/hashicorp/null",
            None,
        ),
        (
            "hashicorp/null@2.1.2",
            "registry.opentofu.org/hashicorp/null",
            Some("2.1.2"),
        ),
        (
            "Example.com/Acme/Thing@1.0.0+ci.5",
            "example.com/acme/thing",
            Some("1.0.0+ci.5"),
        ),
    ] {
        let s = ProviderSelection::parse(text, HOST).unwrap();
        assert_eq!(s.text, text);
        assert_eq!(s.addr.to_string(), addr, "{text}");
        assert_eq!(
            s.version.map(|v| v.to_string()).as_deref(),
            version,
            "{text}"
        );
    }
    for text in [
        "hashicorp/null@",
        "hashicorp/null@two",
        "a/b/c/d",
        "hashi corp/null",
    ] {
        let err = ProviderSelection::parse(text, HOST).unwrap_err();
        let PushError::BadSelection { selection, .. } = &err else {
            panic!("{text}: {err:?}")
        };
        assert_eq!(selection, text);
    }
}

/// The target must give each provider pushed a repository of its own: a part it leaves
/// out must be one and the same for every provider selected (none selected: every
/// provider of the store, so every part is needed).
#[test]
fn the_target_names_each_part_the_selections_leave_open() {
    let cases: [(&str, &[&str], Option<&str>); 6] = [
        ("r.test/m/${hostname}/${namespace}/${type}", &[], None),
        ("r.test/m/${namespace}/${type}", &[], Some("hostname")),
        ("r.test/m/${hostname}/${namespace}", &[], Some("type")),
        ("r.test/m/${namespace}/${type}", &["hashicorp/null"], None),
        ("r.test/null", &["hashicorp/null@2.1.2"], None),
        (
            "r.test/m/${namespace}",
            &["hashicorp/null", "hashicorp/random"],
            Some("type"),
        ),
    ];
    for (template, selected, missing) in cases {
        let got = check_push_target(template, &selections(selected));
        match (got, missing) {
            (Ok(()), None) => {}
            (
                Err(PushError::Target {
                    template: named,
                    source: RepositoryTemplateError::PartLeftOut { part, .. },
                }),
                Some(missing),
            ) => {
                assert_eq!(named, template);
                assert_eq!(part, missing, "{template} {selected:?}");
            }
            (got, _) => panic!("{template} {selected:?}: {got:?}, want {missing:?} left out"),
        }
    }
}

/// The packages a push would build layers for: those the selections match whose source
/// zip the store did not keep. A selection matching nothing in the store is an error
/// naming it.
#[test]
fn packages_without_source_zip_follow_the_selections() {
    let store = TestStore::new(true);
    store.add_provider("null", "2.1.2", "linux_amd64", b"a", true);
    store.add_provider("null", "2.1.2", "darwin_amd64", b"b", false);
    store.add_provider("null", "3.0.0", "linux_amd64", b"c", false);
    store.add_provider("random", "1.0.0", "linux_amd64", b"d", false);
    let without = |texts: &[&str]| -> Result<Vec<String>, PushError> {
        let found = packages_without_source_zip(&store.store, &selections(texts))?;
        Ok(found
            .iter()
            .map(|w| format!("{} {} {}", w.addr, w.version, w.platform))
            .collect())
    };

    assert_eq!(
        without(&[]).unwrap(),
        [
            "registry.opentofu.org/hashicorp/null 2.1.2 darwin_amd64",
            "registry.opentofu.org/hashicorp/null 3.0.0 linux_amd64",
            "registry.opentofu.org/hashicorp/random 1.0.0 linux_amd64",
        ]
    );
    assert_eq!(
        without(&["hashicorp/null@2.1.2"]).unwrap(),
        ["registry.opentofu.org/hashicorp/null 2.1.2 darwin_amd64"]
    );
    assert_eq!(
        without(&["hashicorp/null"]).unwrap(),
        [
            "registry.opentofu.org/hashicorp/null 2.1.2 darwin_amd64",
            "registry.opentofu.org/hashicorp/null 3.0.0 linux_amd64",
        ]
    );
    for unmatched in ["hashicorp/absent", "hashicorp/null@9.9.9"] {
        let err = without(&["hashicorp/null", unmatched]).unwrap_err();
        let PushError::NothingSelected { selection } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(selection, unmatched);
    }
}
