module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = ">= v1.0.0, < v2.0.0"
}
