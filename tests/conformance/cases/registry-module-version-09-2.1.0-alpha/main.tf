module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = "2.1.0-alpha"
}
