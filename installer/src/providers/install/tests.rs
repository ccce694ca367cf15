use super::*;

fn addr(s: &str) -> ProviderAddr {
    ProviderAddr::parse_source(s, "registry.terraform.io").unwrap()
}

fn lock(entries: &[(&str, &str, &[&str])]) -> LockFile {
    LockFile {
        providers: entries
            .iter()
            .map(|(a, v, h)| {
                let locked = LockedProvider {
                    version: v.parse().unwrap(),
                    constraints: None,
                    hashes: h.iter().map(|s| s.to_string()).collect(),
                };
                (addr(a), locked)
            })
            .collect(),
        ..LockFile::default()
    }
}

/// The lock after an install: exactly the selected providers; old hashes kept only
/// when the version did not change; constraints recorded when there are any.
#[test]
fn next_lock_file_table() {
    let old = lock(&[
        ("hashicorp/null", "2.1.2", &["h1:old", "zh:old"]),
        ("hashicorp/gone", "1.0.0", &["h1:gone"]),
    ]);
    let any = VersionConstraints::default();
    let pinned: VersionConstraints = "~> 2.1".parse().unwrap();
    // (case, old lock, selected (addr, version, constraints, new hashes), expected entries)
    type Selected<'a> = &'a [(&'a str, &'a str, &'a VersionConstraints, &'a [&'a str])];
    type Expected<'a> = &'a [(&'a str, &'a str, Option<&'a str>, &'a [&'a str])];
    type Case<'a> = (&'a str, Option<&'a LockFile>, Selected<'a>, Expected<'a>);
    let cases: [Case; 4] = [
        (
            "same version keeps the old hashes and adds new ones; dropped providers go",
            Some(&old),
            &[("hashicorp/null", "2.1.2", &pinned, &["h1:new"])],
            &[(
                "hashicorp/null",
                "2.1.2",
                Some("~> 2.1"),
                &["h1:new", "h1:old", "zh:old"],
            )],
        ),
        (
            "a new version forgets the old version's hashes",
            Some(&old),
            &[("hashicorp/null", "2.2.0", &any, &["h1:new"])],
            &[("hashicorp/null", "2.2.0", None, &["h1:new"])],
        ),
        (
            "no old lock",
            None,
            &[("hashicorp/null", "2.1.2", &any, &["h1:new"])],
            &[("hashicorp/null", "2.1.2", None, &["h1:new"])],
        ),
        ("nothing selected", Some(&old), &[], &[]),
    ];
    for (case, old, selected, expected) in cases {
        let hash_sets: Vec<BTreeSet<String>> = selected
            .iter()
            .map(|(_, _, _, h)| h.iter().map(|s| s.to_string()).collect())
            .collect();
        let addrs: Vec<ProviderAddr> = selected.iter().map(|(a, ..)| addr(a)).collect();
        let versions: Vec<Version> = selected
            .iter()
            .map(|(_, v, ..)| v.parse().unwrap())
            .collect();
        let selections = (0..selected.len()).map(|i| Selection {
            addr: &addrs[i],
            version: &versions[i],
            constraints: selected[i].2,
            lock_hashes: &hash_sets[i],
        });
        let got = next_lock_file(old, selections, false);
        let got: Vec<(String, String, Option<String>, Vec<String>)> = got
            .providers
            .iter()
            .map(|(a, p)| {
                (
                    a.to_string(),
                    p.version.to_string(),
                    p.constraints.clone(),
                    p.hashes.iter().cloned().collect(),
                )
            })
            .collect();
        let want: Vec<(String, String, Option<String>, Vec<String>)> = expected
            .iter()
            .map(|(a, v, c, h)| {
                (
                    addr(a).to_string(),
                    v.to_string(),
                    c.map(str::to_owned),
                    h.iter().map(|s| s.to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(got, want, "{case}");
    }
}

#[test]
fn display_name_drops_only_the_default_host() {
    for (flavor, source, shown) in [
        (
            Flavor::Terraform,
            "registry.terraform.io/hashicorp/null",
            "hashicorp/null",
        ),
        (
            Flavor::Tofu,
            "registry.opentofu.org/hashicorp/null",
            "hashicorp/null",
        ),
        (
            Flavor::Tofu,
            "registry.terraform.io/hashicorp/null",
            "registry.terraform.io/hashicorp/null",
        ),
        (Flavor::Terraform, "example.com/a/b", "example.com/a/b"),
    ] {
        let a = ProviderAddr::parse_source(source, "unused.example").unwrap();
        assert_eq!(display_name(&a, flavor), shown, "{flavor:?} {source}");
    }
}

#[test]
fn readonly_conflict_table() {
    let base = lock(&[("hashicorp/null", "2.1.2", &["h1:a"])]);
    let cases: [(&str, Option<&LockFile>, LockFile, Option<&str>); 5] = [
        (
            "no lock file yet",
            None,
            base.clone(),
            Some("it does not exist yet"),
        ),
        (
            "only a new checksum",
            Some(&base),
            lock(&[("hashicorp/null", "2.1.2", &["h1:a", "zh:b"])]),
            None,
        ),
        (
            "another version",
            Some(&base),
            lock(&[("hashicorp/null", "2.2.0", &["h1:c"])]),
            Some("other versions: registry.terraform.io/hashicorp/null 2.1.2 -> 2.2.0"),
        ),
        (
            "a new provider",
            Some(&base),
            lock(&[
                ("hashicorp/null", "2.1.2", &["h1:a"]),
                ("hashicorp/random", "3.0.0", &[]),
            ]),
            Some("new providers: registry.terraform.io/hashicorp/random"),
        ),
        (
            "a dropped provider",
            Some(&base),
            lock(&[]),
            Some("providers no longer required: registry.terraform.io/hashicorp/null"),
        ),
    ];
    for (case, old, new, want) in cases {
        assert_eq!(readonly_conflict(old, &new).as_deref(), want, "{case}");
    }
}

#[test]
fn providers_no_longer_required_follow_the_flavor() {
    let old = lock(&[
        ("hashicorp/null", "2.1.2", &["h1:a"]),
        ("hashicorp/gone", "1.0.0", &["h1:g"]),
    ]);
    let (a, v, c, h) = (
        addr("hashicorp/null"),
        "2.1.2".parse::<Version>().unwrap(),
        VersionConstraints::default(),
        BTreeSet::from(["h1:a".to_owned()]),
    );
    let select = || {
        [Selection {
            addr: &a,
            version: &v,
            constraints: &c,
            lock_hashes: &h,
        }]
    };
    let tofu = next_lock_file(Some(&old), select(), false);
    assert_eq!(tofu.providers.len(), 1);
    let terraform = next_lock_file(Some(&old), select(), true);
    assert_eq!(terraform.providers, old.providers);
}
