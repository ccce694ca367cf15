use super::*;

fn providers(json: &str) -> Result<Vec<String>, StateError> {
    providers_in_state(json.as_bytes()).map(|set| set.iter().map(ToString::to_string).collect())
}

/// A state as terraform 1.11.4 writes it after applying a null resource in the root and
/// one in a module under an aliased provider; the `terraform_data` resource's built-in
/// provider needs nothing installed.
const STATE: &str = r#"{
  "version": 4,
  "terraform_version": "1.11.4",
  "serial": 3,
  "lineage": "d3c1",
  "outputs": {"secret": {"value": "s3cr3t", "type": "string", "sensitive": true}},
  "resources": [
    {"mode": "managed", "type": "null_resource", "name": "gone",
     "provider": "provider[\"registry.terraform.io/hashicorp/null\"]",
     "instances": [{"schema_version": 0, "attributes": {"id": "1", "triggers": null}}]},
    {"module": "module.m", "mode": "managed", "type": "aws_instance", "name": "x",
     "provider": "module.m.provider[\"registry.terraform.io/hashicorp/aws\"].west",
     "instances": []},
    {"mode": "managed", "type": "terraform_data", "name": "d",
     "provider": "provider[\"terraform.io/builtin/terraform\"]", "instances": []},
    {"mode": "managed", "type": "old", "name": "legacy", "provider": "provider.old", "instances": []}
  ],
  "check_results": null
}"#;

#[test]
fn every_resource_provider_is_read_and_nothing_else() {
    assert_eq!(
        providers(STATE).unwrap(),
        [
            "registry.terraform.io/hashicorp/aws",
            "registry.terraform.io/hashicorp/null"
        ]
    );
    assert_eq!(
        providers(r#"{"version": 4, "resources": []}"#).unwrap(),
        Vec::<String>::new()
    );
}

#[test]
fn what_is_not_a_version_4_state_is_said_without_its_content() {
    for (json, want) in [
        (
            "not json s3cr3t",
            "not a version 4 state (not a JSON state document)",
        ),
        (r#"{"version": 3, "modules": []}"#, "another format version"),
        (r#"{"resources": []}"#, "no format version"),
        (r#"{"version": "4"}"#, "not a JSON state document"),
        (
            r#"{"serial": 1, "encrypted_data": "s3cr3t", "encryption_version": "v0"}"#,
            "encrypted",
        ),
    ] {
        let err = providers(json).unwrap_err().to_string();
        assert!(err.contains(want), "{json}: {err}");
        assert!(!err.contains("s3cr3t"), "{err}");
    }
}

#[test]
fn a_state_past_the_bound_is_not_read_to_its_end() {
    struct Endless;
    impl Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            buf.fill(b' ');
            Ok(buf.len())
        }
    }
    let head = r#"{"version": 4, "resources": [ "#.as_bytes();
    let err = providers_in_state_up_to(head.chain(Endless), 1 << 20).unwrap_err();
    assert!(matches!(err, StateError::TooLarge), "{err}");
}

#[test]
fn the_state_file_is_the_local_backends_and_stays_inside_the_working_directory() {
    let local = StateStorage::Local;
    assert_eq!(
        local_state_file(&local, "default"),
        Some(PathBuf::from("terraform.tfstate"))
    );
    assert_eq!(
        local_state_file(&local, "staging"),
        Some(PathBuf::from(
            "terraform.tfstate.d/staging/terraform.tfstate"
        ))
    );
    let at = StateStorage::LocalAt {
        path: Some("state/prod.tfstate".into()),
        workspace_dir: Some("ws".into()),
    };
    assert_eq!(
        local_state_file(&at, "default"),
        Some(PathBuf::from("state/prod.tfstate"))
    );
    assert_eq!(
        local_state_file(&at, "b"),
        Some(PathBuf::from("ws/b/terraform.tfstate"))
    );
    for (storage, workspace) in [
        (&local, "../x"),
        (&local, ".."),
        (&local, "a/b"),
        (
            &StateStorage::LocalAt {
                path: Some("/etc/passwd".into()),
                workspace_dir: None,
            },
            "default",
        ),
        (
            &StateStorage::LocalAt {
                path: Some("../other/terraform.tfstate".into()),
                workspace_dir: None,
            },
            "default",
        ),
        (&StateStorage::Remote("s3".into()), "default"),
    ] {
        assert_eq!(
            local_state_file(storage, workspace),
            None,
            "{storage:?} {workspace}"
        );
    }
}
