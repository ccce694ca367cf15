module "m" {
  source  = "@@REGISTRY@@/acme/nothing/null"
  version = "1.0.0"
}
