//! One case per writer and per look-alike: a small module, and the exact findings.

use super::*;

/// A finding as the cases write it: (block, argument, kind, line).
type Found = (String, String, WriteKind, Option<usize>);

/// (block, argument, kind, line) of each finding for a module made of `files`.
fn findings(files: &[(&str, &str)], flavor: Flavor) -> Vec<Found> {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        fs_err::write(dir.path().join(name), text).unwrap();
    }
    detect_self_writes(dir.path(), flavor)
        .unwrap()
        .into_iter()
        .map(|w| (w.block, w.argument, w.kind, w.at.line))
        .collect()
}

fn hcl(text: &str) -> Vec<Found> {
    findings(&[("main.tf", text)], Flavor::Terraform)
}

fn one(block: &str, argument: &str, kind: WriteKind, line: usize) -> Vec<Found> {
    vec![(block.into(), argument.into(), kind, Some(line))]
}

use WriteKind::{MaybeWrite, Unknown, Write};

#[test]
fn writers_into_path_module() {
    let cases: &[(&str, &str, &str, &str, WriteKind)] = &[
        (
            "archive_file data source",
            "data \"archive_file\" \"this\" {\n  type = \"zip\"\n  source_dir = \"${path.module}/src\"\n  output_path = \"${path.module}/fn.zip\"\n}\n",
            "data.archive_file.this",
            "output_path",
            Write,
        ),
        (
            "archive_file resource",
            "resource \"archive_file\" \"this\" {\n  type = \"zip\"\n  source_file = \"x.py\"\n  output_path = format(\"%s/fn.zip\", path.module)\n}\n",
            "resource.archive_file.this",
            "output_path",
            Write,
        ),
        (
            "local_file",
            "resource \"local_file\" \"x\" {\n  content = \"hi\"\n  filename = join(\"/\", [path.module, \"out.txt\"])\n}\n",
            "resource.local_file.x",
            "filename",
            Write,
        ),
        (
            "local_sensitive_file",
            "resource \"local_sensitive_file\" \"x\" {\n  content = \"hi\"\n  filename = abspath(path.module)\n}\n",
            "resource.local_sensitive_file.x",
            "filename",
            Write,
        ),
        (
            "template_dir",
            "resource \"template_dir\" \"x\" {\n  source_dir = \"t\"\n  destination_dir = \"${path.module}/rendered\"\n}\n",
            "resource.template_dir.x",
            "destination_dir",
            Write,
        ),
        (
            "coalesce of a variable and path.module",
            "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = coalesce(var.out, \"${path.module}/x\")\n}\n",
            "resource.local_file.x",
            "filename",
            Write,
        ),
        (
            "through a local",
            "locals {\n  out = \"${path.module}/build\"\n}\nresource \"local_file\" \"x\" {\n  content = \"\"\n  filename = \"${local.out}/x.txt\"\n}\n",
            "resource.local_file.x",
            "filename",
            Write,
        ),
        (
            "a variable",
            "variable \"out\" {}\nresource \"local_file\" \"x\" {\n  content = \"\"\n  filename = var.out\n}\n",
            "resource.local_file.x",
            "filename",
            Unknown,
        ),
        (
            "another resource's attribute",
            "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = data.external.p.result.filename\n}\n",
            "resource.local_file.x",
            "filename",
            Unknown,
        ),
    ];
    for (what, text, block, argument, kind) in cases {
        let line = text[..text.find(&format!("  {argument} =")).unwrap()]
            .matches('\n')
            .count()
            + 1;
        assert_eq!(hcl(text), one(block, argument, *kind, line), "{what}");
    }
}

