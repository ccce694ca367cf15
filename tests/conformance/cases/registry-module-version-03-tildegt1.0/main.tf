module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = "~> 1.0"
}
