module "abs" {
  source = "@@LOCAL@@/pkg"
}

module "again" {
  source = "@@LOCAL@@/pkg"
}
