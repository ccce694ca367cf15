module "m" {
  source  = "@@REGISTRY@@/acme/mod/null//sub"
  version = "1.0.0"
}
