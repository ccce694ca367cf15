module "a" {
  source  = "git::file://@@GIT@@/mod.git?ref=v1"
}
module "b" {
  source  = "git::file://@@GIT@@/mod.git?ref=v1"
}