#[test]
fn programs() {
    let cases: &[(&str, &str, Vec<Found>)] = &[
        (
            "local-exec running in the module's directory",
            "resource \"null_resource\" \"build\" {\n  provisioner \"local-exec\" {\n    command = \"zip -r fn.zip src\"\n    working_dir = path.module\n  }\n}\n",
            one("resource.null_resource.build provisioner \"local-exec\"", "working_dir", Write, 4),
        ),
        (
            "local-exec naming the module's directory",
            "resource \"terraform_data\" \"build\" {\n  provisioner \"local-exec\" {\n    command = \"${path.module}/build.sh\"\n  }\n}\n",
            one("resource.terraform_data.build provisioner \"local-exec\"", "command", MaybeWrite, 3),
        ),
        (
            "local-exec interpreter naming the module's directory",
            "resource \"null_resource\" \"b\" {\n  provisioner \"local-exec\" {\n    interpreter = [\"python3\", \"${path.module}/package.py\", \"build\"]\n    command = \"plan.json\"\n  }\n}\n",
            one("resource.null_resource.b provisioner \"local-exec\"", "interpreter", MaybeWrite, 3),
        ),
        (
            "local-exec in any resource",
            "resource \"aws_instance\" \"i\" {\n  provisioner \"local-exec\" {\n    command = \"cd ${path.module} && make\"\n  }\n}\n",
            one("resource.aws_instance.i provisioner \"local-exec\"", "command", MaybeWrite, 3),
        ),
        (
            "local-exec with an unknown working directory",
            "resource \"null_resource\" \"b\" {\n  provisioner \"local-exec\" {\n    command = \"make\"\n    working_dir = var.dir\n  }\n}\n",
            one("resource.null_resource.b provisioner \"local-exec\"", "working_dir", Unknown, 4),
        ),
        (
            "external program in the module",
            "data \"external\" \"p\" {\n  program = [\"python3\", \"${path.module}/prepare.py\"]\n}\n",
            one("data.external.p", "program", MaybeWrite, 2),
        ),
        (
            "external in the module's directory",
            "data \"external\" \"p\" {\n  program = [\"sh\", \"x.sh\"]\n  working_dir = path.module\n}\n",
            one("data.external.p", "working_dir", Write, 3),
        ),
        (
            "shell_script lifecycle commands",
            "resource \"shell_script\" \"s\" {\n  lifecycle_commands {\n    create = \"${path.module}/create.sh\"\n    delete = \"true\"\n  }\n}\n",
            one("resource.shell_script.s", "lifecycle_commands.create", MaybeWrite, 3),
        ),
    ];
    for (what, text, want) in cases {
        assert_eq!(&hcl(text), want, "{what}");
    }
}

#[test]
fn look_alikes_that_only_read() {
    let cases: &[(&str, &str)] = &[
        ("file()", "resource \"local_file\" \"x\" {\n  content = file(\"${path.module}/x\")\n  filename = \"${path.root}/x\"\n}\n"),
        ("templatefile()", "resource \"aws_s3_object\" \"o\" {\n  content = templatefile(\"${path.module}/t.tpl\", {})\n}\n"),
        ("fileset()", "locals {\n  files = fileset(path.module, \"*\")\n}\n"),
        ("filebase64 and filemd5", "resource \"aws_s3_object\" \"o\" {\n  source = \"${path.module}/x\"\n  content_base64 = filebase64(\"${path.module}/x\")\n  etag = filemd5(\"${path.module}/x\")\n}\n"),
        ("archive_file sources", "data \"archive_file\" \"a\" {\n  type = \"zip\"\n  source_dir = path.module\n  output_path = \"${path.root}/builds/a.zip\"\n}\n"),
        ("archive_file source_file", "data \"archive_file\" \"a\" {\n  type = \"zip\"\n  source_file = \"${path.module}/x.py\"\n  output_path = \"${path.cwd}/a.zip\"\n}\n"),
        ("a relative output path is the working directory's", "data \"archive_file\" \"a\" {\n  type = \"zip\"\n  source_file = \"x.py\"\n  output_path = \"./build.zip\"\n}\n"),
        ("a bare relative file name", "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = \"build.zip\"\n}\n"),
        ("a literal-led template", "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = \"builds/${count.index}.txt\"\n}\n"),
        ("path.module only inside a hash", "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = \"${path.root}/${filemd5(\"${path.module}/x\")}.txt\"\n}\n"),
        ("the local_file data source reads", "data \"local_file\" \"x\" {\n  filename = \"${path.module}/x\"\n}\n"),
        ("a file provisioner copies to the remote host", "resource \"null_resource\" \"r\" {\n  provisioner \"file\" {\n    source = \"${path.module}/x\"\n    destination = \"/tmp/x\"\n  }\n}\n"),
        ("local-exec in the working directory", "resource \"null_resource\" \"r\" {\n  provisioner \"local-exec\" {\n    command = \"zip -r build.zip src\"\n  }\n}\n"),
        ("local-exec with the caller's command", "resource \"null_resource\" \"r\" {\n  provisioner \"local-exec\" {\n    command = var.command\n    working_dir = path.root\n  }\n}\n"),
        ("local-exec hashing a module file", "resource \"null_resource\" \"r\" {\n  provisioner \"local-exec\" {\n    command = \"echo ${filesha256(\"${path.module}/x\")}\"\n  }\n}\n"),
        ("path.module in an unrelated argument", "resource \"aws_lambda_function\" \"f\" {\n  filename = \"${path.module}/fn.zip\"\n}\n"),
    ];
    for (what, text) in cases {
        assert_eq!(hcl(text), vec![], "{what}");
    }
}

