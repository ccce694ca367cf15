//! Cases derived from OpenTofu's static evaluator tests and its init fixtures for module
//! sources and versions given by variables.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;

fn expr(src: &str) -> Expression {
    let body = hcl::edit::parser::parse_body(&format!("v = {src}\n")).unwrap();
    Expression::from(body.get_attribute("v").unwrap().value.clone())
}

fn decls(vars: &[(&str, Option<&str>, bool)], locals: &[(&str, &str)]) -> ModuleDecls {
    ModuleDecls {
        calls: BTreeMap::new(),
        variables: vars
            .iter()
            .map(|(n, d, hcl)| {
                (
                    (*n).to_owned(),
                    VariableDecl {
                        default: d.map(expr),
                        parse_as_hcl: *hcl,
                        is_const: false,
                    },
                )
            })
            .collect(),
        locals: locals
            .iter()
            .map(|(n, e)| ((*n).to_owned(), expr(e)))
            .collect(),
    }
}

fn root(values: &[(&str, &str)]) -> Inputs {
    let options: Vec<VarOption> = values
        .iter()
        .map(|(k, v)| VarOption::Var(format!("{k}={v}")))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    Inputs::Root(Arc::new(
        RootInputs::gather(dir.path(), Vec::new(), &options).unwrap(),
    ))
}

#[test]
fn variables_locals_paths_and_functions_evaluate() {
    let scope = Scope::new(
        decls(
            &[
                ("str", None, false),
                ("str_def", Some("\"sane default\""), false),
                ("map_def", Some("{ keyA = \"A\" }"), true),
                ("list", None, true),
            ],
            &[
                ("static", "\"static\""),
                ("static_ref", "local.static"),
                ("chained", "\"${local.static_ref}-${var.str}\""),
                ("fn", "upper(local.static)"),
            ],
        ),
        root(&[("str", "./mod"), ("list", "[\"a\", \"b\"]")]),
        "modules/x".into(),
    );
    let cases = [
        ("var.str", "./mod"),
        ("var.str_def", "sane default"),
        ("var.map_def[\"keyA\"]", "A"),
        ("var.map_def.keyA", "A"),
        ("var.list[1]", "b"),
        ("local.chained", "static-./mod"),
        ("local.fn", "STATIC"),
        ("\"${path.module}/child\"", "modules/x/child"),
        ("path.root", "."),
        ("terraform.workspace", "default"),
        ("join(\"/\", [\"a\", var.str])", "a/./mod"),
        (
            "format(\"%s//%s?ref=%s\", \"git::x\", \"sub\", \"v1\")",
            "git::x//sub?ref=v1",
        ),
        ("nonsensitive(var.str)", "./mod"),
        ("var.str == \"./mod\" ? \"yes\" : \"no\"", "yes"),
        ("trimsuffix(lower(\"ABC.git\"), \".git\")", "abc"),
        ("coalesce(\"\", \"x\")", "x"),
        ("lookup({a = \"1\"}, \"b\", \"2\")", "2"),
    ];
    for (src, want) in cases {
        assert_eq!(
            scope.eval_string(&expr(src), "source"),
            Ok(want.to_owned()),
            "{src}"
        );
    }
}

#[test]
fn what_is_not_known_before_planning_is_refused_with_its_reason() {
    let scope = Scope::new(
        decls(
            &[("required", None, false)],
            &[
                ("dynamic", "aws_instance.x.id"),
                ("uses_dynamic", "\"${local.dynamic}/x\""),
                ("a", "local.b"),
                ("b", "local.a"),
            ],
        ),
        root(&[]),
        ".".into(),
    );
    let err = |src: &str| scope.eval_string(&expr(src), "source").unwrap_err();
    assert_eq!(
        err("var.required"),
        StaticError::RequiredVariable("required".into())
    );
    assert!(
        matches!(err("local.uses_dynamic"), StaticError::Unavailable(m) if m.contains("local.uses_dynamic"))
    );
    assert!(matches!(err("local.a"), StaticError::Unavailable(m) if m.contains("local.a")));
    assert!(matches!(err("module.foo.bar"), StaticError::Unavailable(_)));
    assert!(
        matches!(err("var.undeclared"), StaticError::Unavailable(m) if m.contains("not declared"))
    );
    assert!(matches!(err("md5(\"x\")"), StaticError::Unavailable(_)));
    assert!(matches!(err("[\"a\"]"), StaticError::WrongType(_)));
}

#[test]
fn a_child_module_gets_its_variables_from_the_calling_block() {
    let mut parent = decls(&[("base", None, false)], &[("sub", "\"child\"")]);
    parent.calls.insert(
        "c".to_owned(),
        BTreeMap::from([
            ("src".to_owned(), expr("\"${var.base}/${local.sub}\"")),
            ("dynamic".to_owned(), expr("aws_vpc.x.id")),
        ]),
    );
    let parent = Arc::new(Scope::new(
        parent,
        root(&[("base", "./modules")]),
        ".".into(),
    ));
    let call = CallArguments {
        call: "c".to_owned(),
        caller: parent,
    };
    let child = Scope::new(
        decls(
            &[
                ("src", None, false),
                ("dynamic", None, false),
                ("d", Some("\"dflt\""), false),
            ],
            &[],
        ),
        Inputs::Call(call),
        "modules/child".into(),
    );
    assert_eq!(
        child.eval_string(&expr("var.src"), "source"),
        Ok("./modules/child".into())
    );
    assert_eq!(
        child.eval_string(&expr("var.d"), "source"),
        Ok("dflt".into())
    );
    assert!(matches!(
        child.eval_string(&expr("var.dynamic"), "source"),
        Err(StaticError::Unavailable(m)) if m.contains("var.dynamic")
    ));
}

#[test]
fn root_values_follow_tofus_precedence() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("terraform.tfvars"),
        "a = \"tfvars\"\nb = \"tfvars\"\nc = \"tfvars\"\n",
    )
    .unwrap();
    std::fs::write(
        d.join("b.auto.tfvars.json"),
        r#"{"b": "auto-json", "c": "auto-json"}"#,
    )
    .unwrap();
    std::fs::write(d.join("extra.tfvars"), "c = \"file\"\nlist = [1, 2]\n").unwrap();
    let inputs = RootInputs::gather(
        d,
        vec![
            ("TF_VAR_a".to_owned(), "env".to_owned()),
            ("TF_VAR_e".to_owned(), "env".to_owned()),
        ],
        &[
            VarOption::File("extra.tfvars".into()),
            VarOption::Var("d=cli=with=equals".into()),
        ],
    )
    .unwrap();
    let get = |n: &str| inputs.get(n).unwrap().parse(n, false).unwrap();
    assert_eq!(get("a"), Value::from("tfvars"));
    assert_eq!(get("b"), Value::from("auto-json"));
    assert_eq!(get("c"), Value::from("file"));
    assert_eq!(get("d"), Value::from("cli=with=equals"));
    assert_eq!(get("e"), Value::from("env"));
    assert_eq!(
        get("list"),
        Value::Array(vec![Value::from(1u64), Value::from(2u64)])
    );
    assert!(matches!(
        RootInputs::gather(d, Vec::new(), &[VarOption::Var("novalue".into())]),
        Err(VarFileError::BadVarOption(_))
    ));
    std::fs::write(d.join("bad.tfvars"), "a = var.x\n").unwrap();
    assert!(matches!(
        RootInputs::gather(d, Vec::new(), &[VarOption::File("bad.tfvars".into())]),
        Err(VarFileError::Invalid { .. })
    ));
}
