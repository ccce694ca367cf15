module "top" {
  source  = "@@REGISTRY@@/acme/archived/null"
  version = "1.0.0"
}

module "sub" {
  source  = "@@REGISTRY@@/acme/archived/null//sub"
  version = "1.0.0"
}