#[test]
fn json_files() {
    let archive = r#"{"data": {"archive_file": {"this": {"type": "zip", "source_dir": "${path.module}/src", "output_path": "${path.module}/fn.zip"}}}}"#;
    assert_eq!(
        findings(&[("main.tf.json", archive)], Flavor::Terraform),
        vec![(
            "data.archive_file.this".into(),
            "output_path".into(),
            Write,
            None
        )]
    );
    let local_exec = r#"{"resource": [{"null_resource": {"b": [{"provisioner": [{"local-exec": {"command": "make", "working_dir": "${path.module}"}}]}]}}]}"#;
    assert_eq!(
        findings(&[("main.tf.json", local_exec)], Flavor::Terraform),
        vec![(
            "resource.null_resource.b provisioner \"local-exec\"".into(),
            "working_dir".into(),
            Write,
            None
        )]
    );
    let through_local = r#"{"locals": {"out": "${path.module}/o"}, "resource": {"local_file": {"x": {"content": "", "filename": "${local.out}/x"}}}}"#;
    assert_eq!(
        findings(&[("main.tf.json", through_local)], Flavor::Terraform),
        vec![(
            "resource.local_file.x".into(),
            "filename".into(),
            Write,
            None
        )]
    );
    let reads = r#"{"resource": {"local_file": {"x": {"content": "${file(\"${path.module}/x\")}", "filename": "${path.root}/x"}}}}"#;
    assert_eq!(
        findings(&[("main.tf.json", reads)], Flavor::Terraform),
        vec![]
    );
}

#[test]
fn files_follow_the_flavor() {
    let text =
        "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = \"${path.module}/x\"\n}\n";
    let files = [("main.tofu", text), ("other.tf", "")];
    assert_eq!(findings(&files, Flavor::Terraform), vec![]);
    assert_eq!(
        findings(&files, Flavor::Tofu),
        one("resource.local_file.x", "filename", Write, 3)
    );
}

#[test]
fn a_check_block_data_source_counts() {
    let text = "check \"c\" {\n  data \"archive_file\" \"a\" {\n    type = \"zip\"\n    source_file = \"x\"\n    output_path = \"${path.module}/a.zip\"\n  }\n}\n";
    assert_eq!(
        hcl(text),
        one("data.archive_file.a", "output_path", Write, 5)
    );
}

#[test]
fn errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(dir.path().join("main.tf"), "resource \"x\" {\n").unwrap();
    let err = detect_self_writes(dir.path(), Flavor::Terraform).unwrap_err();
    assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
    assert!(err.to_string().contains("main.tf"), "{err}");
    let missing = detect_self_writes(&dir.path().join("nope"), Flavor::Terraform).unwrap_err();
    assert!(matches!(missing, ConfigError::ReadDir { .. }), "{missing}");
}

/// Minimal cases written after constructs found in public modules.
#[test]
fn constructs_seen_in_public_modules() {
    // A lambda scheduler zips its own package directory next to itself.
    let zip_beside = "data \"archive_file\" \"to_zip\" {\n  type        = \"zip\"\n  source_dir  = \"${path.module}/package/\"\n  output_path = \"${path.module}/fn.zip\"\n}\n";
    assert_eq!(
        hcl(zip_beside),
        one("data.archive_file.to_zip", "output_path", Write, 4)
    );

    // A lambda packager runs a script of the module from an external data source and a
    // local-exec interpreter, and writes its plan where the script says: its builds go
    // under the working directory, but that is the script's business.
    let packager = "data \"external\" \"prepare\" {\n  program = [local.python, \"${path.module}/package.py\", \"prepare\"]\n  query = {\n    artifacts_dir = var.artifacts_dir\n  }\n}\nresource \"local_file\" \"plan\" {\n  content  = data.external.prepare.result.plan\n  filename = data.external.prepare.result.plan_filename\n}\nresource \"null_resource\" \"build\" {\n  provisioner \"local-exec\" {\n    interpreter = [local.python, \"${path.module}/package.py\", \"build\"]\n    command     = data.external.prepare.result.plan_filename\n  }\n}\n";
    assert_eq!(
        hcl(packager),
        vec![
            (
                "data.external.prepare".into(),
                "program".into(),
                MaybeWrite,
                Some(2)
            ),
            (
                "resource.local_file.plan".into(),
                "filename".into(),
                Unknown,
                Some(9)
            ),
            (
                "resource.null_resource.build provisioner \"local-exec\"".into(),
                "interpreter".into(),
                MaybeWrite,
                Some(13)
            ),
        ]
    );

    // A deploy script saved by a relative name lands in the working directory.
    let deploy = "resource \"local_file\" \"script\" {\n  filename = \"deploy_script_${local.sha}.txt\"\n  content  = local.script\n}\nresource \"null_resource\" \"deploy\" {\n  provisioner \"local-exec\" {\n    command     = local.script\n    interpreter = var.interpreter\n  }\n}\n";
    assert_eq!(hcl(deploy), vec![]);

    // A docker build in a directory beside the module's (still inside its package).
    let docker = "resource \"null_resource\" \"image\" {\n  provisioner \"local-exec\" {\n    command     = \"docker build .\"\n    working_dir = \"${path.module}/../context\"\n  }\n}\n";
    assert_eq!(
        hcl(docker),
        one(
            "resource.null_resource.image provisioner \"local-exec\"",
            "working_dir",
            Write,
            4
        )
    );

    // Scripts of the module told the module's directory through their environment or
    // query.
    let told = "data \"external\" \"dist\" {\n  program = [\"sh\", \"-c\", \"true\"]\n  query = {\n    directory = \"${path.module}/app/dist\"\n  }\n}\nresource \"null_resource\" \"sync\" {\n  provisioner \"local-exec\" {\n    command = \"aws s3 sync $DIRECTORY s3://b\"\n    environment = {\n      DIRECTORY = \"${path.module}/app/dist\"\n    }\n  }\n}\n";
    assert_eq!(
        hcl(told),
        vec![
            (
                "data.external.dist".into(),
                "query".into(),
                MaybeWrite,
                Some(3)
            ),
            (
                "resource.null_resource.sync provisioner \"local-exec\"".into(),
                "environment".into(),
                MaybeWrite,
                Some(10)
            ),
        ]
    );

    // Test roots render user data into files beside themselves.
    let rendered = "resource \"local_file\" \"ud\" {\n  content  = module.x.user_data\n  filename = \"${path.module}/rendered/ud.sh\"\n}\n";
    assert_eq!(
        hcl(rendered),
        one("resource.local_file.ud", "filename", Write, 3)
    );
}

