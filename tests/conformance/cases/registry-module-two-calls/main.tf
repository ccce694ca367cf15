module "a" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = "1.0.0"
}
module "b" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = "1.1.0"
}
