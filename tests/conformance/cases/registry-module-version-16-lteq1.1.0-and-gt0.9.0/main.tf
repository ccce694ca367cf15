module "m" {
  source  = "@@REGISTRY@@/acme/mod/null"
  version = "<= 1.1.0, > 0.9.0"
}