#[test]
fn variables_are_the_callers() {
    // Terraform refuses references in a default; one that names the module anyway counts.
    let odd_default = "variable \"out\" {\n  default = \"${path.module}/x.zip\"\n}\nresource \"local_file\" \"x\" {\n  content = \"\"\n  filename = var.out\n}\n";
    assert_eq!(
        hcl(odd_default),
        one("resource.local_file.x", "filename", Write, 6)
    );
    // A literal default is only the default: the caller may pass anything.
    let literal_default = "variable \"out\" {\n  default = \"x.zip\"\n}\nresource \"local_file\" \"x\" {\n  content = \"\"\n  filename = var.out\n}\n";
    assert_eq!(
        hcl(literal_default),
        one("resource.local_file.x", "filename", Unknown, 6)
    );
    // Led by path.root, the rest does not matter.
    let rooted = "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = \"${path.root}/${var.name}.txt\"\n}\n";
    assert_eq!(hcl(rooted), vec![]);
    // A conditional counts its nearest branch to the module.
    let either = "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = var.here ? \"${path.root}/x\" : var.out\n}\n";
    assert_eq!(
        hcl(either),
        one("resource.local_file.x", "filename", Unknown, 3)
    );
}

#[test]
fn override_files_are_read_too() {
    let primary =
        "resource \"local_file\" \"x\" {\n  content = \"\"\n  filename = \"${path.root}/x\"\n}\n";
    let over = "resource \"local_file\" \"x\" {\n  filename = \"${path.module}/x\"\n}\n";
    let mut found = findings(
        &[("main.tf", primary), ("main_override.tf", over)],
        Flavor::Terraform,
    );
    assert_eq!(found.len(), 1);
    let (block, argument, kind, line) = found.remove(0);
    assert_eq!(
        (block.as_str(), argument.as_str(), kind, line),
        ("resource.local_file.x", "filename", Write, Some(2))
    );
}

#[test]
fn findings_decode_to_what_they_encode_in_the_directory_read() {
    let dir = tempfile::tempdir().unwrap();
    fs_err::write(
        dir.path().join("main.tf"),
        "resource \"local_file\" \"f\" {\n  filename = \"${path.module}/out.txt\"\n}\n",
    )
    .unwrap();
    fs_err::write(
        dir.path().join("build.tf"),
        "resource \"null_resource\" \"b\" {\n  provisioner \"local-exec\" {\n    command     = \"make\"\n    working_dir = path.module\n  }\n}\n",
    )
    .unwrap();
    let found = detect_self_writes(dir.path(), Flavor::Terraform).unwrap();
    assert_eq!(found.len(), 2);
    let bytes = recorded::encode(&found, dir.path()).unwrap();
    assert_eq!(recorded::decode(&bytes, dir.path()), Some(found.clone()));
    // Read in another directory, the positions name that directory's files.
    let other = Path::new("/elsewhere/.terraform/modules/m");
    let moved = recorded::decode(&bytes, other).unwrap();
    assert!(moved.iter().all(|w| w.at.file.starts_with(other)));
    // A recorded position that leaves the directory is not believed.
    let escaped = String::from_utf8(bytes)
        .unwrap()
        .replace("\"main.tf\"", "\"../x.tf\"");
    assert_eq!(recorded::decode(escaped.as_bytes(), dir.path()), None);
}
