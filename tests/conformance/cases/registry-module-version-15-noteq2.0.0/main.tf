module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = "!= 2.0.0"
}
